"""encoderlab's own table of the `datasets` builders whose files a hub cache snapshot is checked for
(`hubtree.BUILDER_EXTENSIONS`), against the private one of the installed `datasets`, so that a
`datasets` reading another extension with one of them fails here, not by leaving its files unchecked."""

from __future__ import annotations

import pytest

from encoderlab.eval.tasks.hubtree import ARCHIVE, BUILDER_EXTENSIONS


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
