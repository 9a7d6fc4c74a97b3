"""Retrieval task files in BEIR's layout (`data: {beir: FOLDER or OWNER/NAME}`, `eval/tasks/beir.py`):
a local folder and the same folder as a hub id (a mirror, the local hub cache's snapshot) read alike, the
scores recomputed by hand from the predictions, and each mistake of the layout one line before anything
is written. Before, a task file could not say it at all (`data.beir` an unknown field)."""

from __future__ import annotations

import json
import math
import re
import shutil
from fnmatch import fnmatch
from pathlib import Path

import pytest
from huggingface_hub import constants
from tests.eval.fixtures import model_folder, write_task_file
from tests.reliability.errors_doc import assert_printed_as_documented
from tests.reliability.test_hostile_inputs import assert_one_line, cli

from encoderlab.errors import UserError
from encoderlab.eval import evaluate
from encoderlab.eval.tasks.beir import FILES
from encoderlab.eval.tasks.custom import load_task_files, task_from_file

pytestmark = pytest.mark.usefixtures("isolated_tasks")
COMMIT = "0123456789abcdef0123456789abcdef01234567"


def write_beir(folder, qrels=None, corpus=None, jsonl=False):
    """A BEIR folder: 40 documents, 40 queries, qrels/train, dev and test with grades 2, 1 and 0; with
    `jsonl`, the qrels as the mteb hub repositories write them instead (see `_as_jsonl`)."""
    (folder / "qrels").mkdir(parents=True, exist_ok=True)
    docs = corpus or [
        {"_id": f"d{i}", "title": f"title {i}", "text": f"text about thing {i} and more"} for i in range(40)
    ]
    (folder / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    queries = [{"_id": f"q{i}", "text": f"where is thing {i}"} for i in range(40)]  # q37-q39 judged nowhere
    (folder / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries))
    for name, ids in (("train", range(0, 24)), ("dev", range(24, 30)), ("test", range(30, 36))):
        lines = ["query-id\tcorpus-id\tscore"]
        for i in ids:
            lines += [f"q{i}\td{i}\t2", f"q{i}\td{(i + 1) % 40}\t1.0", f"q{i}\td{(i + 2) % 40}\t0"]
        lines += ["q36\td5\t0"] if name == "test" else []  # judged, only 0: nothing to find
        text = (qrels or {}).get(name, _as_jsonl(lines) if jsonl else "\n".join(lines) + "\n")
        (folder / "qrels" / f"{name}.{'jsonl' if jsonl else 'tsv'}").write_text(text)
    return folder


def _as_jsonl(lines: list[str]) -> str:
    """TSV qrels lines as the mteb layout's qrels/<split>.jsonl: mteb/nfcorpus's dataset card (hub,
    README.md) has config `default` with data_files qrels/train.jsonl, qrels/dev.jsonl, qrels/test.jsonl
    and features query-id (string), corpus-id (string), score (float64); corpus.jsonl and queries.jsonl
    sit at the root, as in mteb/scifact's tree (corpus.jsonl, queries.jsonl, qrels/)."""
    rows = [dict(zip(("query-id", "corpus-id", "score"), line.split("\t"))) for line in lines[1:]]
    return "".join(json.dumps({**r, "score": float(r["score"])}) + "\n" for r in rows)


def beir_task(tmp_path, beir="sci", **extra):
    spec = {"name": "sci", "family": "ir", "data": {"beir": beir}, "max_length": 32, **extra}
    return write_task_file(
        tmp_path, "sci.yaml", finetune={"max_steps": 3, "batch_size": 8, "micro_batch_size": 8}, **spec
    )


