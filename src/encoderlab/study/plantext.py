"""How `encoderlab study plan` writes a plan out: the text of a `StudyPlan`, apart from computing it.

`study/plan.py` decides what a study reads and costs (`plan_study`, its corpus sizes and passes, the
`max_passes` refusal), which `study run`, `study list` and the catalogue use without printing; this
module only renders that plan for a reader: the evaluation it runs, each dataset (its corpus, tokenizer
and unique tokens, and for a large one how to prepare it across machines), whether the study is its
paper's setup (`fidelity.plan_setup_lines`, before the costs), the table of runs, the
evaluation's cost (`study/evalcost.py`), the passes allowed, and how each run trains. It computes nothing the plan does not hold, beyond what only a
reader needs (a tokenizer's size found without downloading, a task's metrics). Counts agree with their
number through `encoderlab.words`, so it never prints `1 pretraining runs`.
"""

from __future__ import annotations

from encoderlab.errors import UserError
from encoderlab.study.cputime import CpuTime, duration_text
from encoderlab.study.evalcost import BASE_LAYERS, STEP_FLOOR_S, hours_text
from encoderlab.study.fidelity import named_tasks, plan_setup_lines, task_files_text
from encoderlab.study.needs import split_task_tests
from encoderlab.study.plan import StudyPlan, passes_text, short_number
from encoderlab.study.spec import DataSpec, EvalSpec, StudySpec
from encoderlab.words import count, lr_text, noun


def plan_text(plan: StudyPlan) -> str:
    """The plan as `encoderlab study plan` prints it."""
    spec, ev, file_tasks = plan.spec, plan.spec.eval, _file_tasks(plan)
    tasks = ", ".join(named_tasks(spec) or file_tasks) or "all its tasks"
    suite = task_sources_text(ev, tasks)
    evaluated = fine_tunes(spec)
    lines = [
        f"study {spec.name} at scale {spec.scale}: {count(len(plan.runs), 'pretraining run')}",
        f"evaluation: {suite}; {noun(len(ev.lrs), 'LR')} {', '.join(map(lr_text, ev.lrs))}; "
        f"{count(len(ev.seeds), 'fine-tuning seed')}{_checkpoint_text(spec)}{_protocol_text(spec, file_tasks)}"
        if evaluated
        else f"evaluation: {NOT_FINE_TUNED}",
    ]
    lines += [line for d in spec.data for line in _dataset_lines(plan, d)] + plan_setup_lines(spec)
    width = max([len(r.model) for r in plan.runs] + [3])
    cpu = plan.device.time if plan.device else None  # its column only where the probe measured it
    lines.append(
        f"{'run':<{width}}  {'dataset':<10} {'tokens':>8} {'passes':>8} {'params':>8} {'N':>8} {'GPU-h':>9}"
        f"{'' if cpu is None else f' {CPU_COLUMN:>9}'}  starts from"
    )
    for r in plan.runs:
        passes = passes_text(r, 3)
        hours = (
            "?"
            if r.gpu_hours is None
            else f"{r.gpu_hours:,.0f}"
            if r.gpu_hours >= 10
            else f"{r.gpu_hours:.2g}"
            if r.gpu_hours >= 0.01
            else "<0.01"  # a CPU scale's run: 3.2e-06 read as a number to parse
        )
        lines.append(
            f"{r.model:<{width}}  {r.dataset:<10} {short_number(r.tokens):>8} {passes:>8} {short_number(r.params):>8} {_size_n(r.size_n):>8} {hours:>9}"
            f"{'' if cpu is None else f' {_cpu_cell(cpu, r.model, plan.device.done):>9}'}  {r.branch or 'its first step'}"
        )
    lines.append(
        f"pretraining: {hours_text(plan.gpu_hours)} (6 N D at 40% of an H100's bf16 peak, each step at least "
        f"{STEP_FLOOR_S * 1000:g} ms per {BASE_LAYERS} layers, a branch counting its own steps: MODEL@STEP starts "
        "from that run's checkpoint, docs/reproduce.md)"
        f"{'; ? = unknown until prepared or fetched' if any(r.passes is None for r in plan.runs) else ''}"
    )
    if plan.device is not None:
        lines.append(plan.device.line())
    lines.append(SIZE_N)
    if evaluated and plan.evaluation is not None:
        lines.append(plan.evaluation.text())
        partial = " (without the tasks not counted)" if plan.evaluation.uncounted else ""
        if plan.evaluation.counted:  # else the total is the pretraining's, printed above
            lines.append(f"total: ~{hours_text(plan.total_gpu_hours)}{partial}")
    limit = "any number" if spec.max_passes is None else f"{spec.max_passes:g}"
    lines.append(f"passes over a corpus allowed: {limit}{_repeats_text(plan)}")
    lines.append("how each run trains (its resolved config; a run at several seeds once):")
    seen: dict[str, str] = {}
    for r in plan.runs:
        name = r.model.rsplit("/s", 1)[0]  # the run, whatever its pretraining seed
        if seen.get(name) != r.recipe:
            seen[name] = r.recipe
            lines.append(f"  {r.model}: {r.recipe}")
    return "\n".join(lines)


