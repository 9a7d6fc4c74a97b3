"""A study's IR evaluation trains the MS MARCO retriever once per (model, LR, seed): the MS MARCO node
fine-tunes and scores NQ and MLDR too (`EvalNode.also`); the NQ and MLDR nodes depend on it and take
their records (`EvalNode.trained_by`), predictions included."""

from __future__ import annotations

from tests.eval import hub_fixtures as hub
from tests.eval.fixtures import model_folder

from encoderlab.eval import protocol
from encoderlab.eval.spec import FinetuneConfig
from encoderlab.study.catalog import get_study
from encoderlab.study.graph import Node, build_graph
from encoderlab.study.nodeconfig import EvalNode
from encoderlab.study.nodes import real_backend, run_eval
from encoderlab.study.runner import NodeContext, NodeOutput

IR = hub.PAPER_IR


def test_the_paper_graph_trains_each_retriever_once():
    graph = build_graph(get_study("paper1-pfs", "gpu-210m"), real_backend())
    prefix = "eval/mlm20/{}/lr2e-05/s3"
    msmarco, nq, mldr = (graph.nodes[prefix.format(t)] for t in IR)
    assert EvalNode.of(msmarco).also == ("paper-nq", "paper-mldr") and msmarco.deps == ("pretrain/mlm20",)
    for follower in (nq, mldr):
        assert EvalNode.of(follower).trained_by == "paper-msmarco" and follower.deps == (msmarco.name,)
    other = graph.nodes["eval/mlm20/paper-sst2/lr2e-05/s3"]  # other tasks: as before
    assert "also" not in other.config and "trained_by" not in other.config
    trainers = [n for n in graph if n.kind == "eval" and EvalNode.of(n).also]
    followers = [n for n in graph if n.kind == "eval" and EvalNode.of(n).trained_by]
    assert len(followers) == 2 * len(trainers) and trainers


def test_follower_nodes_take_the_trainers_records(tmp_path, monkeypatch):
    hub.use_paper_ir(tmp_path, monkeypatch, FinetuneConfig(batch_size=8, micro_batch_size=8, max_steps=4))
    runs, real = [], protocol.run_one
    monkeypatch.setattr(protocol, "run_one", lambda *a, **k: runs.append(a[0].name) or real(*a, **k))
    model = str(model_folder(tmp_path / "model"))

    def node(task, **extra):
        cfg = EvalNode(model="m", source=model, step=None, suite="paper", task=task, task_signature="",
                       family="ir", lr=1e-3, seed=0, max_steps=None, **extra)  # fmt: skip
        return Node(
            "eval",
            f"eval/m/{task}/lr0.001/s0",
            cfg.data(),
            deps=("eval/m/paper-msmarco/lr0.001/s0",) if extra.get("trained_by") else (),
        )

    def ctx(n, inputs=None):
        out = tmp_path / n.name.replace("/", "_")
        out.mkdir()
        return NodeContext(node=n, out_dir=out, inputs=inputs or {}, study_dir=tmp_path, spec=None)

    trainer = node("paper-msmarco", also=("paper-nq", "paper-mldr"))
    trainer_ctx = ctx(trainer)
    result = run_eval(trainer_ctx)
    assert runs == ["paper-msmarco"] and result["task"] == "paper-msmarco"
    inputs = {trainer.name: NodeOutput(path=trainer_ctx.out_dir, result=result, node=trainer)}
    for task in ("paper-nq", "paper-mldr"):
        follower = ctx(node(task, trained_by="paper-msmarco"), inputs)
        record = run_eval(follower)
        assert record["task"] == task and record["model"] == result["model"] and runs == ["paper-msmarco"]
        assert (follower.out_dir / record["predictions"]).read_text() == (
            trainer_ctx.out_dir / record["predictions"]
        ).read_text()
        mine = protocol.ResultsStore(follower.out_dir / protocol.RESULTS).records
        assert [r.task for r in mine.values()] == [task]
