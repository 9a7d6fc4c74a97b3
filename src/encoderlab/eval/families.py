"""The four task families: how each tokenises its data, builds its head, computes its loss,
predicts a split and scores predictions. `finetune.run_one` drives them all through the same loop.

Scoring is split in two on purpose: `predict` gives one plain dict per example (gold and
predicted labels, tags, answer texts, or a ranking), `metrics` computes the scores from those
dicts alone. The predictions saved next to the results are exactly what `metrics` read, so a
score can be recomputed from the file, inside encoderlab or out. `constant` says when every
prediction of a split is the same (one class, one tag, one answer, one ranking), or for tagging when
one tag covers nearly every word it read (`degenerate`): a model that learned nothing, which a mean score
alone does not show.

Extractive QA by in/out-of-answer tagging (EncodEval's, paper 1) has its own operations in
`answer_tagger.py`; batching and padding are in `batching.py`.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from typing import Protocol

import torch
import torch.nn.functional as F
from torch import nn

from encoderlab.eval import qa
from encoderlab.eval.answer_tagger import AnswerTagger
from encoderlab.eval.batching import Prepared, model_inputs, predict_rows, segments, token_loss
from encoderlab.eval.degenerate import near_constant_tags
from encoderlab.eval.features import (
    IGNORE,
    check_room,
    encode_texts,
    encode_words,
    end_token_id,
    start_token_id,
)
from encoderlab.eval.heads import (
    BiEncoder,
    HardNegatives,
    SequenceClassifier,
    SpanExtractor,
    TokenClassifier,
    info_nce,
)
from encoderlab.eval.metrics import (
    CONLLEVAL_SETTINGS,
    SEQEVAL_SETTINGS,
    accuracy,
    binary_f1,
    conlleval_f1,
    correlations,
    entity_f1,
    macro_f1,
    multilabel_f1,
    non_iob_tag,
    retrieval_scores,
    retrieved_ndcg,
    sentence_macro_f1,
    squad_v1,
    squad_v2,
    weighted_f1,
)
from encoderlab.eval.spec import NEGATIVE, IRSplit, PairSCOptions, QAOptions, Task, TaskData
from encoderlab.eval.tokenids import CompactFeatures, TokenIds, columns, compact_ids, input_keys


def text_ids(task: Task, tokenizer, texts: Sequence[str]) -> list[list[int]]:
    """A task's texts as ids (`features.encode_texts`); with `eos` inputs, a head pooling the `first`
    token finds the start token there, not the text's first word."""
    if task.inputs == "tokenizer":
        check_room(tokenizer, task.max_length, f"task {task.name}")
    return encode_texts(tokenizer, texts, task.max_length, task.inputs, start=task.pools_first)


def check_inputs(task: Task, tokenizer) -> None:
    """Refuse, before anything runs, a tokenizer without the special tokens the task's `eos` inputs
    need: the end token, and the start token where its head pools the first position."""
    if task.inputs == "eos":
        end_token_id(tokenizer)
        if task.pools_first:
            start_token_id(tokenizer)


def input_text(task: Task, example: dict) -> str:
    """The model input of an sc example: its text, or its pair joined by the task's template."""
    if isinstance(task.options, PairSCOptions):
        return task.options.render(example["text"], example["text_pair"])
    return example["text"]


