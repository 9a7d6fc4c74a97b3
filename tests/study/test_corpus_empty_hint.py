"""A study corpus with no non-empty document is named by its study file's corpus entry, not `--source`.

Before, the line's fix was "check --source", a flag a study has none of, at the check before the study
and in the prepare node (tokenizer training in its own process too): `data.mixing.EmptySource` carries
the empty sources, and `study.nodes.empty_in_entry` names their entries."""

from __future__ import annotations

import pytest
from tests.data.corpus_fixtures import write_jsonl
from tests.reliability.test_hostile_inputs import assert_one_line, cli
from tests.study.study_fixtures import field_hint_study

from encoderlab.data.mixing import EmptySource
from encoderlab.data.sources import parse_source
from encoderlab.data.tokenizer import train_tokenizer
from encoderlab.errors import UserError
from encoderlab.study.checks import check_sources
from encoderlab.study.files import load_study_file


@pytest.mark.parametrize(
    "corpus, fix",
    [
        (
            ["blank.txt#txt_unit=line"],
            r"the corpus {w}/blank.txt has no non-empty document; check the study file's corpus entry, "
            r"corpus: \['{w}/blank.txt#txt_unit=line'\]",
        ),
        (
            ["c.jsonl", "blank.txt#weight=2"],
            r"source '{w}/blank.txt' has no non-empty document; remove its entry '{w}/blank.txt#weight=2' "
            r"from the dataset's corpus in the study file",
        ),
    ],
)
def test_an_empty_corpus_is_named_by_its_entry_before_the_study(tmp_path, corpus, fix):
    write_jsonl(tmp_path / "c.jsonl", [{"text": "words here"}])
    (tmp_path / "blank.txt").write_text("\n \n\t\n")
    spec = load_study_file(field_hint_study(tmp_path, corpus))
    with pytest.raises(UserError) as err:
        check_sources(spec)
    line = str(err.value)
    assert "--source" not in line
    assert line == "study mini, dataset main: " + fix.replace("{w}", str(tmp_path)).replace("\\", ""), line


def test_an_empty_corpus_crosses_from_tokenizer_training_as_one(tmp_path):
    """Tokenizer training runs in a child process: its refusal keeps its kind, for a study to name."""
    (tmp_path / "blank.txt").write_text("\n\n")
    with pytest.raises(EmptySource) as err:
        train_tokenizer([parse_source(str(tmp_path / "blank.txt"))], 300, tmp_path / "tok", progress=False)
    assert err.value.locations == (str(tmp_path / "blank.txt"),)
    assert str(err.value).endswith("; check --source")  # data tokenizer's own line is unchanged


def test_the_prepare_node_names_the_entry_too(tmp_path, capsys, monkeypatch):
    """A corpus found empty by the node (a hub source, or every document decontaminated; here: the checks
    before the study skipped) names the entry, not `--source`: its tokenizer training refused it."""
    (tmp_path / "blank.txt").write_text("\n\n")
    monkeypatch.setattr("encoderlab.data.mixing.check_first_documents", lambda *a, **k: None)
    monkeypatch.setattr("encoderlab.study.runchecks._check_rows", lambda *a, **k: None)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    code, err = cli(
        ["study", "run", field_hint_study(tmp_path, ["blank.txt"]), "--out", tmp_path / "s"], capsys
    )
    assert_one_line(
        code,
        err[err.index("encoderlab: error: ") :],
        rf"the corpus {tmp_path}/blank.txt has no non-empty document; check the study file's corpus entry, "
        rf"corpus: \['{tmp_path}/blank.txt'\]$",
    )
