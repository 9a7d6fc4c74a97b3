"""The consistency checks of a `StudySpec` that look at its values, one line per problem.

`StudySpec.problems` (in `spec.py`) checks how the parts of a spec refer to each other (a run's dataset,
a claim's runs, a start model); the checks here look at values the nodes themselves would refuse hours
into the study, after its folder was made (an empty corpus, a negative seed, an LR grid a node refuses,
a claim the report could not check as written), so a spec is refused with the node's own words before
anything is written; and values that would otherwise be taken without a word (a step given twice, an
unknown `paper`, an override of a field the study sets itself: `STUDY_PLACED`).

Design: plain functions of the finished spec returning lists of lines, never raising, so that
`StudySpec.__post_init__` reports every problem of a study file at once rather than the first. They
live apart from the schema so `spec.py` stays the schema a reader looks up fields in; `spec` imports
them inside `problems`, so this module may import `spec` at its top without a cycle.
"""

from __future__ import annotations

import math
import sys

from encoderlab.errors import UserError, closest
from encoderlab.study.spec import ID, ClaimSpec, StudySpec
from encoderlab.words import lr_text


def _dataset_problems(spec: StudySpec) -> list[str]:
    """`value_problems` of each dataset: values its prepare node refused after the study folder was made."""
    from encoderlab.data.tokenizer_training import min_vocab_size

    out = [  # its prepare node said "no source given; pass at least one --source", a flag a study has not
        f"dataset {d.name}: corpus is empty; list a source in it, e.g. corpus: [my.jsonl]"
        for d in spec.data
        if not d.corpus
    ]
    out += [
        f"dataset {d.name}: max_docs must be >= 1, got {d.max_docs}; give a positive max_docs or null"
        for d in spec.data
        if d.max_docs is not None and d.max_docs < 1
    ]
    out += [  # the plan's corpus scan and the prepare node: an islice ValueError traceback
        f"dataset {d.name}: max_docs must be at most {sys.maxsize}, got {d.max_docs}; give null to read every document"
        for d in spec.data
        if d.max_docs is not None and d.max_docs > sys.maxsize
    ]
    out += [
        f"dataset {d.name}: vocab_size must be >= {min_vocab_size()} for the byte-level BPE it trains, "
        f"got {d.vocab_size}"
        for d in spec.data
        if d.tokenizer == "train" and d.vocab_size < min_vocab_size()
    ]
    out += [
        f"dataset {d.name}: seed must be >= 0 (numpy's generators take no negative seed), got {d.seed}"
        for d in spec.data
        if d.seed < 0
    ]
    return out


def value_problems(spec: StudySpec) -> list[str]:
    """Values the prepare, pretraining and evaluation nodes would refuse, hours into the study, after
    its folder was made: refused with the spec instead, in the same words."""
    from encoderlab.eval.taskruns import STUDY_FILE, GridFix, grid_problems

    empty = {
        "runs": "a run in it, e.g. runs: [{name: mlm, recipe: pfs-mlm}]",
        "data": "a dataset in it, e.g. data: [{name: main, corpus: [my.jsonl]}]",
    }
    out = [f"study {spec.name}: {f} is empty; list {e}" for f, e in empty.items() if not getattr(spec, f)]
    out += _dataset_problems(spec)
    seeds = [(f"study {spec.name}", spec.seeds)] + [
        (f"run {r.name}", r.seeds) for r in spec.runs if r.seeds is not None
    ]
    out += [
        f"{where}: seeds must be a non-empty list of pretraining seeds >= 0, got {list(values)}; e.g. seeds: [0]"
        for where, values in seeds
        if not values or min(values) < 0
    ]
    out += [  # a repeat trains nothing more, but was counted as another model and seed
        f"{where}: seeds repeat {', '.join(str(v) for v in sorted({v for v in values if values.count(v) > 1}))}; "
        "give each pretraining seed once"
        for where, values in seeds
        if len(set(values)) < len(values)
    ]
    ev = spec.eval
    out += [f"eval: {p}" for p in grid_problems(ev.lrs, ev.seeds, fix=STUDY_FILE)]
    if ev.checkpoint_lrs:  # empty: the intermediate checkpoints take `lrs`
        at = GridFix(
            lrs="list positive numbers, e.g. checkpoint_lrs: [1.0e-4, 3.0e-4]", seeds=STUDY_FILE.seeds
        )
        out += [f"eval: {p}" for p in grid_problems(ev.checkpoint_lrs, (0,), "checkpoint_lrs", at)]
    if spec.max_passes is not None and not (math.isfinite(spec.max_passes) and spec.max_passes > 0):
        out.append(
            f"max_passes must be a finite number > 0 (passes over a corpus allowed), got {spec.max_passes}; "
            "give e.g. 1, or null to allow any number"
        )
    if ev.suite is None and not ev.task_files:
        out.append(
            "eval: suite is null, so the study's tasks are its task files, and it names none; give task_files or a suite"
        )
    if ev.max_steps is not None and ev.max_steps < 1:
        out.append(f"eval: max_steps must be >= 1, got {ev.max_steps}; give a positive max_steps or null")
    out += [  # was read as no restriction: the study's every task
        f"run {r.name}: tasks is empty; drop it to evaluate the study's tasks, or set evaluate: false"
        for r in spec.runs
        if r.tasks is not None and not r.tasks
    ]
    out += [  # its checkpoints were kept and never fine-tuned, without a word
        f"run {r.name}: evaluate is false, so its eval_steps {list(r.eval_steps)} are never fine-tuned; drop "
        "them, or set evaluate: true"
        for r in spec.runs
        if not r.evaluate and r.eval_steps
    ]
    return out


