"""A study reads a corpus prepared outside it (`--prepared NAME=DIR`): paper 1's FineWeb-Edu prepared
across two workers and merged, checked against the dataset's corpus and tokenizer, counted exactly by
the study guard, keyed by content (not path)."""

from __future__ import annotations

import dataclasses
import re
import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "data"))
from corpus_fixtures import corpus_records  # noqa: E402
from hub_corpus_fixtures import EUROBERT, make_eurobert_tokenizer, make_fineweb_edu  # noqa: E402

from encoderlab.cli import main  # noqa: E402
from encoderlab.data.hub import HUB_DATA_ENV, HUB_MODELS_ENV  # noqa: E402
from encoderlab.data.merge import merge  # noqa: E402
from encoderlab.data.prepare import PrepareConfig, prepare, read_meta  # noqa: E402
from encoderlab.data.shard import Shard  # noqa: E402
from encoderlab.data.sources import parse_source  # noqa: E402
from encoderlab.errors import UserError  # noqa: E402
from encoderlab.study.catalog import get_study  # noqa: E402
from encoderlab.study.graph import build_graph, prepare_graph  # noqa: E402
from encoderlab.study.nodes import prepared_folder, real_backend, run_prepare  # noqa: E402
from encoderlab.study.plan import plan_study  # noqa: E402
from encoderlab.study.prepared import with_prepared  # noqa: E402
from encoderlab.study.runner import NodeContext, NodeOutput, run_study  # noqa: E402


def _prepare(out: Path, source: str, tokenizer: str, shards: int = 2) -> Path:
    cfg = PrepareConfig(sources=(parse_source(source),), tokenizer=tokenizer, decontaminate=())
    for i in range(shards):
        prepare(cfg, out, shard=Shard(i, shards), workers=1, progress=False)
    return merge(out)


@pytest.fixture(scope="module")
def bpe(tmp_path_factory) -> Path:
    """A byte-level BPE of 300 ids (`_bpe`), trained once per module: `folders` prepares with it, and a test
    needing only some tokenizer of that size reads it (each training is a spawned process)."""
    return _bpe(tmp_path_factory.mktemp("bpe"))


@pytest.fixture(scope="module")
def folders(tmp_path_factory, bpe):
    """A simulated hub (FineWeb-Edu with three 350BT files, EuroBERT's tokenizer) and folders prepared
    from it: `fw` the 350BT sample's first two files by two workers, merged; `fw1` its first file;
    `ten` the 10BT sample; `bpe` the first file with another tokenizer."""
    root = tmp_path_factory.mktemp("prepared")
    make_fineweb_edu(root / "datasets", files_10bt=1, rows_per_file=20, files_350bt=3)
    make_eurobert_tokenizer(root / "models", [r["text"] for r in corpus_records(60)])
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(HUB_DATA_ENV, str(root / "datasets"))
        mp.setenv(HUB_MODELS_ENV, str(root / "models"))
        yield {
            "fw": _prepare(root / "fw", "fineweb-edu-350bt#hf_files=0:2", EUROBERT),
            "fw1": _prepare(root / "fw1", "fineweb-edu-350bt#hf_files=0:1", EUROBERT, shards=1),
            "ten": _prepare(
                root / "ten", "hf:HuggingFaceFW/fineweb-edu#hf_config=sample-10BT", EUROBERT, shards=1
            ),
            "bpe": _prepare(root / "bpe", "fineweb-edu-350bt#hf_files=0:1", str(bpe), shards=1),
        }


