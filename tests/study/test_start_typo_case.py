"""A start model that is a run's name in other case is refused as a typo of that run.

`init: CLM` in a study with a run `clm` was taken for a hub id or an asset (`closest` compares case, so
no run was near): the plan said "model source 'CLM' is not a folder, an asset (...) or a hub id", listing
every asset and not the run. It is now the study file's line naming the run, as `init: clmm` is.
"""

from __future__ import annotations

import pytest
import yaml
from tests.reliability.test_hostile_arguments import assert_refused_untouched, write_texts

STUDY = {
    "name": "mini",
    "data": [{"name": "main", "corpus": ["texts.txt"], "vocab_size": 300}],
    "runs": [
        {"name": "clm", "recipe": "smoke-clm", "evaluate": False},
        {"name": "cont", "recipe": "smoke-mlm", "init": "CLM", "evaluate": False, "group": "cpt"},
    ],
    "baseline": "clm",
}


@pytest.mark.parametrize(
    "case,init",
    [("study-start-run-name-in-other-case", "CLM"), ("study-start-near-a-run", "clmm")],
    ids=["case", "typo"],
)
def test_a_start_model_near_a_run_name_is_refused_naming_the_run(tmp_path, capsys, monkeypatch, case, init):
    write_texts(tmp_path)
    study = {**STUDY, "runs": [STUDY["runs"][0], {**STUDY["runs"][1], "init": init}]}
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(study, sort_keys=False))
    assert_refused_untouched(
        tmp_path,
        capsys,
        monkeypatch,
        case,
        "study run {w}/s.yaml --out {w}/s",
        rf"run cont starts from '{init}', which is no run of the study \(did you mean 'clm'\?\); an asset, "
        r"model folder or hub id is used as given$",
    )
