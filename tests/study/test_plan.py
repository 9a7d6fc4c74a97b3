"""The study guard: tokens trained against unique tokens, per run, before anything runs."""

from __future__ import annotations

import functools
import json
import re
from dataclasses import replace

import pytest
from fake_study import backend, pair_spec, small_spec, tiny_corpus

import encoderlab.study.plan as plan_module
import encoderlab.study.plantext as plantext
from encoderlab.cli import main
from encoderlab.data.assets.cache import read_manifest
from encoderlab.errors import UserError
from encoderlab.study.catalog import get_study, list_studies
from encoderlab.study.graph import build_graph, prepare_graph
from encoderlab.study.hubinputs import PLAN_HEAD
from encoderlab.study.nodes import real_backend
from encoderlab.study.plan import _larger_example, corpus_size, passes_text, plan_study
from encoderlab.study.runner import node_dir, run_study
from encoderlab.study.spec import DataSpec


@functools.cache
def _listed() -> tuple:
    """`list_studies()`, computed once for this file's tests (it resolves and plans every built-in study at
    every scale, ~2.5 s; the tests only read it, and nothing they do before changes it)."""
    return tuple(list_studies())


def test_the_gpu_plan_of_paper1_reads_fineweb_edu_once_with_the_papers_tokenizer_and_tasks(capsys):
    main(["study", "plan", "paper1-pfs", "--scale", "gpu-210m"])
    out = capsys.readouterr().out
    assert "suite paper" in out and "fineweb-edu-350bt" in out
    assert (
        "fineweb-edu-350bt (HuggingFaceFW/fineweb-edu sample-350BT/train)" in out
        and "tokenizer EuroBERT/EuroBERT-210m: EuroBERT's Llama-3 tokenizer (128,256 ids), paper 1's" in out
        and "passes over a corpus allowed: 1; no run repeats a token" in out
    )
    # the ~120B-token corpus: how to prepare it across machines and give it to the study
    assert (
        "across machines: `encoderlab data prepare --source 'fineweb-edu-350bt#hf_files=0:K' --tokenizer "
        "EuroBERT/EuroBERT-210m --seed 0 --decontaminate none --out DIR --shard auto` in each task, `encoderlab data merge --out DIR`, "
        "then `--prepared main=DIR`, K the first data files holding more than the 99.1B tokens" in out
    )
    plan = plan_study(get_study("paper1-pfs", "gpu-210m"))
    full = [r for r in plan.runs if not r.model.endswith(("12k", "22k"))]  # the 42k runs; budgets 12k, 22k
    assert len(full) == 11 and all(r.tokens == 42_000 * 2_359_296 for r in full) and len(plan.runs) == 21
    docs = plan.spec.data[0].max_docs  # as many FineWeb-Edu documents as the runs read, with a margin
    assert all(r.passes == pytest.approx(r.tokens / (docs * 1_000 * 0.99)) for r in plan.runs)
    assert all(r.passes < 1 for r in plan.runs)  # no repeat
    assert plan.refusal() is None and not plan.corpora["main"].counted
    shared = {r.model: int(r.branch.split("@")[1].replace(",", "")) if r.branch else 0 for r in plan.runs}
    assert all(  # a branch counts the steps it trains itself (the rest are its base's)
        r.gpu_hours
        == pytest.approx(6 * r.params * (r.tokens - shared[r.model] * 2_359_296) / (989e12 * 0.4) / 3600)
        for r in plan.runs
    )
    assert "GPU-hours" in out


def test_the_plan_names_the_tasks_the_runs_name():
    """Paper 2's demo names pubmedqa-retrieval per run (`RunSpec.tasks`), not in its `EvalSpec`: the plan
    names that task and its metric, not the whole `domain` suite and its accuracy."""
    spec = get_study("paper2-detour", "demo")
    assert not spec.eval.tasks and all(r.tasks == ("pubmedqa-retrieval",) for r in spec.runs if r.evaluate)
    line = plantext.plan_text(plan_study(spec)).splitlines()[1]
    assert line.startswith("evaluation: suite domain (pubmedqa-retrieval); LR 0.0001; 2 fine-tuning seeds")
    assert line.endswith("metrics ndcg@10")