class SequenceClassification:
    @staticmethod
    def target(example: dict) -> dict:
        """What the loss reads of an example beside its ids (subclasses: labels, a number)."""
        return {"label": example["label"]}

    @classmethod
    def prepare(cls, task: Task, tokenizer, data: TaskData) -> Prepared:
        def enc(split):
            ids = compact_ids(
                lambda texts: text_ids(task, tokenizer, texts), (input_text(task, e) for e in split)
            )
            return CompactFeatures({"input_ids": ids}, columns([cls.target(e) for e in split]))

        return Prepared(enc(data.train), enc(data.val), {k: enc(v) for k, v in data.tests.items()})

    @staticmethod
    def build(task: Task, model: nn.Module) -> nn.Module:
        options = task.options
        return SequenceClassifier(model, len(task.labels), options.pooling, head=options.head)

    @staticmethod
    def loss(module: nn.Module, micro: Sequence[dict]) -> torch.Tensor:
        logits = module(*model_inputs(module, [f["input_ids"] for f in micro]))
        return F.cross_entropy(
            logits.float(), torch.tensor([f["label"] for f in micro], device=logits.device)
        )

    @staticmethod
    def predict(task: Task, module: nn.Module, split: list[dict]) -> list[dict]:
        pred = predict_rows(module, [f["input_ids"] for f in split], lambda out, r, n: int(out[r].argmax()))
        return [
            {"i": i, "gold": task.labels[f["label"]], "pred": task.labels[p]}
            for i, (f, p) in enumerate(zip(split, pred))
        ]

    @staticmethod
    def metrics(task: Task, predictions: list[dict]) -> dict:
        gold, pred = [p["gold"] for p in predictions], [p["pred"] for p in predictions]
        out = {"accuracy": accuracy(gold, pred), "macro_f1": macro_f1(gold, pred), "n": len(predictions)}
        if "weighted_f1" in (task.metric, task.finetune.select_metric):
            out["weighted_f1"] = weighted_f1(gold, pred)
        if "f1" in (task.metric, task.finetune.select_metric):  # two classes' (`custom_family.BINARY_F1`)
            out["f1"] = binary_f1(gold, pred, task.options.positive)
        return out

    @staticmethod
    def constant(predictions: list[dict]) -> str | None:
        classes = {p["pred"] for p in predictions}
        if len(predictions) > 1 and len(classes) == 1:
            return f"predicts class '{classes.pop()}' for all {len(predictions)} examples"
        return None


class MultiLabelClassification(SequenceClassification):
    """Sequence classification with a set of labels per example (`SCOptions.multilabel`): one
    sigmoid per label and binary cross-entropy; a label is predicted when its logit is > 0, as
    BioClinical-ModernBERT does for HoC."""

    @staticmethod
    def target(example: dict) -> dict:
        return {"labels": sorted(example["labels"])}

    @staticmethod
    def loss(module: nn.Module, micro: Sequence[dict]) -> torch.Tensor:
        logits = module(*model_inputs(module, [f["input_ids"] for f in micro])).float()
        target = torch.zeros_like(logits)
        for row, f in enumerate(micro):
            target[row, f["labels"]] = 1.0
        return F.binary_cross_entropy_with_logits(logits, target)

    @staticmethod
    def predict(task: Task, module: nn.Module, split: list[dict]) -> list[dict]:
        pred = predict_rows(
            module,
            [f["input_ids"] for f in split],
            lambda out, r, n: (out[r] > 0).nonzero().flatten().tolist(),
        )
        return [
            {"i": i, "gold": [task.labels[x] for x in f["labels"]], "pred": [task.labels[x] for x in p]}
            for i, (f, p) in enumerate(zip(split, pred))
        ]

    @staticmethod
    def metrics(task: Task, predictions: list[dict]) -> dict:
        gold, pred = [set(p["gold"]) for p in predictions], [set(p["pred"]) for p in predictions]
        return {**multilabel_f1(gold, pred, task.labels), "accuracy": accuracy(gold, pred), "n": len(gold)}

    @staticmethod
    def constant(predictions: list[dict]) -> str | None:
        sets = {tuple(p["pred"]) for p in predictions}
        if len(predictions) > 1 and len(sets) == 1:
            labels = list(sets.pop())
            return f"predicts the labels {labels} for all {len(predictions)} examples"
        return None


class Regression(SequenceClassification):
    """Sequence regression (`SCOptions.regression`): one output, mean squared error against the
    example's number, scored by Pearson and Spearman correlation (Hugging Face's `run_glue.py` with
    one label, GLUE's STS-B scores)."""

    @staticmethod
    def target(example: dict) -> dict:
        return {"target": float(example["target"])}

    @staticmethod
    def build(task: Task, model: nn.Module) -> nn.Module:
        return SequenceClassifier(model, 1, task.options.pooling, head=task.options.head)

    @staticmethod
    def loss(module: nn.Module, micro: Sequence[dict]) -> torch.Tensor:
        out = module(*model_inputs(module, [f["input_ids"] for f in micro])).float()[:, 0]
        return F.mse_loss(out, torch.tensor([f["target"] for f in micro], device=out.device))

    @staticmethod
    def predict(task: Task, module: nn.Module, split: list[dict]) -> list[dict]:
        pred = predict_rows(module, [f["input_ids"] for f in split], lambda out, r, n: float(out[r, 0]))
        return [{"i": i, "gold": f["target"], "pred": p} for i, (f, p) in enumerate(zip(split, pred))]

    @staticmethod
    def metrics(task: Task, predictions: list[dict]) -> dict:
        gold, pred = [p["gold"] for p in predictions], [p["pred"] for p in predictions]
        return {**correlations(gold, pred), "n": len(predictions)}

    @staticmethod
    def constant(predictions: list[dict]) -> str | None:
        bad = sum(not math.isfinite(p["pred"]) for p in predictions)
        if bad:
            return f"predicts a non-finite number for {bad} of {len(predictions)} examples (fine-tuning diverged)"
        values = {p["pred"] for p in predictions}
        if len(predictions) > 1 and len(values) == 1:
            return f"predicts {values.pop():g} for all {len(predictions)} examples"
        return None