def test_the_gpu_study_reads_a_corpus_prepared_across_machines(folders, tmp_path, capsys, monkeypatch):
    fineweb = folders["fw"]
    # the cluster node reads the hub: its tasks are no mirror's (the plan refuses a missing mirror as run does)
    monkeypatch.delenv(HUB_DATA_ENV)
    spec = with_prepared(get_study("paper1-pfs", "gpu-210m"), (f"main={fineweb}",))
    data = spec.dataset("main")
    assert data.prepared == str(fineweb) and data.max_docs is None
    # the guard counts what the folder holds, exactly, and refuses: 40 documents are no 99B tokens
    plan = plan_study(spec)
    meta = read_meta(fineweb)
    assert (
        plan.corpora["main"].counted and plan.corpora["main"].unique_tokens == meta["unique_tokens"]["train"]
    )
    why = plan.refusal()
    assert why is not None and "counted" in why and "\n" not in why
    with pytest.raises(SystemExit):
        main(["study", "plan", "paper1-pfs", "--scale", "gpu-210m", "--prepared", f"main={fineweb}"])
    out, err = capsys.readouterr()
    assert f"counted in the prepared folder {fineweb}" in out and "error: run mlm20 would read" in err
    # the prepare node reads the folder where it is (checking its tokenizer) and prepares nothing; the
    # prepare nodes are the start of the graph (`build_graph` begins with `prepare_graph`), read without
    # building gpu-210m's ~90,000 eval nodes each time
    node = prepare_graph(spec, real_backend()).nodes["prepare/main"]
    (tmp_path / "node").mkdir()
    ctx = NodeContext(node=node, out_dir=tmp_path / "node", inputs={}, study_dir=tmp_path, spec=spec)
    assert run_prepare(ctx)["data"] == str(fineweb) and not any((tmp_path / "node").iterdir())
    # keyed by content: a moved folder keeps the key, another slice of the corpus changes it, and a
    # study that prepares its own data keeps the keys it had before `prepared` existed
    moved = Path(shutil.copytree(fineweb, tmp_path / "moved"))
    key = lambda s: prepare_graph(s, real_backend()).nodes["prepare/main"].key  # noqa: E731
    moved_spec = with_prepared(get_study("paper1-pfs", "gpu-210m"), (f"main={moved}",))
    assert key(moved_spec) == node.key
    # ... and the runs then read it where it is now, not where the finished node found it
    finished = NodeOutput(path=tmp_path / "node", result=run_prepare(ctx), node=node)
    assert prepared_folder(moved_spec, finished) == moved and prepared_folder(spec, finished) == fineweb
    assert key(with_prepared(get_study("paper1-pfs", "gpu-210m"), (f"main={folders['fw1']}",))) != node.key
    assert (
        "prepared"
        not in prepare_graph(get_study("paper1-pfs", "gpu-210m"), real_backend()).nodes["prepare/main"].config
    )


def test_a_folder_of_another_corpus_tokenizer_or_none_is_refused_in_one_line(folders, tmp_path):
    gpu = get_study("paper1-pfs", "gpu-210m")
    spec = with_prepared(gpu, (f"main={folders['ten']}",))
    with pytest.raises(UserError, match=r"^dataset main: .*ten was prepared from hf:HuggingFaceFW/fineweb-edu#hf_config=sample-10BT, not "
                       r"from its corpus fineweb-edu-350bt; pass a folder prepared from the corpus$"):  # fmt: skip
        plan_study(spec)
    with pytest.raises(UserError, match="not from its corpus"):
        build_graph(spec, real_backend())
    with pytest.raises(
        UserError, match=r"^dataset main: .*nothing holds no prepared data \(no meta.json\); prepare"
    ):
        plan_study(with_prepared(gpu, (f"main={tmp_path / 'nothing'}",)))
    with pytest.raises(
        UserError, match=r"^--prepared other=.*: give NAME=DIR with NAME one of the study's datasets \(main\)"
    ):
        with_prepared(gpu, (f"other={folders['fw']}",))
    # another tokenizer: `study run` refuses it before it writes anything (before, the study folder
    # was made and the prepare node refused it only when its turn came)
    out = tmp_path / "study"
    spec = dataclasses.replace(with_prepared(gpu, (f"main={folders['bpe']}",)), max_passes=None)
    with pytest.raises(
        UserError,
        # both tokenizers' folders named (said neither)
        match=rf"^dataset main: .*bpe was tokenized with another tokenizer \({re.escape(str(folders['bpe']))}/tokenizer\) "
        r"than EuroBERT/EuroBERT-210m \(read from /.*EuroBERT/EuroBERT-210m\); "
        r"prepare it again with --tokenizer EuroBERT/EuroBERT-210m$",
    ):
        run_study(spec, out, real_backend(), fetch=False, progress=False)
    assert not out.exists()
    # and the node checks it again (the folder may change while a study waits)
    spec = with_prepared(gpu, (f"main={folders['bpe']}",))
    node = prepare_graph(spec, real_backend()).nodes["prepare/main"]  # as `build_graph` makes it
    (tmp_path / "node").mkdir()
    ctx = NodeContext(node=node, out_dir=tmp_path / "node", inputs={}, study_dir=tmp_path, spec=spec)
    with pytest.raises(
        UserError,
        match=r"was tokenized with another tokenizer \(.*\) than EuroBERT/EuroBERT-210m \(read from",
    ):
        run_prepare(ctx)