def test_a_study_that_fine_tunes_no_run_says_so():
    """A ladder study (`evaluate: false` on every run, read by `advise` through its held-out losses)
    printed "evaluation: suite pocket (all its tasks); LRs 1e-05, ...; 5 fine-tuning seeds"."""
    from encoderlab.advise.ladder import Schedule
    from encoderlab.advise.study import LadderDesign, ladder_study

    schedules = (Schedule.biphasic(1.0, None), Schedule.biphasic(0.0, 0.4))
    design = LadderDesign(sizes=("nano",), budgets=(4.0,), schedules=schedules)
    spec = ladder_study(design)
    assert not any(r.evaluate for r in spec.runs)
    text = plantext.plan_text(plan_study(spec))
    assert text.splitlines()[1] == "evaluation: none (no run is fine-tuned: `evaluate: false` on every run)"
    assert "evaluation adds" not in text


@pytest.mark.parametrize("scale,model", [("gpu-210m", "base"), ("gpu-610m", "large")])
def test_the_gpu_plan_of_paper2_shows_how_each_run_trains(capsys, scale, model):
    """`study plan` says what each run is: ModernBERT from the hub, Composer's decoupled AdamW with the
    paper's wd, ModernBERT's 80/10/10 masking in both arms, and the three freezing runs."""
    main(["study", "plan", "paper2-detour", "--scale", scale])
    out = capsys.readouterr().out
    assert out.splitlines()[1] == (
        "evaluation: suite biomed (all its tasks); LR 5e-05; 5 fine-tuning seeds; the best epoch's weights "
        "tested (validation after every epoch), stopping after 3 epochs without a better one; metrics "
        "conlleval_f1, weighted_f1"
    )
    lines = {
        line.split(":", 1)[0].strip(): line.split(":", 1)[1]
        for line in out.split("how each run trains")[1].split(PLAN_HEAD)[0].splitlines()[1:]
        if not line.startswith("note: ")  # memory is not checked where no GPU is visible
    }
    assert list(lines) == [
        "detour-biomed",
        "baseline-biomed",
        "baseline-biomed-s2",
        "freeze-low-biomed",
        "freeze-mid-biomed",
        "freeze-low-decay-biomed",
    ]
    # the built-in pins no hub input (no commit sha of ModernBERT's was verified): the plan says so
    hub = out.split(PLAN_HEAD + "\n")[1].splitlines()[:2]
    repo = f"answerdotai/ModernBERT-{model}"
    assert hub[0].startswith(f"  tokenizer {repo} (data biomed): unpinned: "), hub
    assert hub[1].startswith(f"  start model {repo} (runs start, {', '.join(lines)}): unpinned: "), hub
    optim = "decoupled_adamw lr 0.0002 betas 0.9/0.98 eps 1e-06 wd 1e-05 (not on norms and biases)"
    decay = "mlm15 bernoulli 80-10-10 {steps} steps (1-sqrt to 10%{frozen})"
    steps = {"base": ("3,179", "318"), "large": ("7,948", "795")}[model]
    for run, line in lines.items():
        start, opt, phases = line.strip().split("; ", 2)
        assert start == f"from answerdotai/ModernBERT-{model}" and opt == optim
        first, second = phases.split(" -> ")
        arm = "mlm30 bernoulli 80-10-10" if run.startswith("baseline") else "clm"
        frozen = {
            "freeze-low-biomed": "; layers paper2-low frozen",
            "freeze-mid-biomed": "; layers paper2-mid frozen",
        }
        assert first == f"{arm} {steps[0]} steps (constant, warmup 32{frozen.get(run, '')})"
        low_decay = "; layers paper2-low frozen" if run == "freeze-low-decay-biomed" else ""
        assert second == decay.format(steps=steps[1], frozen=low_decay)