class TokenClassification:
    @staticmethod
    def prepare(task: Task, tokenizer, data: TaskData) -> Prepared:
        if task.inputs == "tokenizer":
            check_room(tokenizer, task.max_length, f"task {task.name}")

        def enc(split):
            feats = encode_words(
                tokenizer,
                [e["tokens"] for e in split],
                [e["tags"] for e in split],
                task.max_length,
                inputs=task.inputs,
                all_subwords=task.options.subword_labels == "all",
                split_words=task.options.words == "split",
            )
            # held compactly (`tokenids`), read back as the dicts of lists the loop read before
            lists = {k: [f[k] for f in feats] for k in ("input_ids", "labels", "words")}
            lists["gold"] = [e["tags"] for e in split]
            return CompactFeatures({k: TokenIds.of([v], signed=k == "labels") for k, v in lists.items()})

        return Prepared(enc(data.train), enc(data.val), {k: enc(v) for k, v in data.tests.items()})

    @staticmethod
    def build(task: Task, model: nn.Module) -> nn.Module:
        return TokenClassifier(model, len(task.labels))

    loss = staticmethod(token_loss)

    @staticmethod
    def predict(task: Task, module: nn.Module, split: list[dict]) -> list[dict]:
        argmax = predict_rows(
            module, [f["input_ids"] for f in split], lambda out, r, n: out[r, :n].argmax(-1).tolist()
        )
        # Truncated words get "O", a miss (POS) or a missed entity (NER); `constant` skips them (`unread`).
        out = []
        for i, (f, tags) in enumerate(zip(split, argmax)):
            votes: dict[int, Counter] = {}
            for word, pos in zip(f["words"], (i for i, lab in enumerate(f["labels"]) if lab != IGNORE)):
                votes.setdefault(word, Counter())[tags[pos]] += 1
            words = ["O"] * len(f["gold"])
            for word, counts in votes.items():
                # The majority tag of a word's labelled subwords (one with first-subword labels), ties
                # to the lowest tag id.
                words[word] = task.labels[min(counts, key=lambda t: (-counts[t], t))]
            out.append({"i": i, "gold": [task.labels[t] for t in f["gold"]], "pred": words})
            if unread := [k for k in range(len(words)) if k not in votes]:
                out[-1]["unread"] = unread
        return out

    @staticmethod
    def metrics(task: Task, predictions: list[dict]) -> dict:
        gold, pred = [p["gold"] for p in predictions], [p["pred"] for p in predictions]
        flat_gold = [t for s in gold for t in s]
        flat_pred = [t for s in pred for t in s]
        out = {
            "accuracy": 100.0 * sum(g == p for g, p in zip(flat_gold, flat_pred)) / len(flat_gold),
            "n": len(predictions),
        }
        asked = {task.metric, task.finetune.select_metric}  # what is reported and what picks an epoch
        iob = non_iob_tag(task.labels) is None
        if asked & {"entity_f1", "conlleval_f1"} or (iob and "sentence_macro_f1" in asked):
            out["entity_f1"] = entity_f1(gold, pred)
            out["seqeval"] = SEQEVAL_SETTINGS
        if "conlleval_f1" in asked:
            out["conlleval_f1"] = conlleval_f1(gold, pred)
            out["conlleval"] = CONLLEVAL_SETTINGS
        if "sentence_macro_f1" in asked:
            out["sentence_macro_f1"] = sentence_macro_f1(gold, pred)
        return out

    constant = staticmethod(near_constant_tags)