def _hand_scores(prediction: dict) -> tuple[float, float]:
    """nDCG@10 (gain = grade, log2 discount, trec_eval's ties: the larger document id first) and recall@10;
    both 0 for a query with nothing relevant, as pytrec_eval scores it (and BEIR averages it in)."""
    by_id = sorted(prediction["ranking"], key=lambda ds: ds[0], reverse=True)
    ranked = sorted(by_id, key=lambda ds: -ds[1])[:10]
    grades = prediction["relevant"]
    relevant = {d for d, g in grades.items() if g >= 1}
    if not relevant:
        return 0.0, 0.0
    dcg = sum(grades.get(d, 0) / math.log2(i + 2) for i, (d, _) in enumerate(ranked))
    ideal = sum(g / math.log2(i + 2) for i, g in enumerate(sorted(grades.values(), reverse=True)[:10]))
    return 100 * dcg / ideal, 100 * len(relevant & {d for d, _ in ranked}) / len(relevant)


def test_a_beir_folder_is_a_task_and_its_scores_are_trec_evals_graded_ones(tmp_path):
    write_beir(tmp_path / "sci")
    (task,) = load_task_files([beir_task(tmp_path)])
    data = task.loader()
    test = data.tests["test"]
    assert len(data.train) == 48  # grade >= 1 pairs of train.tsv; `1.0` is the grade 1
    # the queries test.tsv names, q36 (judged only 0) too, as BEIR's loader keeps them; q37-q39 are not scored
    assert sorted(test.queries) == [f"q{i}" for i in range(30, 37)]
    assert len(test.corpus) == 40 and test.qrels["q30"] == {"d30": 2, "d31": 1, "d32": 0}
    assert test.qrels["q36"] == {"d5": 0}
    assert data.val.qrels["q24"] == {"d24": 2, "d25": 1, "d26": 0}
    assert data.train[0] == {  # `title text`, as BEIR's SentenceBERT joins them (sep " ")
        "query": "where is thing 0",
        "document": "title 0 text about thing 0 and more",
        "doc_id": "d0",
    }
    model = model_folder(tmp_path / "model")
    summary = evaluate(str(model), suite=None, tasks=["sci"], lrs=[1e-3], seeds=[0], out=str(tmp_path / "e"))
    (record,) = [json.loads(line) for line in (tmp_path / "e" / "results.jsonl").read_text().splitlines()]
    predictions = [
        json.loads(line) for line in (tmp_path / "e" / record["predictions"]).read_text().splitlines()
    ]
    hand = {p["qid"]: _hand_scores(p) for p in predictions if p["split"] == "test"}
    assert sorted(hand) == sorted(test.queries) and hand["q36"] == (0.0, 0.0)
    # BEIR's mean: over all 7 judged queries, q36's 0 included (not over the 6 with something to find)
    assert record["test"]["test"]["ndcg@10"] == pytest.approx(sum(h[0] for h in hand.values()) / 7, abs=1e-6)
    assert record["test"]["test"]["recall@10"] == pytest.approx(
        sum(h[1] for h in hand.values()) / 7, abs=1e-6
    )
    assert summary.tasks["sci"].test.n == 1


def _hub_cache(tmp_path, monkeypatch, repo: str, **layout):
    """`repo`'s snapshot in a hub cache of the test's own, in huggingface_hub's layout, the hub offline."""
    storage = tmp_path / "hub-cache" / ("datasets--" + repo.replace("/", "--"))
    write_beir(storage / "snapshots" / COMMIT, **layout)
    (storage / "refs").mkdir(parents=True)
    (storage / "refs" / "main").write_text(COMMIT)
    monkeypatch.delenv("ENCODERLAB_HUB_DATA", raising=False)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub-cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def test_a_hub_id_in_beirs_layout_reads_as_the_same_folder_does(tmp_path, monkeypatch):
    folder = task_from_file(beir_task(write_beir(tmp_path / "sci").parent))
    _hub_cache(tmp_path, monkeypatch, "me/sci")
    cached = task_from_file(beir_task(tmp_path, beir="me/sci"))
    assert cached.data_version == folder.data_version  # the same examples: the same cache key
    mirror = tmp_path / "mirror"
    shutil.copytree(tmp_path / "sci", mirror / "me" / "sci")
    monkeypatch.setenv("ENCODERLAB_HUB_DATA", str(mirror))
    assert task_from_file(beir_task(tmp_path, beir="me/sci")).data_version == folder.data_version