def test_biomed_enriched_is_bounded_by_its_cards_bytes_and_paper2_at_50b_is_refused(tmp_path, capsys):
    """The card states no token count, but its dataset_info's bytes over all 15 columns bound the text's
    tokens from above, so passes have a lower bound: 55B tokens (gpu-1b) cannot fit once, before anything
    is downloaded; 11B (gpu-210m) is not refused (the pretraining node counts it)."""
    bound = 126_945_006_652 / 4 * 0.99  # less the validation split
    size = corpus_size(DataSpec(name="b", corpus=("biomed-enriched",)))
    assert size.unique_tokens == pytest.approx(bound) and size.at_most and not size.counted
    assert "at most the card's 127B bytes over all its columns / 4" in size.how
    small = plan_study(get_study("paper2-detour", "gpu-210m"))
    assert small.refusal() is None
    assert all(r.at_least and r.passes == pytest.approx(r.reaches / bound) for r in small.runs)
    large = plan_study(get_study("paper2-detour", "gpu-1b"))
    why = large.refusal()
    assert why is not None and "\n" not in why
    assert why.startswith(
        "run detour-biomed would read dataset biomed at least 1.75 times (55B tokens of at most "
    )
    # a domain corpus's fix names no general-English sample (was "e.g. fineweb-edu-100bt")
    assert "give it a corpus with more unique tokens, or allow repeats" in why and "fineweb" not in why
    with pytest.raises(UserError, match="^run detour-biomed would read dataset biomed at least 1.75 times"):
        run_study(get_study("paper2-detour", "gpu-1b"), tmp_path / "out", real_backend(), progress=False)
    assert not (tmp_path / "out" / "nodes").exists()
    main(["study", "plan", "paper2-detour", "--scale", "gpu-210m"])
    out = capsys.readouterr().out
    assert "at most 31.4B unique tokens" in out and "  >=0.35  " in out
    passes = {(row[0], row[1]): row[4] for row in _listed()}
    # 1.7506 at least: `study list` shows plan's figure, and a lower bound is never rounded up (was >=1.8)
    assert passes["paper2-detour", "gpu-1b"] == ">=1.75" and passes["paper2-detour", "gpu-610m"] == ">=0.875"
    # the cpu scale reads two assets: sized once both are fetched (on a machine that fetched them),
    # unknown before, a lower bound while one is: never a guess
    fetched = [read_manifest(a) is not None for a in ("general-en", "biomed")]
    cpu = passes["paper2-detour", "cpu"]
    assert cpu == "0.88" if all(fetched) else cpu.startswith(">=") if any(fetched) else cpu == "?"


def test_a_gpu_study_on_a_small_corpus_is_refused_in_one_line_before_anything_runs(tmp_path):
    corpus = tiny_corpus(tmp_path / "corpus.jsonl", 300)
    spec = get_study("paper1-pfs", "gpu-210m")
    spec = replace(spec, data=(replace(spec.data[0], corpus=(str(corpus),)),))
    why = plan_study(spec).refusal()
    assert why is not None and "\n" not in why
    assert why.startswith("run mlm20 would read dataset main ") and "estimated" in why
    assert "give it a corpus with more unique tokens (e.g. fineweb-edu-100bt)" in why
    assert "max_passes: null in a study file" in why
    # the example is the smallest general-English sample one pass fits in; none past the largest, none for
    # a domain corpus or an asset
    assert _larger_example(("fineweb-edu-10bt#weight=2",), 5e9) == " (e.g. fineweb-edu-10bt)"
    assert _larger_example((str(corpus),), 20e9) == " (e.g. fineweb-edu-100bt)"
    assert _larger_example((str(corpus),), 1e12) == _larger_example(("biomed-enriched",), 1e9) == ""
    assert _larger_example(("biomed", str(corpus)), 1e9) == ""
    with pytest.raises(UserError, match="^run mlm20 would read dataset main"):
        run_study(spec, tmp_path / "out", real_backend(), progress=False)
    assert not (tmp_path / "out" / "nodes").exists()
    assert plan_study(replace(spec, max_passes=None)).refusal() is None  # the override that allows repeats
    # a study of the user's own is its file already: no `study show` of a name no built-in study has
    mine = plan_study(replace(spec, name="my-study")).refusal()
    assert mine.endswith("max_passes: null in its study file") and "study show" not in mine


