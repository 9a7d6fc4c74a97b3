"""`analyze cka`, `analyze probe` and a scored transplant sweep on broken inputs: one line naming the problem,
nothing written. A model whose hidden states are not finite (CKA blamed constant features; the probe scored
NaN rows below chance; the sweep saved its transplants first); a texts file holding each text twice (it
passed CKA's minimum)."""

from __future__ import annotations

import json

import pytest
import torch
from analysis_helpers import WORDS, make_model, make_texts, make_tokenizer

from encoderlab.cli import main
from encoderlab.model.io import save_model_folder


def _broken(path):
    """A tiny model folder whose layer 1 (and so layer 2) outputs NaN: a diverged checkpoint."""
    model = make_model(0)
    with torch.no_grad():
        model.layers[1].mlp.down_proj.weight.fill_(float("nan"))
    return save_model_folder(model, path, tokenizer=make_tokenizer())


def _task(path):
    """A two-topic sequence task of 40 texts (a probe needs 10 examples and two classes)."""
    topic = [WORDS[:30], WORDS[30:]]
    records = [
        {"id": str(i), "text": " ".join(topic[i % 2][:5]), "meta": {"label": str(i % 2)}} for i in range(40)
    ]
    path.write_text("\n".join(json.dumps(r) for r in records))


def _refused(capsys, argv) -> str:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    err = capsys.readouterr().err  # the progress bars of the forward passes, then the one line
    assert exc.value.code == 2 and "Traceback" not in err, err
    return err.strip().splitlines()[-1]


def _cka(a, b, texts, out, *extra) -> list[str]:
    return ["analyze", "cka", str(a), str(b), *extra, "--texts", str(texts), "--out", str(out)]


def _probe(*models, task, out) -> list[str]:
    return ["analyze", "probe", *map(str, models), "--tasks", str(task), "--out", str(out)]


def _sweep(a, b, sweep, task, out) -> list[str]:
    return [
        "analyze",
        "transplant",
        str(a),
        str(b),
        "--sweep",
        sweep,
        "--probe-task",
        str(task),
        "--out",
        str(out),
    ]


def test_a_model_with_nan_weights_is_refused_not_read_as_constant_features(tmp_path, capsys):
    """NaN hidden states (a diverged checkpoint, or float16 overflow) gave NaN CKA in every layer from the
    broken one on, and the low-layer sentence blamed features constant across the texts."""
    tok = make_tokenizer()
    a = _broken(tmp_path / "a")
    b = save_model_folder(make_model(1), tmp_path / "b", tokenizer=tok)
    twin = save_model_folder(make_model(2), tmp_path / "b2", tokenizer=tok)
    (tmp_path / "texts.txt").write_text("\n".join(make_texts(60)) + "\n")
    argv = _cka(a, b, tmp_path / "texts.txt", tmp_path / "o", "--baseline", str(twin), "--n", "50")
    line = _refused(capsys, argv)
    assert f"model A ({a}) gives hidden states that are not finite (NaN or inf) in layers 1-2" in line
    assert not (tmp_path / "o").exists()


def test_texts_the_tokenizer_reads_as_one_input_are_refused_not_reported_as_nan(tmp_path, capsys):
    """Texts of one unknown word each all read `[CLS] [UNK] [SEP]`: every layer's features were the same for
    every text, every CKA NaN, and the command wrote its figures and printed "diverges nanx seed noise"."""
    tok = make_tokenizer()
    a, b, twin = (save_model_folder(make_model(i), tmp_path / n, tokenizer=tok) for i, n in enumerate("abc"))
    (tmp_path / "texts.txt").write_text("\n".join(f"unknown{i}" for i in range(60)) + "\n")
    argv = _cka(a, b, tmp_path / "texts.txt", tmp_path / "o", "--baseline", str(twin), "--n", "50")
    line = _refused(capsys, argv)
    assert line.endswith(
        f"model A ({a}) gives every one of the 60 texts the same features at every layer: its tokenizer reads "
        "them as one input (unknown characters or words), so CKA is undefined; give texts in the model's "
        "language and script (--texts)"
    )
    assert not (tmp_path / "o").exists()


def test_a_probe_of_a_model_with_nan_weights_is_refused_not_scored_below_chance(tmp_path, capsys):
    """The probe was fitted on NaN rows and wrote 12.5% test accuracy (two balanced classes) for layers 1-2."""
    model = _broken(tmp_path / "m")
    _task(tmp_path / "seq.jsonl")
    argv = _probe(model, task=tmp_path / "seq.jsonl", out=tmp_path / "p")
    line = _refused(capsys, argv)
    assert f"model {model} gives hidden states that are not finite (NaN or inf) in layers 1-2" in line
    assert not (tmp_path / "p").exists()


