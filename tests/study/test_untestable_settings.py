"""Study-file settings that could never take effect, refused before the study folder is written: a
study shape a smoke recipe ignores, an empty `init` or `tokenizer`; and a run's config refusal worded in the study file's keys, not a `--set` flag.

Each failed on the code before its fix: the study planned and ran without a word (the shape, `init: ''`), said "holds no tokenizer files" of the study file's own folder (`tokenizer: ''`), or
suggested `--set`, a flag a study file has none of.
"""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
import yaml
from tests.reliability.test_hostile_arguments import assert_refused_untouched, write_texts

from encoderlab.errors import UserError
from encoderlab.study.catalog import get_study
from encoderlab.study.evalnodes import study_tasks
from encoderlab.study.files import dump_study, load_study_file
from encoderlab.study.needs import suite_families

STUDY = {
    "name": "mini",
    "data": [{"name": "main", "corpus": ["texts.txt"], "vocab_size": 300}],
    "runs": [{"name": "a", "recipe": "smoke-mlm", "evaluate": False}],
    "baseline": "a",
}


def _refused(tmp_path, capsys, monkeypatch, case: str, study: dict, pattern: str) -> None:
    """`study run` of `study` (as s.yaml) is refused with `pattern` as docs/errors.md's row `case` says,
    writing nothing."""
    write_texts(tmp_path)
    (tmp_path / "s.yaml").write_text(yaml.safe_dump({**STUDY, **study}, sort_keys=False))
    assert_refused_untouched(tmp_path, capsys, monkeypatch, case, "study run {w}/s.yaml --out {w}/s", pattern)


def test_a_study_shape_a_smoke_recipe_takes_none_of_is_refused_before_anything_is_written(
    tmp_path, capsys, monkeypatch
):
    _refused(
        tmp_path,
        capsys,
        monkeypatch,
        "study-shape-ignored-by-recipe",
        {"size": "small", "seq_len": 32},
        r"run a: recipe smoke-mlm takes no size or seq_len, so the study's size: small, seq_len: 32 would be "
        r"ignored .*layout.seq_len",
    )


def test_a_built_in_studys_shape_and_a_smoke_runs_overrides_are_still_taken(tmp_path):
    """The refusal is of a shape nothing takes: a built-in at its demo scale (its yaml, as `study show`
    writes it) sets all three for recipes that take them, and a smoke run's overrides set its rows."""
    write_texts(tmp_path)
    (tmp_path / "demo.yaml").write_text(dump_study(get_study("paper1-pfs", "demo")))
    assert load_study_file(tmp_path / "demo.yaml").seq_len is not None
    run = {**STUDY["runs"][0], "overrides": {"layout.seq_len": 32}}
    (tmp_path / "s.yaml").write_text(yaml.safe_dump({**STUDY, "runs": [run]}))
    assert load_study_file(tmp_path / "s.yaml").runs[0].overrides == {"layout.seq_len": 32}


@pytest.mark.parametrize(
    "case,study,pattern",
    [
        (
            "study-init-empty",
            {"runs": [{**STUDY["runs"][0], "init": ""}]},
            r"run a: init is empty; name the start model .*, or drop init to train from scratch$",
        ),
        (
            "study-tokenizer-empty",
            {"data": [{**STUDY["data"][0], "tokenizer": ""}]},
            r"dataset main: tokenizer is empty; give train .*, or drop tokenizer \(train\)$",
        ),
    ],
    ids=["init", "tokenizer"],
)
def test_an_empty_init_or_tokenizer_is_one_line(tmp_path, capsys, monkeypatch, case, study, pattern):
    _refused(tmp_path, capsys, monkeypatch, case, study, pattern)


@pytest.mark.parametrize(
    "case,study,pattern",
    [
        (
            "study-override-seed-negative",
            {"run_overrides": {"seed": -5}},
            r"study mini: run_overrides \(at run a\): seed must be >= 0, got -5; e.g. seed: 0 in the study's "
            r"run_overrides$",
        ),
        (
            "study-override-seed-negative-past-a-run",
            {
                "run_overrides": {"seed": -5},
                "runs": [
                    {**STUDY["runs"][0], "overrides": {"seed": 0}},
                    {"name": "b", "recipe": "smoke-clm", "evaluate": False},
                ],
            },
            r"study mini: run_overrides \(at run b\): seed must be >= 0, got -5; e.g. seed: 0 in the study's "
            r"run_overrides$",
        ),
        (
            "study-override-lr-nan",
            {"runs": [{**STUDY["runs"][0], "overrides": {"optim.lr": float("nan")}}]},
            r"run a: optim.lr must be a finite number > 0, got nan; e.g. optim.lr: 0.0005 in the run's overrides "
            r"or the study's run_overrides$",
        ),
    ],
    ids=["seed", "seed-past-a-run", "lr"],
)
def test_a_bad_override_names_the_study_files_key_not_a_flag(
    tmp_path, capsys, monkeypatch, case, study, pattern
):
    _refused(tmp_path, capsys, monkeypatch, case, study, pattern)