def test_estimates_name_their_source_and_prepared_data_is_counted(tmp_path):
    corpus = tiny_corpus(tmp_path / "corpus.jsonl", 50)
    local = corpus_size(DataSpec(name="d", corpus=(str(corpus),)))
    size = corpus.stat().st_size
    assert local.unique_tokens == pytest.approx(size / 4 * 0.99) and not local.counted
    hub = corpus_size(DataSpec(name="h", corpus=("fineweb-edu-10bt",)))
    assert hub.unique_tokens == pytest.approx(10e9 * 0.99) and "the card's 10B gpt2 tokens" in hub.how
    unknown = corpus_size(DataSpec(name="u", corpus=("hf:someone/something",)))
    assert unknown.unique_tokens is None
    # a finished prepare node: its meta.json's unique tokens, counted
    run_study(pair_spec(), tmp_path / "s", backend(), progress=False)
    graph = build_graph(pair_spec(), backend())
    folder = node_dir(tmp_path / "s", graph.nodes["prepare/main"]) / "data"
    folder.mkdir()
    (folder / "meta.json").write_text(json.dumps({"unique_tokens": {"train": 51_200}}))
    plan = plan_study(pair_spec(), tmp_path / "s", graph)
    assert plan.corpora["main"].counted and plan.corpora["main"].unique_tokens == 51_200
    assert {r.passes for r in plan.runs} == {100 * 4 * 64 / 51_200}  # 100 steps x 4 rows x 64 tokens
    md = (tmp_path / "s" / "report" / "report.md").read_text()
    assert "| run | tokens trained | token budget | passes over corpus |" in md


def test_a_trained_tokenizer_smaller_than_asked_is_said_by_the_plan_of_its_folder(tmp_path):
    """A corpus with fewer merges than `vocab_size` asks trains a smaller tokenizer (482 ids of 2,048): only
    `study run` said so, in a note, while `study plan` of the folder said the size asked. The plan reads
    the prepared meta.json anyway (its unique tokens), which records the ids."""
    spec = pair_spec()
    d = spec.data[0]
    assert d.tokenizer == "train"
    run_study(spec, tmp_path / "s", backend(), progress=False)
    graph = build_graph(spec, backend())
    folder = node_dir(tmp_path / "s", graph.nodes["prepare/main"]) / "data"
    folder.mkdir()
    meta = {"unique_tokens": {"train": 51_200}, "spec": {"vocab_size": d.vocab_size - 78}}
    (folder / "meta.json").write_text(json.dumps(meta))
    shown = replace(spec, eval=replace(spec.eval, suite="pocket"))  # plan_text reads a real suite's tasks
    text = plantext.plan_text(plan_study(shown, tmp_path / "s", graph))
    line = next(x for x in text.splitlines() if x.startswith("dataset main"))
    assert (
        f"tokenizer trained on the corpus ({d.vocab_size - 78:,} ids of the {d.vocab_size:,} asked: it held no "
        "more merges)" in line
    )
    text = plantext.plan_text(plan_study(shown))
    before = next(x for x in text.splitlines() if x.startswith("dataset main"))
    assert f"tokenizer trained on the corpus ({d.vocab_size:,} ids)" in before  # not prepared: the size asked


