"""Helpers several study test modules share: task files, model mirrors, stand-in studies and backends.

A helper that one test module wrote and others imported lives here under a public name
(tests/test_import_layers.py refuses a test module importing another test module's underscore name).
It reads `fake_study` as `tests.study.fake_study`, for its constants and corpus only: a data test imports
it too, from a folder that is not on the path; what a fake backend reads (`fake_study.FAIL_ON`, ...) is
in `stale_fixtures.py` and `absent_fixtures.py`, which import it as the study tests do."""

from __future__ import annotations

import csv
import json
import random
import shutil
from pathlib import Path
from types import SimpleNamespace

import yaml
from huggingface_hub import constants
from tests.data.hub_cache_fixtures import SHA_A, cache_two_commits
from tests.eval.fixtures import model_folder
from tests.study.fake_study import WORDS, tiny_corpus

from encoderlab.study import results
from encoderlab.study.measures import Measure, Outcome
from encoderlab.study.spec import ClaimSpec, RunSpec


def polarity_task_file(folder) -> None:
    """A sentiment task of one's own: 'good' in the text means positive."""
    rng = random.Random(0)
    for split, n in (("train", 120), ("test", 40)):
        with open(folder / f"polarity-{split}.csv", "w", newline="") as f:
            writer = csv.writer(f)
            writer.writerow(["review", "stars"])
            for i in range(n):
                label = rng.choice(["good", "bad"])
                words = rng.sample(WORDS, 5) + [label] + [str(i), split]
                writer.writerow([" ".join(words), label])
    (folder / "polarity.yaml").write_text(
        "name: polarity\nfamily: sc\ndata: {train: polarity-train.csv, test: polarity-test.csv}\n"
        "columns: {text: review, label: stars}\nlabels: [bad, good]\nmax_length: 32\n"
    )


def model_mirror_folders(root, *names):
    """A tiny model folder (with its tokenizer) at `root/NAME` for each `NAME` (OWNER/NAME)."""
    model_folder(root / "model")
    for name in names:
        shutil.copytree(root / "model", root / name)
    shutil.rmtree(root / "model")


def stand_in_study(monkeypatch, claims: list[tuple[ClaimSpec, dict]]):
    """A stand-in study: run name -> scores, each claim measured on them (or not tested), no caveats."""
    runs = {c.a: d["a"] for c, d in claims} | {c.b: d["b"] for c, d in claims}
    scores = {f"{r}/s{s}": v for r, seeds in runs.items() for s, v in seeds.items()}
    design = {c.id: d for c, d in claims}

    def evaluate(data, claim):
        if design[claim.id]["kind"] == "untested":
            return Outcome(sentence="no SC task is evaluated at this scale.")
        return Measure(of=scores.get, where="SC", higher_is_better=not design[claim.id]["lower"])

    monkeypatch.setattr(results, "EVALUATORS", {"beats": evaluate})
    for name in ("final_caveats", "degenerate_caveat"):
        monkeypatch.setattr(results, name, lambda *args: ({}, ""))
    monkeypatch.setattr(results, "partial_caveat", lambda *args: (0, ""))
    return SimpleNamespace(
        spec=SimpleNamespace(claims=[c for c, _ in claims], paper="paper1"),
        model_ids=lambda run: {s: f"{run}/s{s}" for s in runs[run]},
        label=str.upper,
    )


ENTRIES_STUDY = """
name: mine
size: tiny
seq_len: 32
micro_batch: 2
steps: 4
data: [{name: main, corpus: CORPUS, vocab_size: 300, decontaminate: false}]
runs: [{name: mlm, recipe: pfs-mlm}]
baseline: mlm
eval: {suite: pocket, tasks: [tweets], lrs: [0.001], seeds: [0], max_steps: 2}
"""


def corpus_entries_study(folder, corpus: list[str]):
    """`folder/s.yaml`: `ENTRIES_STUDY` reading `corpus` (its entries as the study file writes them)."""
    (folder / "s.yaml").write_text(ENTRIES_STUDY.replace("CORPUS", json.dumps(corpus)))
    return folder / "s.yaml"


FIELD_HINT_STUDY = {
    "name": "mini",
    "data": [{"name": "main", "corpus": [], "vocab_size": 300}],
    "runs": [{"name": "a", "recipe": "smoke-mlm", "evaluate": False}],
    "baseline": "a",
}


def field_hint_study(folder, corpus: list[str]):
    """`folder/s.yaml`: `FIELD_HINT_STUDY` reading `corpus`."""
    study = {**FIELD_HINT_STUDY, "data": [{**FIELD_HINT_STUDY["data"][0], "corpus": corpus}]}
    (folder / "s.yaml").write_text(yaml.safe_dump(study))
    return folder / "s.yaml"


HUB_START_STUDY = """
name: drift
description: continued pretraining of a hub model
size: tiny
seq_len: 32
micro_batch: 2
grad_accum: 2
steps: 3
run_overrides: {precision: fp32}
data: [{name: main, corpus: [corpus.jsonl], tokenizer: someone/enc, decontaminate: false}]
runs:
  - {name: cpt, recipe: cpt-mlm, init: someone/enc}
eval: {suite: null, task_files: [polarity.yaml], lrs: [0.002], seeds: [0], max_steps: 2}
baseline: cpt
"""


