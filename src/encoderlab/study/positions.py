"""A study's position checks: each model's positions against what it is given, before anything runs.

A pretraining run's rows against its start model (`check_start_models`), a CKA's `max_length` and an
eval task's against the models they read (`check_cka_lengths`, `check_eval_lengths`), each in the line
its node gives, which gave it only when its turn came, hours into a study. A start model's positions
come from its config alone (`train.start.start_positions` -> `model.sources.max_positions`): a folder, a
fetched asset, a hub id's mirror or its snapshot in the local hub cache, and at `study run` a hub id
in none of these has its configs (never its weights) downloaded first (`fetch`: `checks.check_start`
passes the start models a node still to run reads). `study plan` passes none: it asks no hub, so a
hub id it finds nowhere on this machine is checked by the node. Split from `checks.py`, which runs
these through `check_runs`.
"""

from __future__ import annotations

from encoderlab.errors import UserError
from encoderlab.study.graph import Node, Pretraining, pretraining
from encoderlab.study.spec import StudySpec


def check_start_models(
    spec: StudySpec, models: list[Pretraining] | None = None, fetch: frozenset[str] = frozenset()
) -> dict[str, int | None]:
    """Refuse a run whose start model (an asset, a folder, a hub id's mirror or local hub cache snapshot,
    or another run of the study on other data) has fewer positions than the run's rows, in one line naming
    the fix, before the study writes anything: the pretraining node would refuse it only when its turn
    came, hours into the study (after its base trained). A hub id in `fetch` (`study run`'s) has its
    configs downloaded for that, never its weights (`model.sources.max_positions`); a start model whose config
    is not on this machine otherwise (a hub id at `study plan`, which asks no hub) is checked by the node,
    before it trains. Returns the positions of each model trained (model id -> positions, None where not
    known yet)."""
    from encoderlab.train.start import scratch_positions, start_positions

    limits: dict[str, int | None] = {}  # model id -> the positions of the model it trains
    for p in pretraining(spec) if models is None else models:
        if p.config is None:
            continue
        init, seq_len = p.config.model.init, p.config.layout.seq_len
        if p.base is not None:  # another run of the study: the positions it was built with
            init, limit = f"run {p.base}'s final model", limits[p.base]
        else:
            limit = start_positions(init, init in fetch) if init else scratch_positions(seq_len)
        limits[p.model] = limit
        if limit is not None and limit < seq_len:
            raise UserError(
                f"study {spec.name}: run {p.run.name} starts from {init}, which accepts {limit} tokens, but "
                f"its rows are {seq_len} tokens; give run {p.run.name} `params: {{seq_len: {limit}}}` "
                "(and a global_batch of as many more rows, to keep its tokens per step)"
            )
    return limits


def check_cka_lengths(
    spec: StudySpec, limits: dict[str, int | None], fetch: frozenset[str] = frozenset()
) -> None:
    """Refuse a CKA whose `max_length` is more than a model it compares takes (`limits`: model id ->
    positions, `check_start_models`), in `analyze cka`'s words (`analysis.inputs.bounded_length`),
    before anything runs: the node failed with a traceback after every run had trained. The default
    512 is capped at the models' positions there, as `analyze cka`'s is (a model continued from a
    128-position one compares at 128). A run without a recipe is its start model, compared as is (`fetch`:
    as `check_start_models`)."""
    from encoderlab.analysis.inputs import bounded_length
    from encoderlab.study.graph import run_id
    from encoderlab.study.spec import CkaSpec
    from encoderlab.train.start import start_positions

    for c in spec.cka:
        runs = map(spec.run, (c.a, c.b, *(c.noise or ())))
        known = [
            limits.get(run_id(r, spec.seeds_of(r)[0], spec))
            if r.recipe
            else start_positions(r.init, r.init in fetch)
            for r in runs
            if r.recipe or r.init
        ]
        known = [n for n in known if n is not None]
        if known and c.max_length != CkaSpec.max_length:
            try:
                bounded_length(c.max_length, min(known), "max_length")
            except UserError as exc:
                raise UserError(f"study {spec.name}, cka {c.a}-vs-{c.b}: {exc}") from None


def check_eval_lengths(
    spec: StudySpec, nodes: list[Node], limits: dict[str, int | None], fetch: frozenset[str] = frozenset()
) -> None:
    """Refuse, before anything runs, an eval node whose task outgrows its model's positions (`eval`'s line);
    a start model evaluated as is is read as `check_start_models` reads it (`fetch` too)."""
    from encoderlab.eval.taskruns import check_positions
    from encoderlab.eval.tasks.registry import TASKS  # a real study's tasks (`check_finetune_decay`)
    from encoderlab.study.nodeconfig import EvalNode
    from encoderlab.train.start import start_positions

    evals = {(e.model, e.source, e.task) for e in (EvalNode.of(n) for n in nodes if n.kind == "eval")}
    for model, source, task in sorted((e for e in evals if e[2] in TASKS), key=lambda e: (e[0], e[2])):
        positions = (
            limits[model] if model in limits else start_positions(source, source in fetch) if source else None
        )
        try:
            check_positions(TASKS[task], positions, "eval.tasks")
        except UserError as exc:
            raise UserError(f"study {spec.name}, evaluating {model}: {exc}") from None