def test_a_hub_dataset_in_mtebs_layout_qrels_as_jsonl_reads_as_the_same_folder_does(tmp_path, monkeypatch):
    folder = task_from_file(beir_task(write_beir(tmp_path / "sci").parent))
    _hub_cache(tmp_path, monkeypatch, "mteb/sci", jsonl=True)
    snapshot = tmp_path / "hub-cache" / "datasets--mteb--sci" / "snapshots" / COMMIT
    assert not list(snapshot.glob("qrels/*.tsv"))  # .jsonl only, as mteb/nfcorpus
    cached = task_from_file(beir_task(tmp_path, beir="mteb/sci"))
    assert cached.data_version == folder.data_version  # the same judgments, `score` 2.0 read as the grade 2
    assert cached.loader().tests["test"].qrels == folder.loader().tests["test"].qrels
    fetched = [f"qrels/{n}.{x}" for n in ("train", "dev", "test") for x in ("tsv", "jsonl")]
    assert all(any(fnmatch(f, pattern) for pattern in FILES) for f in fetched)  # what a download asks for


def test_a_hub_dataset_without_qrels_says_how_to_join_beirs_qrels_repository(tmp_path, monkeypatch, capsys):
    _hub_cache(tmp_path, monkeypatch, "BeIR/sci")
    shutil.rmtree(tmp_path / "hub-cache" / "datasets--BeIR--sci" / "snapshots" / COMMIT / "qrels")
    path = beir_task(tmp_path, beir="BeIR/sci")
    argv = ["eval", model_folder(tmp_path / "model"), "--task-file", path, "--out", tmp_path / "e"]
    code, err = cli([*argv, "--lrs", "1e-4", "--seeds", "0"], capsys)
    assert_one_line(
        code, err, r"has no qrels/ folder, .*\(BEIR's: BeIR/sci-qrels\) are not fetched: download both"
    )
    assert_printed_as_documented("task-file-beir-hub-no-qrels", err, tmp_path)
    assert not (tmp_path / "e").exists()


def test_a_hub_id_the_offline_cache_lacks_is_one_line(tmp_path, monkeypatch):
    _hub_cache(tmp_path, monkeypatch, "me/sci")
    path = beir_task(tmp_path, beir="me/other")
    with pytest.raises(
        UserError,
        match=r"with the hub offline \(HF_HUB_OFFLINE\) the hub cache has no snapshot of that dataset; run once with "
        r"the hub reachable \(HF_HUB_OFFLINE unset\), or `hf download --repo-type dataset me/other`, or name its folder$",
    ):
        task_from_file(path)


HEADER = "query-id\tcorpus-id\tscore\n"
MISTAKES = {  # case -> (what the folder gets, the line printed after "task file {w}/sci.yaml: ")
    "task-file-beir-unknown-id": (
        {"qrels": {"test": HEADER + "q30\td30\t1\nq31\tnope\t1\n"}},
        "line 3 of {w}/sci/qrels/test.tsv: document id 'nope' is not in corpus.jsonl; add it there, or remove "
        "the judgment",
    ),
    "task-file-beir-qrels-header": (
        {"qrels": {"test": "q30\td30\t1\nq31\td31\t1\n"}},
        "line 1 of {w}/sci/qrels/test.tsv is 'q30\\td30\\t1', not the header query-id<TAB>corpus-id<TAB>score; add "
        "that header line (BEIR skips the first line, so a file without it lost its first judgment)",
    ),
    "task-file-beir-grade": (
        {"qrels": {"test": HEADER + "q30\td30\t0.5\n"}},
        "line 2 of {w}/sci/qrels/test.tsv: score '0.5' is not a whole-number relevance grade; write a whole "
        "number: 1 or more is relevant, 0 or below (TREC's -2 for spam) is not",
    ),
    "task-file-beir-qrels-jsonl": (
        {
            "jsonl": True,
            "qrels": {"test": '{"query-id": "q30", "corpus-id": "d30", "score": 1.0}\n{"query-id": "q31"}\n'},
        },
        'line 2 of {w}/sci/qrels/test.jsonl: not a JSON object with "query-id", "corpus-id" and "score" (the '
        "qrels fields); fix the line",
    ),
    "task-file-beir-duplicate-id": (
        {"corpus": [{"_id": "d0", "title": "", "text": "one"}, {"_id": "d0", "title": "", "text": "two"}]},
        "line 2 of {w}/sci/corpus.jsonl: _id 'd0' is also line 1's; BEIR keeps only the later row, so give each "
        "its own _id or remove the copy",
    ),
}


