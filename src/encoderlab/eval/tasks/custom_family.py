"""A task file's family and the fields each family reads: the tables, and the checks that tell a file
which family its fields belong to; and the metric a QA task scores by, which its head decides (`qa_metric`).

Design. `family:` is checked first (`check_family`), since every other field is read by the family's
rules; a column, option or metric of another family than the one named is refused as unknown, as any
unknown field, and the line names the family that has it (`of_other_family`): a file with one family's
fields under another's `family:` (a copied header) is more often wrong in `family:` than in its fields.
The trade-off: the tables here are the one list of what each family reads, so a new option of a family
reaches the hints without more code, but a field two families share (sc's and ir's `pooling`) names both.
"""

from __future__ import annotations

from encoderlab.config import recorded_fields
from encoderlab.configforms import flow
from encoderlab.errors import UserError, did_you_mean
from encoderlab.eval.spec import NEGATIVE, Inputs, IROptions, PairSCOptions, QAOptions, SCOptions, TCOptions
from encoderlab.eval.tasks.custom_labels import label_kind
from encoderlab.yamltext import as_written

FAMILIES = {"sc": SCOptions, "pair-sc": PairSCOptions, "tc": TCOptions, "qa": QAOptions, "ir": IROptions}
COLUMNS = {
    "sc": ("text", "label"),
    "pair-sc": ("text", "text_pair", "label"),
    "tc": ("tokens", "tags"),
    "qa": ("question", "context", "answers"),
    "ir": ("query", "document"),
}
OPTIONAL_COLUMNS = {"qa": ("id",), "ir": ("query_id", "doc_id", NEGATIVE)}
"""Read where a split has them; ir's `negative` (hard negatives) in training only (`custom_rows`)."""
METRICS = {
    "sc": ("accuracy", "macro_f1", "weighted_f1", "f1"),
    "pair-sc": ("accuracy", "macro_f1", "weighted_f1", "f1"),
    "tc": ("entity_f1", "accuracy", "sentence_macro_f1", "conlleval_f1"),
    "qa": ("f1", "exact_match", "exact", "position_f1", "exact_positions"),
    "ir": ("ndcg@10", "recall@10", "recall@100", "ndcg@10_retrieved"),
}
REGRESSION_METRICS = ("pearson", "spearman")
"""An sc/pair-sc task with `options: {regression: true}` is scored by these (the first is the default)."""


def check_family(raw: dict, where: str) -> None:
    """`family:` is one family's name, checked first: every other field is read by the family's rules.
    A list or mapping there (`family: [sc]`, as lm-evaluation-harness's `tag:` lists are written) was a
    TypeError traceback, from the CLI and from a study naming the file, and null was named as a family
    'None'. A missing `family` is `from_dict`'s line (missing field)."""
    if "family" not in raw:
        return
    family, valid = raw["family"], sorted(FAMILIES)
    if isinstance(family, str):
        if family not in FAMILIES:
            raise UserError(f"{where}: " + str(did_you_mean(family, valid, "family")))
        return
    one = family[0] if isinstance(family, list) and len(family) == 1 else None
    fix = f"`family: {one}`" if isinstance(one, str) and one in FAMILIES else "one of them, e.g. `family: sc`"
    raise UserError(
        f"{where}: family must be one name of {', '.join(valid)}, got {yaml_text(family)}; write {fix}"
    )


def yaml_text(value) -> str:
    """`value` as the YAML file wrote it, near enough for a message: null, true, 010, ['sc']."""
    if value is None or isinstance(value, bool):
        return {None: "null", True: "true", False: "false"}[value]
    return as_written(value)


def of_other_family(family: str, names, fields_of) -> str:
    """ " (qa's: if the task is qa, write `family: qa`)" when every one of `names` that `family` lacks
    (`fields_of(f)`: a family's columns, options or metrics) is another family's: a file with one family's
    fields under another's `family:` (a copied header) was told only that its fields are unknown. Else ''."""
    extra = set(names) - set(fields_of(family))
    fits = [f for f in FAMILIES if f != family and extra <= set(fields_of(f))]
    if not extra or not fits:
        return ""
    if len(fits) == 1:
        return f" ({fits[0]}'s: if the task is {fits[0]}, write `family: {fits[0]}`)"
    owners = ", ".join(f"{f}'s" for f in fits[:-1]) + f" or {fits[-1]}'s"
    return f" ({owners}: if the task is one of them, write its family, e.g. `family: {fits[0]}`)"


