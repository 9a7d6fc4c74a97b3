"""`data prepare` writes its progress as JSON lines (`OUT/metrics.jsonl`, `data/prepmetrics.py`) and names
where the first skipped document of each reason is (was: a null text was counted in `skipped.empty` and
nothing said which record it was; no metrics file at all)."""

from __future__ import annotations

import json

import pytest
from corpus_fixtures import corpus_records, tokenizer_dir, write_jsonl  # noqa: F401 (fixture)

from encoderlab.data import commands
from encoderlab.data import prepare as prepare_module
from encoderlab.data.packed import identity
from encoderlab.data.prepare import PrepareConfig, prepare, read_meta
from encoderlab.data.sources import SourceConfig
from encoderlab.jsonlines import read_records

METRICS = "metrics.jsonl"  # the documented name (docs/data.md), as a run folder's
RUN = dict(workers=1, progress=False, chunk_docs=16, checkpoint_every=3)


def _corpus(root):
    """Three files; part1 line 5 has a null text, part2 line 3 is not JSON (kept by --on-error skip)."""
    root.mkdir()
    for i in range(3):
        write_jsonl(root / f"part{i}.jsonl", corpus_records(40, prefix=f"f{i}-"))
    lines = (root / "part1.jsonl").read_text().splitlines()
    lines[4] = json.dumps({"id": "f1-null", "text": None})
    (root / "part1.jsonl").write_text("\n".join(lines) + "\n")
    lines = (root / "part2.jsonl").read_text().splitlines()
    lines[2] = '{"id": "cut", "text": "a line cut sh'
    (root / "part2.jsonl").write_text("\n".join(lines) + "\n")
    return root


def _cfg(src, tok) -> PrepareConfig:
    return PrepareConfig(
        sources=(SourceConfig(location=str(src)),), tokenizer=str(tok), decontaminate=(), on_error="skip"
    )


def _untimed(records: list[dict]) -> list[dict]:
    return [{k: v for k, v in r.items() if k != "seconds"} for r in records]


def test_lines_add_up_to_the_folder_and_name_each_file_once(tmp_path, tokenizer_dir):  # noqa: F811
    src = _corpus(tmp_path / "corpus")
    out = prepare(_cfg(src, tokenizer_dir), tmp_path / "out", **RUN)
    meta, lines = read_meta(out), read_records(out / METRICS)
    splits = meta["splits"]
    n_chunks = -(-(3 * 40 - 2) // RUN["chunk_docs"])  # two records skipped: one empty, one bad
    steps = [r["step"] for r in lines]
    every = RUN["checkpoint_every"]
    assert n_chunks % every and steps == [*range(every, n_chunks + 1, every), n_chunks]  # the last: the rest
    assert sum(r["documents"] for r in lines) == splits["train"]["docs"] + splits["val"]["docs"]
    assert sum(r["tokens"] for r in lines) == splits["train"]["tokens"] + splits["val"]["tokens"]
    done = [f for r in lines for f in r["files_done"]]
    assert done == [str(src / f"part{i}.jsonl") for i in range(3)]
    last = lines[-1]["total"]
    assert last["skipped"] == {"empty": 1, "bad_records": 1, "bad_files": 0}
    assert sum(r["skipped"]["empty"] for r in lines) == meta["sources"][0]["empty"] == 1
    assert last["first_skipped"]["empty"] == f"{src / 'part1.jsonl'}:5"
    assert last["first_skipped"]["bad_records"].startswith(f"{src / 'part2.jsonl'}:3 is not valid JSON")
    assert all(isinstance(r["seconds"], float) for r in lines)


def test_the_summary_names_the_first_skipped_record_of_each_reason(tmp_path, tokenizer_dir, capsys):  # noqa: F811
    src = _corpus(tmp_path / "corpus")
    out = tmp_path / "out"
    argv = dict(tokenizer=str(tokenizer_dir), out=out, decontaminate=("none",), on_error="skip", workers=1)
    capsys.readouterr()
    commands.prepare(source=(str(src),), **argv)
    summary = json.loads(capsys.readouterr().out)
    assert summary["skipped"] == {"empty": 1, "bad_records": 1, "bad_files": 0}
    assert summary["first_skipped"]["empty"] == f"{src / 'part1.jsonl'}:5"  # the null text's line, not its id
    assert summary["first_skipped"]["bad_records"].startswith(f"{src / 'part2.jsonl'}:3 ")


def test_a_resumed_prepare_writes_the_lines_of_an_uninterrupted_one(tmp_path, tokenizer_dir, monkeypatch):  # noqa: F811
    """Stopped after a line was written but before its checkpoint: the rerun drops that line and writes it
    again, so no line is doubled or lost."""
    src = _corpus(tmp_path / "corpus")
    clean = prepare(_cfg(src, tokenizer_dir), tmp_path / "clean", **RUN)
    real, calls = prepare_module.write_progress, []

    def stop_at_the_second(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        real(*args, **kwargs)

    out = tmp_path / "out"
    with monkeypatch.context() as mp:
        mp.setattr(prepare_module, "write_progress", stop_at_the_second)
        with pytest.raises(KeyboardInterrupt):
            prepare(_cfg(src, tokenizer_dir), out, **RUN)
    tmp = out.with_name("out.tmp")
    assert [r["step"] for r in read_records(tmp / METRICS)] == [3, 6]  # 6 has no checkpoint yet
    prepare(_cfg(src, tokenizer_dir), out, **RUN)
    assert read_meta(out)["resumed_after_docs"] > 0
    assert _untimed(read_records(out / METRICS)) == _untimed(read_records(clean / METRICS))


def test_the_metrics_file_is_no_part_of_the_folder_identity(tmp_path, tokenizer_dir):  # noqa: F811
    src = _corpus(tmp_path / "corpus")
    out = prepare(_cfg(src, tokenizer_dir), tmp_path / "out", **RUN)
    before = identity(read_meta(out))
    (out / METRICS).write_text('{"step": 1}\n')
    assert identity(read_meta(out)) == before
    assert prepare(_cfg(src, tokenizer_dir), out, **RUN) == out  # still this recipe: nothing to do


def test_a_merge_names_the_first_skip_of_each_reason_from_the_part_that_holds_it(tmp_path, tokenizer_dir):  # noqa: F811
    """Part 0 reads part0.jsonl (nothing skipped), part 1 the two others: the merged folder names part 1's
    skips (was: it kept part 0's record alone)."""
    from encoderlab.data.merge import merge
    from encoderlab.data.shard import Shard

    src = _corpus(tmp_path / "corpus")
    out = tmp_path / "out"
    for i in range(2):
        prepare(_cfg(src, tokenizer_dir), out, shard=Shard(i, 2), **RUN)
    merged = read_meta(merge(out))["sources"][0]["first_skipped"]
    assert merged["empty"] == f"{src / 'part1.jsonl'}:5"
    assert merged["bad_records"].startswith(f"{src / 'part2.jsonl'}:3 ")