SIZE_N = (
    "params: every parameter, embeddings included (the FLOPs above); N: non-embedding parameters, the size "
    "`encoderlab advise` reads each run at and `--target-size` takes (- for a run continuing a checkpoint, "
    "which advise leaves out)"
)
"""The plan's note on its two size columns, so a size copied from N into `advise --target-size` means what
advise fits: its curves are in non-embedding parameters, which the vocabulary does not change."""


CPU_COLUMN = "CPU time"
"""The plan's column of each run's measured CPU time (`cputime`), shown where its runs train on the CPU."""


def _cpu_cell(cpu: CpuTime, model: str, done: tuple[str, ...]) -> str:
    """A run's CPU time: `4 min`, `?` not probed, `done` finished in the study folder (not timed), `-` a run
    on a GPU."""
    if model in done:
        return "done"
    if model not in cpu.seconds:
        return "-"
    seconds = cpu.seconds[model]
    return "?" if seconds is None else duration_text(seconds)


def _size_n(n: float | None) -> str:
    """N as `advise --target-size` takes it (`7.9e+05`), `-` for none."""
    return "-" if n is None else f"{n:.3g}"


NOT_FINE_TUNED = "none (no run is fine-tuned: `evaluate: false` on every run)"
"""A study's evaluation when none of its runs is fine-tuned (a ladder for `advise`), as the plan and the
report's Configuration say it."""


def fine_tunes(spec: StudySpec) -> bool:
    """Whether any run of the study is fine-tuned (a ladder for `advise` fine-tunes none)."""
    return any(r.evaluate for r in spec.runs)


def evaluation_text(spec: StudySpec, tasks: str) -> str:
    """The report's Configuration row of the evaluation: task sources, `tasks`, LRs and seeds, or
    `NOT_FINE_TUNED` (a ladder's report named a grid that ran nowhere)."""
    ev = spec.eval
    if not fine_tunes(spec):
        return NOT_FINE_TUNED
    lrs, seeds = ", ".join(map(lr_text, ev.lrs)), ", ".join(map(str, ev.seeds))
    grid = f"{noun(len(ev.lrs), 'LR')} {lrs}, {noun(len(ev.seeds), 'seed')} {seeds}"
    return f"{task_sources_text(ev)}, tasks {tasks}, {grid}"


def model_size_text(spec: StudySpec, nodes: list) -> str:
    """The model size of a study's runs as the report states it: the study's `size`, else the sizes its
    from-scratch runs resolved to (a ladder sets one per run, through its recipe's `size`: the report said
    "as the start model", as if each continued one), and "as the start model" for runs that start from one."""
    from encoderlab.study.nodeconfig import PretrainNode

    if spec.size:
        return spec.size
    models = [PretrainNode.of(n).run.model for n in nodes if n.kind == "pretrain"]
    sizes = ", ".join(dict.fromkeys(m.size for m in models if not m.init))
    started = "as the start model" if any(m.init for m in models) or not models else ""
    return "; ".join(t for t in (sizes + (" (from scratch)" if sizes and started else ""), started) if t)


def task_sources_text(ev: EvalSpec, tasks: str = "") -> str:
    """Where a study's tasks come from, as `study plan` and the report say it: `suite pocket (tasks) and
    task file a.yaml`, `task files a.yaml, b.yaml (tasks)`; without `tasks`, no parenthesis."""
    files = task_files_text(ev)
    named = f" ({tasks})" if tasks else ""
    if ev.suite:
        return f"suite {ev.suite}{named}{f' and {files}' if ev.task_files else ''}"
    return f"{files}{named}"


def _repeats_text(plan: StudyPlan) -> str:
    """How often the run reading its corpus most reads it (`; a run reads its corpus 1.5 times`), or that
    no run repeats a token, or nothing when no corpus is sized."""
    known = [r.passes for r in plan.runs if r.passes is not None]
    if not known:
        return ""
    if max(known) <= 1 and not any(r.at_least for r in plan.runs):
        return "; no run repeats a token"
    most = passes_text(max(plan.runs, key=lambda r: r.passes or 0), 3)
    return f"; a run reads its corpus {most} {noun(float(most.removeprefix('>=')), 'time')}"