BINARY_F1 = "f1"
"""A two-class sc/pair-sc task's F1 of its positive class (`SCOptions.positive`): what GLUE reports for
MRPC and QQP, `evaluate`'s `f1` and scikit-learn's `f1_score` default (`average="binary"`). Named `f1` as
those users write it; a multi-label task has no one positive class, so it is not among its metrics."""


def family_metrics(family: str, options: dict) -> tuple[str, ...]:
    """The scores a task file of this family and `options:` may select by (the first is the default): its
    family's, or for an sc task a regression's, and micro-F1 besides the others for a multi-label one."""
    kind = label_kind(options) if family in ("sc", "pair-sc") else "one"
    if kind == "regression":
        return REGRESSION_METRICS
    if kind == "multilabel":  # no one positive class: its F1s are over every label
        return (*(m for m in METRICS[family] if m != BINARY_F1), "micro_f1")
    return METRICS[family]


def kind_hint(family: str, options: dict, metric: str) -> str:
    """' (...: add `options: {regression: true}`)' for an sc or pair-sc metric that only another label kind
    reports (pearson of a regression, micro_f1 of a multi-label task): the line listed the task's metrics
    and left the option that reports it unsaid. `binary_f1` (a guess at the positive class's F1) names
    `f1`. Else ''."""
    kind = label_kind(options) if family in ("sc", "pair-sc") else None
    if kind == "one" and metric == "binary_f1":  # was told qa's f1 is another family's: write `family: qa`
        return " (binary_f1: the F1 of one class, as GLUE's MRPC and QQP report it, is `metric: f1` here)"
    if kind in ("one", "multilabel") and metric in REGRESSION_METRICS:
        return (
            f" ({metric} scores a regression: add `options: {{regression: true}}` if the labels are numbers)"
        )
    if kind == "one" and metric == "micro_f1":
        return " (micro_f1 scores a multi-label task: add `options: {multilabel: true}` if each label cell is a list)"
    return ""


def f1_key(asked: tuple[str | None, str | None]) -> str:
    """The task file key that asked for `f1` (`asked`: its metric, then its select metric): a line about
    the score names the key the user wrote, not `metric` for a `finetune.select_metric: f1`."""
    return "metric" if asked[0] == BINARY_F1 else "finetune.select_metric"


def check_binary_f1(
    labels: tuple[str, ...], options, asked: tuple[str | None, str | None], where: str
) -> None:
    """A task scored by `f1` (`asked`: its metric and select metric) has two classes, and its
    `positive_label` is one of them; `positive_label` without `f1` is refused, as it would score nothing.
    Checked once the label set is read (from `labels:` or the data), before anything is written."""
    positive = getattr(options, "positive_label", None)
    if BINARY_F1 not in asked:
        if positive is not None:
            raise UserError(
                f"{where}: options.positive_label {positive!r} is read only by `metric: f1` (the F1 of that "
                "class); set `metric: f1`, or remove positive_label"
            )
        return
    if len(labels) != 2:
        raise UserError(
            f"{where}: {f1_key(asked)} 'f1' is the F1 of one class of a two-class task (GLUE's MRPC and QQP), but this "
            f"task has {len(labels)} classes ({', '.join(labels)}); write macro_f1, each class's F1 averaged, "
            "or weighted_f1"
        )
    if positive is not None and positive not in labels:
        raise UserError(
            f"{where}: options.positive_label {positive!r} is not one of the task's classes ({', '.join(labels)}); "
            "name one of them"
        )


GLUE_IDS = ("0", "1")
"""Two classes read from the data that keep the default positive class, the second: a run_glue CSV's ids,
where 1 is the positive class (GLUE's MRPC and QQP), as names sorted."""


def check_positive_named(
    labels: tuple[str, ...], inferred: bool, options: dict, asked: tuple[str | None, str | None], where: str
) -> None:
    """A task scored by `f1` whose two classes were read from its data (`inferred`: no `labels:`, no
    ClassLabel names) names its positive class. Sorted, the second of them is the later name, which for
    MRPC's `equivalent`/`not_equivalent` or QQP's `duplicate`/`not_duplicate` is the negative one: it was
    scored silently. The default (the second, id 1) stays where the order is the user's (`labels:`), the
    data's own (ClassLabel names) or GLUE's ids (0 and 1). Classes other than two are `check_binary_f1`'s."""
    said = options.get("positive_label") is not None
    if BINARY_F1 not in asked or said or not inferred or len(labels) != 2 or labels == GLUE_IDS:
        return
    first, second = labels
    fix = " or ".join(f"`options: {{positive_label: {flow(name)}}}`" for name in labels)
    raise UserError(
        f"{where}: {f1_key(asked)} 'f1' is the F1 of the positive class, and the two classes read from the data "
        f"({first}, {second}) do not say which it is; write {fix}, or `labels:` with the positive class second"
    )