def test_a_mixture_of_corpora_is_an_upper_bound(tmp_path):
    """`data prepare` stops a mixture when its first source runs out, so the sum of the sources'
    sizes is at most what it reads (it was given as the estimate: 1,000 and 10 documents read 31)."""
    big, small = tiny_corpus(tmp_path / "big.jsonl", 200), tiny_corpus(tmp_path / "small.jsonl", 5)
    size = corpus_size(DataSpec(name="m", corpus=(str(big), str(small))))
    assert size.at_most and size.unique_tokens == pytest.approx(
        (big.stat().st_size + small.stat().st_size) / 4 * 0.99
    )
    assert size.how.endswith(
        "a mixture stops when its first source runs out, so it may read less"
        " (one folder or glob entry reads each of its files whole, and `stop: all_exhausted` every entry)"
    )  # the fixes a study file can take
    assert not corpus_size(DataSpec(name="one", corpus=(str(big),))).at_most


def test_a_changed_dataset_is_not_counted_from_the_folders_data_of_its_old_version(tmp_path, capsys):
    """The guard counted the prepare node of the folder's graph.json, the study's previous version: a
    dataset given more text after a refusal (a pretraining node's count over `max_passes`) was refused
    again at the start on the old count, `study plan --out` showed that count, and nothing said so."""
    out = tmp_path / "s"
    small, big = tiny_corpus(tmp_path / "small.jsonl", 50), tiny_corpus(tmp_path / "big.jsonl", 5000)
    spec = small_spec(data=(DataSpec(name="main", corpus=(str(small),)),), cka=())
    run_study(spec, out, backend(), progress=False)
    folder = node_dir(out, prepare_graph(spec, backend()).nodes["prepare/main"]) / "data"
    folder.mkdir()
    (folder / "meta.json").write_text(json.dumps({"unique_tokens": {"train": 12_800}}))  # runs read it twice
    grown = replace(spec, data=(DataSpec(name="main", corpus=(str(small), str(big))),), max_passes=1)
    plan = plan_study(grown, out, prepare_graph(grown, backend()))
    assert not plan.corpora["main"].counted and max(r.passes for r in plan.runs) < 1
    assert plan_study(spec, out, prepare_graph(spec, backend())).corpora["main"].unique_tokens == 12_800
    run_study(grown, out, backend(), progress=False)  # was refused: "would read dataset main 2.00 times"
    assert json.loads((out / "study.json").read_text())["max_passes"] == 1
    # `study plan --out` says when it has nothing to count, in one line
    main(["study", "plan", "paper1-pfs", "--out", str(tmp_path / "missing")])
    notes = [line for line in capsys.readouterr().out.splitlines() if line.startswith("note:")]
    assert notes == [
        f"note: --out {tmp_path / 'missing'} does not exist: the unique tokens of main are estimated, not counted"
    ]
    assert not (tmp_path / "missing").exists()


def test_a_compressed_corpus_is_sized_as_its_text_and_a_folder_by_the_files_prepare_reads(tmp_path):
    """A `.json.gz` counted by its stored size looked ~10x smaller than the text `data prepare` reads,
    so a plan overstated the passes over it; a folder's other files (a README) were counted too."""
    import gzip

    (tmp_path / "plain").mkdir()
    corpus = tiny_corpus(tmp_path / "plain" / "c4.json", 200)
    packed = tmp_path / "packed" / "c4.json.gz"
    packed.parent.mkdir()
    packed.write_bytes(gzip.compress(corpus.read_bytes()))
    (tmp_path / "plain" / "README.md").write_text("not a corpus file " * 500)
    plain = corpus_size(DataSpec(name="p", corpus=(str(tmp_path / "plain"),)))
    assert plain.unique_tokens == pytest.approx(corpus.stat().st_size / 4 * 0.99)
    zipped = corpus_size(DataSpec(name="z", corpus=(str(packed),)))
    assert zipped.unique_tokens == pytest.approx(plain.unique_tokens)  # read whole: the ratio is exact
    assert "1 compressed file at" in zipped.how and packed.stat().st_size * 3 < corpus.stat().st_size
    (tmp_path / "plain" / "more.jsonl.lz4").write_bytes(b"\x04\x22\x4d\x18")
    refused = corpus_size(DataSpec(name="r", corpus=(str(tmp_path / "plain"),)))
    assert refused.unique_tokens is None and "more.jsonl.lz4 is compressed as .lz4" in refused.how