def repeat_problems(spec: StudySpec) -> list[str]:
    """A task, task file or intermediate step named twice (dropped without a word; `eval --tasks` refuses
    the repeat)."""
    ev = spec.eval
    named: list[tuple[str, tuple]] = [
        ("eval.tasks", ev.tasks),
        ("eval.checkpoint_tasks", ev.checkpoint_tasks),
    ]
    named += [("eval.task_files", ev.task_files)] + [
        (f"run {r.name} tasks", r.tasks or ()) for r in spec.runs
    ]
    named += [(f"run {r.name} eval_steps", r.eval_steps) for r in spec.runs]
    return [
        f"{where}: {', '.join(map(str, repeated))} given twice; give each once"
        for where, names in named
        if (repeated := sorted({t for t in names if names.count(t) > 1}))
    ]


STUDY_PLACED = {
    "out": "the study places each run's folder in its own folder; drop it",
    "data.path": "a run reads the prepared data of its dataset; name the dataset with the run's data (or give the "
    "dataset a prepared folder), and drop data.path",
    "model.init": "give the run's init instead (another run of the study, an asset, a model folder or a hub id)",
}
"""RunConfig fields a pretraining node sets itself (paths inside the study folder), with the study file's way
to set what they hold: an override of one was replaced without a word (`out`, `data.path`), or trained
unchecked until its node failed, after the study folder was made and its data prepared (`model.init`)."""


def override_problems(spec: StudySpec) -> list[str]:
    """Overrides (a run's, or the study's `run_overrides`) of a field in `STUDY_PLACED`."""
    named = [(f"run {r.name}", r.overrides) for r in spec.runs] + [(f"study {spec.name}", spec.run_overrides)]
    return [
        f"{where}: overrides {key}, which the study sets itself; {STUDY_PLACED[key]}"
        for where, overrides in named
        for key in overrides
        if key in STUDY_PLACED
    ]


def label_problems(spec: StudySpec) -> list[str]:
    """Values that only label a study, refused where they were taken silently: a `paper` that is none of
    the papers (the report and `study list` then stated no departure from any paper, as for a study of
    none), a run's negative `seed` offset (refused by the run's own config after the folder was made,
    naming no run and a `--set` flag a study has none of), a negative or non-finite `expected_minutes`."""
    from encoderlab.study.fidelity import PAPERS

    out = (
        [
            f"study {spec.name}: paper {spec.paper!r} is none of {', '.join(PAPERS)}; name one of them, or drop "
            "paper (a study of no paper)"
        ]
        if spec.paper and spec.paper not in PAPERS
        else []
    )
    out += [
        f"run {r.name}: seed must be >= 0 (an offset added to each pretraining seed), got {r.seed}; give 0 or "
        "more, or drop it"
        for r in spec.runs
        if r.seed is not None and r.seed < 0
    ]
    if not (math.isfinite(spec.expected_minutes) and spec.expected_minutes >= 0):
        out.append(
            f"study {spec.name}: expected_minutes must be a finite number >= 0, got {spec.expected_minutes:g}; "
            "give the minutes the study takes, or 0 (unknown)"
        )
    return out


def id_problems(spec: StudySpec) -> list[str]:
    """Run and dataset names and claim ids that are not `ID`s."""
    ids = [("run name", r.name) for r in spec.runs] + [("dataset name", d.name) for d in spec.data]
    return [
        f"{what} {value!r} may hold only ASCII letters, digits, '.', '_', '+' and '-', from a letter or digit "
        "on (it names nodes, tables and claims; a run's `label` is free text)"
        for what, value in ids + [("claim id", c.id) for c in spec.claims]
        if not ID.match(value)
    ]