def test_a_transplant_sweep_scoring_a_model_with_nan_weights_is_refused_before_any_transplant(
    tmp_path, capsys
):
    """The sweep saved every transplant and scored A's NaN rows below chance; A and B are now scored first,
    before --out is made."""
    donor = _broken(tmp_path / "a")
    b = save_model_folder(make_model(1), tmp_path / "b", tokenizer=make_tokenizer())
    _task(tmp_path / "seq.jsonl")
    argv = _sweep(donor, b, "groups", tmp_path / "seq.jsonl", tmp_path / "t")
    line = _refused(capsys, argv)
    assert f"model A ({donor}) gives hidden states that are not finite (NaN or inf) in layers 1-2" in line
    assert not (tmp_path / "t").exists()


def test_texts_written_twice_do_not_pass_the_minimum_of_cka(tmp_path, capsys):
    """30 distinct texts written twice (60 lines) ran at --n 50: CKA on about 37 distinct texts, under its
    minimum of 50, with the doubled ones weighed twice."""
    tok = make_tokenizer()
    a, b = (
        save_model_folder(make_model(seed), tmp_path / name, tokenizer=tok)
        for seed, name in ((0, "a"), (1, "b"))
    )
    texts = list(dict.fromkeys(make_texts(40)))[:30]
    (tmp_path / "texts.txt").write_text("\n".join(texts * 2) + "\n")
    line = _refused(capsys, _cka(a, b, tmp_path / "texts.txt", tmp_path / "o", "--n", "50"))
    assert line.endswith(
        "only 30 texts are available but 50 were asked for; CKA takes at least 50; give more --texts"
    )
    assert not (tmp_path / "o").exists()


def test_a_probe_of_texts_the_tokenizer_reads_as_one_input_is_refused_not_scored(tmp_path, capsys):
    """A tokenizer that knows none of the task's words reads every text as `[CLS] [UNK] x 5 [SEP]`: the
    probe's features were one row for every text, so it predicted the training split's most frequent class
    everywhere and reported that class's share of the test split (17% on two balanced classes) as the
    layer's accuracy. Refused as CKA refuses it, with nothing written; likewise for a sweep's scoring."""
    stranger = make_tokenizer([f"x{i}" for i in range(len(WORDS))])  # the vocabulary size of the task's
    model = save_model_folder(make_model(0), tmp_path / "m", tokenizer=stranger)
    _task(tmp_path / "seq.jsonl")
    argv = _probe(model, task=tmp_path / "seq.jsonl", out=tmp_path / "p")
    assert _refused(capsys, argv).endswith(
        f"model {model} gives every one of the 40 texts of seq the same features at every layer: its "
        "tokenizer reads them as one input (unknown characters or words), so a probe can only predict the most "
        "frequent class; give a task in the model's language and script"
    )
    assert not (tmp_path / "p").exists()
    b = save_model_folder(make_model(1), tmp_path / "b", tokenizer=make_tokenizer())
    argv = _sweep(model, b, "parts", tmp_path / "seq.jsonl", tmp_path / "t")
    assert f"model A ({model}) gives every one of the 40 texts" in _refused(capsys, argv)
    assert not (tmp_path / "t").exists()


@pytest.mark.parametrize("broken", ["nan-weights", "one-input"])
def test_a_probe_refusing_its_second_model_leaves_nothing_behind(tmp_path, capsys, broken):
    """The first model's features were cached in the new --out before the second was refused: the refused
    command left `--out` with its marker and `cache/`."""
    _task(tmp_path / "seq.jsonl")
    good = save_model_folder(make_model(1), tmp_path / "good", tokenizer=make_tokenizer())
    if broken == "nan-weights":
        bad = _broken(tmp_path / "bad")
    else:
        stranger = make_tokenizer([f"x{i}" for i in range(len(WORDS))])
        bad = save_model_folder(make_model(0), tmp_path / "bad", tokenizer=stranger)
    out = tmp_path / "new" / "p"
    argv = _probe(good, bad, task=tmp_path / "seq.jsonl", out=out)
    assert f"model {bad} gives" in _refused(capsys, argv)
    assert not (tmp_path / "new").exists()


@pytest.mark.parametrize("name, content", [("empty.jsonl", ""), ("blank.txt", "\n  \n\n")])
def test_an_empty_probing_task_is_named_empty_with_nothing_written(tmp_path, capsys, name, content):
    """A task file holding no record read "has neither meta.label nor meta.tokens + meta.tags; it is not a
    probing task", as if its records had the wrong fields."""
    model = save_model_folder(make_model(0), tmp_path / "m", tokenizer=make_tokenizer())
    (tmp_path / name).write_text(content)
    expected = (
        f"{tmp_path / name} holds no record; give a probing task: JSONL records with meta.label (a class per "
        "text) or meta.tokens + meta.tags (a tag per word)"
    )
    assert _refused(capsys, _probe(model, task=tmp_path / name, out=tmp_path / "p")).endswith(expected)
    assert _refused(capsys, _sweep(model, model, "parts", tmp_path / name, tmp_path / "t")).endswith(expected)
    assert not (tmp_path / "p").exists() and not (tmp_path / "t").exists()