@pytest.mark.slow
def test_a_run_is_refused_when_its_counted_corpus_is_smaller_than_estimated(tmp_path, monkeypatch):
    """The start can only estimate an unprepared corpus; the pretraining node counts it and refuses."""
    monkeypatch.setattr(plan_module, "CHARS_PER_TOKEN", 1e-6)  # estimates far too large: the start passes
    corpus = tiny_corpus(tmp_path / "corpus.jsonl", 300)
    spec = small_spec(
        data=(DataSpec(name="main", corpus=(str(corpus),), vocab_size=300, decontaminate=False),),
        steps=6,
        seq_len=32,
        micro_batch=2,
        grad_accum=2,
        cka=(),
        claims=(),
        runs=tuple(replace(r, eval_steps=()) for r in small_spec().runs),  # a 6-step run has no step 20
        max_passes=0.01,
        run_overrides={"precision": "fp32"},
    )
    real = real_backend()
    real.suite_tasks, real.task_signature = backend().suite_tasks, backend().task_signature
    real.required_assets = lambda spec: []
    with pytest.raises(
        UserError,
        match=r"^study node pretrain/mlm40: run mlm40 would read dataset main .*counted\); study fake-pfs allows 0.01",
    ):
        run_study(spec, tmp_path / "out", real, progress=False)


def test_starcoderdata_python_is_sized_by_the_starcoder_paper_and_the_code_detour_past_210m_is_refused(
    tmp_path, capsys
):
    """The card states no size per language; the StarCoder paper's 35B Python tokens in about 2 epochs do
    (17.5B): gpu-210m's 11B tokens read it once, gpu-610m's 27.5B would repeat it, refused in one line
    before anything is downloaded."""
    estimate = 17.5e9 * 0.99  # less the validation split
    size = corpus_size(DataSpec(name="c", corpus=("starcoderdata-python",)))
    assert size.unique_tokens == pytest.approx(estimate) and not size.at_most and not size.counted
    assert "the StarCoder paper's 17.5B starcoder tokens" in size.how
    small = plan_study(get_study("paper2-detour-code", "gpu-210m"))
    assert small.refusal() is None and {r.dataset for r in small.runs} == {"code"}
    assert all(
        not r.at_least and r.passes == pytest.approx(r.reaches / estimate) and r.passes < 1
        for r in small.runs
    )
    why = plan_study(get_study("paper2-detour-code", "gpu-610m")).refusal()
    assert why is not None and "\n" not in why
    assert why.startswith(
        "run detour-code would read dataset code 1.59 times (27.5B tokens of 17.3B unique, estimated); "
        "study paper2-detour-code allows 1 pass: give it a corpus"
    )
    with pytest.raises(UserError, match="^run detour-code would read dataset code 1.59 times"):
        run_study(
            get_study("paper2-detour-code", "gpu-610m"), tmp_path / "out", real_backend(), progress=False
        )
    assert not (tmp_path / "out" / "nodes").exists()
    main(["study", "plan", "paper2-detour-code", "--scale", "gpu-210m"])
    out = capsys.readouterr().out
    assert "dataset code: starcoderdata-python (bigcode/starcoderdata python/train)" in out
    assert "17.3B unique tokens (estimated from starcoderdata-python: the StarCoder paper's" in out
    assert "suite domain (code-retrieval); LR 5e-05; 5 fine-tuning seeds" in out
    assert "  0.635  " in out and "passes over a corpus allowed: 1; no run repeats a token" in out
    with pytest.raises(SystemExit):
        main(["study", "plan", "paper2-detour-code", "--scale", "gpu-1b"])
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "run detour-code would read dataset code 3.17 times" in err[0]
    passes = {(row[0], row[1]): row[4] for row in _listed()}
    assert (
        passes["paper2-detour-code", "gpu-210m"] == "0.635"
        and passes["paper2-detour-code", "gpu-1b"] == "3.17"
    )


