"""A rerun of `encoderlab eval` says what it reuses: the grid's runs already in `--out` (an extra LR or
seed, a resumed sweep), and a task whose data changed since its earlier runs, which are not reused. Before,
it said neither: a changed task file cost the whole grid again without a word, a resume looked like a run."""

from __future__ import annotations

import json

import pytest
from tests.eval.fixtures import model_folder, run_cli, sentiment_files, write_task_file

from encoderlab.eval.tasks import TASKS

pytestmark = pytest.mark.usefixtures("isolated_tasks")


def _cells(out) -> list[tuple]:
    rows = map(json.loads, (out / "results.jsonl").read_text().splitlines())
    return sorted((r["task_signature"], r["lr"], r["seed"]) for r in rows)


def test_a_rerun_says_which_runs_it_reuses_and_which_task_changed(tmp_path, capsys):
    spec = {**sentiment_files(tmp_path), "max_length": 32, "finetune": {"max_steps": 2, "batch_size": 8}}
    spec["finetune"]["micro_batch_size"] = 8
    task = write_task_file(tmp_path, name="mine", **spec)
    out = tmp_path / "e"
    argv = ["eval", str(model_folder(tmp_path / "m")), "--task-file", str(task), "--out", str(out)]
    argv += ["--device", "cpu", "--lrs", "1e-3"]
    code, said, _ = run_cli([*argv, "--seeds", "0"], capsys)
    assert code == 0 and "reusing" not in said and "earlier run" not in said, said
    first = _cells(out)

    code, said, _ = run_cli([*argv, "--seeds", "0", "1"], capsys)  # one seed more
    results = out / "results.jsonl"
    assert code == 0 and said.splitlines()[0] == (
        f"reusing 1 of 2 runs (task x LR x seed) already in {results}; they are not fine-tuned again"
    ), said
    signature = first[0][0]
    assert _cells(out) == [(signature, 1e-3, 0), (signature, 1e-3, 1)]  # seed 0 kept, not run again

    header, first, *rest = (tmp_path / "test.csv").read_text().splitlines()
    text, label = first.rsplit(",", 1)  # one test label flipped: the same command, other data
    flipped = f"{text},{'negative' if label == 'positive' else 'positive'}"
    (tmp_path / "test.csv").write_text("\n".join([header, flipped, *rest]) + "\n")
    code, said, _ = run_cli([*argv, "--seeds", "0", "1"], capsys)
    assert code == 0 and "reusing" not in said, said
    assert said.splitlines()[0] == (
        f"mine: 2 earlier runs in {results} were of another version of the task (its data, settings or "
        "scoring changed since): not reused, kept in the file outside the summary"
    ), said
    assert len(_cells(out)) == 4 and {c[0] for c in _cells(out)} - {signature}  # run again, under a new key


def test_a_call_with_another_task_file_says_the_earlier_one_leaves_the_summary(tmp_path, capsys):
    """Built-in tasks evaluated earlier into --out stay in its summary; a task file's cannot (its spec is
    not known without the file), and its results left summary.md without a word."""
    spec = {**sentiment_files(tmp_path), "max_length": 32}
    spec["finetune"] = {"max_steps": 1, "batch_size": 8, "micro_batch_size": 8}
    first = write_task_file(tmp_path, "a.yaml", name="first", **spec)
    second = write_task_file(tmp_path, "b.yaml", name="second", **spec)
    out = tmp_path / "e"
    argv = ["eval", str(model_folder(tmp_path / "m")), "--out", str(out), "--device", "cpu", "--lrs", "1e-3"]
    argv += ["--seeds", "0", "--task-file"]
    assert run_cli([*argv, str(first)], capsys)[0] == 0
    TASKS.pop("first")  # registered by this process's first call; a new `encoderlab eval` process knows none
    code, said, _ = run_cli([*argv, str(second)], capsys)
    assert code == 0 and said.splitlines()[0] == (
        f"first: 1 earlier run in {out / 'results.jsonl'} of a task file not given now: kept in the file, "
        "outside the summary; give that --task-file again to summarise it"
    ), said
    assert list(json.loads((out / "summary.json").read_text())["tasks"]) == ["second"]