@pytest.mark.parametrize("case", sorted(MISTAKES))
def test_a_mistake_in_a_beir_folder_is_one_line_and_writes_nothing(case, tmp_path, capsys):
    given, message = MISTAKES[case]
    write_beir(tmp_path / "sci", **given)
    path = beir_task(tmp_path)
    argv = ["eval", model_folder(tmp_path / "model"), "--task-file", path, "--out", tmp_path / "e"]
    for check in ([], ["--check"]):
        code, err = cli([*argv, "--lrs", "1e-4", "--seeds", "0", *check], capsys)
        expected = f"task file {path}: " + message.replace("{w}", str(tmp_path))
        assert_one_line(code, err, "^encoderlab: error: " + re.escape(expected) + "$")
        assert_printed_as_documented(case, err, tmp_path)
        assert not (tmp_path / "e").exists()


def test_a_negative_grade_is_read_as_not_relevant_as_trec_eval_reads_it(tmp_path):
    """TREC's -2 (spam) in qrels, which BEIR's loader reads: kept as given (the refusal of a grade that is no
    whole number used to say grades are 0, 1, 2, ...), trained on never, scored as 0 (`test_negative_grades`)."""
    lines = [HEADER.strip(), "q30\td30\t2", "q30\td31\t-2", "q31\td31\t-2", "q32\td32\t1"]
    write_beir(tmp_path / "sci", qrels={"test": "\n".join(lines) + "\n", "train": _with_spam(tmp_path)})
    data = task_from_file(beir_task(tmp_path)).loader()
    assert data.tests["test"].qrels == {"q30": {"d30": 2, "d31": -2}, "q31": {"d31": -2}, "q32": {"d32": 1}}
    assert {p["doc_id"] for p in data.train if p["query"] == "where is thing 0"} == {"d0", "d1"}


def _with_spam(tmp_path) -> str:
    """write_beir's train qrels (as written by it) with q0 judging d5 -2."""
    write_beir(tmp_path / "plain")
    return (tmp_path / "plain" / "qrels" / "train.tsv").read_text() + "q0\td5\t-2\n"


def test_beir_data_beside_other_data_fields_or_under_another_family_is_one_line(tmp_path):
    write_beir(tmp_path / "sci")
    both = write_task_file(tmp_path, "x.yaml", name="x", family="ir", data={"beir": "sci", "test": "t.csv"})
    with pytest.raises(UserError, match=r"data.test: not read with data.beir .*; drop it$"):
        task_from_file(both)
    other = write_task_file(tmp_path, "y.yaml", name="y", family="sc", data={"beir": "sci"})
    with pytest.raises(UserError, match=r"data.beir is retrieval data; write `family: ir`"):
        task_from_file(other)


def test_the_beir_example_in_the_docs_loads(tmp_path):
    doc = (Path(__file__).parents[2] / "docs" / "evaluation.md").read_text()
    block = doc.split("<!-- beir task-file example -->\n```yaml\n", 1)[1].split("```", 1)[0]
    write_beir(tmp_path / "scifact")
    (tmp_path / "my.yaml").write_text(block)
    task = task_from_file(tmp_path / "my.yaml")
    assert task.name == "my-beir" and task.options.query_prefix == "query: "
    assert len(task.loader().tests["test"].corpus) == 40


def _damaged_gzip(folder):
    """corpus.jsonl as a `corpus.jsonl.gz` whose compressed bytes are damaged (zlib's "invalid ..." error,
    not a CRC mismatch)."""
    import gzip

    packed = bytearray(gzip.compress((folder / "corpus.jsonl").read_bytes()))
    packed[40] ^= 0xFF
    (folder / "corpus.jsonl").unlink()
    (folder / "corpus.jsonl.gz").write_bytes(bytes(packed))


