"""The pooling a model declares for its heads, read from its config.json as EncodEval reads it.

EncodEval fine-tunes paper 1's EuroBERT models with the classification pooling of the model's config
(`clf_pooling`, EuroBERT's own modelling code; `classifier_pooling` in transformers' native EuroBERT:
`bos`, `mean` or `late`, late when unset) and embeds for retrieval with the last token when the config
says `retrieval_pooling: eos`, else with SentenceTransformers' default, the mean. A task whose pooling
is `model` (the paper suite's) is resolved with this before it runs or is looked up in the cache
(`Task.resolve_pooling`), so the resolved pooling is in its signature: two configs of one set of weights
never share a result. encoderlab's own model folders declare nothing (their default is what EncodEval
uses for a config without the key); `encoderlab export` writes transformers' default, `late`.
"""

from __future__ import annotations

from dataclasses import dataclass

from encoderlab.errors import UserError

CLASSIFICATION = {"bos": "first", "mean": "mean", "late": "late"}
"""EuroBERT's `clf_pooling` values -> encoderlab's `pooling` names."""


@dataclass(frozen=True)
class ModelPooling:
    """What a model's config.json declares (None: nothing, its family's default applies)."""

    classification: str | None = None
    """Sequence classification: `first`, `mean` or `late`."""
    retrieval: str | None = None
    """Retrieval: `last` (`retrieval_pooling: eos`), else None (mean)."""

    def of(self, family: str) -> str | None:
        """The declared pooling for a task of `family` (sc or ir; None for the others)."""
        return {"sc": self.classification, "ir": self.retrieval}.get(family)


def declared_pooling(config: dict, where: str) -> ModelPooling:
    """The poolings `config` (a Hugging Face config.json) declares: `clf_pooling` (EuroBERT's modelling
    code, what EncodEval reads), else a native EuroBERT config's `classifier_pooling`; `retrieval_pooling`.
    A classification value EncodEval cannot fine-tune with is one line naming the file."""
    name = "clf_pooling" if "clf_pooling" in config else "classifier_pooling"
    value = config.get(name) if name == "clf_pooling" or config.get("model_type") == "eurobert" else None
    if value is not None and (not isinstance(value, str) or value not in CLASSIFICATION):
        raise UserError(
            f"{where}: {name} {value!r} is not one of {', '.join(CLASSIFICATION)} (EuroBERT's classification "
            "poolings); fix config.json"
        )
    retrieval = "last" if config.get("retrieval_pooling") == "eos" else None
    return ModelPooling(CLASSIFICATION.get(value), retrieval)