def test_a_second_models_call_into_an_out_is_refused_before_writing(tmp_path, capsys):
    """summary.md and summary.json are one model's: a second model's call replaced the first's without a
    word while results.jsonl kept both. It is refused in one line naming the fix, the folder untouched,
    and `--check` says the same."""
    spec = {**sentiment_files(tmp_path), "max_length": 32}
    spec["finetune"] = {"max_steps": 1, "batch_size": 8, "micro_batch_size": 8}
    task = write_task_file(tmp_path, name="mine", **spec)
    out = tmp_path / "e"
    tail = ["--task-file", str(task), "--out", str(out), "--device", "cpu", "--lrs", "1e-3", "--seeds", "0"]
    first = model_folder(tmp_path / "a", seed=0)
    assert run_cli(["eval", str(first), *tail], capsys)[0] == 0
    before = {p.name: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    second = model_folder(tmp_path / "b", seed=1)
    for check in ([], ["--check"]):
        TASKS.pop("mine", None)  # a new `encoderlab eval` process knows no task file's task
        code, said, err = run_cli(["eval", str(second), *tail, *check], capsys)
        assert code == 2 and said == "", said
        assert err.strip() == (
            f"encoderlab: error: {out} holds another model's evaluation ({first}, fingerprint "
            f"{json.loads((out / 'results.jsonl').read_text().splitlines()[0])['model'][:12]}) and its summaries "
            f"are one model's; give {second} a new --out (one per model)"
        ), err
        assert {p.name: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
    TASKS.pop("mine", None)
    assert run_cli(["eval", str(first), *tail], capsys)[0] == 0  # the first model's own rerun still runs

    # a folder an older version evaluated both models into: `export --eval` says to rerun the one exported
    # into it, which is let through (its runs cached, it only rewrites the summary)
    TASKS.pop("mine", None)
    own = tmp_path / "own"
    assert run_cli(["eval", str(second), *tail[:2], "--out", str(own), *tail[4:]], capsys)[0] == 0
    with open(out / "results.jsonl", "a") as f:
        f.write((own / "results.jsonl").read_text())
    TASKS.pop("mine", None)
    code, said, _ = run_cli(["eval", str(second), *tail], capsys)
    assert code == 0 and said.startswith("reusing 1 of 1 run"), said
    assert json.loads((out / "summary.json").read_text())["source"] == str(second)


def test_evaluate_from_python_refuses_another_models_out_without_cutting_its_torn_line(tmp_path, capsys):
    """`evaluate` opened results.jsonl to repair it (cutting a torn last line) before it checked whose it was:
    another model's folder, refused, lost its last bytes all the same. It is checked first, unchanged."""
    from encoderlab.errors import UserError
    from encoderlab.eval import evaluate

    spec = {**sentiment_files(tmp_path), "max_length": 32}
    spec["finetune"] = {"max_steps": 1, "batch_size": 8, "micro_batch_size": 8}
    task = write_task_file(tmp_path, name="mine", **spec)
    out = tmp_path / "e"
    tail = ["--task-file", str(task), "--out", str(out), "--device", "cpu", "--lrs", "1e-3", "--seeds", "0"]
    assert run_cli(["eval", str(model_folder(tmp_path / "a", seed=0)), *tail], capsys)[0] == 0
    with open(out / "results.jsonl", "a") as f:
        f.write('{"model": "torn')  # a crash mid-write of the first model's next run
    before = (out / "results.jsonl").read_bytes()
    with pytest.raises(UserError, match="holds another model's evaluation"):
        evaluate(str(model_folder(tmp_path / "b", seed=1)), suite=None, tasks=["mine"], lrs=[1e-3], seeds=[0],
                 out=out, device="cpu", progress=False)  # fmt: skip
    assert (out / "results.jsonl").read_bytes() == before