SHARD_HINT_TOKENS = 1e10
"""From this many unique tokens on, the plan shows how to prepare a dataset across machines."""


def _decontamination_text(spec, d: DataSpec) -> str:
    """What the plan says of a dataset's decontamination. "decontaminated against nothing" read the same for
    `decontaminate: false`, for a folder prepared elsewhere (its own meta.json says) and for a study whose
    tasks read none of the long-text sets it is done against: a user who set `decontaminate: true` saw it
    said as if ignored."""
    from encoderlab.study.needs import dataset_decontamination

    if d.prepared is not None:
        return f"decontaminated as {d.prepared} was prepared (its meta.json says)"
    if not d.decontaminate:
        return "not decontaminated (decontaminate: false)"
    if against := dataset_decontamination(spec, d):
        return f"decontaminated against {', '.join(against)}"
    from encoderlab.data.decontaminate import EVAL_ASSETS

    sets = ", ".join(a for a in EVAL_ASSETS if not a.startswith("squad-shifts-")).replace(
        "squad-v1-dev", "squad-v1-dev, squad-shifts-*"
    )
    return (
        "decontaminated against nothing: that is done against the long-text evaluation assets its tasks read "
        f"({sets}), and its tasks read none"
    )


def _dataset_lines(plan: StudyPlan, d: DataSpec) -> list[str]:
    """A dataset's plan line (corpus, tokenizer, unique tokens, the evaluation sets it is cleaned
    against), and for a large one how to prepare it across machines."""
    c = plan.corpora[d.name]
    lines = [
        f"dataset {d.name}: {' + '.join(_corpus_text(x) for x in d.corpus)}; tokenizer "
        f"{_tokenizer_text(plan.spec, d, _trained_ids(plan, d, c.tokenizer_ids))}{_sized_text(plan, d)}; "
        f"{'at most ' if c.at_most else ''}{short_number(c.unique_tokens)} unique "
        f"tokens ({c.how}); {_decontamination_text(plan.spec, d)}"
    ]
    if d.prepared is None and not c.counted and (c.unique_tokens or 0) >= SHARD_HINT_TOKENS:
        needed = max((r.reaches for r in plan.runs if r.dataset == d.name), default=0)
        from encoderlab.study.needs import dataset_decontamination

        against = dataset_decontamination(plan.spec, d)
        where = "across machines" if len(d.corpus) == 1 else "ahead of the study"  # `prepare_command`
        lines.append(f"  {where}: {prepare_command(d, needed, against, plan.spec.tokenizer_trainer(d))}")
    return lines


def _trained_ids(plan: StudyPlan, d: DataSpec, counted: int | None) -> int | None:
    """The ids of the tokenizer the study trained for `d` (`StudyPlan.trained_vocabs`), else `counted`."""
    trainer = plan.spec.tokenizer_trainer(d)
    return plan.trained_vocabs.get(trainer.name, counted) if trainer is not None else counted


def _sized_text(plan: StudyPlan, d: DataSpec) -> str:
    """Which size of a tokenizer the study trains the parameters of `d`'s runs count (`cputime.model_vocab`):
    the ids it was trained to, read from its node's output, or, before it is trained, the `vocab_size` asked
    (a corpus with fewer merges gives fewer). Empty for another tokenizer."""
    trainer = plan.spec.tokenizer_trainer(d)
    if trainer is None:
        return ""
    ids = plan.trained_vocabs.get(trainer.name)
    if ids is None:
        return f", parameters counted at the {trainer.vocab_size:,} ids asked (not trained yet)"
    return f", parameters counted at the {ids:,} ids it was trained to"


def _corpus_text(name: str) -> str:
    """A corpus entry, with the hub repo, config and card name of a named hub corpus, or how its .txt files
    are cut into documents (`mixing.txt_unit_text`, as the `data` commands say it: a study said it nowhere)."""
    from encoderlab.data.corpora import CORPORA
    from encoderlab.data.mixing import txt_unit_text
    from encoderlab.data.sources import describe, parse_source

    c = CORPORA.get(name)
    if c is not None:
        return f"{name} ({c.hub_id} {c.config or c.data_dir or 'default'}/{c.split})"
    if name.startswith("hf:"):  # described from its card: a plan reads no hub
        return name
    try:
        cfg = parse_source(name)
        said = txt_unit_text(cfg, describe(cfg))
    except UserError:  # a source that is not there: the study's start checks refuse it in their words
        return name
    return name if said is None else f"{name} ({said})"