def test_most_passes_is_a_lower_bound_while_a_corpus_is_not_sized():
    """A study reading two corpora, one sized (0.5 passes) and one not: the most passes any run makes is
    at least 0.5, not 0.5 (the unsized corpus may be read more often), and unknown with neither sized."""
    plan = plan_study(get_study("paper2-detour", "gpu-210m"))
    run = replace(plan.runs[0], passes=0.5, at_least=False)
    sized = replace(plan, runs=[run, replace(run, dataset="other")])
    assert sized.max_passes_text() == "0.5"
    partly = replace(plan, runs=[run, replace(run, dataset="other", passes=None)])
    assert partly.max_passes_text() == ">=0.5"
    unsized = replace(plan, runs=[replace(run, passes=None)])
    assert unsized.max_passes_text() == "?"


def test_a_lower_bound_on_passes_is_rounded_down():
    """`>=N` claims at least N passes: 1.7506 at least is `>=1.7` to 2 digits (it was `>=1.8`, more repeats than
    known) and `>=1.75` to 3, in the table and in the refusal; an exact count is rounded to nearest as before."""
    run = plan_study(get_study("paper2-detour", "gpu-210m")).runs[0]
    bound = replace(run, passes=1.7506, at_least=True)
    assert passes_text(bound, 2) == ">=1.7" and passes_text(bound, 3) == ">=1.75"
    assert passes_text(replace(bound, passes=1.759), 3) == ">=1.75"
    assert passes_text(replace(bound, passes=1.75), 3) == ">=1.75"  # a bound that is the figure stays it
    assert passes_text(replace(bound, passes=12.99), 2) == ">=12"
    assert passes_text(replace(bound, at_least=False), 2) == "1.8"
    large = plan_study(get_study("paper2-detour", "gpu-1b"))
    over = replace(large, runs=[replace(r, passes=1.759) for r in large.runs])
    assert "biomed at least 1.75 times" in (over.refusal() or "")  # was "at least 1.76"


def test_an_existing_tokenizer_is_named_with_its_own_size_not_the_trained_default(tmp_path):
    """Paper 2's demo printed "tokenizer minilm (8,192 ids)": `vocab_size` sizes a tokenizer the study
    trains, and MiniLM's has 30,522. The plan reads the size of a tokenizer it finds without
    downloading, and names one it cannot read without a size."""
    from tokenizers import Tokenizer, models

    vocab = {w: i for i, w in enumerate(["[UNK]", "a", "b", "c", "d", "e", "f"])}
    Tokenizer(models.WordLevel(vocab, unk_token="[UNK]")).save(str(tmp_path / "tokenizer.json"))
    spec = small_spec()
    found = DataSpec(name="main", corpus=("fake",), tokenizer=str(tmp_path))
    assert plantext._tokenizer_text(spec, found) == f"{tmp_path} (7 ids)"
    missing = DataSpec(name="main", corpus=("fake",), tokenizer=str(tmp_path / "absent"))
    assert plantext._tokenizer_text(spec, missing) == str(tmp_path / "absent")


def test_a_plan_of_one_run_seed_lr_and_document_says_each_in_the_singular(tmp_path, capsys):
    """`study plan` printed "1 pretraining runs", "LRs 0.0005", "1 fine-tuning seeds" and "first 1
    documents" (and a refusal "allows 1 pass(es)"): every count agrees with its number."""
    import yaml

    main(["study", "show", "paper1-pfs", "--scale", "demo"])
    study = yaml.safe_load(capsys.readouterr().out)
    study.update(runs=study["runs"][:1], claims=[], cka=[], seeds=[0])
    study["eval"].update(seeds=[0], lrs=[5e-4])
    study["data"][0]["max_docs"] = 1
    (tmp_path / "one.yaml").write_text(yaml.safe_dump(study))
    main(["study", "plan", str(tmp_path / "one.yaml")])
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "study paper1-pfs at scale demo: 1 pretraining run"
    assert lines[1].startswith(
        "evaluation: suite pocket (tweets, brown-pos); LR 0.0005; 1 fine-tuning seed; "
    )
    assert ", first 1 document, less the validation split" in lines[2]
    study["eval"].update(seeds=[0, 1], lrs=[5e-4, 1e-4])
    (tmp_path / "two.yaml").write_text(yaml.safe_dump(study))
    main(["study", "plan", str(tmp_path / "two.yaml")])
    assert "; LRs 0.0005, 0.0001; 2 fine-tuning seeds; " in capsys.readouterr().out