def hub_start_world(tmp_path, monkeypatch):
    """`HUB_START_STUDY` in `tmp_path`, its corpus and task file, someone/enc in the hub cache at commits A and B
    (main at A), the hub offline; the repo's cache folder."""
    storage = cache_two_commits(tmp_path, monkeypatch, lambda folder, sha: model_folder(folder))
    monkeypatch.setenv("ENCODERLAB_HOME", str(tmp_path / "home"))
    (storage / "refs" / "main").write_text(SHA_A)
    tiny_corpus(tmp_path / "corpus.jsonl", 300)
    polarity_task_file(tmp_path)
    (tmp_path / "drift.yaml").write_text(HUB_START_STUDY)
    return storage


HUB_ID = "someone/enc"
COMMIT = "0123456789abcdef0123456789abcdef01234567"


def hub_position_cache(root: Path, names: list[str]) -> Path:
    """The files `names` of the repo in the hub cache, as `hf download someone/enc` leaves them."""
    storage = Path(constants.HF_HUB_CACHE) / ("models--" + HUB_ID.replace("/", "--"))
    folder = storage / "snapshots" / COMMIT
    folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        shutil.copy(root / "repo" / name, folder / name)
    (storage / "refs").mkdir(exist_ok=True)
    (storage / "refs" / "main").write_text(COMMIT)
    return folder


def hub_position_study(root: Path, max_length: int) -> Path:
    """MINE with its clm run replaced by `start`, `someone/enc` evaluated as is on a task of `max_length`."""
    tiny_corpus(root / "corpus.jsonl", 300)
    polarity_task_file(root)
    task = root / "polarity.yaml"
    task.write_text(task.read_text().replace("max_length: 32", f"max_length: {max_length}"))
    study = MINE.replace("  - {name: clm, recipe: pfs-clm}\n", f"  - {{name: start, init: {HUB_ID}}}\n")
    (root / "my-study.yaml").write_text(study.replace("b: clm", "b: start"))
    return root / "my-study.yaml"


MINE = """
name: my-study
description: MLM-30 against CLM on my corpus and my task
size: tiny
seq_len: 32
micro_batch: 2
grad_accum: 2
steps: 6
run_overrides: {precision: fp32, validation.every: 3}
data: [{name: main, corpus: [corpus.jsonl], vocab_size: 300, decontaminate: false}]
runs:
  - {name: mlm, recipe: pfs-mlm, params: {ratio: 0.3}}
  - {name: clm, recipe: pfs-clm}
eval: {suite: null, task_files: [polarity.yaml], lrs: [0.002], seeds: [0, 1], max_steps: 8}
baseline: mlm
claims:
  - {id: mine, text: MLM beats CLM on my task, kind: beats, a: mlm, b: clm, family: sc}
"""


def local_model_study(root: Path, model: str, recipe: str = "") -> Path:
    """A study file evaluating `root/model` as is on a task file, one LR and seed (with `recipe`, e.g.
    ", recipe: cpt-mlm, steps: 2": continuing it first). The path is absolute, as a study folder's record
    holds it (a relative one gone is read as a name: `files._with_paths`). A continued run trains on 2 rows a
    step (`micro_batch: 2`), not its recipe's 1,152: what these tests check is which files it keys and loads."""
    (root / "s.yaml").write_text(
        "name: mine\nsize: tiny\nseq_len: 32\nmicro_batch: 2\n"
        "data: [{name: main, corpus: [corpus.jsonl], tokenizer: tok, decontaminate: false}]\n"
        f"runs: [{{name: start, init: {root / model}{recipe}}}]\n"
        "eval: {suite: null, task_files: [polarity.yaml], lrs: [0.002], seeds: [0], max_steps: 2}\n"
        "baseline: start\nclaims: []\n"
    )
    return root / "s.yaml"


def eval_records(study: Path) -> dict[str, str]:
    """{eval node folder: the fingerprint of the model its record scored}."""
    markers = sorted((study / "nodes" / "eval").glob("*/node.json"))
    return {m.parent.name: json.loads(m.read_text())["result"]["model"] for m in markers}


SEEDS = (0, 1, 2)
ONE_SEED_BASE_RUNS = (
    RunSpec(name="clmb", label="CLM base", recipe="pfs-clm"),  # one seed: the study's
    RunSpec(name="mlmb", label="MLM base", recipe="pfs-mlm"),
    RunSpec(name="clmcpt", label="CLM base + MLM", recipe="cpt-mlm", init="clmb", seeds=SEEDS),
    RunSpec(name="mlmcpt", label="MLM base + MLM", recipe="cpt-mlm", init="mlmb", seeds=SEEDS),
    RunSpec(name="mlmcpt2", label="MLM base + MLM again", recipe="cpt-mlm", init="mlmb", seeds=SEEDS),
    RunSpec(name="mlmcpt3", label="MLM base + MLM, third", recipe="cpt-mlm", init="mlmb", seeds=SEEDS),
    RunSpec(name="clm", label="CLM", recipe="pfs-clm", seeds=SEEDS),
    RunSpec(name="mlm", label="MLM", recipe="pfs-mlm", seeds=SEEDS),
)
"""Runs continuing two bases trained at the study's one pretraining seed (three continuations of the MLM base),
beside CLM and MLM at three seeds: the one-seed-base claims' and the results-per-run table's tests."""