class ExtractiveQA:
    @staticmethod
    def prepare(task: Task, tokenizer, data: TaskData) -> Prepared:
        args = (task.max_length, task.options.stride, task.name)  # windows held compactly (`tokenids`)

        def enc(split):
            return split, qa.compact_eval_features(tokenizer, split, *args)

        train = qa.compact_train_features(tokenizer, data.train, *args)
        return Prepared(train, enc(data.val), {k: enc(v) for k, v in data.tests.items()})

    @staticmethod
    def build(task: Task, model: nn.Module) -> nn.Module:
        return SpanExtractor(model)

    @staticmethod
    def loss(module: nn.Module, micro: Sequence[dict]) -> torch.Tensor:
        start, end = module(*model_inputs(module, [f["input_ids"] for f in micro], segments(micro)))
        dev = start.device
        gold_start = torch.tensor([f["start"] for f in micro], device=dev)
        gold_end = torch.tensor([f["end"] for f in micro], device=dev)
        return (F.cross_entropy(start.float(), gold_start) + F.cross_entropy(end.float(), gold_end)) / 2

    @staticmethod
    def predict(task: Task, module: nn.Module, split) -> list[dict]:
        examples, features = split
        logits = predict_rows(
            module,
            [f["input_ids"] for f in features],
            lambda out, r, n: (out[0][r, :n].float().cpu().numpy(), out[1][r, :n].float().cpu().numpy()),
            segments(features),
        )
        answers, na = qa.decode(
            examples,
            features,
            [s for s, _ in logits],
            [e for _, e in logits],
            max_answer_tokens=task.options.max_answer_tokens,
            allow_null=task.options.v2,
        )
        out = []
        for e in examples:
            row = {"id": e["id"], "gold": [a["text"] for a in e["answers"]], "pred": answers[e["id"]]}
            if task.options.v2:
                row["no_answer_score"] = na[e["id"]]
            out.append(row)
        return out

    @staticmethod
    def metrics(task: Task, predictions: list[dict]) -> dict:
        gold = {p["id"]: p["gold"] for p in predictions}
        pred = {p["id"]: p["pred"] for p in predictions}
        if task.options.v2:
            na = {p["id"]: p["no_answer_score"] for p in predictions}
            return {**squad_v2(gold, pred, na), "n": len(predictions)}
        return {**squad_v1(gold, pred), "n": len(predictions)}

    @staticmethod
    def constant(predictions: list[dict]) -> str | None:
        texts = {p["pred"] for p in predictions}
        if len(predictions) > 1 and len(texts) == 1:
            text = texts.pop()
            said = f"answers {text!r}" if text else "gives no answer"
            return f"{said} to all {len(predictions)} questions"
        return None


