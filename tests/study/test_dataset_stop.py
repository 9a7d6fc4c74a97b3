"""A study dataset's `stop` (first_exhausted or all_exhausted), as `data prepare --stop` and `data tokenizer
--stop` take it. A study had no way to read every entry of a mixture whole: its prepare node stopped when the
first entry ran out, and the warning told the study's user to pass `--stop all_exhausted` to the data
commands, which a study runs none of. The field enters the prepare node's key only when set, so the built-in
studies' keys (tests/study/golden) and a study file without it keep theirs."""

from __future__ import annotations

import json
import logging
import shlex

import pytest
import yaml
from tests.data.corpus_fixtures import tokenizer_dir  # noqa: F401 (a fixture)

from encoderlab.errors import UserError
from encoderlab.study.files import load_study_file
from encoderlab.study.graph import build_graph
from encoderlab.study.nodes import real_backend, run_prepare
from encoderlab.study.plan import corpus_size
from encoderlab.study.runner import NodeContext


def _study(tmp_path, **dataset):
    """A study file of one dataset mixing a large entry (40 documents) and a small one (3)."""
    for name, n in (("big", 40), ("small", 3)):
        docs = [{"text": f"{name} document number {i} about things and words"} for i in range(n)]
        (tmp_path / f"{name}.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    study = {
        "name": "mini",
        "data": [{"name": "main", "corpus": ["big.jsonl", "small.jsonl"], "vocab_size": 300, **dataset}],
        "runs": [{"name": "a", "recipe": "smoke-mlm", "evaluate": False}],
        "baseline": "a",
    }
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(study, sort_keys=False))
    return load_study_file(tmp_path / "s.yaml")


def _prepared(tmp_path, spec) -> list[bool]:
    """Whether the prepare node read each corpus entry to its end (its meta.json's `sources[i].exhausted`)."""
    node = build_graph(spec, real_backend()).nodes["prepare/main"]
    out = tmp_path / "node"
    out.mkdir()
    run_prepare(NodeContext(node=node, out_dir=out, inputs={}, study_dir=tmp_path, spec=spec))
    return [s["exhausted"] for s in json.loads((out / "data" / "meta.json").read_text())["sources"]]


def test_all_exhausted_reads_every_entry_whole_and_keys_the_prepare_node(tmp_path, caplog):
    spec = _study(tmp_path, stop="all_exhausted")
    assert spec.data[0].stop == "all_exhausted"
    node = build_graph(spec, real_backend()).nodes["prepare/main"]
    assert node.config["stop"] == "all_exhausted"
    with caplog.at_level(logging.WARNING):
        assert _prepared(tmp_path, spec) == [True, True]
    assert "the mixture stopped" not in caplog.text
    size = corpus_size(spec.data[0], None)
    assert not size.at_most and "a mixture stops" not in size.how  # the plan counts every entry whole


def test_without_it_the_node_and_its_key_are_as_before_and_the_warning_names_the_field(tmp_path, caplog):
    default = build_graph(_study(tmp_path), real_backend()).nodes["prepare/main"]
    named = build_graph(_study(tmp_path, stop="first_exhausted"), real_backend()).nodes["prepare/main"]
    other = build_graph(_study(tmp_path, stop="all_exhausted"), real_backend()).nodes["prepare/main"]
    assert "stop" not in default.config and default.key == named.key != other.key
    with caplog.at_level(logging.WARNING):
        assert _prepared(tmp_path, _study(tmp_path)) == [False, True]
    assert "(a study's dataset: `stop: all_exhausted`)" in caplog.text


def test_a_stop_that_is_no_rule_or_beside_a_prepared_folder_is_refused(tmp_path):
    with pytest.raises(UserError, match=r"data\[0\] \(main\)\.stop: must be one of 'first_exhausted', 'all_"):
        _study(tmp_path, stop="all")
    (tmp_path / "ready").mkdir()
    with pytest.raises(UserError, match=r"reads the prepared folder .*, so it takes no max_docs or stop"):
        _study(tmp_path, stop="all_exhausted", prepared="ready", tokenizer="ready")


