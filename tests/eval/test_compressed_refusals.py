"""A file compressed as its reader does not read it is refused in one wording, with the command that unpacks
it (`data.filekinds.compressed_unread`), by each reader: a corpus (`filekinds.unreadable`), a task file's
data (`localfiles.builder_of`) and a BEIR folder (`beir._data_file`). Before, the three held a copy each,
and the BEIR one had drifted ("has corpus.jsonl.zst, compressed as .zst, which is not read; unpack it")."""

from __future__ import annotations

import pytest

from encoderlab.data.filekinds import UNPACK_COMMANDS, compressed_unread, unreadable
from encoderlab.errors import UserError
from encoderlab.eval.tasks import beir
from encoderlab.eval.tasks.localfiles import builder_of


@pytest.mark.parametrize("suffix", sorted(UNPACK_COMMANDS))
def test_the_clause_names_the_file_its_compression_and_the_command_that_unpacks_it(tmp_path, suffix):
    path = tmp_path / f"corpus.jsonl{suffix}"
    said = compressed_unread(path, "task files do not read")
    assert said.startswith(f"{path} is compressed as {suffix}, which task files do not read; ")
    assert f"(`{UNPACK_COMMANDS[suffix]} {path}`) or recompress it with gzip" in said


@pytest.mark.parametrize("suffix", [".lz4", ".zip", ".7z"])
def test_a_corpus_a_task_file_and_a_beir_folder_refuse_in_the_one_wording(tmp_path, suffix):
    path = tmp_path / f"corpus.jsonl{suffix}"
    path.write_bytes(b"")
    assert unreadable(path) == compressed_unread(path, "encoderlab does not read")
    with pytest.raises(UserError) as task:
        builder_of({"train": path}, "task file t.yaml")
    assert str(task.value) == f"task file t.yaml: {compressed_unread(path, 'task files do not read')}"
    with pytest.raises(UserError) as folder:
        beir._data_file(tmp_path, "corpus", "data.beir", "task file t.yaml")
    assert f": {compressed_unread(path, 'task files do not read')} (corpus.jsonl.gz is read)" in str(
        folder.value
    )