def test_study_plan_refuses_a_folder_of_another_tokenizer_as_study_run_does(folders, capsys):
    """Was: `study plan --prepared` printed the plan and exited 0 over a folder `study run` refuses."""
    from tests.reliability.test_hostile_inputs import assert_one_line, cli

    argv = ["study", "plan", "paper1-pfs", "--scale", "gpu-210m", "--prepared", f"main={folders['bpe']}"]
    assert_one_line(
        *cli(argv, capsys),
        r"^encoderlab: error: dataset main: .*bpe was tokenized with another tokenizer \(.*bpe/tokenizer\) than "
        r"EuroBERT/EuroBERT-210m \(read from /.*\); prepare it again with --tokenizer EuroBERT/EuroBERT-210m$",
    )


def _bpe(tmp_path: Path) -> Path:
    from corpus_fixtures import write_jsonl

    from encoderlab.data.sources import SourceConfig
    from encoderlab.data.tokenizer import train_tokenizer

    src = write_jsonl(tmp_path / "tok.jsonl", corpus_records(100))
    train_tokenizer(SourceConfig(location=str(src)), 300, tmp_path / "tok-bpe", progress=False)
    return tmp_path / "tok-bpe"


@pytest.mark.slow
def test_a_study_trains_on_a_prepared_folder_and_keeps_its_nodes_when_it_moves(tmp_path, capsys):
    """Real nodes: a study of one's own reads a corpus prepared by two workers and merged; the runs train
    on that folder, the study's prepare node writes nothing, and after the folder moves the same study
    given the new place runs no node again."""
    from fake_study import tiny_corpus
    from tests.study.study_fixtures import MINE, polarity_task_file

    from encoderlab.data.sources import SourceConfig
    from encoderlab.data.tokenizer import train_tokenizer

    corpus = tiny_corpus(tmp_path / "corpus.jsonl", 300)
    polarity_task_file(tmp_path)
    train_tokenizer(SourceConfig(location=str(corpus)), 300, tmp_path / "tok", progress=False)
    data = _prepare(tmp_path / "prepared", str(corpus), str(tmp_path / "tok"))
    study = tmp_path / "my-study.yaml"
    study.write_text(MINE.replace("vocab_size: 300,", f"vocab_size: 300, tokenizer: {tmp_path / 'tok'},"))
    out = tmp_path / "out"
    main(["study", "run", str(study), "--out", str(out), "--no-fetch", "--prepared", f"main={data}"])
    assert "report:" in capsys.readouterr().out
    (node,) = (out / "nodes" / "prepare").iterdir()
    assert not (node / "data").exists()  # nothing prepared in the study
    runs = sorted((out / "nodes" / "pretrain").glob("*/run/config.yaml"))
    assert len(runs) == 2 and all(f"path: {data}\n" in r.read_text() for r in runs)
    markers = {p: p.stat().st_mtime_ns for p in (out / "nodes").rglob("*") if p.is_file()}
    moved = data.rename(tmp_path / "moved")
    main(["study", "run", str(study), "--out", str(out), "--no-fetch", "--prepared", f"main={moved}"])
    assert {p: p.stat().st_mtime_ns for p in markers} == markers  # every node kept, none rerun


