"""The caveats a claim's sentence carries: runs that diverged or are still on the unigram plateau (final
models, or a faster_early claim's checkpoint where the runs logged a held-out loss at its step), models
whose score on a compared task is the label prior's (degenerate predictions), and fine-tuning runs not
finished yet (`results.check_claims` appends them)."""

from __future__ import annotations

import math

from encoderlab.eval.degenerate import TAGGER_RULE
from encoderlab.jsonlines import finite_number
from encoderlab.paths import typed
from encoderlab.study.data import StudyData
from encoderlab.study.spec import ClaimSpec
from encoderlab.words import count_of


def claim_ids(data: StudyData, claim: ClaimSpec) -> set[str]:
    """The model ids of both runs of a claim, at every pretraining seed."""
    return {*data.model_ids(claim.a).values(), *data.model_ids(claim.b).values()}


PLATEAU_MARGIN = 0.1
"""Nats: a run whose final held-out loss (the lower of CLM and MLM at 15%, mean over its pretraining
seeds) is within this of its data's unigram entropy has learned little beyond token frequencies (the
demo's MLM-40 ended 0.04 nats below it; CLM on the same tokens 1.2 nats below)."""


_YARDSTICKS = ("val/clm", "val/mlm15")
"""The held-out losses every run is scored on, whatever its objective (`train/validation.py`)."""


def _diverged(data: StudyData, run: str) -> list[dict]:
    """{"seed", "step", "losses"} of each of `run`'s final models whose held-out losses (`losses`, the
    `val/*` names) are not finite: null in validation.json, or NaN/inf in one written before 2026-12-04."""
    out = []
    for seed, model in data.model_ids(run).items():
        scored = data.held_out.get(model, {})
        bad = [k for k, v in scored.items() if k.startswith("val/") and (v is None or not math.isfinite(v))]
        if bad:
            out.append({"seed": seed, "step": scored.get("step"), "losses": sorted(bad)})
    return out


def _said_diverged(data: StudyData, run: str, models: list[dict]) -> str:
    """ "MLM-40 diverged: its held-out loss is not finite (val/clm and val/mlm15 at step 120)"."""
    seeds = len(data.model_ids(run)) > 1
    where = "; ".join(
        f"{'pretraining seed ' + str(m['seed']) + ': ' if seeds else ''}{' and '.join(m['losses'])} at step "
        f"{m['step'] if m['step'] is not None else '(not recorded)'}"
        for m in models
    )
    return f"{data.label(run)} diverged: its held-out loss is not finite ({where})"


def final_caveats(data: StudyData, claim: ClaimSpec) -> tuple[dict, str]:
    """The caveats of a claim on final models: `numbers` entries ("diverged": label -> its models whose
    held-out loss is not finite; "plateau", as `plateau_caveat`) and the sentences. A diverged run is named,
    never checked against the plateau: a NaN compared with the entropy is false, and it was silently passed."""
    diverged = {r: d for r in (claim.a, claim.b) if (d := _diverged(data, r))}
    plateau, caveat = plateau_caveat(data, claim, skip=set(diverged))
    numbers = {"diverged": {data.label(r): d for r, d in diverged.items()}} if diverged else {}
    numbers |= {"plateau": plateau} if plateau else {}
    if diverged:
        said = " and ".join(_said_diverged(data, r, d) for r, d in diverged.items())
        caveat = (
            f" Caveat: {said}, so this compares a model that failed to train, not its objective; the loss "
            "figures leave out its points that are not finite." + caveat
        )
    return numbers, caveat


def step_caveats(data: StudyData, claim: ClaimSpec, step: int) -> tuple[dict, str]:
    """The caveats of a claim at checkpoint `step`, as `final_caveats` gives them: the plateau's ("plateau":
    label -> its numbers at that step) where the runs logged a held-out loss there. A run that diverged is
    named on the claims of final models (`final_caveats`); here its loss that is not finite is no plateau."""
    plateau, caveat = plateau_caveat(data, claim, step=step)
    return ({"plateau": plateau} if plateau else {}), caveat


def _on_plateau(data: StudyData, run: str, step: int | None = None) -> dict | None:
    """{"held_out", "unigram"} when `run`'s final models (its checkpoints at `step`) have not got below the
    unigram plateau, else None. At a step, only when each of its models logged a held-out loss there
    (`StudyData.held_out_steps`): a loss logged earlier says nothing of the step, so none is said."""
    spec_run = data.spec.run(run)
    entropy = data.unigram.get(spec_run.data) if spec_run is not None else None
    models = data.model_ids(run).values()
    if step is None:
        scored = [data.held_out.get(m, {}) for m in models]
    else:
        scored = [data.held_out_steps.get(m, {}).get(step) for m in models]
        if None in scored:
            return None
    finite = [[v[k] for k in _YARDSTICKS if finite_number(v.get(k))] for v in scored]
    losses = [min(x) for x in finite if x]
    if entropy is None or not losses:
        return None
    loss = sum(losses) / len(losses)
    return {"held_out": loss, "unigram": entropy} if loss >= entropy - PLATEAU_MARGIN else None


