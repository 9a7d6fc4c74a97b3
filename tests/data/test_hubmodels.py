"""A model or tokenizer hub id pinned to a revision (`OWNER/NAME@REV`), read at that revision wherever it
comes from: the local hub cache (the layout huggingface_hub writes: `snapshots/COMMIT/`, `refs/BRANCH`,
read by the real `snapshot_download`), a download (a fake `snapshot_download` recording what it was
asked), or a mirror (`ENCODERLAB_HUB_MODELS`), whose pin is checked against the records `hf download
--revision SHA --local-dir DIR` leaves. Before, `OWNER/NAME@REV` was no hub id at all: a model was read
at whatever the default branch held, with no way to name the weights a study meant."""

from __future__ import annotations

from contextlib import chdir
from pathlib import Path

import huggingface_hub
import pytest
from huggingface_hub import constants
from tests.data.hub_cache_fixtures import (
    HUB_ID,
    POSITIONS,
    SHA_A,
    SHA_B,
    cache_two_commits,
    commit_model_folder,
    download_record,
)
from tests.reliability.errors_doc import assert_printed_as_documented
from tests.reliability.test_hostile_inputs import cli
from tests.reliability.treestate import assert_unchanged, world_state

from encoderlab.data.hub import HUB_MODELS_ENV
from encoderlab.data.hubmodels import MODEL_FILES, bad_revision, check_model_repo, is_hub_id, split_revision
from encoderlab.errors import UserError
from encoderlab.model.hub import load_pretrained
from encoderlab.model.sources import max_positions


@pytest.mark.parametrize(
    ("name", "split", "hub"),
    [
        ("someone/enc", ("someone/enc", None), True),
        (f"someone/enc@{SHA_A}", ("someone/enc", SHA_A), True),
        ("someone/enc@v1.0", ("someone/enc", "v1.0"), True),
        ("someone/enc@refs/pr/3", ("someone/enc", "refs/pr/3"), True),
        ("someone/enc@", ("someone/enc", ""), False),
        ("someone/enc@a..b", ("someone/enc", "a..b"), False),
        ("someone/enc@v1.lock", ("someone/enc", "v1.lock"), False),
        ("enc@main", ("enc", "main"), False),  # a bare NAME is no repo, pinned or not
    ],
)
def test_a_revision_is_split_off_and_checked(name, split, hub):
    assert split_revision(name) == split
    assert is_hub_id(name) is hub
    assert bad_revision(name) == (None if hub or "/" not in name else split[1])


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    return cache_two_commits(tmp_path, monkeypatch, commit_model_folder)


def test_a_pinned_revision_is_read_from_the_hub_cache_offline(cache):
    assert max_positions(HUB_ID) == POSITIONS[SHA_B]  # unpinned: the default branch
    assert max_positions(f"{HUB_ID}@{SHA_A}") == POSITIONS[SHA_A]
    assert max_positions(f"{HUB_ID}@v1") == POSITIONS[SHA_A]
    assert load_pretrained(f"{HUB_ID}@v1").model.config.max_seq_len == POSITIONS[SHA_A]
    assert load_pretrained(HUB_ID).model.config.max_seq_len == POSITIONS[SHA_B]
    with pytest.raises(
        UserError, match=rf"^model '{HUB_ID}@v2' is not a folder or asset, and the hub is offline"
    ):
        load_pretrained(f"{HUB_ID}@v2")  # a revision the cache lacks is not read as another


def test_a_pinned_tokenizer_is_read_at_its_revision(cache):
    """A tokenizer named by a pinned hub id (`data prepare --tokenizer`, a study's `tokenizer:`) comes from
    that revision's snapshot, as the model does."""
    from encoderlab.data.tokenizer import load_tokenizer, tokenizer_folder

    assert tokenizer_folder(f"{HUB_ID}@v1") == cache / "snapshots" / SHA_A
    assert tokenizer_folder(HUB_ID) == cache / "snapshots" / SHA_B
    assert load_tokenizer(f"{HUB_ID}@{SHA_A}").mask_token == "[MASK]"