def test_a_folder_prepared_again_from_other_text_changes_the_prepare_key(tmp_path, bpe):
    """The key of a `--prepared` folder digested its recipe, split counts and source kinds, not what was
    read: the corpus shuffled (the same documents, the same counts) and prepared again into the same
    folder kept every key, so the study reused results of the old rows. It is now the identity every
    checkpoint records (`data.packed.identity`), which holds each file's bytes and sha256."""
    from fake_study import tiny_corpus
    from tests.study.study_fixtures import MINE, polarity_task_file

    from encoderlab.study.files import load_study_file

    corpus = tiny_corpus(tmp_path / "corpus.jsonl", 60)
    polarity_task_file(tmp_path)
    study = tmp_path / "my-study.yaml"  # any tokenizer of 300 ids: the key reads the prepared folder
    study.write_text(MINE.replace("vocab_size: 300,", f"vocab_size: 300, tokenizer: {bpe},"))
    cfg = PrepareConfig(sources=(parse_source(str(corpus)),), tokenizer=str(bpe), decontaminate=())
    data = prepare(cfg, tmp_path / "prepared", workers=1, progress=False)
    spec = with_prepared(load_study_file(study), (f"main={data}",))

    def key() -> str:
        return prepare_graph(spec, real_backend()).nodes["prepare/main"].key

    before, splits = key(), read_meta(data)["splits"]
    assert key() == before  # the same folder, the same key
    lines = corpus.read_text().splitlines(keepends=True)  # the first two documents swapped
    corpus.write_text("".join([lines[1], lines[0], *lines[2:]]))
    shutil.rmtree(data)
    prepare(cfg, data, workers=1, progress=False)
    assert read_meta(data)["splits"] == splits  # the same counts: only the text's order tells them apart
    assert key() != before


def test_a_folder_whose_token_files_were_swapped_is_refused_before_the_study_runs(folders, tmp_path, capsys):
    """The key is the folder's meta.json, which a tokens.bin swapped since (the same size, valid ids)
    left as it was: the finished runs were kept and the runs still to do trained on other rows, silently.
    `study plan` and `study run` (`check_start`) now refuse it first, in one line."""
    import numpy as np

    from encoderlab.study.checks import check_prepared_sources

    data = Path(shutil.copytree(folders["fw1"], tmp_path / "copy"))
    tokens = np.fromfile(data / "tokens.bin", dtype=read_meta(data)["dtype"])
    tokens[::-1].tofile(data / "tokens.bin")
    spec = with_prepared(get_study("paper1-pfs", "gpu-210m"), (f"main={data}",))
    with pytest.raises(
        UserError, match=r"^study paper1-pfs, dataset main: .*copy/tokens.bin now holds other bytes"
    ):
        check_prepared_sources(spec, None, ())
    with pytest.raises(SystemExit):
        main(["study", "plan", "paper1-pfs", "--scale", "gpu-210m", "--prepared", f"main={data}"])
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "tokens.bin now holds other bytes" in err and f"prepare {data} again" in err


def test_the_datasets_tokenizer_is_loaded_again_only_when_its_files_moved(tmp_path, monkeypatch):
    """`check_tokenizer` runs before a study writes and again in its prepare node (and at each `study plan`);
    each loaded and hashed the dataset's tokenizer again (EuroBERT's 128k vocabulary: about a second each).
    Its hash is now reused while no file under its folder moved; one saved again since is read again, and a
    folder of the old tokenizer is refused as before."""
    from encoderlab.data import tokenizer as tokenizers
    from encoderlab.data import txtscans
    from encoderlab.study.prepared import check_tokenizer

    monkeypatch.setattr(txtscans, "SETTLE_NS", 0)  # the tokenizer was just written: remembered at once here
    tok = _bpe(tmp_path)
    meta = {"recipe": {"tokenizer_hash": tokenizers.tokenizer_hash(tokenizers.load_tokenizer(tok))}}
    real, loads = tokenizers.load_tokenizer, []
    monkeypatch.setattr(tokenizers, "load_tokenizer", lambda name: loads.append(name) or real(name))
    check_tokenizer(meta, str(tok), "main", tmp_path / "data")
    check_tokenizer(meta, str(tok), "main", tmp_path / "data")
    assert loads == [str(tok)]  # the second check reused the first's hash
    changed = real(tok)
    changed.add_tokens(["zzzextra"])
    changed.save_pretrained(tok)
    with pytest.raises(UserError, match=r"^dataset main: .*data was tokenized with another tokenizer"):
        check_tokenizer(meta, str(tok), "main", tmp_path / "data")
    assert loads == [str(tok)] * 2
