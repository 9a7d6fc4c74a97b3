# ruff: noqa: F811 (the fixtures, imported)
"""A study whose corpus is a hub dataset pinned to a full commit sha (`#hf_revision=SHA`), prepared once:
`study plan` and `study run` reuse its prepare node asking the hub nothing (HF_HUB_OFFLINE=1, every hub
call failing), as a `data prepare` rerun into a folder of that sha does (tests/data/test_hub_revision.py,
whose simulated hub this uses). The prepare node is the real one; the rest of the study is faked. A guard:
this held before the pinned-rerun changes too (`study plan` estimates an unprepared hub corpus without the
hub, and the study's checks skip hub sources without a mirror, data.freshness)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "data"))
from corpus_fixtures import tokenizer_dir  # noqa: E402, F401 (fixture)
from hub_corpus_fixtures import FINEWEB_EDU  # noqa: E402
from test_hub_revision import SHA_A, fake_hub, forbid_hub  # noqa: E402, F401 (fixture)
from tests.study.stale_fixtures import cut_spec, stale_backend  # noqa: E402

from encoderlab.errors import UserError  # noqa: E402
from encoderlab.study.checks import check_inputs  # noqa: E402
from encoderlab.study.graph import build_graph  # noqa: E402
from encoderlab.study.plan import plan_study  # noqa: E402
from encoderlab.study.runner import run_study  # noqa: E402
from encoderlab.study.spec import DataSpec  # noqa: E402


def test_a_prepared_corpus_pinned_to_a_commit_is_reused_with_the_hub_offline(
    fake_hub, tmp_path, tokenizer_dir, monkeypatch
):
    corpus = f"hf:{FINEWEB_EDU}#hf_config=sample-10BT,hf_revision={SHA_A}"
    spec = cut_spec(
        DataSpec(name="main", corpus=(corpus,), tokenizer=str(tokenizer_dir), decontaminate=False)
    )
    study = tmp_path / "s"
    run_study(spec, study, stale_backend(), progress=False)

    forbid_hub(monkeypatch)
    graph = build_graph(spec, stale_backend())
    check_inputs(spec, study, graph, fetched=False)
    assert plan_study(spec, study, graph).corpora["main"].counted
    run_study(spec, study, stale_backend(), progress=False)
    with pytest.raises(
        UserError, match="needs the Hugging Face hub but HF_HUB_OFFLINE=1"
    ):  # not prepared: asks
        run_study(spec, tmp_path / "new", stale_backend(), progress=False)