def claim_problems(spec: StudySpec) -> list[str]:
    """Claims the report could not check as written: two of one id (the report keyed verdicts by id, so
    the first claim was given the second's), a run compared with itself, an LR range that holds no LR,
    a family no task has (`family: scc` compared no task, and the report called it untested) or one a
    claim of its kind does not read."""
    from encoderlab.eval.spec import FAMILY_NAMES

    ids = [c.id for c in spec.claims]
    out = [f"claim ids must be unique, repeated: {', '.join(sorted({i for i in ids if ids.count(i) > 1}))}"]
    out = out if len(set(ids)) < len(ids) else []
    out += [
        f"claim {c.id} compares run {c.a} with itself; name two runs (a and b)"
        for c in spec.claims
        if c.a == c.b
    ]
    out += _cka_problems(spec)
    out += [
        f"claim {c.id}: lr_range must be two finite positive learning rates, low then high, got {list(c.lr_range)}; "
        "give e.g. lr_range: [1.0e-4, 5.0e-4]"  # the fix, as every other line of the file's check names one
        for c in spec.claims
        if len(c.lr_range) != 2  # one was an IndexError traceback, a third silently dropped
        or not (all(math.isfinite(x) and x > 0 for x in c.lr_range) and c.lr_range[0] <= c.lr_range[1])
    ]
    out += [
        f"claim {c.id}: family must be one of {', '.join(FAMILY_NAMES)}, or null for the average over all "
        f"tasks, got {c.family!r}" + _family_hint(str(c.family))
        for c in spec.claims
        if c.family is not None and c.family not in FAMILY_NAMES
    ]
    out += [  # was ignored: "CLM learns faster early on SC" compared the average over all tasks
        f"claim {c.id}: family is read by beats claims only ({c.kind} compares the average over all tasks); "
        "drop it, or set it to null"
        for c in spec.claims
        if c.family is not None and c.kind != "beats"
    ]
    return out


def _family_hint(family: str) -> str:
    """The claim family a wrong one is near; a task file's `pair-sc` (no claim family: a pair task is scored
    in family sc, as the report's "SC: TASK" column says) is told so, where it was refused without a hint."""
    from encoderlab.eval.spec import FAMILY_NAMES

    if family == "pair-sc":
        return "; a pair-sc task counts in family sc: write family: sc"
    return f" ({near}?)" if (near := closest(family, FAMILY_NAMES)) else ""


def _cka_problems(spec: StudySpec) -> list[str]:
    """CKA analyses the analysis node would refuse, after the runs trained: a run compared with itself,
    a seed-noise pair other than (twin of b, b) (the node's own check). Too few texts is the real
    backend's (`checks.check_analyses`): a fake CKA reads as many as it likes."""
    out = [
        f"cka {c.a}-vs-{c.b} compares run {c.a} with itself; name two runs" for c in spec.cka if c.a == c.b
    ]
    out += [
        f"cka {c.a}-vs-{c.b}: noise must be [TWIN, {c.b}], {c.b} and its seed twin (the floor {c.b} is measured "
        f"against), got {list(c.noise)}"
        for c in spec.cka
        if c.noise is not None
        and (len(c.noise) != 2 or c.noise[1] != c.b or c.noise[0] == c.b)  # [b]: IndexError
    ]
    return out


def spec_problems(spec: StudySpec) -> list[str]:
    """The value checks of this module after the ids (`id_problems`), in the order `StudySpec.problems` lists them."""
    checks = (
        value_problems,
        repeat_problems,
        claim_problems,
        label_problems,
        override_problems,
        empty_name_problems,
        shape_problems,
    )
    return [line for check in checks for line in check(spec)]


def empty_name_problems(spec: StudySpec) -> list[str]:
    """An empty `init` (read as no start model: a run meant to continue a model trained from scratch
    without a word) or an empty dataset `tokenizer` (read as the study file's own folder, and refused
    as "holds no tokenizer files" there)."""
    out = [
        f"run {r.name}: init is empty; name the start model (another run of the study, an asset, a model "
        "folder or a hub id), or drop init to train from scratch"
        for r in spec.runs
        if r.init is not None and not r.init.strip()
    ]
    out += [
        f"dataset {d.name}: tokenizer is empty; give train (a BPE trained on the corpus), another dataset's "
        "name, an asset, a tokenizer folder or a hub id, or drop tokenizer (train)"
        for d in spec.data
        if not d.tokenizer.strip()
    ]
    return out


