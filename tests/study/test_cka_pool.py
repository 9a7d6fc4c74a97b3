"""A study's CKA over texts fewer than its `n_texts`.

`analyze cka` refuses a pool smaller than `--n`; the study's CKA node took the whole pool instead,
silently: another n than the study asked for, and with n equal to the pool every sampling seed drew the
same texts, so the claim had no interval and read "undecided" whatever the models. Now the checks
`study run` and `study plan` make first refuse it in one line, and so does the node.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from fake_study import run_cka_node, small_spec

from encoderlab.errors import UserError
from encoderlab.study.spec import CkaSpec, DataSpec


def test_the_study_cka_node_refuses_fewer_texts_than_its_n_texts(tmp_path, monkeypatch):
    from tests.analysis.analysis_helpers import make_model, make_texts

    models = {m: make_model(seed) for seed, m in enumerate(("a", "b", "twin"))}
    analysis = CkaSpec(a="a", b="b", noise=("twin", "b"), n_texts=100)
    with pytest.raises(UserError) as refused:  # compared the 60 texts there are, one draw for three seeds
        run_cka_node(tmp_path, monkeypatch, analysis, models, make_texts(60))
    assert str(refused.value) == (
        "cka a-vs-b: its texts biomed hold 60 texts, fewer than its n_texts 100; lower n_texts to 50-59 "
        "(fewer than the texts, so the sampling seeds draw different ones) or give more texts"
    )
    assert not (tmp_path / "cka.json").exists()


def test_a_study_cka_over_fewer_texts_than_its_n_texts_is_refused_before_anything_runs(tmp_path):
    from tests.analysis.analysis_helpers import make_texts

    from encoderlab.study.checks import check_cka_texts, check_inputs

    texts = tmp_path / "texts.txt"
    texts.write_text("\n".join(make_texts(40)) + "\n")
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n\n".join(make_texts(200, lo=30, hi=60)) + "\n")
    spec = small_spec(data=(DataSpec(name="main", corpus=(str(corpus),)),))
    cka = replace(spec.cka[0], texts=str(texts), n_texts=60)
    spec = replace(spec, cka=(cka,))
    with pytest.raises(UserError) as refused:
        check_inputs(spec, None, [])
    assert str(refused.value) == (
        f"study fake-pfs, cka clm-vs-mlm40: its texts {texts} hold 40 texts, fewer than its n_texts 60; "
        "give more than 60 texts"
    )
    enough = tmp_path / "enough.txt"
    enough.write_text("\n".join(make_texts(60)) + "\n")
    check_inputs(replace(spec, cka=(replace(cka, texts=str(enough)),)), None, [])  # as many as asked: allowed
    gone = replace(spec, cka=(replace(cka, texts=str(tmp_path / "gone.txt")),))
    with pytest.raises(UserError, match=r"cka clm-vs-mlm40: '.*gone.txt' is neither a file nor an asset"):
        check_cka_texts(gone)  # was left to the CKA node, which refused it after every run had trained
    check_cka_texts(gone, unread=frozenset({str(tmp_path / "gone.txt")}))  # only a finished node read it
    check_cka_texts(spec, only=frozenset({"pubmedqa"}))  # after a fetch: only the fetched assets are read