def columns_of(family: str) -> tuple[str, ...]:
    return (*COLUMNS[family], *OPTIONAL_COLUMNS.get(family, ()))


def options_of(family: str) -> set[str]:
    return set(recorded_fields(FAMILIES[family])) - {"labels", "template"}  # not options of a task file


LR_FIELDS = ("lr", "lrs", "learning_rate")
"""What a task file's author from Hugging Face's Trainer writes for the learning rate, which is the grid's."""
HARNESS_FIELDS = ("dataset_path", "doc_to_text", "doc_to_target", "output_type", "test_split")
"""Fields of an lm-evaluation-harness task config (its `task:` names it), which a task file resembles."""


def check_foreign_fields(raw: dict, where: str) -> None:
    """Refuse fields of the configs a task file's author knows, with what encoderlab reads instead: a
    learning rate (top level or under `finetune:`: the LRs are the grid's, `--lrs`), and an
    lm-evaluation-harness config (`task:`, `dataset_path:`, `doc_to_text:`). Both were listed as unknown
    fields beside the valid ones, which said what to write but not that the setting lives elsewhere."""
    finetune = raw.get("finetune") if isinstance(raw.get("finetune"), dict) else {}
    for key, place in [(k, "") for k in LR_FIELDS if k in raw] + [
        (k, "finetune.") for k in LR_FIELDS if k in finetune
    ]:
        raise UserError(
            f"{where}: {place}{key}: a task file sets no learning rate, the grid does: `encoderlab eval MODEL "
            "--task-file FILE --lrs 1e-4 5e-4` (a study's `eval: {lrs: [...]}`); remove it"
        )
    harness = [k for k in ("task", *HARNESS_FIELDS) if k in raw]
    if "task" in raw and "family" not in raw and len(harness) > 1:
        raise UserError(
            f"{where} is an lm-evaluation-harness task config (it has {', '.join(f'`{k}:`' for k in harness)}), "
            "which encoderlab does not read: it fine-tunes on labelled examples; write `name`, `family`, `data` "
            "and `columns` (docs/evaluation.md, Your own tasks)"
        )


QA_HEAD_METRICS = {"span": ("f1", "exact_match", "exact"), "tagger": ("position_f1", "exact_positions")}
"""The QA scores each head reports (the first is the default)."""


def qa_metric(
    metric: str | None, select_metric: str | None, options: QAOptions, inputs: Inputs, where: str
) -> str:
    """The QA task's metric (and the one picking its best epoch): one its head reports, by default the
    head's first. Settings the head does not read are refused rather than ignored: the span head
    (`eval/qa.py`) builds its own pair inputs (no `inputs: eos`, no question template), the tagger reads
    one window (no stride or answer cap)."""
    other = "tagger" if options.head == "span" else "span"
    if options.head == "span":
        unread = [f"inputs {inputs!r}"] if inputs != "tokenizer" else []
        unread += ["question_template"] if options.question_template != QAOptions.question_template else []
    else:
        unread = [k for k in ("stride", "max_answer_tokens") if getattr(options, k) != getattr(QAOptions, k)]
    if unread:
        raise UserError(
            f"{where}: {' and '.join(unread)}: read only by the QA head {other!r}; set options: "
            f"{{head: {other}}} or leave it out"
        )
    allowed = QA_HEAD_METRICS[options.head]
    wanted = "exact" if options.v2 else "exact_match"
    for name, value in (("metric", metric), ("finetune.select_metric", select_metric)):
        if value is not None and value not in allowed:
            raise UserError(
                f"{where}: {name} {value!r} is not reported by the QA head {options.head!r}; use one of "
                f"{', '.join(allowed)}"
            )
        if value in ("exact", "exact_match") and value != wanted:
            version = "v2" if options.v2 else "v1"
            raise UserError(f"{where}: {name} {value!r} is not reported for {version} QA; use {wanted!r}")
    return metric or allowed[0]
