"""A parquet shard whose text column holds a cell that is not UTF-8, deep in a file.

Arrow checks strings are UTF-8 when they are built in Python, not when a parquet file is read, so a
file another tool wrote (web dumps carry such bytes) reaches the reader with them; `to_pylist` then
raised a UnicodeDecodeError traceback from the middle of the corpus. It is now one line naming the
file and its row (`filereaders._cells`), as a JSON line's bad byte names its line, or with
`--on-error skip` that row alone is skipped and counted."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from encoderlab.data.sources import SourceConfig, SourceStats, iter_documents


def _bad_parquet(path, n: int, bad_row: int) -> None:
    """`n` rows of text, row `bad_row` (1-based) holding the Latin-1 byte 0xe9, written unchecked
    (`from_buffers` builds the array without validating it, as a foreign writer would)."""
    cells = [f"document {i} reads well".encode() for i in range(n)]
    cells[bad_row - 1] = b"caf\xe9 au lait"
    offsets = np.concatenate([[0], np.cumsum([len(c) for c in cells])]).astype(np.int32)
    column = pa.Array.from_buffers(
        pa.string(), n, [None, pa.py_buffer(offsets.tobytes()), pa.py_buffer(b"".join(cells))]
    )
    pq.write_table(pa.table({"text": column}), path, row_group_size=1000)


def test_a_parquet_text_cell_that_is_not_utf8_is_one_line_naming_the_row(tmp_path, capsys, monkeypatch):
    from tests.reliability.test_hostile_inputs import assert_refused_unchanged

    _bad_parquet(tmp_path / "web.parquet", 3000, bad_row=2501)
    assert_refused_unchanged(
        tmp_path,
        "parquet-not-utf8",
        "data tokenizer --source {w}/web.parquet --vocab-size 300 --out {w}/t",
        r"web.parquet row 2501 is not UTF-8 \(byte 3\); write the column again .*--on-error skip",
        capsys,
        monkeypatch,
    )


def test_with_on_error_skip_only_the_bad_row_is_skipped_and_counted(tmp_path):
    _bad_parquet(tmp_path / "web.parquet", 3000, bad_row=2501)
    stats = SourceStats("web")
    cfg = SourceConfig(location=str(tmp_path / "web.parquet"))
    texts = [d.text for d in iter_documents(cfg, stats, on_error="skip")]
    assert len(texts) == 2999 and stats.bad_records == 1
    # the rows on either side of the bad one are kept, in order
    assert texts[2499] == "document 2499 reads well" and texts[2500] == "document 2501 reads well"
