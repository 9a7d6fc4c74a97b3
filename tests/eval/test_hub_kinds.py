"""encoderlab's own table of the `datasets` builders whose files a hub cache snapshot is checked for
(`hubtree.BUILDER_EXTENSIONS`), against the private one of the installed `datasets`, so that a
`datasets` reading another extension with one of them fails here, not by leaving its files unchecked;
and the builder encoderlab infers from a card-less repo's file list (`hubtree.listed_files`) against the
one the installed `datasets` infers from a folder of the same files."""

from __future__ import annotations

import pytest
from tests.eval import hub_snapshot_fixtures
from tests.eval.hub_snapshot_fixtures import downloaded_snapshot

from encoderlab.errors import UserError
from encoderlab.eval.tasks import hubtree
from encoderlab.eval.tasks.hub import load_hub
from encoderlab.eval.tasks.hubsource import HubSource
from encoderlab.eval.tasks.hubtree import ARCHIVE, BUILDER_EXTENSIONS, listed_files

cache = hub_snapshot_fixtures.cache  # the fixture: an empty hub cache of the test's own, offline


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
    # `datasets` keeps a file only if one of its suffixes is, case and all, an extension it reads (lower
    # case, and upper case for images, audio, ...: `_ALL_ALLOWED_EXTENSIONS`), and only then counts it
    # (lower-cased); encoderlab counted `.Png` as `.png`, so read these three as images, not CSV
    "mixed-case-images-are-not-read": ["a.Png", "b.Png", "c.Png", "x.csv"],
    "mixed-case-jpegs-are-not-read": ["a.Jpg", "b.jPG", "x.csv"],
    "upper-case-jpegs-count": ["A.JPG", "B.JPG", "x.csv"],
    "mixed-case-csv-is-not-read": ["A.Csv", "B.Csv", "C.Csv", "d.png"],
    "a-split-of-mixed-case-files-only-is-refused": ["train/a.csv", "test/b.Png"],
    "mixed-case-files-only-are-refused": ["a.Png", "b.Jpg"],
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
    snapshot = downloaded_snapshot(cache, "me/files", dict.fromkeys(names, ""), [])
    listed = listed_files("me/files", {}, snapshot)
    assert listed is not None and listed.kind == _inferred_by_datasets(datasets, folder)


def test_a_snapshot_of_a_repo_of_mixed_case_images_and_a_csv_file_is_read_as_csv_offline(cache):
    # was: refused as a repo of `datasets`' imagefolder builder (`hub-snapshot-kind-unread`), `a.Png`
    # counted as an image; `datasets` drops such files and reads the repo as CSV
    files = {"a.Png": "x", "b.Png": "y", "c.Png": "z", "x.csv": "review\nfine\n"}
    downloaded_snapshot(cache, "me/mixed", files, ["x.csv"])
    assert load_hub(HubSource("me/mixed"))["train"]["review"] == ["fine"]


def _inferred_by_datasets(datasets, folder) -> str | None:
    """The builder the installed `datasets` picks for the card-less `folder`; None where it refuses the
    load (splits of different kinds, or no file of a kind it reads), as `Listed.kind` is then."""
    try:
        return datasets.load_dataset_builder(str(folder)).name
    except (ValueError, FileNotFoundError):  # DataFilesNotFoundError is a FileNotFoundError
        return None


@pytest.mark.parametrize(
    "where",
    [("datasets.load", ("renamed_away",)), ("datasets.moved_away", ("infer_module_for_data_files",))],
    ids=["name-gone", "module-gone"],
)
def test_a_datasets_lacking_a_function_hubtree_reads_is_one_line(where, cache, monkeypatch):
    # was: an ImportError traceback from inside hubtree, offline, for a `datasets` that renamed one of
    # the functions it does not export (`hubtree.DatasetsInternals`)
    datasets = pytest.importorskip("datasets")
    files = {"train/a.csv": "review\nfine\n"}
    downloaded_snapshot(cache, "me/files", files, list(files))  # listed, so read offline through hubtree
    monkeypatch.setitem(hubtree.WHERE, "infer_module_for_data_files", where)
    with pytest.raises(UserError) as err:
        load_hub(HubSource("me/files"))
    assert str(err.value) == (
        f"the installed datasets {datasets.__version__} has no `{where[0]}.{where[1][0]}`, which encoderlab "
        "reads a hub dataset's cached file list with (eval/tasks/hubtree.py); install a datasets it was "
        "checked with: pip install 'datasets>=4,<=5.2'"
    )


def test_every_function_hubtree_reads_is_in_the_installed_datasets():
    pytest.importorskip("datasets")
    internals = hubtree.datasets_internals()
    assert ".csv" in internals.all_allowed_extensions and ".Png" not in internals.all_allowed_extensions
