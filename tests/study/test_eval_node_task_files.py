"""An eval node of a study with several task files loads only the files of the tasks it runs.

Each eval node's config named all the study's task files (`EvalNode.task_files`, in its key; now those
holding its tasks alone, tests/study/test_task_file_added_keys.py), and `nodes.run_eval` loaded every one of them (`needs.file_tasks`) to register its own task: one full load
per file per node, a hub dataset's or a BEIR corpus's too. Now it reads the other files' specs alone
(`custom.load_task_files(only=...)`), with the keys unchanged (tests/study/golden_keys.py). Counted by the
folders whose data is read, not timed. The fine-tuning itself is a stand-in: what is counted is the loading.
"""

from __future__ import annotations

import dataclasses

import pytest
from fake_study import backend as fake_backend
from fake_study import small_spec
from tests.study.study_fixtures import polarity_task_file

import encoderlab.eval as evaluation
import encoderlab.eval.tasks.custom as custom
from encoderlab.eval.tasks import TASKS
from encoderlab.study import nodes
from encoderlab.study.graph import build_graph
from encoderlab.study.needs import file_tasks
from encoderlab.study.runner import NodeContext


def _spec(tmp_path):
    """Two task files in folders of their own, tasks `polarity` (in a/) and `polarity-b` (in b/)."""
    files = []
    for folder, name in (("a", "polarity"), ("b", "polarity-b")):
        (tmp_path / folder).mkdir()
        polarity_task_file(tmp_path / folder)
        spec_file = tmp_path / folder / "polarity.yaml"
        spec_file.write_text(spec_file.read_text().replace("name: polarity\n", f"name: {name}\n"))
        files.append(str(spec_file))
    ev = dataclasses.replace(small_spec().eval, suite=None, lrs=(1e-4,), seeds=(0,), task_files=tuple(files))
    return small_spec(eval=ev, claims=(), cka=())


@dataclasses.dataclass
class _Record:
    task: str


def _loaded_by_run_eval(tmp_path, monkeypatch, node) -> list[str]:
    """The folders whose task file's data `run_eval` read for `node` (the fine-tuning a stand-in)."""
    loaded: list[str] = []
    real = custom.load_splits  # a task file's data read, by its folder

    def counted(data, base, *args, **kwargs):
        loaded.append(base.name)
        return real(data, base, *args, **kwargs)

    monkeypatch.setattr(custom, "load_splits", counted)
    monkeypatch.setattr(nodes, "model_source", lambda ctx: "model")
    monkeypatch.setattr(nodes, "_eval_model", lambda *args: None)
    monkeypatch.setattr(evaluation, "eval_node", lambda em, task, *a, **k: _Record(task=TASKS[task].name))
    ctx = NodeContext(node=node, out_dir=tmp_path / "out", inputs={}, study_dir=tmp_path, spec=small_spec())
    assert nodes.run_eval(ctx) == {"task": node.config["task"]}
    return loaded


@pytest.mark.parametrize("task, folder", [("polarity", "a"), ("polarity-b", "b")])
def test_an_eval_node_loads_only_the_task_file_of_its_task(tmp_path, monkeypatch, task, folder):
    spec = _spec(tmp_path)
    backend = fake_backend()
    backend.file_tasks = file_tasks  # the real loader
    node = next(n for n in build_graph(spec, backend) if n.kind == "eval" and n.config["task"] == task)
    TASKS.pop("polarity"), TASKS.pop("polarity-b")  # a worker process starts with neither registered
    assert _loaded_by_run_eval(tmp_path, monkeypatch, node) == [folder]  # was ["a", "b"]
    assert task in TASKS and len({"polarity", "polarity-b"} & set(TASKS)) == 1


def test_a_node_that_scores_another_task_of_its_run_loads_that_tasks_file_too(tmp_path, monkeypatch):
    """A node fine-tuning for several tasks (`EvalNode.also`) registers each of them."""
    spec = _spec(tmp_path)
    backend = fake_backend()
    backend.file_tasks = file_tasks
    node = next(n for n in build_graph(spec, backend) if n.kind == "eval" and n.config["task"] == "polarity")
    TASKS.pop("polarity"), TASKS.pop("polarity-b")
    both = sorted({n.config["task_files"][0] for n in build_graph(spec, backend) if n.kind == "eval"})
    shared = dataclasses.replace(node, config={**node.config, "also": ["polarity-b"], "task_files": both})
    assert sorted(_loaded_by_run_eval(tmp_path, monkeypatch, shared)) == ["a", "b"]