def own_tokenizer_text(spec: StudySpec, d: DataSpec, ids: int | None = None) -> str | None:
    """A tokenizer the study trains, in words (`trained on the corpus (4,096 ids)`, `of dataset main (...)`),
    as the plan and the report's data row say it (the report said `tokenizer train`); None for another.
    `ids`: those it was trained to (its prepared data's), said beside the size asked where the corpus held
    fewer merges (482 of 2,048): the plan said the size asked, and only `study run` noted the difference."""
    trainer = next((x for x in spec.data if x.name == d.tokenizer and x is not d), None)
    if d.tokenizer == "train" and ids is not None and ids != d.vocab_size:
        return f"trained on the corpus ({ids:,} ids of the {d.vocab_size:,} asked: it held no more merges)"
    if d.tokenizer == "train":
        return f"trained on the corpus ({d.vocab_size:,} ids)"
    if trainer is not None and ids is not None and ids != trainer.vocab_size:
        return f"of dataset {trainer.name} ({ids:,} ids of the {trainer.vocab_size:,} asked: it held no more merges)"
    if trainer is not None:
        return f"of dataset {trainer.name} ({trainer.vocab_size:,} ids)"
    return None


def _tokenizer_text(spec: StudySpec, d: DataSpec, ids: int | None = None) -> str:
    from encoderlab.study.fidelity import PAPERS

    if (own := own_tokenizer_text(spec, d, ids)) is not None:
        return own
    paper = PAPERS.get(spec.paper or "")
    if paper is not None and d.tokenizer in (paper.tokenizer, *paper.tokenizer_aliases):
        return f"{d.tokenizer}: {paper.tokenizer_text}, {paper.short}'s"
    return f"{d.tokenizer}{_found_vocab(d.tokenizer)}"  # d.vocab_size sizes a tokenizer trained, not this


def _found_vocab(name: str) -> str:
    """' (N ids)' for a tokenizer found without downloading (`cputime.found_vocab`), else '': a size it did
    not read would be a guess."""
    from encoderlab.study.cputime import found_vocab

    return "" if (size := found_vocab(name)) is None else f" ({size:,} ids)"


def _tokenizer_steps(d: DataSpec, trainer: DataSpec | None) -> tuple[str, str, str]:
    """(the command that trains the tokenizer first, the tokenizer `data prepare` takes, the study's edit)
    for dataset `d` whose tokenizer the study trains on dataset `trainer` (`d` itself for `train`; another
    dataset's is said to be trained once, as two datasets' lines may both print its command): the
    command said `--tokenizer train`, which names no tokenizer, and a study reads a prepared folder only
    where its dataset names the folder's tokenizer (`prepared._trained_tokenizer`)."""
    if trainer is None:
        return "", d.tokenizer, ""
    cap = f" --max-docs {trainer.max_docs}" if trainer.max_docs else ""
    stop = "" if trainer.stop == "first_exhausted" else f" --stop {trainer.stop}"
    shared = (
        ""
        if trainer is d
        else f"dataset {trainer.name}'s tokenizer, trained once for every dataset using it: "
    )
    train = (
        f"{shared}`encoderlab data tokenizer --source {' --source '.join(trainer.corpus)} --vocab-size "
        f"{trainer.vocab_size} --seed {trainer.seed}{cap}{stop} --out TOK`, then "
    )
    edit = f", in a copy of the study (`encoderlab study show`) whose dataset {d.name} names TOK as its tokenizer"
    return train, "TOK", edit


