"""Fake assets in the real record schemas, written into a private $ENCODERLAB_HOME with a valid
manifest, so the real `asset_jsonl` / `is_fetched` code paths find them; task files and their data, the
sentiment task of the task-file tests among them."""

from __future__ import annotations

import json
import random
from pathlib import Path

import yaml
from tests.eval.conftest import (
    NEGATIVE,
    POSITIVE,
    TOPICS,
    filler,
    make_tokenizer,
    sc_examples,
    tiny_model,
    vocabulary_texts,
)

from encoderlab.model.io import save_model_folder


def write_asset(home: Path, name: str, records: list[dict]) -> None:
    from encoderlab.data.assets.cache import FORMAT, MANIFEST, spec_of

    spec = spec_of(name)
    folder = home / "assets" / name
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "data.jsonl", "w") as f:
        for r in records:
            f.write(json.dumps(r) + "\n")
    manifest = {
        "format": FORMAT,
        "name": name,
        "revision": spec.revision,
        "source": {"sha256": spec.source.sha256 if spec.source else None},
        "size_bytes": (folder / "data.jsonl").stat().st_size,
        "documents": len(records),
    }
    (folder / MANIFEST).write_text(json.dumps(manifest))


def boolq_records(n: int, seed: int = 0) -> list[dict]:
    """BoolQ schema; the answer is "true" iff the passage holds a positive word."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        label = rng.random() < 0.5
        words = filler(rng, 8) + [rng.choice(POSITIVE if label else NEGATIVE)] + filler(rng, 4)
        split = "dev" if i % 4 == 0 else "train"
        out.append(
            {
                "id": f"{split}-{i}",
                "text": " ".join(words),
                "meta": {"question": "is it good ?", "label": label, "split": split},
            }
        )
    return out


def squad_records(n: int, seed: int, title_prefix: str = "t", bad_every: int = 0) -> list[dict]:
    """SQuAD schema, one record per question; every `bad_every`-th answer span is wrong."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        words = filler(rng, rng.randrange(4, 14))
        pos = rng.randrange(len(words) + 1)
        answer = rng.choice(TOPICS)
        words[pos:pos] = ["code", "is", answer]
        context = " ".join(words)
        start = len(" ".join(words[: pos + 2])) + 1
        if bad_every and i % bad_every == 0:
            start += 1
        title = f"{title_prefix}{i % 12}"
        meta = {
            "title": title,
            "question": "what is the code ?",
            "answers": [{"text": answer, "answer_start": start}],
            "paragraph": f"{title}#{i}",
        }
        out.append({"id": f"{title_prefix}-{seed}-{i}", "text": context, "meta": meta})
    return out


def model_folder(path: Path, with_tokenizer: bool = True, seed: int = 0) -> Path:
    """A tiny encoderlab model folder; another `seed`, another model (another fingerprint)."""
    tok = make_tokenizer(vocabulary_texts())
    return save_model_folder(tiny_model(len(tok), seed), path, tok if with_tokenizer else None)


def write_jsonl(path: Path, rows: list[dict]) -> str:
    """Rows as a JSON-lines file; returns its name (as a task file names its data)."""
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path.name


def write_task_file(folder: Path, file: str = "task.yaml", **spec) -> Path:
    """A task file holding `spec`, in `folder`."""
    path = folder / file
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


def run_cli(argv: list[str], capsys) -> tuple[int, str, str]:
    """The CLI run in process: (exit code, stdout, stderr)."""
    from encoderlab.cli import main

    try:
        main(argv)
        code = 0
    except SystemExit as exc:
        code = exc.code
    out, err = capsys.readouterr()
    return code, out, err


def check_hub_id(tmp_path: Path, capsys, hub_id: str) -> tuple[int, str, str]:
    """`eval HUB_ID --check` of a one-step sentiment task file (`sentiment_files`): (exit code, stdout,
    stderr), as the hub-cache and local-hub-server tests run it."""
    spec = {**sentiment_files(tmp_path), "max_length": 32}
    spec["finetune"] = {"max_steps": 1, "batch_size": 8, "micro_batch_size": 8}
    task = write_task_file(tmp_path, name="mine", **spec)
    argv = ["eval", hub_id, "--task-file", str(task), "--out", str(tmp_path / "e"), "--check"]
    return run_cli([*argv, "--lrs", "1e-3", "--seeds", "0"], capsys)


SENTIMENT_LABELS = ("negative", "positive")


def sentiment_rows(n: int, seed: int) -> list[dict]:
    """`n` labelled sentences (conftest's `sc_examples`) as a task file's rows: `sentence`, `polarity`."""
    return [{"sentence": e["text"], "polarity": SENTIMENT_LABELS[e["label"]]} for e in sc_examples(n, seed)]


def write_csv(path: Path, rows: list[dict]) -> str:
    """`rows` as a CSV file written by `datasets` (as a user's export reads); returns its name."""
    import datasets  # on first use: the many tests that import this module write no CSV

    datasets.Dataset.from_list(rows).to_csv(path, index=False)
    return path.name


def sentiment_files(tmp_path: Path) -> dict:
    """train.csv and test.csv (disjoint) and the spec fields that read them."""
    write_csv(tmp_path / "train.csv", sentiment_rows(40, 0))
    write_csv(
        tmp_path / "test.csv", [r for r in sentiment_rows(40, 1) if r not in sentiment_rows(40, 0)][:10]
    )
    return {
        "family": "sc",
        "data": {"train": "train.csv", "test": "test.csv"},
        "columns": {"text": "sentence", "label": "polarity"},
    }


def train_only_task(tmp_path: Path, n: int, **data) -> Path:
    """A task of one train file (and a test.csv it names only if `data` says so)."""
    for k, split in enumerate(("train", "test")):
        rows = [{**r, "sentence": f"{r['sentence']} {split}{i}"} for i, r in enumerate(sentiment_rows(n, k))]
        write_csv(tmp_path / f"{split}.csv", rows)
    spec = {"name": "reviews", "family": "sc", "columns": {"text": "sentence", "label": "polarity"}}
    return write_task_file(tmp_path, **spec, data={"train": "train.csv", **data})


def qa_offset_rows(n: int, off: set[int]) -> list[dict]:
    """SQuAD-style rows; the answer_start of the rows in `off` points one character early."""
    rows = []
    for i in range(n):
        city = ("Paris", "Lyon", "Rome", "Oslo")[i % 4]
        context = f"Note {i}: person {i} lives in {city} and works there."
        start = context.index(city) - (1 if i in off else 0)
        rows.append({"question": f"Where does person {i} live?", "context": context,
                     "answers": {"text": [city], "answer_start": [start]}})  # fmt: skip
    return rows


def qa_offset_task(folder: Path, off: set[int], file: str = "task.yaml") -> Path:
    """A QA task file `where` (one fine-tuning step) whose training rows in `off` (of 40) have their
    `answer_start` one character early (`qa_offset_rows`), so fine-tuning skips those answers."""
    data = {"train": write_jsonl(folder / "train.jsonl", qa_offset_rows(40, off)),
            "validation": write_jsonl(folder / "dev.jsonl", qa_offset_rows(6, set())),
            "test": write_jsonl(folder / "test.jsonl", qa_offset_rows(10, set())[::-1])}  # fmt: skip
    return write_task_file(folder, file, name="where", family="qa", data=data, allow_overlap=True, max_length=128, options={"stride": 32},
                           finetune={"max_steps": 1, "batch_size": 2, "micro_batch_size": 2})  # fmt: skip
