"""Adding a task file to a study, or listing its task files in another order, keeps the keys of the
evaluations of the tasks already there.

Each eval node's key named every task file of the study in the study's order (`EvalNode.task_files`), so a
user who added a second task file to a finished study (or sorted the list) saw every evaluation of the
first file's task run again, though its task, model and protocol were unchanged and its run loads only the
files of its own tasks. Now the key names the entries holding the node's tasks alone (`evalnodes._files_of`).
The datasets are not decontaminated here: a new task file's test texts otherwise change the prepared data,
and so every run and evaluation, by design (docs/studies.md).
"""

from __future__ import annotations

import dataclasses

from fake_study import backend as fake_backend
from fake_study import small_spec
from tests.study.study_fixtures import polarity_task_file

from encoderlab.study.graph import build_graph
from encoderlab.study.needs import file_tasks


def _task_files(tmp_path) -> dict[str, str]:
    """{task: its file}: `polarity` in a/, `polarity-b` in b/."""
    files = {}
    for folder, name in (("a", "polarity"), ("b", "polarity-b")):
        (tmp_path / folder).mkdir()
        polarity_task_file(tmp_path / folder)
        spec_file = tmp_path / folder / "polarity.yaml"
        spec_file.write_text(spec_file.read_text().replace("name: polarity\n", f"name: {name}\n"))
        files[name] = str(spec_file)
    return files


def _eval_keys(files: tuple[str, ...], task: str) -> dict[str, str]:
    """{node name: key} of the eval nodes of `task` in the small study scored on these task files."""
    base = small_spec()
    ev = dataclasses.replace(base.eval, suite=None, lrs=(1e-4,), seeds=(0,), task_files=files)
    data = tuple(dataclasses.replace(d, decontaminate=False) for d in base.data)
    backend = fake_backend()
    backend.file_tasks = file_tasks  # the real loader
    graph = build_graph(small_spec(eval=ev, data=data, claims=(), cka=()), backend)
    return {n.name: n.key for n in graph if n.kind == "eval" and n.config["task"] == task}


def test_adding_a_task_file_keeps_the_other_files_evaluations(tmp_path):
    files = _task_files(tmp_path)
    alone = _eval_keys((files["polarity"],), "polarity")
    assert alone
    assert _eval_keys((files["polarity"], files["polarity-b"]), "polarity") == alone  # every key was new
    assert _eval_keys((files["polarity-b"], files["polarity"]), "polarity") == alone  # and reordered


def test_an_eval_node_names_the_file_of_its_task(tmp_path):
    files = _task_files(tmp_path)
    base = small_spec()
    ev = dataclasses.replace(base.eval, suite=None, lrs=(1e-4,), seeds=(0,), task_files=tuple(files.values()))
    backend = fake_backend()
    backend.file_tasks = file_tasks
    graph = build_graph(small_spec(eval=ev, claims=(), cka=()), backend)
    named = {n.config["task"]: n.config["task_files"] for n in graph if n.kind == "eval"}
    assert named == {task: [path] for task, path in files.items()}
