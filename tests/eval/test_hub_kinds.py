"""encoderlab's own table of the `datasets` builders whose files a hub cache snapshot is checked for
(`hubtree.BUILDER_EXTENSIONS`), against the private one of the installed `datasets`, so that a
`datasets` reading another extension with one of them fails here, not by leaving its files unchecked;
and the builder encoderlab infers from a card-less repo's file list (`hubtree.listed_files`) against the
one the installed `datasets` infers from a folder of the same files."""

from __future__ import annotations

import pytest
from tests.eval import test_hub_csv_snapshot
from tests.eval.test_hub_snapshot_tree import _downloaded

from encoderlab.eval.tasks.hubtree import ARCHIVE, BUILDER_EXTENSIONS, listed_files

cache = test_hub_csv_snapshot.cache  # the fixture: an empty hub cache of the test's own, offline


def _private(name: str):
    packaged = pytest.importorskip("datasets.packaged_modules")
    if not hasattr(packaged, name):
        pytest.skip(f"this datasets has no {name}: nothing to compare with")
    return getattr(packaged, name)


@pytest.mark.parametrize("builder", sorted(BUILDER_EXTENSIONS))
def test_each_builder_reads_the_extensions_datasets_reads_with_it(builder):
    theirs = _private("_MODULE_TO_EXTENSIONS")
    assert builder in theirs, f"datasets has no {builder} builder"
    assert ARCHIVE in theirs[builder]
    assert sorted(BUILDER_EXTENSIONS[builder]) == sorted(set(theirs[builder]) - {ARCHIVE})


@pytest.mark.parametrize("builder", sorted(BUILDER_EXTENSIONS))
def test_no_builder_of_ours_reads_metadata_files_besides(builder):
    # the files a config's builder reads besides its data (an image folder's metadata, once): none of
    # these read any, so the snapshot is checked for the data files alone
    assert not _private("_MODULE_TO_METADATA_EXTENSIONS").get(builder)


def test_each_extension_is_read_by_the_builder_datasets_picks_for_it():
    theirs = _private("_EXTENSION_TO_MODULE")
    ours = {ext: builder for builder, exts in BUILDER_EXTENSIONS.items() for ext in exts}
    assert {ext: theirs[ext][0] for ext in ours} == ours


FILE_LISTS = {  # repo paths of a card-less repo -> what the case shows of `datasets`' rule
    "images-outnumber-csv": ["a.png", "b.png", "c.png", "x.csv", "y.csv"],
    "a-draw-goes-to-csv": ["a.png", "x.csv"],
    "a-draw-goes-to-parquet": ["a.parquet", "b.jsonl"],
    "extensions-count-apart": ["a.png", "b.jpg", "x.csv", "y.csv"],
    "metadata-files-count-last": ["x/metadata.csv", "y/metadata.csv", "x/a.png"],
    "upper-case-images-count": ["A.PNG", "B.PNG", "c.csv"],
    "upper-case-csv-is-not-read": ["A.CSV", "B.CSV", "C.CSV", "d.png"],
    "files-of-no-builder-pass-over": ["a.bin", "b.bin", "c.bin", "d.csv"],
    "audio-outnumbers-json": ["a.wav", "b.wav", "c.wav", "d.jsonl"],
    "text-outnumbers-arrow": ["a.txt", "b.txt", "c.arrow"],
}


@pytest.mark.parametrize("names", FILE_LISTS.values(), ids=FILE_LISTS)
def test_the_kind_inferred_from_a_repos_file_list_is_the_one_datasets_infers(names, tmp_path, cache):
    # the builder `hubtree.listed_files` infers from the repo's cached file list, where the snapshot
    # holds none of the files, against the one the installed `datasets` infers from a folder of them
    datasets = pytest.importorskip("datasets")
    folder = tmp_path / "repo"
    for name in names:
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text("")
    snapshot = _downloaded(cache, "me/files", dict.fromkeys(names, ""), [])
    listed = listed_files("me/files", {}, snapshot)
    assert listed is not None and listed.kind == datasets.load_dataset_builder(str(folder)).name