SHAPE = {"size": "size", "seq_len": "seq_len", "micro_batch": "micro_batch_size"}
"""The study's batch-shape fields (and `size`), with the recipe parameter each is given to
(`resolve._scale_args`); a recipe that takes none of that name trains at its own."""


def shape_problems(spec: StudySpec) -> list[str]:
    """A study `size`, `seq_len` or `micro_batch` that a run's recipe takes no parameter for (the smoke
    recipes fix their own shape: it was dropped without a word). `size` only where the run trains from
    scratch (`resolve._scale_args` gives a continued run none), so a built-in's scale, which sets all
    three for recipes that take them, is never refused. A study `size` that is no model size is one line
    of its own."""
    from encoderlab.errors import did_you_mean
    from encoderlab.model.config import SIZES
    from encoderlab.train.recipes import RECIPES, recipe_defaults

    # the study's own field, not a run's: the recipe refused it as "run mlm: unknown model size", naming a
    # run whose entry holds no size, once per study
    unknown = isinstance(spec.size, str) and spec.size not in SIZES
    out = [f"study {spec.name}: {did_you_mean(spec.size, list(SIZES), 'size')}"] if unknown else []
    for r in spec.runs:
        if r.recipe not in RECIPES:  # no recipe (a model evaluated as is), or unknown: refused by the run
            continue
        takes = recipe_defaults(r.recipe)
        ignored = [
            field
            for field, param in SHAPE.items()
            if (value := getattr(spec, field)) is not None
            and not (isinstance(value, int) and value < 1)  # refused as such (`StudySpec.problems`)
            and not (field == "size" and unknown)  # refused as such, above
            and param not in takes
            and not (field == "size" and (r.init or "init" in takes))
        ]
        if ignored:
            it = "it" if len(ignored) == 1 else "them"
            out.append(
                f"run {r.name}: recipe {r.recipe} takes no {' or '.join(ignored)}, so the study's "
                f"{', '.join(f'{f}: {getattr(spec, f)}' for f in ignored)} would be ignored (it trains at its own "
                f"shape); drop {it} from the study, or give the run a recipe that takes {it}"
                + (
                    "; its rows are set by its overrides instead: layout.seq_len, layout.micro_batch_size"
                    if ignored != ["size"]
                    else ""
                )
            )
    return out


def untestable_claims(spec: StudySpec) -> list[str]:
    """Claims a study file's own graph can never test, one line each (`why_untestable`). They were planned,
    run and reported "not tested" after the compute was spent. Checked when a study file is read
    (`files.load_study_file`), not in `StudySpec`: a built-in study at a small scale (the demo's one LR, no
    QA task) and a study folder of an earlier version, whose `study.json` is read back through `StudySpec`,
    still report them as not tested, with the reason; `files.dump_study` leaves them out of the file it
    writes, each under a comment with that line."""
    return [line for c in spec.claims for line in why_untestable(spec, c)]


def why_untestable(spec: StudySpec, c: ClaimSpec) -> list[str]:
    """Why the study can never test claim `c` (empty: it can): it compares fine-tuned scores (every kind but
    `cka_low_layers`) of a run with `evaluate: false`; a `faster_early` whose runs share no step in
    `eval_steps`; a `more_stable` whose `lr_range` holds fewer than two of `eval.lrs`; a `beats` on a family
    neither run is evaluated on; a `cka_low_layers` with no `cka` entry of its a and b, or one without a
    seed-noise pair."""
    unevaluated = [r for r in (c.a, c.b) if c.kind != "cka_low_layers" and not spec.run(r).evaluate]
    if unevaluated:  # its eval_steps are refused already (`value_problems`): one line says it
        return [
            f"claim {c.id} ({c.kind}) compares the fine-tuned scores of {c.a} and {c.b}, and "
            f"{' and '.join(unevaluated)} {'has' if len(unevaluated) == 1 else 'have'} evaluate: false "
            "(never fine-tuned); set evaluate: true, or drop the claim"
        ]
    out = []
    if c.kind == "faster_early" and not set(spec.run(c.a).eval_steps) & set(spec.run(c.b).eval_steps):
        steps = {r: list(spec.run(r).eval_steps) for r in (c.a, c.b)}
        out.append(
            f"claim {c.id} (faster_early) compares {c.a} and {c.b} at an intermediate checkpoint both are "
            f"evaluated at, and they share none (eval_steps {steps[c.a]} and {steps[c.b]}); give both runs "
            "a step in eval_steps"
        )
    if c.kind == "more_stable" and len(inside := c.lrs_in_range(spec.eval.lrs)) < 2:
        lo, hi = map(lr_text, c.lr_range)
        out.append(
            f"claim {c.id} (more_stable) measures the spread of the scores over the fine-tuning LRs in its "
            f"lr_range {lo} to {hi}, and eval.lrs [{', '.join(map(lr_text, spec.eval.lrs))}] "
            f"{'has only ' + lr_text(inside[0]) if inside else 'has none'} there; give eval.lrs two or more LRs "
            "in that range, or set lr_range around two of them"
        )
    out += _family_untested(spec, c)
    entry = next((k for k in spec.cka if (k.a, k.b) == (c.a, c.b)), None)
    if c.kind == "cka_low_layers" and (entry is None or entry.noise is None):
        what = "no cka entry of them" if entry is None else "a cka entry of them without noise"
        out.append(
            f"claim {c.id} (cka_low_layers) needs a cka entry with a: {c.a}, b: {c.b} and noise: [TWIN, "
            f"{c.b}], TWIN a run that differs from {c.b} in its seed only; the study has {what}"
        )
    return out