def prepare_command(
    d: DataSpec, needed: float, against: tuple[str, ...] = (), trainer: DataSpec | None = None
) -> str:
    """How to prepare dataset `d` across the machines of a SLURM array (or torchrun) and give it to the
    study, decontaminated against the same sets (`against`) as the study would. A `max_docs` cap cannot
    be sharded (no worker knows how many documents precede its files), so a hub corpus is cut by files
    instead (`hf_files`), at least `needed` tokens' worth. The study's own task files' test splits among
    `against` (`task-test:PATH`) are not sets `data prepare --decontaminate` takes (it reads no task file):
    the command said `--decontaminate task-test:PATH`, which `data prepare` refuses as a file that does not
    exist; they are named instead, with the way to clean against their texts. A corpus of several entries
    (a mixture) is prepared on one machine: `data prepare --shard` splits one source by its files and
    refuses several, and the command gave it several `--source`s, and so a dataset's `stop`, to no avail.
    A tokenizer the study trains (on `trainer`) is trained first (`_tokenizer_steps`)."""
    from encoderlab.data.corpora import CORPORA
    from encoderlab.eval.tasks.testtexts import TASK_TEST

    named, task_tests = split_task_tests(against)
    own = [a.removeprefix(TASK_TEST) for a in task_tests]

    hub = len(d.corpus) == 1 and (d.corpus[0] in CORPORA or d.corpus[0].startswith("hf:"))
    source = f"'{d.corpus[0]}#hf_files=0:K'" if hub and d.max_docs else " --source ".join(d.corpus)
    files = (
        f", K the first data files holding more than the {short_number(needed)} tokens its longest run reads "
        f"(`study plan --prepared {d.name}=DIR` counts them)"
        if hub and d.max_docs
        else ""
    )
    shards = (
        "--shard auto` in each task, `encoderlab data merge --out DIR`,"
        if len(d.corpus) == 1
        else "` on one machine (`--shard` splits one source by its files, not a mixture of several),"
    )
    train, tokenizer, edit = _tokenizer_steps(d, trainer)
    return (
        f"{train}`encoderlab data prepare --source {source} --tokenizer {tokenizer} --seed {d.seed}"
        f"{'' if d.stop == 'first_exhausted' else f' --stop {d.stop}'}"  # the dataset's mixture, as its own
        f" --decontaminate {' '.join(named) or 'none'} --out DIR {shards} then `--prepared {d.name}=DIR`{edit}{files}"
        + (
            f"; `data prepare` reads no task file, so to clean it against the test split of {', '.join(own)} as "
            'the study does, add to --decontaminate a JSONL file of those test texts (a {"text": ...} record each)'
            if own
            else ""
        )
    )


def _checkpoint_text(spec: StudySpec) -> str:
    """The grid of the intermediate checkpoints when the study narrows it (`eval.checkpoint_lrs`,
    `eval.checkpoint_tasks`), e.g. `; intermediate checkpoints: LR 0.0005, tasks brown-pos`; nothing when
    they take the final models' grid. Set with no fine-tuned run having `eval_steps`, they are said to be
    unused (a built-in scale sets them for every study of it, so they are not refused)."""
    ev = spec.eval
    if not (ev.checkpoint_lrs or ev.checkpoint_tasks):
        return ""
    lrs = ev.checkpoint_lrs
    grid = f"{noun(len(lrs), 'LR')} {', '.join(map(lr_text, lrs))}" if lrs else "the same LRs"
    tasks = f"{noun(len(ev.checkpoint_tasks), 'task')} {', '.join(ev.checkpoint_tasks)}"
    used = any(r.evaluate and r.eval_steps for r in spec.runs)
    unused = "" if used else " (unused: no fine-tuned run has eval_steps)"
    return f"; intermediate checkpoints: {grid}, {tasks if ev.checkpoint_tasks else 'the same tasks'}{unused}"


def _file_tasks(plan: StudyPlan) -> tuple[str, ...]:
    """The tasks of a study of task files alone (`suite: null`) that its eval nodes score, which the plan
    names (it said "all their tasks", though docs/studies.md promised the tasks); empty with a suite,
    whose tasks the plan calls "all its tasks"."""
    return plan.evaluation.tasks if plan.evaluation and not plan.spec.eval.suite else ()


def _protocol_text(spec: StudySpec, file_tasks: tuple[str, ...]) -> str:
    """Which weights the tasks of an evaluation test and their metrics, e.g. `; the best
    epoch's weights tested (validation after every epoch), stopping after 3 epochs without a better one;
    metrics conlleval_f1, macro_f1`. `file_tasks`: those of a study of task files alone (`_file_tasks`),
    registered by the graph the plan counted (their metrics were left out)."""
    from encoderlab.eval.suites import SUITES
    from encoderlab.eval.tasks import TASKS

    names = named_tasks(spec) or SUITES.get(spec.eval.suite, ()) or file_tasks
    tasks = [TASKS[n] for n in names if n in TASKS]
    if not tasks:
        return ""
    tested = {
        "best_epoch": "the best epoch's weights tested (validation after every epoch)",
        "last": "the last step's weights tested",
    }
    if patience := sorted({t.finetune.patience for t in tasks if t.finetune.patience}):
        tested["best_epoch"] += (
            f", stopping after {' or '.join(map(str, patience))} epochs without a better one"
        )
    chosen = sorted({t.finetune.select for t in tasks})
    return f"; {', '.join(tested[c] for c in chosen)}; metrics {', '.join(sorted({t.metric for t in tasks}))}"
