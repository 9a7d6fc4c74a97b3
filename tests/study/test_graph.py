"""Graph expansion: content-hash keys, controlled variables, bad specs."""

from __future__ import annotations

from dataclasses import replace

import pytest
from fake_study import backend, small_spec

from encoderlab.errors import UserError
from encoderlab.study.graph import build_graph
from encoderlab.study.spec import DataSpec, EvalSpec, RunSpec


def _keys(spec):
    return {n.name: n.key for n in build_graph(spec, backend())}


def test_grid_expands_every_model_checkpoint_task_lr_and_seed():
    spec = small_spec()
    graph = build_graph(spec, backend())
    kinds = [n.kind for n in graph]
    # 5 runs x 4 tasks x 2 LRs x 3 seeds for final models, plus 2 runs with one checkpoint x 4 tasks x 1 LR x 3 seeds
    assert kinds.count("eval") == 5 * 4 * 2 * 3 + 2 * 4 * 1 * 3
    assert kinds.count("pretrain") == 5 and kinds.count("prepare") == 1 and kinds.count("cka") == 1
    assert (
        kinds[-1] == "report" and len(graph.nodes["report"].deps) == len(graph) - 2
    )  # all but prepare and itself
    order = list(graph.nodes)
    for node in graph:  # insertion order is topological
        assert all(order.index(d) < order.index(node.name) for d in node.deps)


def test_keys_are_stable_and_change_only_downstream_of_a_change():
    spec = small_spec()
    assert _keys(spec) == _keys(small_spec())
    more_seeds = _keys(replace(spec, eval=replace(spec.eval, seeds=(0, 1, 2, 3))))
    before = _keys(spec)
    assert all(more_seeds[n] == k for n, k in before.items() if not n.startswith(("eval", "report")))
    assert all(more_seeds[n] == k for n, k in before.items() if n.startswith("eval"))  # old eval nodes reused
    new_data = _keys(replace(spec, data=(DataSpec(name="main", corpus=("fake",), seed=1),)))
    assert all(new_data[n] != k for n, k in before.items())  # a data seed changes everything


def test_token_budget_mismatch_in_a_group_is_refused():
    spec = small_spec()
    runs = tuple(replace(r, steps=50) if r.name == "clm" else r for r in spec.runs)
    with pytest.raises(UserError, match=r"group 'main' have different token budgets \(.*clm: 12,800") as exc:
        build_graph(replace(spec, runs=runs), backend())
    # the line names the fix below as well: a ladder's rungs (advise's fix, copies at other `steps`) differ in
    # budget on purpose, and the line said only "align their steps"
    assert str(exc.value).endswith(
        "or give the runs of each budget a `group:` of their own (a ladder's rungs)"
    )
    # the same change in its own group is fine: nothing compares it
    runs = tuple(replace(r, steps=50, group="solo") if r.name == "clm" else r for r in spec.runs)
    build_graph(replace(spec, runs=runs), backend())


def test_compared_runs_must_read_the_same_data():
    spec = small_spec()
    data = (*spec.data, DataSpec(name="other", corpus=("fake",), seed=7))
    runs = tuple(replace(r, data="other") if r.name == "clm" else r for r in spec.runs)
    with pytest.raises(UserError, match="mlm40 and clm are compared .* read different data"):
        build_graph(replace(spec, data=data, runs=runs), backend())


def test_unknown_task_and_init_cycle_are_one_line_errors():
    spec = small_spec()
    with pytest.raises(
        UserError,
        match="names a task not in suite 'fake' \\(eval.tasks: nope\\); valid: sst, mnli, ner, squad",
    ):
        build_graph(replace(spec, eval=EvalSpec(suite="fake", tasks=("nope",))), backend())
    runs = (
        RunSpec(name="a", recipe="pfs-mlm", init="b"),
        RunSpec(name="b", recipe="pfs-mlm", init="a"),
    )
    with pytest.raises(UserError, match="cycle"):
        build_graph(replace(spec, runs=runs, baseline="a", cka=(), claims=()), backend())


def test_unknown_tasks_of_a_run_or_of_the_checkpoints_are_refused_before_the_study_folder(tmp_path):
    """Were accepted: the study made its folder and pretrained, and the first eval node of the run (or of
    its intermediate checkpoint) stopped the study with "unknown task 'nope'"."""
    from encoderlab.study.runner import run_study

    spec = small_spec()
    runs = tuple(replace(r, tasks=("sst", "nope")) if r.name == "mlm20" else r for r in spec.runs)
    bad = replace(spec, runs=runs, eval=replace(spec.eval, checkpoint_tasks=("ner", "sts")))
    with pytest.raises(UserError) as err:
        run_study(bad, tmp_path / "s", backend(), progress=False)
    assert str(err.value) == (
        "study fake-pfs names tasks not in suite 'fake' (eval.checkpoint_tasks: sts; run mlm20: nope); "
        "valid: sst, mnli, ner, squad"
    )
    assert not (tmp_path / "s").exists()