def _family_untested(spec: StudySpec, c: ClaimSpec) -> list[str]:
    """A `beats` claim on a family that a run of it is fine-tuned on no task of. Only for a suite's tasks: a
    study with task files is checked when its graph is built (`evalnodes.study_tasks` reads their families
    then, with `family_untested`), as is an unknown suite or task (refused as such then)."""
    from encoderlab.study.needs import suite_families

    ev = spec.eval
    if c.kind != "beats" or c.family is None or ev.task_files or ev.suite is None:
        return []
    try:
        families = suite_families(ev.suite)
    except UserError:
        return []
    return family_untested(spec, c, families)


def family_untested(
    spec: StudySpec, c: ClaimSpec, families: dict[str, str], own: dict[str, str] | None = None
) -> list[str]:
    """The line of a `beats` claim on a family that a run of it is fine-tuned on no task of, `families` the
    study's {task: family} (its suite's and its task files'), `own` its task files' alone; none for another
    claim."""
    if c.kind != "beats" or c.family is None:
        return []
    ev = spec.eval
    tasks = {r: spec.run(r).tasks or ev.tasks or tuple(families) for r in (c.a, c.b)}
    lacking = [r for r in (c.a, c.b) if c.family not in {families.get(t) for t in tasks[r]}]
    if not lacking:
        return []
    fam = c.family.upper()
    where = " and ".join(
        dict.fromkeys(f"run {r}'s tasks" if spec.run(r).tasks else "eval.tasks" for r in lacking)
    )
    said = {r: ", ".join(tasks[r]) for r in lacking}
    evaluated = (
        f"tasks: {next(iter(said.values()))}"
        if len(set(said.values())) == 1
        else "; ".join(f"{r}: {t}" for r, t in said.items())
    )
    return [
        f"claim {c.id} (beats) compares {c.a} and {c.b} on {fam}, and {' and '.join(lacking)} "
        f"{'is' if len(lacking) == 1 else 'are'} fine-tuned on no {fam} task ({evaluated}); "
        f"{_family_fix(spec, c.family, families, own or {}, where)}, or drop the claim"
    ]


def _family_fix(
    spec: StudySpec, family: str, families: dict[str, str], own: dict[str, str], where: str
) -> str:
    """How to give a claim's runs a task of `family`: the study's tasks of it (its task files' and its
    suite's, each named as such), else a task file of it. A study with task files none of which is of the
    family is told what they give and where a task file is described: the suite's tasks alone were offered,
    as if the files were a suite's, to a user who wanted a task file of the family."""
    fam = family.upper()
    offers = [
        (w, [t for t, f in tasks.items() if f == family])
        for w, tasks in (
            ("the task files", own),
            (f"suite {spec.eval.suite}", {t: f for t, f in families.items() if t not in own}),
        )
    ]
    offered = " or ".join(f"of {w} ({', '.join(ts)})" for w, ts in offers if ts)
    if own and not offers[0][1]:
        given: dict[str, list[str]] = {}
        for t, f in own.items():
            given.setdefault(f.upper(), []).append(t)
        what = " and ".join(f"{f} ({', '.join(ts)})" for f, ts in given.items())
        file = (
            f"a task file of family {family} to eval.task_files (the task files give {what} only; "
            'docs/evaluation.md, "Your own tasks (task files)")'
        )
        return f"add a {fam} task {offered} to {where}, or {file}" if offered else f"add {file}"
    if offered:
        return f"add a {fam} task {offered} to {where}"
    return (
        f"suite {spec.eval.suite} has no {fam} task, so add a task file of family {family} to eval.task_files"
    )