def test_a_checkpoint_without_its_tokenizer_names_the_folder_the_tokenizer_goes_into(tmp_path, capsys):
    """A checkpoint (its weights in `model/`) without a tokenizer said "save one in its folder"; saved into
    the checkpoint folder given, it was refused again with the same line: the load reads `model/`. `eval`
    said "save the tokenizer into the model folder", which names neither."""
    from tests.reliability.errors_doc import assert_printed_as_documented

    from encoderlab.errors import UserError
    from encoderlab.eval.protocol import require_tokenizer

    ckpt = tmp_path / "run" / "checkpoints" / "step_0000002"
    save_model_folder(make_model(0), ckpt / "model")
    b = save_model_folder(make_model(1), tmp_path / "b", tokenizer=make_tokenizer())
    (tmp_path / "texts.txt").write_text("\n".join(make_texts(60)) + "\n")
    argv = ["analyze", "cka", str(ckpt), str(b), "--texts", str(tmp_path / "texts.txt"), "--n", "50"]
    argv += ["--seeds", "42", "--out", str(tmp_path / "c")]
    line = _refused(capsys, argv)
    assert line == (
        f"encoderlab: error: model '{ckpt}' has no tokenizer; save the one it was trained with into "
        f"{ckpt / 'model'} (tokenizer.save_pretrained) so texts can be encoded"
    )
    assert_printed_as_documented("analyze-model-without-tokenizer", line, tmp_path)
    with pytest.raises(UserError, match=rf"save the tokenizer into {ckpt / 'model'} \(fine-tuning"):
        require_tokenizer(str(ckpt), None)  # eval's (and eval --check's) refusal
    assert not (tmp_path / "c").exists()
    make_tokenizer().save_pretrained(ckpt / "model")  # the fix, as the line says it: the command runs
    main(argv)
    assert (tmp_path / "c" / "cka.csv").is_file()


@pytest.mark.parametrize("mark", [b"", b"\xff\xfe"])
def test_a_utf16_texts_file_is_one_line_naming_it_and_writes_nothing(tmp_path, capsys, mark, monkeypatch):
    """`analyze` read its .jsonl texts and tasks with a reader of its own that lacked `data prepare`'s UTF-16
    check: without a byte order mark each line failed as "not valid JSON", with one as "not UTF-8 text (byte 0)",
    neither naming the encoding. Now both say UTF-16 with the `iconv` line, as `data prepare` does."""
    from tests.reliability.errors_doc import assert_printed_as_documented
    from tests.reliability.treestate import assert_unchanged, world_state

    from encoderlab.analysis.inputs import read_records, read_texts
    from encoderlab.errors import UserError

    a = save_model_folder(make_model(0), tmp_path / "a", tokenizer=make_tokenizer())
    b = save_model_folder(make_model(1), tmp_path / "b", tokenizer=make_tokenizer())
    lines = "".join(json.dumps({"text": t}) + "\n" for t in make_texts(60))
    texts = tmp_path / "texts.jsonl"
    texts.write_bytes(mark + lines.encode("utf-16-le"))
    monkeypatch.chdir(tmp_path)
    before = world_state(tmp_path)
    line = _refused(capsys, _cka(a, b, texts, tmp_path / "c", "--n", "50", "--seeds", "42"))
    order = "utf-16" if mark else "utf-16le"
    said = f"{texts} is UTF-16 text{'' if mark else ' (utf-16le, no byte order mark)'}, not UTF-8"
    assert line == (
        f"encoderlab: error: {said}; save it as UTF-8, e.g. `iconv -f {order} -t utf-8 texts.jsonl > utf8-texts.jsonl`"
    )
    assert_unchanged(before)
    if not mark:
        assert_printed_as_documented("analyze-texts-utf16-without-bom", line, tmp_path)
    task = tmp_path / "task.jsonl"
    task.write_bytes(mark + (json.dumps({"text": "t", "meta": {"label": "0"}}) + "\n").encode("utf-16-be"))
    with pytest.raises(UserError, match=f"task.jsonl is UTF-16 text.*iconv -f utf-16{'' if mark else 'be'} "):
        read_records(str(task))  # a probing task, read alike
    texts.write_text(texts.read_bytes().decode(order))  # the fix, as the line says it
    assert read_texts(str(texts)) == make_texts(60)