@pytest.fixture
def hub(tmp_path, monkeypatch) -> list[tuple[str, str | None]]:
    """The hub online, simulated: a download of someone/enc at commit A or B (`v1` is A, `main` and no
    revision B) copies that commit's files into a snapshot folder; each download's (repo, revision) is
    recorded; any other revision is the hub's RevisionNotFoundError. The local hub cache is empty."""
    from huggingface_hub.errors import LocalEntryNotFoundError, RevisionNotFoundError

    asked: list[tuple[str, str | None]] = []
    refs = {None: SHA_B, "main": SHA_B, "v1": SHA_A, SHA_A: SHA_A, SHA_B: SHA_B}

    def snapshot_download(repo_id, *, revision=None, allow_patterns=None, local_files_only=False, **kwargs):
        assert repo_id == HUB_ID
        if local_files_only:  # a look into the local hub cache (`guarded_folder`): it holds nothing here
            raise LocalEntryNotFoundError("not in the local cache")
        asked.append((repo_id, revision))
        if revision not in refs:
            raise RevisionNotFoundError.__new__(RevisionNotFoundError)  # the hub's 404 for a revision
        return str(commit_model_folder(tmp_path / "snapshots" / refs[revision], refs[revision]))

    monkeypatch.setattr(huggingface_hub, "snapshot_download", snapshot_download)
    monkeypatch.setenv("ENCODERLAB_HOME", str(tmp_path / "home"))
    monkeypatch.delenv(HUB_MODELS_ENV, raising=False)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.chdir(tmp_path)
    return asked


def test_a_pinned_revision_is_downloaded_at_that_revision(hub):
    assert load_pretrained(f"{HUB_ID}@v1").model.config.max_seq_len == POSITIONS[SHA_A]
    assert load_pretrained(HUB_ID).model.config.max_seq_len == POSITIONS[SHA_B]
    assert hub == [(HUB_ID, "v1"), (HUB_ID, None)]


def test_a_revision_the_hub_lacks_is_one_line_and_writes_nothing(hub, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the working folder is one a refusal may not change
    before = world_state(tmp_path)
    code, err = cli(["export", f"{HUB_ID}@v9", "--out", tmp_path / "x"], capsys)
    assert code == 2 and err.strip() == (
        f"encoderlab: error: model '{HUB_ID}' has no revision 'v9' on the Hugging Face hub; fix the @v9 of "
        f"{HUB_ID}@v9 (a commit sha, branch or tag of the repo)"
    ), err
    assert_printed_as_documented("hub-model-revision-not-found", err, tmp_path)
    assert not (tmp_path / "x").exists()
    assert_unchanged(before)


def test_a_study_asks_the_hub_for_the_pinned_revision(tmp_path, monkeypatch):
    """`study run` checks each start model before anything runs (`check_model_repo`): at its pin."""
    asked = []

    def repo_info(self, repo_id, **kwargs):
        asked.append((repo_id, kwargs.get("revision")))

    monkeypatch.setattr(huggingface_hub.HfApi, "repo_info", repo_info)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "empty-cache"))
    monkeypatch.delenv(HUB_MODELS_ENV, raising=False)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.chdir(tmp_path)
    check_model_repo(f"{HUB_ID}@v1")
    check_model_repo(HUB_ID)
    assert asked == [(HUB_ID, "v1"), (HUB_ID, None)]


