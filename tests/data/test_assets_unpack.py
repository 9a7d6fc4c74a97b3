"""A member an asset's package would unpack outside the folder it is unpacked into (an absolute name, a `..`
part) is refused in one line, and nothing is written (`archives.unpacked_path`): the archives are pinned, so the
pinned package itself is what a safe unpacker guards against."""

from __future__ import annotations

import pytest
from assets_fixtures import make_tgz, make_zip
from tests.reliability.treestate import assert_unchanged, world_state

from encoderlab.data.assets import archives, models
from encoderlab.errors import UserError

PREFIX = "pkg-1.0/tasks/"

ESCAPES = ["..", "absolute after the prefix", "absolute"]
"""How a member name leads outside the folder: through `..`, absolute once the prefix is stripped, absolute."""


def _escaping(how: str, tmp_path) -> tuple[str, str]:
    """(prefix, member name) of a member that would land in `tmp_path` (where the test can see it), outside the
    folder it is unpacked into, one level below there."""
    if how == "..":
        return PREFIX, f"{PREFIX}squad/../../escaped.txt"
    target = str(tmp_path / "escaped.txt")
    return (PREFIX, PREFIX + target) if how == "absolute after the prefix" else ("", target)


@pytest.mark.parametrize("how", ESCAPES)
def test_a_tarball_member_outside_the_folder_is_refused_and_nothing_is_written(tmp_path, monkeypatch, how):
    prefix, bad = _escaping(how, tmp_path)
    archive = make_tgz(tmp_path / "pkg-1.0.tar.gz", {f"{prefix}squad/a.json": "{}", bad: "evil"})
    monkeypatch.chdir(tmp_path)
    before = world_state(tmp_path)
    with pytest.raises(
        UserError,
        match=r"pkg-1\.0\.tar\.gz holds a member named '.*', an absolute path or one with a '\.\.' part",
    ):
        archives.extract_once(archive, prefix, ("squad", "/"))
    assert_unchanged(before)


@pytest.mark.parametrize("how", ESCAPES)
def test_a_zip_member_outside_the_folder_is_refused(tmp_path, how):
    prefix, bad = _escaping(how, tmp_path)
    archive = make_zip(tmp_path / "pkg.whl", {f"{prefix}a.bin": "a", bad: "evil"})
    out = tmp_path / "model"
    out.mkdir()
    with pytest.raises(UserError, match=r"pkg\.whl holds a member named .*would be written outside"):
        models._write_members(archive, prefix, out)
    assert not any(tmp_path.rglob("escaped.txt"))


def test_members_inside_the_folder_are_unpacked_as_before(tmp_path):
    archive = make_tgz(
        tmp_path / "pkg-1.0.tar.gz", {f"{PREFIX}squad/x/a.json": "{}", f"{PREFIX}other.json": "{}"}
    )
    folder = archives.extract_once(archive, PREFIX, ("squad",))
    assert sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*.json")) == ["squad/x/a.json"]