TWO_RUNS = {
    "runs": [
        {"name": "a", "recipe": "smoke-mlm", "eval_steps": [10]},
        {"name": "b", "recipe": "smoke-clm", "eval_steps": [20]},
        {"name": "b2", "recipe": "smoke-clm", "seed": 1},
    ],
}


@pytest.mark.parametrize(
    "case,study,pattern",
    [
        (
            "study-claim-faster-early-untestable",
            {**TWO_RUNS, "claims": [{"id": "x", "kind": "faster_early", "a": "a", "b": "b", "text": "t"}]},
            r"claim x \(faster_early\) compares a and b at an intermediate checkpoint both are evaluated at, "
            r"and they share none \(eval_steps \[10\] and \[20\]\); give both runs a step in eval_steps$",
        ),
        (
            "study-claim-cka-untestable",
            {**TWO_RUNS, "claims": [{"id": "y", "kind": "cka_low_layers", "a": "a", "b": "b", "text": "t"}]},
            r"claim y \(cka_low_layers\) needs a cka entry with a: a, b: b and noise: \[TWIN, b\], .*; the "
            r"study has no cka entry of them$",
        ),
        (
            "study-claim-cka-without-noise",
            {
                **TWO_RUNS,
                "cka": [{"a": "a", "b": "b"}],
                "claims": [{"id": "y", "kind": "cka_low_layers", "a": "a", "b": "b", "text": "t"}],
            },
            r"claim y \(cka_low_layers\) needs .*; the study has a cka entry of them without noise$",
        ),
        (
            "study-claim-unevaluated-run",
            {
                "runs": [*TWO_RUNS["runs"], {"name": "c", "recipe": "smoke-mlm", "evaluate": False}],
                "claims": [{"id": "z", "kind": "beats", "a": "c", "b": "b", "text": "t"}],
            },
            r"claim z \(beats\) compares the fine-tuned scores of c and b, and c has evaluate: false \(never "
            r"fine-tuned\); set evaluate: true, or drop the claim$",
        ),
        (
            "study-claim-stability-one-lr",
            {
                **TWO_RUNS,
                "eval": {"lrs": [1.0e-4, 5.0e-4]},
                "claims": [{"id": "s", "kind": "more_stable", "a": "a", "b": "b", "text": "t"}],
            },
            r"claim s \(more_stable\) measures the spread of the scores over the fine-tuning LRs in its lr_range "
            r"1e-05 to 0.0001, and eval.lrs \[0.0001, 0.0005\] has only 0.0001 there; give eval.lrs two or more "
            r"LRs in that range, or set lr_range around two of them$",
        ),
        (
            "study-claim-family-not-evaluated",
            {
                **TWO_RUNS,
                "eval": {"tasks": ["tweets", "brown-pos"]},
                "claims": [{"id": "q", "kind": "beats", "a": "a", "b": "b", "family": "qa", "text": "t"}],
            },
            r"claim q \(beats\) compares a and b on QA, and a and b are fine-tuned on no QA task \(tasks: "
            r"tweets, brown-pos\); add a QA task of suite pocket \(squad\) to eval.tasks, or drop the claim$",
        ),
    ],
    ids=["faster-early", "cka-none", "cka-no-noise", "unevaluated", "stability-one-lr", "family"],
)
def test_a_claim_the_study_can_never_test_is_refused_before_anything_is_written(
    tmp_path, capsys, monkeypatch, case, study, pattern
):
    """Were planned, trained, evaluated and then reported "not tested": the runs share no intermediate
    checkpoint, the study runs no CKA (with seed noise) of the claim's runs, it fine-tunes one of them
    on nothing (`evaluate: false`: "c is evaluated on no task ... share no task"), its grid holds one LR
    of a stability claim's range, or no task of a beats claim's family."""
    _refused(tmp_path, capsys, monkeypatch, case, study, pattern)