def test_a_malformed_revision_is_named_as_one_not_as_a_missing_path(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, err = cli(["export", f"{HUB_ID}@a..b", "--out", tmp_path / "x"], capsys)
    assert code == 2 and err.strip() == (
        f"encoderlab: error: model source '{HUB_ID}@a..b' pins the revision 'a..b', which no hub revision can "
        "be; after the @ put a commit sha, branch or tag of the repo (e.g. @main, or the 40-hex sha of a commit)"
    ), err
    assert_printed_as_documented("model-revision-malformed", err, tmp_path)
    assert not (tmp_path / "x").exists()


@pytest.fixture
def mirror(tmp_path, monkeypatch) -> Path:
    """someone/enc mirrored with `hf download --revision <commit A> --local-dir`: a record of A for each
    file (and a README.md, which no load reads, with none)."""
    repo = commit_model_folder(tmp_path / "hub" / HUB_ID, SHA_A)
    (repo / "README.md").write_text("# enc\n")
    for p in repo.iterdir():
        if p.is_file() and p.name != "README.md":
            download_record(repo, p.name, SHA_A)
    monkeypatch.setenv(HUB_MODELS_ENV, str(tmp_path / "hub"))
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.chdir(tmp_path)
    return repo


def test_a_mirror_pinned_at_the_commit_it_was_downloaded_at_is_read(mirror):
    assert {p.name for p in mirror.iterdir()} & {"config.json", "model.safetensors"}
    assert load_pretrained(f"{HUB_ID}@{SHA_A}").model.config.max_seq_len == POSITIONS[SHA_A]
    assert max_positions(f"{HUB_ID}@{SHA_A}") == POSITIONS[SHA_A] == max_positions(HUB_ID)


def _refused(tmp_path, capsys, argv: list, expected: str, case: str) -> None:
    with chdir(tmp_path):  # the working folder is one a refusal may not change
        before = world_state(tmp_path)
        code, err = cli(argv, capsys)
    assert code == 2 and err.strip() == f"encoderlab: error: {expected}", err
    assert_printed_as_documented(case, err, tmp_path)
    assert not (tmp_path / "x").exists()
    assert_unchanged(before)


def test_a_mirror_pin_of_another_commit_is_refused_and_writes_nothing(mirror, tmp_path, capsys):
    where = f"{HUB_ID}@{SHA_B}: {HUB_MODELS_ENV} mirrors {HUB_ID} in {mirror}"
    expected = (
        f"{where}, and its config.json was downloaded at commit {SHA_A}, not {SHA_B}; download it at {SHA_B} "
        f"with: hf download --revision {SHA_B} {HUB_ID} --local-dir {mirror} (or pin {HUB_ID}@{SHA_A} if that "
        "commit is the one meant)"
    )
    argv = ["export", f"{HUB_ID}@{SHA_B}", "--out", tmp_path / "x"]
    _refused(tmp_path, capsys, argv, expected, "model-mirror-pin-other-commit")


def test_a_mirror_pin_that_cannot_be_checked_is_refused_and_writes_nothing(mirror, tmp_path, capsys):
    where = f"{HUB_ID}@main: {HUB_MODELS_ENV} mirrors {HUB_ID} in {mirror}"
    expected = (
        f"{where}, whose download records name commits, not branches or tags; pin the 40-hex commit sha the "
        f"mirror was downloaded at (the first line of {mirror}/.cache/huggingface/download/*.metadata), or drop "
        "@main to read the mirror as it is"
    )
    _refused(
        tmp_path,
        capsys,
        ["export", f"{HUB_ID}@main", "--out", tmp_path / "x"],
        expected,
        "model-mirror-pin-branch",
    )
    (mirror / ".cache/huggingface/download/model.safetensors.metadata").unlink()  # weights copied in by hand
    where = f"{HUB_ID}@{SHA_A}: {HUB_MODELS_ENV} mirrors {HUB_ID} in {mirror}"
    expected = (
        f"{where}, and its model.safetensors has no download record (.cache/huggingface/download/"
        f"model.safetensors.metadata), so the pin cannot be checked; download it again with: hf download "
        f"--revision {SHA_A} {HUB_ID} --local-dir {mirror} (or drop @{SHA_A} to read the mirror as it is)"
    )
    argv = ["export", f"{HUB_ID}@{SHA_A}", "--out", tmp_path / "x"]
    _refused(tmp_path, capsys, argv, expected, "model-mirror-pin-unverifiable")


def test_every_file_a_load_reads_is_checked_and_no_other(mirror):
    """The files checked are those a download would fetch (`MODEL_FILES`): a README without a record
    is no reason to refuse, a tokenizer file of another commit is."""
    assert not (mirror / ".cache/huggingface/download/README.md.metadata").exists()
    load_pretrained(f"{HUB_ID}@{SHA_A}")
    assert any(Path(p).match(g) for p in ["tokenizer.json"] for g in MODEL_FILES)
    download_record(mirror, "tokenizer.json", SHA_B)
    with pytest.raises(UserError, match=r"its tokenizer.json was downloaded at commit b+, not a+"):
        load_pretrained(f"{HUB_ID}@{SHA_A}")