def plateau_caveat(
    data: StudyData, claim: ClaimSpec, skip: set[str] = frozenset(), step: int | None = None
) -> tuple[dict, str]:
    """The plateau numbers of the claim's runs that sit on it (but those in `skip`), and the sentence that
    says what that means: of their final models, or at checkpoint `step` (a faster_early claim's, as the
    demo's MLM-40 at step 100) where the runs logged a held-out loss at that step."""
    on = {r: x for r in (claim.a, claim.b) if r not in skip and (x := _on_plateau(data, r, step)) is not None}
    rest = [r for r in (claim.a, claim.b) if r not in skip and r not in on]
    unchecked = _unchecked(data, rest) if step is None else _unlogged(data, rest, step)
    if not on:
        return {}, unchecked
    said = " and ".join(
        f"{data.label(r)} ({x['held_out']:.2f} nats against {x['unigram']:.2f})" for r, x in on.items()
    )
    verb = "has" if len(on) == 1 else "have"
    at = "" if step is None else f" by step {step}"
    logged = "" if step is None else " logged at that step"
    numbers = {data.label(r): x | ({"step": step} if step is not None else {}) for r, x in on.items()}
    return numbers, (
        f" Caveat: {said} {verb} not got below the unigram plateau{at} (held-out loss{logged} against the "
        "entropy of the data's token frequencies): a run there has learned little beyond how often tokens "
        "occur, so this says which run leaves the plateau sooner at this size, not how the objectives compare "
        "once both have." + unchecked
    )


def degenerate_caveat(
    data: StudyData, claim: ClaimSpec, tasks: tuple[str, ...], step: int | None
) -> tuple[dict, str]:
    """The claim's models whose runs at the chosen LR predicted one output on a task its score averages
    (evaluation's `degenerate`), as numbers (label -> task -> "k of n fine-tuning seeds") and the sentence. The report lists
    them under "Degenerate predictions", but the claim read as if both scores measured a model: the demo's
    "CLM 25% -> MLM-40 beats MLM-40 on the average" rested on MLM-40's brown-pos score, the tag prior's."""
    flagged: dict[str, dict[str, str]] = {}
    for run in (claim.a, claim.b):
        for model in data.model_ids(run).values():
            summary = data.summary(model, step).tasks
            for task in tasks:
                if task in summary and (d := summary[task].degenerate):
                    flagged.setdefault(data.label(model), {})[task] = count_of(
                        d.runs, d.of, "fine-tuning seed"
                    )
    if not flagged:
        return {}, ""
    said = "; ".join(
        f"{label} on {', '.join(f'{t} ({k})' for t, k in on.items())}" for label, on in flagged.items()
    )
    at = "" if step is None else f" at step {step}"
    listed = " (Degenerate predictions, above)" if step is None else ""  # that list is of final models
    return {"degenerate": flagged}, (
        f" Caveat: fine-tuning runs{at} at the chosen LR predicted one output for every test example (a tagger: "
        f"{TAGGER_RULE}): {said}; such a score is the label prior's, not a sign that the "
        f"model learned the task, so on that task the claim compares against the label prior{listed}."
    )


def partial_caveat(data: StudyData, claim: ClaimSpec, step: int | None) -> tuple[int, str]:
    """The eval nodes of the claim's models at `step` that have not finished, and the sentence saying so."""
    missing, total = data.unfinished_evals(claim_ids(data, claim), step)
    if not missing:
        return 0, ""
    at = "final models" if step is None else f"checkpoints at step {step}"
    return missing, (
        f" Partial: {missing} of the {total} fine-tuning runs of the {at} of {data.label(claim.a)} and "
        f"{data.label(claim.b)} have not finished (the study is still running, or a node failed), so this "
        "verdict may change: run the study again to finish them."
    )


def _unlogged(data: StudyData, runs: list[str], step: int) -> str:
    """The sentence naming `runs` that logged held-out losses, on a dataset of known entropy, but none at
    checkpoint `step`: their plateau there is not guessed from another step, and saying nothing read as
    checked (the cpu scale validates every 1000 steps; its checkpoints are at 125, 250 and 500)."""
    labels = []
    for r in runs:
        spec_run = data.spec.run(r)
        logged = [data.held_out_steps.get(m, {}) for m in data.model_ids(r).values()]
        if spec_run is None or data.unigram.get(spec_run.data) is None or not any(logged):
            continue
        if any(step not in steps for steps in logged):
            labels.append(data.label(r))
    if not labels:
        return ""
    return (
        f" Caveat: whether {' and '.join(labels)} got below the unigram plateau by step {step} is not checked: "
        "no held-out loss was logged at that step (validation runs every `validation.every` steps; a step "
        "that is a multiple of it is checked)."
    )


def _unchecked(data: StudyData, runs: list[str]) -> str:
    """The sentence saying the plateau of `runs` with held-out losses is not checked because their
    dataset's `--prepared` folder is gone and no entropy of it was recorded (`StudyData.unigram_gone`)."""
    gone: dict[str, list[str]] = {}
    for r in runs:
        spec_run = data.spec.run(r)
        scored = [data.held_out.get(m, {}) for m in data.model_ids(r).values()]
        if (
            spec_run is not None
            and spec_run.data in data.unigram_gone
            and any(k in v for v in scored for k in _YARDSTICKS)
        ):
            gone.setdefault(spec_run.data, []).append(data.label(r))
    where = typed(data.folder) if data.folder is not None else "the study folder"
    return "".join(
        f" Caveat: whether {' and '.join(labels)} got below the unigram plateau is not checked: the prepared "
        f"folder {data.unigram_gone[name]} of dataset {name} is not there (moved or deleted), and {where} "
        f"recorded no entropy of it; give its place with `encoderlab study run {where} --prepared {name}=DIR`, "
        "which writes the report again."
        for name, labels in gone.items()
    )
