"""What the tests of interrupted and resumed `data prepare` runs share: a writer that fails after N appends,
a count of the chunks tokenized, a prepared folder's bytes, and the interrupted run itself; and `data prepare`
through the CLI.

A helper that one test module wrote and others imported lives here under a public name
(tests/test_import_layers.py refuses a test module importing another test module's underscore name)."""

from __future__ import annotations

import pytest
from tests.reliability.test_hostile_inputs import cli

from encoderlab.data import encode
from encoderlab.data import prepare as prep
from encoderlab.data.prepare import prepare, split_dir


def fail_after(monkeypatch, appends: int, exc: BaseException) -> None:
    """Make `SplitWriter.append` raise `exc` after `appends` calls (two per chunk: train and val)."""
    real = prep.SplitWriter.append
    calls = []

    def append(self, tokens, lengths):
        calls.append(1)
        if len(calls) > appends:
            raise exc
        real(self, tokens, lengths)

    monkeypatch.setattr(prep.SplitWriter, "append", append)


def count_tokenized(monkeypatch) -> list[int]:
    """The size of each chunk tokenized from now on, as a list the caller reads."""
    real, calls = encode.tokenize_chunk, []
    monkeypatch.setattr(encode, "tokenize_chunk", lambda docs: (calls.append(len(docs)), real(docs))[1])
    return calls


def prepared_bytes(root) -> dict[str, bytes]:
    """The token and offset files of a prepared folder's splits, by path."""
    return {
        f"{split}/{name}": (split_dir(root, split) / name).read_bytes()
        for split in ("train", "val")
        for name in ("tokens.bin", "doc_offsets.npy")
    }


RESUMABLE = dict(workers=1, chunk_docs=10, checkpoint_every=2, progress=False)


def interrupt_prepare(
    cfg, out, appends: int, exc: BaseException, expect=None, match=None, **kw
) -> BaseException:
    """A prepare into `out` that fails with `exc` after `appends` appends, seen by the caller as `expect`."""
    with pytest.MonkeyPatch.context() as mp:
        fail_after(mp, appends, exc)
        with pytest.raises(expect or type(exc), match=match) as info:
            prepare(cfg, out, **{**RESUMABLE, **kw})
    return info.value


def prepare_cli(src, tok, out, capsys, *extra) -> tuple[int, str]:
    """`encoderlab data prepare` of `src` with `tok` into `out` (one worker, no decontamination): code, stderr."""
    argv = ["data", "prepare", "--source", src, "--tokenizer", tok, "--decontaminate", "none"]
    return cli([*argv, "--workers", "1", "--out", out, *extra], capsys)
