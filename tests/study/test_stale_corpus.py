"""A study whose local corpus changed since its prepare node read it is refused, never trained on the old
text (`study/checks.py::check_prepared_sources`, `data/freshness.py`).

The prepare node's key is the corpus's paths: a corpus file edited in place kept the finished node,
and every run of a rerun trained on the stale data without a word; an unfinished node met `data
prepare`'s refusal, whose fix (--out) is not a `study run` flag. The prepare node here is the real
one on a tiny corpus; the rest of the study is faked (`fake_study.py`).
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil

import pytest
from fake_study import tiny_corpus
from tests.reliability.errors_doc import assert_printed_as_documented
from tests.reliability.treestate import assert_unchanged, world_state
from tests.study.stale_fixtures import (  # noqa: F401 (fixtures)
    edit_corpus,
    stale_backend,
    stale_spec,
    stale_template,
    stale_world,
)

from encoderlab.errors import UserError
from encoderlab.study.graph import build_graph
from encoderlab.study.marker import MARKER
from encoderlab.study.runner import node_dir, run_study
from encoderlab.study.spec import EvalSpec

STALE = (
    r"study mini, dataset main: \S+/data was prepared from sources that changed since "
    r"\(\S+/corpus.jsonl now holds other bytes\); nothing was changed: restore the corpus as it was, or run "
    r"the study in another --out folder to train on the corpus as it is now"
)


def test_a_study_rerun_over_a_corpus_edited_since_is_refused_before_anything_runs(stale_world, monkeypatch):  # noqa: F811
    """Was: the finished prepare node was reused, and every run trained on the old text, silently."""
    monkeypatch.chdir(stale_world)  # the working folder is one a refusal may not change
    corpus = stale_world / "corpus.jsonl"
    spec, study = stale_spec(corpus), stale_world / "s"  # run to its end
    os.utime(corpus, ns=(corpus.stat().st_atime_ns, corpus.stat().st_mtime_ns + 10**9))
    run_study(spec, study, stale_backend(), progress=False)  # touched, the same bytes: nothing to refuse
    edit_corpus(corpus)
    before = world_state(study, stale_world)
    with pytest.raises(UserError, match=STALE) as exc:
        run_study(spec, study, stale_backend(), progress=False)
    assert "\n" not in str(exc.value)
    assert_unchanged(before)
    folder = node_dir(study, build_graph(spec, stale_backend()).nodes["prepare/main"])
    assert f"main: {folder / 'data'} was" in str(exc.value)
    err = f"encoderlab: error: {exc.value}\n".replace(folder.name, "main-KEY")  # the key holds a path
    assert_printed_as_documented("study-over-a-changed-corpus", err, stale_world)
    run_study(spec, stale_world / "new", stale_backend(), progress=False)  # the fix: another --out


def test_study_plan_does_not_count_a_corpus_edited_since(stale_world, capsys):  # noqa: F811
    """Was: `study plan --out` counted the unique tokens of the text the file held before."""
    from tests.reliability.test_hostile_inputs import assert_one_line, cli

    from encoderlab.study.files import dump_study

    corpus = stale_world / "corpus.jsonl"
    spec, study = stale_spec(corpus), stale_world / "s"  # run to its end
    (stale_world / "s.yaml").write_text(dump_study(dataclasses.replace(spec, eval=EvalSpec(suite="pocket"))))
    assert cli(["study", "plan", stale_world / "s.yaml", "--out", study], capsys)[0] == 0
    edit_corpus(corpus)
    assert_one_line(*cli(["study", "plan", stale_world / "s.yaml", "--out", study], capsys), STALE)


def test_an_unfinished_prepare_node_over_an_edited_corpus_is_refused_in_a_studys_words(stale_world):  # noqa: F811
    """Was `data prepare`'s line, whose fix is "choose another --out", when the node's data was prepared
    but its marker not written (killed in between); the node says the same as the check before the study."""
    corpus = stale_world / "corpus.jsonl"
    spec, study = stale_spec(corpus), stale_world / "s"  # run to its end
    prepare = build_graph(spec, stale_backend()).nodes["prepare/main"]
    (node_dir(study, prepare) / MARKER).unlink()
    edit_corpus(corpus)
    for checked in (True, False):  # refused before the study runs, and by the node itself
        with pytest.raises(UserError, match=STALE) as exc:
            run_study(spec, study, stale_backend(checked), progress=False)
        assert "--out folder" in str(exc.value) and "choose another --out" not in str(exc.value)


def test_a_study_with_max_passes_says_its_corpus_changed_before_counting_passes_from_the_old_one(stale_world):  # noqa: F811
    """Was: `max_passes` was checked from the finished prepare node's counts, the old corpus's, first,
    so the study was refused for passes it would not make, and the changed corpus went unsaid."""
    corpus = stale_world / "corpus.jsonl"
    spec, study = stale_spec(corpus), stale_world / "s"  # run to its end
    edit_corpus(corpus)
    with pytest.raises(UserError, match=STALE):  # the old counts would exceed any pass of this limit
        run_study(dataclasses.replace(spec, max_passes=1e-9), study, stale_backend(), progress=False)


def test_a_study_with_max_passes_checks_its_prepared_data_once(tmp_path, monkeypatch):
    """Was twice: before counting the passes, and again in the start checks (a stat of every corpus
    file each time, and a hash of each one whose mtime moved). Now `study run` checks it once, first."""
    from encoderlab.study import checks

    corpus = tiny_corpus(tmp_path / "corpus.jsonl", 60)
    spec, study = dataclasses.replace(stale_spec(corpus), max_passes=1e9), tmp_path / "s"
    run_study(spec, study, stale_backend(), progress=False)
    checked = []  # the prepare nodes whose data was held to its corpus
    real = checks.refuse_stale_data
    monkeypatch.setattr(checks, "refuse_stale_data", lambda *a: checked.append(a[1]) or real(*a))
    run_study(spec, study, stale_backend(), progress=False)  # resumed: every node finished
    assert checked == ["main"]
    edit_corpus(corpus)  # still said before the passes are counted from the old data (the test above)
    with pytest.raises(UserError, match=STALE):
        run_study(dataclasses.replace(spec, max_passes=1e-9), study, stale_backend(), progress=False)


def test_a_study_over_a_corpus_an_older_encoderlab_read_otherwise_names_a_fix_that_helps(
    tmp_path, monkeypatch
):
    """A .txt corpus of classic Mac line ends, prepared by an encoderlab from before a lone `\\r` ended a
    line (`freshness.reading_change`): the files never changed, so the line's "restore the corpus as it
    was" could not help; now it says so, and names what does: a new prepare or another --out."""
    monkeypatch.chdir(tmp_path)  # the working folder is one a refusal may not change
    words = json.loads(tiny_corpus(tmp_path / "c.jsonl", 60).read_text().splitlines()[0])["text"].split()
    corpus = tmp_path / "mac.txt"
    corpus.write_bytes("\r\r".join(" ".join(words[i:] + words[:i]) for i in range(12)).encode() + b"\r")
    spec, study = stale_spec(corpus), tmp_path / "s"
    run_study(spec, study, stale_backend(), progress=False)
    folder = node_dir(study, build_graph(spec, stale_backend()).nodes["prepare/main"])
    for record in (folder / "data" / "meta.json", folder / "tokenizer" / "sources.json"):
        if record.exists():  # as an encoderlab from before `txt_reading` wrote it
            data = json.loads(record.read_text())
            data.pop("txt_reading")
            record.write_text(json.dumps(data))
    before = world_state(study, tmp_path)
    with pytest.raises(UserError) as exc:
        run_study(spec, study, stale_backend(), progress=False)
    assert str(exc.value) == (
        f"study mini, dataset main: {folder / 'data'} was prepared from sources that changed since ({corpus} "
        "holds a lone \\r (no \\n after it), which ends a line since an older encoderlab read it: it reads as other "
        "documents now); "
        "nothing was changed: the files are as they were, so restoring them would not help: delete "
        f"{folder} to prepare it again (the nodes after it run again), or run the study in another --out folder"
    )
    assert_unchanged(before)
    err = f"encoderlab: error: {exc.value}\n".replace(folder.name, "main-KEY")  # the key holds tmp_path
    assert_printed_as_documented("study-over-older-txt-reading", err, tmp_path)
    shutil.rmtree(folder)  # the fix: prepared again, as this encoderlab reads the corpus
    run_study(spec, study, stale_backend(), progress=False)