UNREADABLE = {  # how the corpus is spoiled -> the file named and the end of the line printed after it
    # the task files' line (`localfiles.text_lines`), which BEIR's files are read through
    "not-utf8": (
        lambda folder: (folder / "corpus.jsonl").write_bytes(
            b"\xff" + (folder / "corpus.jsonl").read_bytes()
        ),
        "corpus.jsonl",
        re.escape(
            " is not UTF-8 text (byte 0xff cannot start or continue a UTF-8 character); save it as UTF-8, "
            "e.g. `iconv -f latin1 -t utf-8 corpus.jsonl > utf8-corpus.jsonl`"
        ),
    ),
    # raised zlib.error, a traceback: the reader named only OSError and EOFError (a truncated file)
    "damaged-gzip": (_damaged_gzip, "corpus.jsonl.gz", r" \([^()]+\); download it again or recompress it"),
}


@pytest.mark.parametrize("spoil", sorted(UNREADABLE))
def test_an_unreadable_beir_file_is_one_line_and_writes_nothing(spoil, tmp_path, capsys):
    damage, name, tail = UNREADABLE[spoil]
    damage(write_beir(tmp_path / "sci"))
    path = beir_task(tmp_path)
    argv = ["eval", model_folder(tmp_path / "model"), "--task-file", path, "--out", tmp_path / "e"]
    for check in ([], ["--check"]):
        code, err = cli([*argv, "--lrs", "1e-4", "--seeds", "0", *check], capsys)
        file = tmp_path / "sci" / name
        head = f"task file {path}: " + ("" if spoil == "not-utf8" else "cannot read ") + str(file)
        assert_one_line(code, err, "^encoderlab: error: " + re.escape(head) + tail + "$")
        if spoil == "not-utf8":  # the row shows this case's message; a damaged stream's words are zlib's
            assert_printed_as_documented("task-file-beir-unreadable", err, tmp_path)
        assert not (tmp_path / "e").exists()


@pytest.mark.parametrize("form", [".gz", ".bz2", ".xz", "byte order mark"])
def test_beir_files_compressed_as_task_files_may_be_or_with_a_byte_order_mark_read_as_plain_ones(
    form, tmp_path
):
    """BEIR's files are read as a task's data files are: .bz2 and .xz were "has no corpus.jsonl"."""
    import bz2
    import gzip
    import lzma

    plain = task_from_file(beir_task(tmp_path / "plain", beir=str(write_beir(tmp_path / "plain" / "sci"))))
    folder = write_beir(tmp_path / "sci")
    for file in (folder / "corpus.jsonl", folder / "queries.jsonl", folder / "qrels" / "test.tsv"):
        if form == "byte order mark":  # BEIR's loader opens them as plain UTF-8; exports often carry one
            file.write_bytes(b"\xef\xbb\xbf" + file.read_bytes())
        elif file.suffix == ".jsonl":
            opener = {".gz": gzip.open, ".bz2": bz2.open, ".xz": lzma.open}[form]
            with opener(file.with_name(file.name + form), "wb") as packed:
                packed.write(file.read_bytes())
            file.unlink()
    read, want = task_from_file(beir_task(tmp_path)).loader(), plain.loader()
    assert read.tests["test"] == want.tests["test"] and read.train == want.train


def test_a_beir_hub_id_records_the_commit_it_read(tmp_path, monkeypatch):
    """`EvalRecord.hub_datasets` names the commit of each hub dataset a task read (the study report's `hub
    inputs` row), told by `load_hub`: a BEIR hub id, resolved by its own reader, told nothing, so its
    snapshot's commit was "not recorded" though the snapshot's folder names it."""
    from encoderlab.eval.summary import HubRead
    from encoderlab.eval.tasks import hubcommits

    monkeypatch.setattr(hubcommits, "_READ", {})
    _hub_cache(tmp_path, monkeypatch, "me/sci")
    task = task_from_file(beir_task(tmp_path, beir="me/sci"))
    assert hubcommits.commits_read(task.hub_repos) == (HubRead("me/sci", None, COMMIT),)