def test_a_claim_on_a_family_no_task_file_gives_is_refused_before_anything_is_written(
    tmp_path, capsys, monkeypatch
):
    """A study of task files alone whose `beats` claim names a family none of them is: the file's check sees
    a suite's families only, so it was planned, trained, evaluated and reported "not tested"; the task
    files' families are read when the graph is built, before anything is written, and refuse it there."""
    rows = [{"text": f"text number {i}", "label": "ab"[i % 2]} for i in range(40)]
    for split, part in (("train", rows[:30]), ("test", rows[30:])):
        (tmp_path / f"{split}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in part))
    (tmp_path / "mine.yaml").write_text(
        yaml.safe_dump(
            {"name": "mine", "family": "sc", "data": {"train": "train.jsonl", "test": "test.jsonl"}}
        )
    )
    study = {
        **TWO_RUNS,
        "eval": {"suite": None, "task_files": ["mine.yaml"]},
        "claims": [{"id": "t", "kind": "beats", "a": "a", "b": "b", "family": "tc", "text": "t"}],
    }
    pattern = (
        r"study mini: claim t \(beats\) compares a and b on TC, and a and b are fine-tuned on no TC task \(tasks: "
        r"mine\); add a task file of family tc to eval.task_files \(the task files give SC \(mine\) only; "
        r'docs/evaluation.md, "Your own tasks \(task files\)"\), or drop the claim$'
    )
    _refused(tmp_path, capsys, monkeypatch, "study-claim-family-not-in-task-files", study, pattern)


@pytest.mark.parametrize(
    "files,fix",
    [
        (
            {"mine": "sc"},
            r"add a TC task of suite pocket \(wnut16, brown-pos\) to eval.tasks, or a task file of family tc to "
            r"eval.task_files \(the task files give SC \(mine\) only; ",
        ),
        (
            {"mine": "sc", "tags": "tc"},
            r"add a TC task of the task files \(tags\) or of suite pocket \(wnut16, brown-pos\) to eval.tasks, or "
            r"drop the claim$",
        ),
    ],
    ids=["files-of-another-family", "a-file-of-the-family"],
)
def test_a_family_claims_fix_beside_a_suite_tells_the_task_files_from_the_suite(tmp_path, files, fix):
    """With the default suite beside task files: a task file's task was offered as the suite's ("of suite
    pocket (wnut16, brown-pos, tags)"), and with files of another family only the suite's tasks, never a
    task file of the family, were offered."""
    write_texts(tmp_path)
    for name, family in files.items():
        data = {"train": "train.jsonl", "test": "test.jsonl"}
        (tmp_path / f"{name}.yaml").write_text(yaml.safe_dump({"name": name, "family": family, "data": data}))
    study = {
        **STUDY,
        **TWO_RUNS,
        "eval": {"task_files": [f"{n}.yaml" for n in files], "tasks": ["mine"]},
        "claims": [{"id": "t", "kind": "beats", "a": "a", "b": "b", "family": "tc", "text": "t"}],
    }
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(study, sort_keys=False))
    spec = load_study_file(tmp_path / "s.yaml")
    # the graph's backend as `study_tasks` reads it: the suite's and the task files' {task: family}
    backend = SimpleNamespace(file_tasks=lambda _: files, suite_tasks=suite_families)
    with pytest.raises(UserError, match=r"fine-tuned on no TC task \(tasks: mine\); " + fix):
        study_tasks(spec, backend)


@pytest.mark.parametrize("name", ["paper1-pfs", "paper2-detour"])
def test_built_in_studies_claims_are_testable_as_their_files(tmp_path, name):
    """A built-in study written out as its yaml (`study show`) loads: its claims are all testable."""
    write_texts(tmp_path)
    (tmp_path / "s.yaml").write_text(dump_study(get_study(name, "demo")))
    assert load_study_file(tmp_path / "s.yaml").claims


def test_the_demos_file_leaves_out_the_claims_its_scale_cannot_test_and_says_how_to_test_them(tmp_path):
    """The demo's one LR cannot test the stability claim, its tasks no QA claim: its built-in report says
    so, and its file (`study show`) loads without them. Each follows the study as a comment naming the fix;
    made, the claims added back load."""
    spec = get_study("paper1-pfs", "demo")
    text = dump_study(spec)
    (tmp_path / "demo.yaml").write_text(text)
    loaded = load_study_file(tmp_path / "demo.yaml")
    assert {c.id for c in spec.claims} - {c.id for c in loaded.claims} == {"mlm-qa", "clm-stable"}
    assert (
        "fine-tuned on no QA task (tasks: tweets, brown-pos); add a QA task of suite pocket (squad)" in text
    )
    assert "eval.lrs [0.0005] has only 0.0005 there; give eval.lrs two or more LRs in that range" in text
    study = yaml.safe_load(text)
    # the comment's claims, uncommented, with the fixes it names: the file loads with every claim
    left_out = [line.removeprefix("#     ") for line in text.splitlines() if line.startswith("#     ")]
    study["claims"] += yaml.safe_load("\n".join(left_out))
    study["eval"]["tasks"].append("squad")
    study["eval"]["lrs"] = [1.0e-4, 5.0e-4]
    (tmp_path / "fixed.yaml").write_text(yaml.safe_dump(study, sort_keys=False))
    assert {c.id for c in load_study_file(tmp_path / "fixed.yaml").claims} == {c.id for c in spec.claims}