class Retrieval:
    @staticmethod
    def prepare(task: Task, tokenizer, data: TaskData) -> Prepared:
        def texts(prefix, items):
            return compact_ids(lambda batch: text_ids(task, tokenizer, batch), (prefix + t for t in items))

        def enc(split: IRSplit):
            qids, dids = list(split.queries), list(split.corpus)
            return {
                "qids": qids,
                "dids": dids,
                "queries": texts(task.options.query_prefix, split.queries.values()),
                "docs": texts(task.options.document_prefix, split.corpus.values()),
                "qrels": split.qrels,
                "ignore_identical_ids": split.ignore_identical_ids,
            }

        ids = {
            "query": texts(task.options.query_prefix, (p["query"] for p in data.train)),
            "doc": texts(task.options.document_prefix, (p["document"] for p in data.train)),
        }  # a copy of a positive is the same id or the same input, as truncated (`heads.info_nce`)
        keys = {"doc_id": [p["doc_id"] for p in data.train], "doc_key": input_keys(ids["doc"])}
        if data.train and NEGATIVE in data.train[0]:  # triplets, one in every row (`ir_negatives`)
            ids[NEGATIVE] = texts(task.options.document_prefix, (p[NEGATIVE] for p in data.train))
            keys["negative_key"] = input_keys(ids[NEGATIVE])
        train = CompactFeatures(ids, keys)
        return Prepared(train, enc(data.val), {k: enc(v) for k, v in data.tests.items()})

    @staticmethod
    def build(task: Task, model: nn.Module) -> nn.Module:
        return BiEncoder(model, task.options.pooling)

    @staticmethod
    def loss(module: nn.Module, micro: Sequence[dict]) -> torch.Tensor:
        queries = module(*model_inputs(module, [f["query"] for f in micro]))
        docs = module(*model_inputs(module, [f["doc"] for f in micro]))
        hard = None
        if NEGATIVE in micro[0]:
            embedded = module(*model_inputs(module, [f[NEGATIVE] for f in micro]))
            hard = HardNegatives(embedded, [f["negative_key"] for f in micro])
        ids, keys = [f["doc_id"] for f in micro], [f["doc_key"] for f in micro]
        return info_nce(queries, docs, ids, hard=hard, keys=keys)

    @staticmethod
    def predict(task: Task, module: nn.Module, split: dict) -> list[dict]:
        def embed(seqs):
            return torch.stack(predict_rows(module, seqs, lambda out, r, n: out[r].float()))

        queries, docs = embed(split["queries"]), embed(split["docs"])
        k = min(100, len(split["dids"]))
        own = {d: j for j, d in enumerate(split["dids"])} if split.get("ignore_identical_ids") else {}
        out = []
        for start in range(0, len(queries), 1024):
            qids = split["qids"][start : start + 1024]
            scores = queries[start : start + 1024] @ docs.T
            for row, qid in enumerate(qids):  # BEIR's ignore_identical_ids: a query never retrieves itself
                if qid in own:
                    scores[row, own[qid]] = float("-inf")
            values, index = scores.topk(k, dim=-1)
            for qid, vals, idx in zip(qids, values.tolist(), index.tolist()):
                ranking = [[split["dids"][j], v] for j, v in zip(idx, vals) if v != float("-inf")]
                out.append({"qid": qid, "relevant": split["qrels"].get(qid, {}), "ranking": ranking})
        return out

    @staticmethod
    def metrics(task: Task, predictions: list[dict]) -> dict:
        qrels = {p["qid"]: p["relevant"] for p in predictions}
        run = {p["qid"]: dict(map(tuple, p["ranking"])) for p in predictions}
        return {
            **retrieval_scores(qrels, run),
            "ndcg@10_retrieved": retrieved_ndcg(qrels, run),
            "n": len(predictions),
        }

    @staticmethod
    def constant(predictions: list[dict]) -> str | None:
        rankings = {tuple(d for d, _ in p["ranking"]) for p in predictions}
        if len(predictions) > 1 and len(rankings) == 1:
            return f"returns the same ranking for all {len(predictions)} queries"
        return None


class FamilyOps(Protocol):
    """What `finetune` needs from a family; `predict` output is what `metrics` scores and what is
    saved as a run's predictions, so a saved file rescored with `metrics` gives the same numbers."""

    def prepare(self, task: Task, tokenizer, data: TaskData) -> Prepared: ...
    def build(self, task: Task, model: nn.Module) -> nn.Module: ...
    def loss(self, module: nn.Module, micro: Sequence[dict]) -> torch.Tensor: ...
    def predict(self, task: Task, module: nn.Module, split) -> list[dict]: ...
    def metrics(self, task: Task, predictions: list[dict]) -> dict: ...
    def constant(self, predictions: list[dict]) -> str | None: ...


FAMILIES: dict[str, FamilyOps] = {
    "sc": SequenceClassification,
    "tc": TokenClassification,
    "qa": ExtractiveQA,
    "ir": Retrieval,
}


def family_ops(task: Task) -> FamilyOps:
    """The operations of a task's family (multi-label sequence classification, regression and QA by
    tagging have their own)."""
    if task.multilabel:
        return MultiLabelClassification
    if getattr(task.options, "regression", False):
        return Regression
    if isinstance(task.options, QAOptions) and task.options.head == "tagger":
        return AnswerTagger
    return FAMILIES[task.family]


def score(task: Task, module: nn.Module, split) -> tuple[dict, list[dict]]:
    """(scores, predictions) of `module` on one prepared split; IR adds the corpus size."""
    family = family_ops(task)
    predictions = family.predict(task, module, split)
    scores = family.metrics(task, predictions)
    if task.family == "ir":
        scores["corpus"] = len(split["dids"])
    return scores, predictions


def micro_batch_size(task: Task) -> int:
    """IR needs the whole batch in one pass (its negatives); other families may accumulate."""
    return task.finetune.batch_size if task.family == "ir" else task.finetune.micro_batch_size