def test_continued_runs_depend_on_their_base():
    spec = small_spec()
    runs = (*spec.runs, RunSpec(name="cpt", recipe="pfs-mlm", init="clm", group="cpt"))
    graph = build_graph(replace(spec, runs=runs), backend())
    assert graph.nodes["pretrain/cpt"].deps == ("prepare/main", "pretrain/clm")
    assert graph.nodes["pretrain/cpt"].config["run"]["model"]["init"] == ""  # a run of the study is an input


def test_a_run_not_evaluated_gets_no_eval_nodes_but_still_feeds_cka():
    spec = small_spec()
    runs = tuple(replace(r, evaluate=False) if r.name == "mlm40-s2" else r for r in spec.runs)
    graph = build_graph(replace(spec, runs=runs), backend())
    assert not [n for n in graph if n.kind == "eval" and n.config["model"] == "mlm40-s2"]
    assert [n for n in graph if n.kind == "eval" and n.config["model"] == "mlm40"]
    assert "pretrain/mlm40-s2" in graph.nodes["cka/clm-vs-mlm40"].deps


def test_a_dataset_reusing_anothers_tokenizer_is_prepared_after_it_and_keyed_by_it():
    spec = small_spec()
    general = replace(spec.data[0], name="general")
    domain = DataSpec(name="domain", corpus=("biomed",), tokenizer="general")
    runs = (*spec.runs, RunSpec(name="cont", recipe="cpt-mlm", init="mlm40", data="domain", group="domain"))
    runs = tuple(replace(r, data="general") if r.data == "main" else r for r in runs)
    spec = replace(spec, data=(domain, general), runs=runs)  # listed before its tokenizer's dataset
    graph = build_graph(spec, backend())
    order = list(graph.nodes)
    assert graph.nodes["prepare/domain"].deps == ("prepare/general",)
    assert order.index("prepare/general") < order.index("prepare/domain")
    other = replace(spec, data=(domain, replace(general, vocab_size=4096)))
    assert build_graph(other, backend()).nodes["prepare/domain"].key != graph.nodes["prepare/domain"].key


@pytest.mark.parametrize("tokenizer", ["minilm", "domain"])
def test_reusing_the_tokenizer_of_a_dataset_that_trains_none_is_refused(tokenizer):
    spec = small_spec()
    general = replace(spec.data[0], tokenizer=tokenizer)
    domain = DataSpec(name="domain", corpus=("biomed",), tokenizer="main")
    with pytest.raises(UserError, match="reuses the tokenizer of dataset main, which trains none"):
        replace(spec, data=(general, domain))


def test_a_dataset_named_like_its_tokenizer_asset_reuses_nothing():
    spec = small_spec()
    minilm = replace(spec.data[0], name="minilm", tokenizer="minilm")  # paper1-cpt's dataset "minilm"
    runs = tuple(replace(r, data="minilm") for r in spec.runs)
    graph = build_graph(replace(spec, data=(minilm,), runs=runs), backend())
    assert graph.nodes["prepare/minilm"].deps == ()


def test_a_run_starting_from_itself_is_named_as_such():
    """It read "runs a start from each other in a cycle", naming one run as a cycle of several."""
    runs = (RunSpec(name="a", recipe="pfs-mlm", init="a"),)
    with pytest.raises(UserError, match=r"^run a starts from itself \(init: a\); start it from another run"):
        build_graph(replace(small_spec(), runs=runs, baseline="a", cka=(), claims=()), backend())


def test_graph_and_plan_from_a_shared_resolution_are_those_of_their_own():
    """`study list` and `study plan` resolve the pretraining once (`trained=`) for the graph and the plan:
    the same nodes, keys and plan as each resolving it itself."""
    from encoderlab.study.graph import pretraining
    from encoderlab.study.plan import plan_study

    spec = small_spec()
    trained = pretraining(spec)
    assert {n.name: n.key for n in build_graph(spec, backend(), trained)} == _keys(spec)
    assert plan_study(spec, trained=trained) == plan_study(spec)


def test_lrs_alike_to_6_digits_get_their_own_eval_nodes():
    """Two LRs alike to `:g`'s 6 digits were one node name (`.../lr1e-05/s0`): the second LR's node replaced
    the first's, so that LR never ran. Named as eval's predictions files (`words.lr_text`)."""
    near = 1.0000001e-5
    spec = small_spec()
    spec = replace(spec, eval=replace(spec.eval, lrs=(1e-5, near), checkpoint_lrs=()))
    graph = build_graph(spec, backend())
    lrs = {n.config["lr"] for n in graph if n.kind == "eval" and n.name.endswith("/s0")}
    assert lrs == {1e-5, near}
    assert any(n.name.endswith(f"/lr{near!r}/s0") for n in graph)
    assert any(n.name.endswith("/lr1e-05/s0") for n in graph)  # a usual LR's name is unchanged
