"""`study plan`'s note on a start model or tokenizer read as a hub id that the local hub cache does not hold.

The plan asks no hub (`hubids.check_hub_ids`), so `init: models/mine`, a typo of a folder beside the study
file, passed the plan without a word and only `study run` refused it. Now the plan says, one line per such
id, that it is taken as a hub id the run downloads (or, offline, refuses), and names a folder beside the
study file of a near name. The hub and its cache are `test_hub_positions`'s: any request to the hub fails.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from test_hub_positions import world  # noqa: F401 (world: a fixture)
from tests.eval.fixtures import model_folder
from tests.study.study_fixtures import HUB_ID, hub_position_cache, hub_position_study

from encoderlab.cli import main

NOTE = (
    "note: run start starts from '{init}', taken as a hub id the local hub cache does not hold: `study run` "
    "downloads it (or, offline, refuses it); no folder {base}/{init} is beside the study file"
)


def _notes(capsys, study) -> list[str]:
    """The note lines of `study plan STUDY` (exit 0) on the start model."""
    capsys.readouterr()
    main(["study", "plan", str(study)])
    return [line for line in capsys.readouterr().out.splitlines() if "taken as a hub id" in line]


@pytest.mark.parametrize("offline", ["1", None])
def test_an_uncached_hub_id_is_noted_with_the_near_folder_beside_the_study_file(
    world,  # noqa: F811 (the fixture)
    capsys,
    monkeypatch,
    offline,
):
    if offline:
        monkeypatch.setenv("HF_HUB_OFFLINE", offline)
    study = hub_position_study(world, 32)
    assert _notes(capsys, study) == [NOTE.format(init=HUB_ID, base=world)]
    model_folder(world / "someone" / "encs")  # a near name
    assert _notes(capsys, study) == [
        NOTE.format(init=HUB_ID, base=world) + f" (did you mean {world / 'someone' / 'encs'}?)"
    ]
    model_folder(world / HUB_ID)  # the id is a folder beside the study file now, which the run reads
    assert _notes(capsys, study) == []


def test_a_cached_hub_id_or_a_folder_beside_the_study_file_gets_no_note(world, capsys):  # noqa: F811
    study = hub_position_study(world, 32)
    hub_position_cache(world, ["config.json"])
    assert _notes(capsys, study) == []
    model_folder(world / "other" / "enc")
    assert _notes(capsys, study) == []  # the cache holds it: no near folder is named
    assert _notes(capsys, study) == []


TOKENIZER_NOTE = (
    "note: dataset main reads tokenizer '{id}', taken as a hub id the local hub cache does not hold: `study "
    "run` downloads it (or, offline, refuses it); no folder {base}/{id} is beside the study file"
)


def _tokenizer_study(root) -> Path:
    """MINE (no start model), its dataset's tokenizer the hub id `someone/enc` in place of one trained."""
    study = hub_position_study(root, 32)
    text = study.read_text().replace(
        "  - {name: start, init: someone/enc}\n", "  - {name: clm, recipe: pfs-clm}\n"
    )
    study.write_text(
        text.replace("vocab_size: 300,", f"tokenizer: {HUB_ID}, vocab_size: 300,").replace(
            "b: start", "b: clm"
        )
    )
    return study


def _tokenizer_notes(capsys, study) -> list[str]:
    capsys.readouterr()
    main(["study", "plan", str(study)])
    return [
        line for line in capsys.readouterr().out.splitlines() if line.startswith("note: ") and HUB_ID in line
    ]


@pytest.mark.parametrize("offline", ["1", None])
def test_an_uncached_hub_tokenizer_is_noted_as_an_uncached_start_model_is(
    world,  # noqa: F811 (the fixture)
    capsys,
    monkeypatch,
    offline,
):
    """The note covered start models only: a study whose dataset names a hub tokenizer absent from the local
    hub cache (or a typo of a folder beside the study file) planned without a word."""
    if offline:
        monkeypatch.setenv("HF_HUB_OFFLINE", offline)
    study = _tokenizer_study(world)
    assert _tokenizer_notes(capsys, study) == [TOKENIZER_NOTE.format(id=HUB_ID, base=world)]
    model_folder(world / "someone" / "encs")  # a near name
    assert _tokenizer_notes(capsys, study) == [
        TOKENIZER_NOTE.format(id=HUB_ID, base=world) + f" (did you mean {world / 'someone' / 'encs'}?)"
    ]
    hub_position_cache(
        world, ["config.json", "tokenizer.json", "tokenizer_config.json"]
    )  # the cache holds it now
    assert _tokenizer_notes(capsys, study) == []