@pytest.mark.parametrize(
    "edit,line",
    [
        (
            lambda s: s["runs"].append(
                {"name": "b", "recipe": "smoke-mlm", "init": "nothere", "evaluate": False}
            ),
            r"study mini, run b: model source 'nothere' is not a folder in \S+, an asset \(.*\) or a hub id",
        ),
        (
            lambda s: s["data"][0].update(tokenizer="nothere_tok"),
            r"study mini, dataset main: tokenizer 'nothere_tok' is not a folder in \S+, an asset \(.*\) or a hub id",
        ),
    ],
    ids=["init", "tokenizer"],
)
def test_a_start_model_or_tokenizer_that_is_no_path_asset_or_hub_id_is_refused_by_the_plan(
    tmp_path, capsys, edit, line
):
    """`init: nothere` (no run of the study) or `tokenizer: nothere_tok`: `study run` refuses it before
    writing anything, while `study plan` printed the run at `?` parameters (or the tokenizer's bare name)
    and exited 0: its check skipped what is not on this machine yet, as if such a name could be fetched."""
    import yaml

    tiny_corpus(tmp_path / "corpus.jsonl", 20)
    study = {
        "name": "mini",
        "data": [{"name": "main", "corpus": ["corpus.jsonl"], "vocab_size": 300}],
        "runs": [{"name": "a", "recipe": "smoke-mlm", "evaluate": False}],
        "baseline": "a",
    }
    edit(study)
    (tmp_path / "mini.yaml").write_text(yaml.safe_dump(study))
    for argv in (["plan"], ["run", "--out", str(tmp_path / "out")]):
        with pytest.raises(SystemExit):
            main(["study", argv[0], str(tmp_path / "mini.yaml"), *argv[1:]])
        assert re.match(f"encoderlab: error: {line}", capsys.readouterr().err)
    assert not (tmp_path / "out").exists()


def test_the_plan_shows_the_checkpoints_grid_of_a_study_file(tmp_path, capsys):
    """`eval.checkpoint_lrs` and `eval.checkpoint_tasks` of a study file were shown nowhere in `study plan`,
    though they decide what its intermediate checkpoints are fine-tuned on; the evaluation line names them,
    and says they are unused when no fine-tuned run has `eval_steps`."""
    import yaml

    main(["study", "show", "paper1-pfs", "--scale", "demo"])
    study = yaml.safe_load(capsys.readouterr().out)
    lrs, tasks = [study["eval"]["lrs"][0] / 2], study["eval"]["tasks"][:1]
    study["eval"].update(checkpoint_lrs=lrs, checkpoint_tasks=tasks)
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(study))
    main(["study", "plan", str(tmp_path / "s.yaml")])
    line = capsys.readouterr().out.splitlines()[1]
    assert f"; intermediate checkpoints: LR {lrs[0]:g}, task {tasks[0]}; " in line
    for run in study["runs"]:
        run["eval_steps"] = []
    # a faster_early claim without eval_steps is refused (`untestable_claims`)
    study["claims"] = [c for c in study["claims"] if c["kind"] != "faster_early"]
    study["eval"].update(checkpoint_lrs=[], checkpoint_tasks=tasks)
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(study))
    main(["study", "plan", str(tmp_path / "s.yaml")])
    line = capsys.readouterr().out.splitlines()[1]
    assert (
        f"; intermediate checkpoints: the same LRs, task {tasks[0]} (unused: no fine-tuned run has eval_steps); "
        in line
    )
