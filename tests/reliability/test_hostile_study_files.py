"""The hostile-input catalogue, study-file cases (rows in docs/errors.md): values of a study file that
only a later node would have refused, and study folders whose records were cut short.

Each goes through `encoderlab.cli.main([...])` as a user's command line would and must exit 2 with
one `encoderlab: error:` line, its problems on indented lines below it (as every study-file error
lists them), no traceback, and nothing created or changed: the checks of the argument cases
(test_hostile_arguments.py). Each case failed on the code before its fix: a traceback (a
ZeroDivisionError, a KeyError), or a study that created its folder before a node refused the value.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
import yaml
from tests.reliability.test_hostile_arguments import assert_refused_untouched, model_folder, write_texts

# A study of two small runs on a local corpus, evaluating nothing, so that no case needs an asset.
MINI_STUDY = {
    "name": "mini",
    "data": [{"name": "main", "corpus": ["texts.txt"], "vocab_size": 300}],
    "runs": [
        {"name": "a", "recipe": "smoke-mlm", "evaluate": False},
        {
            "name": "b",
            "recipe": "cpt-mlm",
            "init": "model",
            "params": {
                "seq_len": 32,
                "global_batch": 2,
                "micro_batch_size": 2,
                "steps": 20,
                "warmup": 2,
                "decay": 2,
            },
            "group": "cpt",
            "evaluate": False,
        },
    ],
    "baseline": "a",
}


def _study_files(root: Path) -> None:
    """MINI_STUDY with one bad value each, as `study_NAME.yaml`."""
    edits = {
        "micro_batch0": lambda s: s.update(micro_batch=0),
        "size_typo": lambda s: s.update(size="tinyy"),
        "max_docs": lambda s: s["data"][0].update(max_docs=-5),
        "max_docs_huge": lambda s: s["data"][0].update(max_docs=10**21),
        "stop_prepared": lambda s: s["data"][0].update(
            stop="all_exhausted", prepared="corpus_dir", tokenizer="model"
        ),
        "vocab3": lambda s: s["data"][0].update(vocab_size=3),
        "lr_nan": lambda s: s.update(eval={"lrs": [float("nan")]}),
        "lr_twice": lambda s: s.update(eval={"lrs": [1e-4, 1e-4]}),
        "max_passes": lambda s: s.update(max_passes=-1),
        "suite_null": lambda s: s.update(eval={"suite": None}),
        "corpus_missing": lambda s: s["data"][0].update(corpus=["nothere.txt"]),
        "tokenizer_missing": lambda s: s["data"][0].update(tokenizer="nothere_tok"),
        "init_missing": lambda s: s["runs"][1].update(init="nothere"),
        "corpus_none": lambda s: s["data"][0].update(corpus=[]),
        "tokenizer_own_name": lambda s: s["data"][0].update(tokenizer="main"),
        "seeds_empty": lambda s: s.update(seeds=[]),
        "param_range": lambda s: s["runs"][1]["params"].update(ratio=4),
        "seeds_repeated": lambda s: s["runs"][0].update(seeds=[0, 1, 0]),
        "run_name_slash": lambda s: (s["runs"][0].update(seeds=[0, 1]), s["runs"][1].update(name="a/s1")),
        "dup_data": lambda s: s["data"].append(dict(s["data"][0])),
        "name_path": lambda s: s.update(name="../escaped"),
        "data_seed": lambda s: s["data"][0].update(seed=-1),
        "corpus_dir": lambda s: s["data"][0].update(corpus=["corpus_dir"]),
        "corpus_field": lambda s: s["data"][0].update(corpus=["body.jsonl"]),
        "corpus_empty": lambda s: s["data"][0].update(corpus=["blank.txt"]),
        "rows_long": lambda s: s["runs"][0].update(overrides={"layout.seq_len": 4096}),
        "rows_memory": lambda s: s["runs"][0].update(overrides={"layout.seq_len": 10**6, "device": "cpu"}),
        "device_cuda": lambda s: s["runs"][0].update(overrides={"device": "cuda"}),
        "eval_steps_beyond": lambda s: s["runs"][0].update(eval_steps=[100], evaluate=True),
        "claim_ids": lambda s: s.update(
            claims=[
                {"id": "x", "text": t, "kind": "beats", "a": a, "b": b}
                for t, a, b in (("A", "a", "b"), ("B", "b", "a"))
            ]
        ),
        "claim_family": lambda s: s.update(
            claims=[{"id": "x", "text": "A beats B", "kind": "beats", "a": "a", "b": "b", "family": "scc"}]
        ),
        "claim_family_unread": lambda s: s.update(
            claims=[
                {
                    "id": "x",
                    "text": "A is more stable",
                    "kind": "more_stable",
                    "a": "a",
                    "b": "b",
                    "family": "sc",
                }
            ]
        ),
        "paper_task_unmirrored": lambda s: (
            s["runs"][0].update(evaluate=True),
            s.update(eval={"suite": "paper", "tasks": ["paper-sst2"], "lrs": [1e-4], "seeds": [0]}),
        ),
        "cka_noise_pair": lambda s: s.update(
            cka=[{"a": "a", "b": "b", "noise": ["a", "a"], "texts": "texts.txt"}]
        ),
        "cka_texts_missing": lambda s: s.update(cka=[{"a": "a", "b": "b", "texts": "nothere.txt"}]),
        "cka_few_texts": lambda s: s.update(cka=[{"a": "a", "b": "b", "n_texts": 10, "texts": "texts.txt"}]),
        "eval_steps_not_evaluated": lambda s: s["runs"][0].update(eval_steps=[10]),
        "eval_steps_twice": lambda s: s["runs"][0].update(eval_steps=[10, 10], evaluate=True),
        "run_seed_negative": lambda s: s["runs"][0].update(seed=-1),
        "paper_unknown": lambda s: s.update(paper="paper9"),
        "override_init": lambda s: s["runs"][0].update(overrides={"model.init": "nothere"}),
        "expected_minutes_nan": lambda s: s.update(expected_minutes=float("nan")),
        "run_tasks_empty": lambda s: s["runs"][0].update(evaluate=True, tasks=[]),
        "run_task_unknown": lambda s: s["runs"][0].update(evaluate=True, tasks=["tweets", "nope"]),
        "reference_eval_steps": lambda s: s["runs"].append(
            {"name": "ref", "init": "model", "eval_steps": [10]}
        ),
        "reference_seeds": lambda s: s["runs"].append({"name": "ref", "init": "model", "seeds": [0, 1, 2]}),
        "reference_without_init": lambda s: s["runs"].append({"name": "ref"}),
        "reference_of_a_run": lambda s: s["runs"].append({"name": "ref", "init": "a"}),
    }
    for name, edit in edits.items():
        study = yaml.safe_load(yaml.safe_dump(MINI_STUDY))  # a deep copy
        edit(study)
        (root / f"study_{name}.yaml").write_text(yaml.safe_dump(study, sort_keys=False))
    for name, study, graph in (
        ("report_study_cut", '{"name": "mini", "sca', None),
        ("report_graph_cut", json.dumps(MINI_STUDY), '[{"kind": "prepare", "na'),
        ("report_study_deep", '{"name": ' + "[" * 100_000 + "]" * 100_000 + "}", None),
    ):  # a study folder whose records were cut short (by hand, a copy, a full disk)
        (root / name).mkdir()
        (root / name / "study.json").write_text(study)
        if graph is not None:
            (root / name / "graph.json").write_text(graph)


@pytest.fixture(scope="module")
def sworld(tmp_path_factory):
    """Study files with one bad value each, and what MINI_STUDY reads: texts, a tiny model (run b's
    init) and a corpus folder; two study folders whose records were cut short."""
    root = tmp_path_factory.mktemp("hostile-study-files")
    model_folder(root)
    write_texts(root)
    (root / "corpus_dir").mkdir()  # a corpus folder, read whole by a study's prepare node
    (root / "corpus_dir" / "texts.txt").write_text((root / "texts.txt").read_text())
    (root / "body.jsonl").write_text('{"body": "a document whose text field is not text"}\n')
    (root / "blank.txt").write_text("\n \n\t\n")  # no non-empty document
    _study_files(root)
    return root


# (id, argv with {w} for the shared folder, pattern of the error)
STUDY_CASES = [
    (  # was "run a: unknown model size 'tinyy'", after the file's checks, naming a run whose entry has no size
        "study-size-unknown",
        "study plan {w}/study_size_typo.yaml",
        r"study mini: unknown size 'tinyy' \(tiny\?\); valid: 1b, 210m, 610m, micro, mini, nano, small, tiny$",
    ),
    (
        "study-micro-batch-zero",
        "study plan {w}/study_micro_batch0.yaml",
        r"study mini: micro_batch must be >= 1 when set, got 0; give a positive micro_batch or null",
    ),
    (
        "study-max-docs-negative",
        "study run {w}/study_max_docs.yaml --out {w}/s",
        r"dataset main: max_docs must be >= 1, got -5; give a positive max_docs or null",
    ),
    (  # an islice ValueError traceback, in `study plan` and in the prepare node
        "study-max-docs-too-large",
        "study plan {w}/study_max_docs_huge.yaml",
        r"dataset main: max_docs must be at most \d+, got 1000000000000000000000; give null to read every document$",
    ),
    (  # new with the field: a prepared folder holds what it holds, so its `stop` would be ignored
        "study-dataset-stop-beside-prepared",
        "study plan {w}/study_stop_prepared.yaml",
        r"dataset main reads the prepared folder .*corpus_dir, so it takes no max_docs or stop and names the "
        r"tokenizer the folder was prepared with \(not 'train' or another dataset's\)$",
    ),
    (
        "study-vocab-too-small",
        "study run {w}/study_vocab3.yaml --out {w}/s",
        r"dataset main: vocab_size must be >= 261 for the byte-level BPE it trains, got 3",
    ),
    (
        "study-lr-nan",
        "study run {w}/study_lr_nan.yaml --out {w}/s",
        r"eval: learning rates must be a non-empty list of finite positive numbers, got \[nan\]; list positive "
        r"numbers, e.g. lrs: \[1.0e-4, 3.0e-4\]",
    ),
    (
        "study-corpus-missing",
        "study run {w}/study_corpus_missing.yaml --out {w}/s",
        r"study mini, dataset main: '.*/nothere.txt' is not an existing file, folder or glob; fix the dataset's "
        r"corpus in the study file$",
    ),
    (
        "study-corpus-text-field",
        "study run {w}/study_corpus_field.yaml --out {w}/s",
        r"study mini, dataset main: .*/body.jsonl:1 has no field 'text' \(fields: body\); name the text field in "
        r"the study file's corpus entry, e.g. corpus: \['body.jsonl#text_field=body'\] \(or fix the record\)$",
    ),
    (
        "study-corpus-empty",
        "study run {w}/study_corpus_empty.yaml --out {w}/s",
        r"study mini, dataset main: the corpus /\S*/blank.txt has no non-empty document; check the study file's "
        r"corpus entry, corpus: \['/\S*/blank.txt'\]$",
    ),
    (
        "study-tokenizer-missing",
        "study run {w}/study_tokenizer_missing.yaml --out {w}/s",
        r"study mini, dataset main: tokenizer 'nothere_tok' is not a folder in \S+, an asset \(.*\) or a hub id "
        r"\(org/name\); pass one of these$",
    ),
    (  # made the study folder, then the prepare node refused: "no source given; pass at least one --source"
        "study-corpus-empty-list",
        "study run {w}/study_corpus_none.yaml --out {w}/s",
        r"dataset main: corpus is empty; list a source in it, e.g. corpus: \[my.jsonl\]$",
    ),
    (  # its own name is read as a path or asset (DataSpec.tokenizer), but the start checks skipped it as a
        # dataset's: the study folder was made, then the prepare node refused it without naming the dataset
        "study-tokenizer-own-name",
        "study run {w}/study_tokenizer_own_name.yaml --out {w}/s",
        r"study mini, dataset main: tokenizer 'main' is not a folder in \S+, an asset \(.*\) or a hub id "
        r"\(org/name\); pass one of these$",
    ),
    (
        "study-init-missing",
        "study run {w}/study_init_missing.yaml --out {w}/s",
        r"study mini, run b: model source 'nothere' is not a folder in \S+, an asset \(.*\) or a hub id",
    ),
    (
        "study-suite-null-without-task-files",
        "study plan {w}/study_suite_null.yaml",
        r"eval: suite is null, so",
    ),
    (
        "study-max-passes-negative",
        "study plan {w}/study_max_passes.yaml",
        r"max_passes must be a finite number > 0 \(passes over a corpus allowed\), got -1",
    ),
    (
        "study-seeds-empty",
        "study plan {w}/study_seeds_empty.yaml",
        r"study mini: seeds must be a non-empty list of pretraining seeds >= 0, got \[\]; e.g. seeds: \[0\]",
    ),
    (  # the recipe's own check, which named no run
        "study-param-out-of-range",
        "study plan {w}/study_param_range.yaml",
        r"run b: ratio: 4.0 in its params: mlm mask_ratio must be between 0 and 1 \(exclusive\), got 4.0",
    ),
    (  # was accepted: the claim compared no task, and the report called it untested
        "study-claim-family-unknown",
        "study plan {w}/study_claim_family.yaml",
        r"claim x: family must be one of sc, tc, qa, ir, or null for the average over all tasks, got 'scc' \(sc\?\)$",
    ),
    (  # was ignored: the claim compared the average over all tasks
        "study-claim-family-unread",
        "study plan {w}/study_claim_family_unread.yaml",
        r"claim x: family is read by beats claims only \(more_stable compares the average over all tasks\); drop it, or set it to null$",
    ),
    (  # ran each cell once, but listed the LR twice in the grid
        "study-lr-repeated",
        "study plan {w}/study_lr_twice.yaml",
        r"eval: learning rates repeat 0.0001; give each once$",
    ),
    (
        "study-seeds-repeated",
        "study plan {w}/study_seeds_repeated.yaml",
        r"run a: seeds repeat 0; give each pretraining seed once$",
    ),
    (  # planned two models of id a/s1: run a's second seed, and run b, shown as branching from it
        "study-run-name-with-a-slash",
        "study plan {w}/study_run_name_slash.yaml",
        r"run name 'a/s1' may hold only ASCII letters, digits, '.', '_', '\+' and '-', from a letter or digit on \(it "
        r"names nodes, tables and claims; a run's `label` is free text\)$",
    ),
    (
        "study-duplicate-dataset",
        "study plan {w}/study_dup_data.yaml",
        r"study mini: dataset names must be unique, repeated: main",
    ),
    (
        "study-name-is-a-path",
        "study plan {w}/study_name_path.yaml",
        r"study name '\.\./escaped' may hold only ASCII letters, digits, '.', '_' and '-' \(it names the default study",
    ),
    (
        "study-data-seed-negative",
        "study plan {w}/study_data_seed.yaml",
        r"dataset main: seed must be >= 0 \(numpy's generators take no negative seed\), got -1",
    ),
    (
        "study-out-in-corpus",
        "study run {w}/study_corpus_dir.yaml --out {w}/corpus_dir/s",
        r"--out .*corpus_dir/s is, contains or lies inside the source .*corpus_dir; writing there would destroy",
    ),
    (
        "study-rows-longer-than-corpus",
        "study run {w}/study_rows_long.yaml --out {w}/s",
        r"study mini, run a: dataset main \(1 document, before preparing\) has at most \d+ tokens, fewer than one "
        r"row of layout.seq_len 4096; prepare more text or lower layout.seq_len",
    ),
    (
        "study-rows-beyond-memory",
        "study run {w}/study_rows_memory.yaml --out {w}/s",
        r"study mini, run a: this run needs at least [\d.]+ GiB per cpu device \(.*\) but [\d.]+ GiB is available; "
        r"lower layout.micro_batch_size",
    ),
    (
        "study-eval-steps-beyond-run",
        "study plan {w}/study_eval_steps_beyond.yaml",
        r"run a: eval_steps \[100\] are not steps of its 40-step run; give intermediate steps between 1 and 39, "
        r"or drop them$",
    ),
    (  # its checkpoint was kept and never fine-tuned, without a word
        "study-eval-steps-not-evaluated",
        "study plan {w}/study_eval_steps_not_evaluated.yaml",
        r"run a: evaluate is false, so its eval_steps \[10\] are never fine-tuned; drop them, or set evaluate: "
        r"true$",
    ),
    (  # planned without a word: the step was evaluated once
        "study-eval-steps-repeated",
        "study plan {w}/study_eval_steps_twice.yaml",
        r"run a eval_steps: 10 given twice; give each once$",
    ),
    (  # made the study folder, then the run's config refused "seed must be >= 0, got -1; e.g. --set seed=0"
        "study-run-seed-negative",
        "study run {w}/study_run_seed_negative.yaml --out {w}/s",
        r"run a: seed must be >= 0 \(an offset added to each pretraining seed\), got -1; give 0 or more, or drop it$",
    ),
    (  # made the study folder and prepared its data, then the run's node refused "model source 'nothere'"
        "study-override-placed-field",
        "study run {w}/study_override_init.yaml --out {w}/s",
        r"run a: overrides model.init, which the study sets itself; give the run's init instead \(another run of "
        r"the study, an asset, a model folder or a hub id\)$",
    ),
    (  # planned and reported as a study of no paper, without a word
        "study-paper-unknown",
        "study plan {w}/study_paper_unknown.yaml",
        r"study mini: paper 'paper9' is none of paper1, paper2; name one of them, or drop paper \(a study of no "
        r"paper\)$",
    ),
    (  # planned; `study list` showed "nan min"
        "study-expected-minutes-not-finite",
        "study plan {w}/study_expected_minutes_nan.yaml",
        r"study mini: expected_minutes must be a finite number >= 0, got nan; give the minutes the study takes, "
        r"or 0 \(unknown\)$",
    ),
    (  # was read as no restriction: the run was fine-tuned on every task of the study
        "study-run-tasks-empty",
        "study plan {w}/study_run_tasks_empty.yaml",
        r"run a: tasks is empty; drop it to evaluate the study's tasks, or set evaluate: false$",
    ),
    (
        "study-reference-eval-steps",
        "study plan {w}/study_reference_eval_steps.yaml",
        r"run ref has no recipe \(it is evaluated as is\), so it takes no params, overrides, steps, seed, seeds or "
        r"eval_steps \(it is one model, with no checkpoints\)$",
    ),
    (  # its seeds were dropped without a word: one model, evaluated once
        "study-reference-seeds",
        "study plan {w}/study_reference_seeds.yaml",
        r"run ref has no recipe \(it is evaluated as is\), so it takes no params, overrides, steps, seed, seeds or "
        r"eval_steps \(it is one model, with no checkpoints\)$",
    ),
    (  # planned and run: its eval nodes failed on `assert cfg.source is not None` after the runs trained
        "study-reference-without-init",
        "study run {w}/study_reference_without_init.yaml --out {w}/s",
        r"run ref has no recipe and no init; give it an init \(a model to evaluate as is\) or a recipe$",
    ),
    (  # planned and run: its eval nodes took "a" for a model source and failed after the runs trained
        "study-reference-of-a-run",
        "study plan {w}/study_reference_of_a_run.yaml",
        r"run ref has no recipe, and its init a is a run of the study, evaluated as run a already; drop run ref, "
        r"or give it a recipe to continue a$",
    ),
    (  # planned, and `study run` pretrained run a before its eval node found the task unknown
        "study-run-task-unknown",
        "study plan {w}/study_run_task_unknown.yaml",
        r"study mini names a task not in suite 'pocket' \(run a: nope\); valid: vitaminc, boolq, tweets, .*pubmedqa-retrieval$",
    ),
    (  # planned and run: the CKA node refused the pair after every run had trained
        "study-cka-noise-pair",
        "study plan {w}/study_cka_noise_pair.yaml",
        r"cka a-vs-b: noise must be \[TWIN, b\], b and its seed twin \(the floor b is measured against\), got "
        r"\['a', 'a'\]$",
    ),
    (  # made the study folder and trained every run; then the CKA node refused the texts
        "study-cka-texts-missing",
        "study run {w}/study_cka_texts_missing.yaml --out {w}/s",
        r"study mini, cka a-vs-b: 'nothere.txt' is neither a file nor an asset; give a .jsonl/.txt path or an "
        r"asset name$",
    ),
    (  # the CKA node said "raise --n" (a flag a study has not) after every run had trained
        "study-cka-too-few-texts",
        "study run {w}/study_cka_few_texts.yaml --out {w}/s",
        r"study mini, cka a-vs-b: n_texts must be at least 50 \(below it the chance level of linear CKA is too "
        r"high to read\), got 10; the paper uses 500$",
    ),
    (
        "study-claim-ids-repeated",
        "study plan {w}/study_claim_ids.yaml",
        r"claim ids must be unique, repeated: x$",
    ),
    (  # a RecursionError traceback (likewise every JSON file encoderlab reads back)
        "report-study-json-nested-too-deep",
        "study report {w}/report_study_deep",
        r"report_study_deep/study.json is damaged \(JSONDecodeError: nested thousands deep: line 1 column 1 "
        r"\(char 0\)\); restore it from a copy",
    ),
    (
        "report-study-json-cut",
        "study report {w}/report_study_cut",
        r"report_study_cut/study.json is damaged \(JSONDecodeError: .*\); restore it from a copy",
    ),
    (
        "report-graph-json-cut",
        "study report {w}/report_graph_cut",
        r"report_graph_cut/graph.json is damaged \(JSONDecodeError: .*\); run the study again into .* rewrites it",
    ),
]


@pytest.mark.parametrize("case,argv,pattern", STUDY_CASES, ids=[c[0] for c in STUDY_CASES])
def test_bad_study_file_is_refused_before_anything_is_written(
    sworld, capsys, monkeypatch, case, argv, pattern
):
    assert_refused_untouched(sworld, capsys, monkeypatch, case, argv, pattern)


def test_a_study_on_cuda_where_none_is_visible_is_refused_before_anything_is_written(
    sworld, capsys, monkeypatch
):
    """`device: cuda` on a machine without a visible CUDA device, checked with the memory and row checks
    (`study/checks.py`). CUDA is hidden here, so the case holds on a GPU machine too."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert_refused_untouched(
        sworld,
        capsys,
        monkeypatch,
        "study-cuda-not-visible",
        "study run {w}/study_device_cuda.yaml --out {w}/s",
        r"study mini, run a: device=cuda but no CUDA device is visible; use device=cpu or auto",
    )


def test_a_study_whose_task_has_no_hub_mirror_is_refused_before_anything_is_written(
    sworld, capsys, monkeypatch
):
    """With `ENCODERLAB_HUB_DATA` set, the evaluation node found SST-2's missing mirror after run a
    had trained; now `study run` names it with the other checks, before the study folder is made, and
    `study plan` in the same line (it planned the study as runnable)."""
    monkeypatch.setenv("ENCODERLAB_HUB_DATA", str(sworld / "mirrors"))  # none there
    for command in (
        "study run {w}/study_paper_task_unmirrored.yaml --out {w}/s",
        "study plan {w}/study_paper_task_unmirrored.yaml",
    ):
        assert_refused_untouched(
            sworld,
            capsys,
            monkeypatch,
            "study-task-without-mirror",
            command,
            r"study mini: task paper-sst2: ENCODERLAB_HUB_DATA=.*mirrors has no mirror of nyu-mll/glue; download it "
            r"with: hf download --repo-type dataset nyu-mll/glue --local-dir .*mirrors/nyu-mll/glue$",
        )