def test_the_plans_command_for_a_mixture_is_one_data_prepare_runs(tmp_path, monkeypatch, tokenizer_dir):  # noqa: F811
    """`study plan`'s command to prepare a large dataset ahead of the study gave a mixture's entries as several
    `--source`s with `--shard auto`, which `data prepare` refuses (it shards one source by its files), so
    the dataset's `--stop` was carried by a command that could not run. A mixture is prepared on one
    machine: the command, as printed, prepares the two entries whole."""
    from encoderlab.cli import main
    from encoderlab.study.plantext import prepare_command
    from encoderlab.study.spec import DataSpec

    spec = _study(tmp_path, stop="all_exhausted")
    data = DataSpec(**{**spec.data[0].__dict__, "tokenizer": str(tokenizer_dir)})
    command = prepare_command(data, 1e9)
    printed = shlex.split(command.split("`")[1].replace("DIR", str(tmp_path / "out")))
    assert printed[:3] == ["encoderlab", "data", "prepare"] and "--stop" in printed
    for name, value in (
        ("RANK", "0"),
        ("WORLD_SIZE", "1"),
    ):  # one task of a torchrun, as the old command said
        monkeypatch.setenv(name, value)
    main(printed[1:])
    sources = json.loads((tmp_path / "out" / "meta.json").read_text())["sources"]
    assert [s["exhausted"] for s in sources] == [True, True]
    assert command.endswith("then `--prepared main=DIR`")


def test_the_plans_commands_for_a_tokenizer_the_study_trains_train_it_first_then_prepare_with_it(tmp_path):
    """The command said `data prepare --tokenizer train`, which names no tokenizer: the plan now trains it
    first (`data tokenizer`, with the dataset's vocabulary, seed and stop) and prepares with that folder,
    and says the study reads the folder only where its dataset names it. Both commands run as printed."""
    from encoderlab.cli import main
    from encoderlab.study.plantext import prepare_command

    spec = _study(tmp_path, stop="all_exhausted")
    assert spec.data[0].tokenizer == "train"
    command = prepare_command(spec.data[0], 1e9, (), spec.data[0])
    steps = [part for part in command.split("`") if part.startswith("encoderlab data ")]
    tok, out = tmp_path / "tok", tmp_path / "out"
    train, prepare = (shlex.split(s.replace("TOK", str(tok)).replace("DIR", str(out))) for s in steps)
    assert (
        train[:3] == ["encoderlab", "data", "tokenizer"] and train[train.index("--vocab-size") + 1] == "300"
    )
    assert "train" not in prepare and prepare[prepare.index("--tokenizer") + 1] == str(tok)
    main(train[1:])
    main(prepare[1:])
    meta = json.loads((out / "meta.json").read_text())
    assert meta["max_token_id"] < 300 and [s["exhausted"] for s in meta["sources"]] == [True, True]
    assert "whose dataset main names TOK as its tokenizer" in command


def test_a_tokenizer_another_dataset_trains_is_said_to_be_trained_once(tmp_path):
    """Two large datasets sharing a trained tokenizer both printed the same `data tokenizer --out TOK`; the
    reusing one's line says whose tokenizer it is and that it is trained once."""
    from encoderlab.study.plantext import prepare_command
    from encoderlab.study.spec import DataSpec

    own = _study(tmp_path).data[0]
    reuse = DataSpec(**{**own.__dict__, "name": "second", "tokenizer": "main"})
    assert "trained once" not in prepare_command(own, 1e9, (), own)
    command = prepare_command(reuse, 1e9, (), own)
    assert command.startswith(
        "dataset main's tokenizer, trained once for every dataset using it: `encoderlab data"
    )
    assert "whose dataset second names TOK as its tokenizer" in command
