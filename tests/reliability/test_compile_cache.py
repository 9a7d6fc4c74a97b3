"""torch.compile's cache folder is this user's alone before anything compiles (`model/compilecache.py`).

Inductor unpickles what it finds in its cache folder, by default `<tempdir>/torchinductor_<user>`, and torch
took that folder whoever had made it: on a shared machine a folder another user made first let them plant
code in the next compiled run. The temp folder here is the test's own (`tempfile.tempdir`), so the folder
"another user" made is one this test makes open to everyone (or a link), which is what such a user would
leave; a folder of another owner is shown by the uid the check compares with.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest
from tests.reliability.hostile_world import TINY_RUN as RUN
from tests.reliability.test_hostile_inputs import assert_one_line, cli
from tests.reliability.treestate import assert_unchanged, world_state

from encoderlab.errors import UserError
from encoderlab.model import compilecache
from encoderlab.model.compilecache import CACHE_ENV, default_compile_cache, private_compile_cache


@pytest.fixture
def temp(tmp_path, monkeypatch) -> Path:
    """A temp folder of the test's own, with no TORCHINDUCTOR_CACHE_DIR set (a test sets it where it means to)."""
    root = tmp_path / "tmp"
    root.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(root))
    monkeypatch.setenv(CACHE_ENV, "unset")  # recorded as it was, so what the check sets is undone after
    monkeypatch.delenv(CACHE_ENV)
    monkeypatch.setenv("LOGNAME", "alice")  # the folder's name, whatever uid a test pretends to be
    return root


def test_the_default_folder_is_the_one_torch_uses_under_the_temp_folder(temp):
    ours = default_compile_cache()
    # imported after: importing it makes the folder and sets the variable
    from torch._inductor.runtime.cache_dir_utils import default_cache_dir

    assert ours.parent == temp and str(ours) == default_cache_dir()


def test_the_default_folder_named_by_torch_itself_is_checked_all_the_same(temp, monkeypatch):
    planted = default_compile_cache()
    planted.mkdir()
    (planted / "entry").write_bytes(b"planted")
    planted.chmod(0o757)
    monkeypatch.setenv(CACHE_ENV, str(planted))  # as importing torch's inductor modules sets it
    with pytest.raises(UserError, match=r"is writable by other users \(mode 757\)"):
        private_compile_cache()


def test_a_compiled_pretrain_refuses_a_cache_folder_others_can_write_and_writes_nothing(
    temp, tmp_path, capsys, monkeypatch
):
    (tmp_path / "run.yaml").write_text(RUN)
    planted = default_compile_cache()
    planted.mkdir()
    (planted / "entry").write_bytes(b"planted")  # what another user left for this one's runs
    planted.chmod(0o777)  # as another user leaves it for this one's runs to take
    monkeypatch.chdir(tmp_path)
    before = world_state(tmp_path)
    config, compiled = ["--config", tmp_path / "run.yaml"], ["--set", "scale.compile=true"]
    code, err = cli(["pretrain", *config, *compiled, "--out", tmp_path / "o"], capsys)
    said = rf"torch.compile's cache folder {planted} is writable by other users \(mode 777\)"
    assert_one_line(code, err, said)
    assert f"set {CACHE_ENV} to a folder of your own" in err
    assert_unchanged(before)
    assert CACHE_ENV not in os.environ  # torch was not pointed at it


def test_a_cache_folder_that_is_a_link_is_refused(temp, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    default_compile_cache().symlink_to(elsewhere)
    with pytest.raises(UserError, match="is a symbolic link"):
        private_compile_cache()


def test_a_cache_folder_of_another_user_is_refused(temp, monkeypatch):
    default_compile_cache().mkdir(mode=0o700)
    monkeypatch.setattr(compilecache.os, "getuid", lambda: os.stat(temp).st_uid + 1)
    with pytest.raises(UserError, match=r"belongs to another user \(uid \d+\)"):
        private_compile_cache()


def test_an_absent_cache_folder_is_made_private_and_used(temp, monkeypatch):
    private_compile_cache()
    folder = default_compile_cache()
    assert folder.is_dir() and (folder.stat().st_mode & 0o777) == 0o700
    assert os.environ[CACHE_ENV] == str(folder)


def test_a_private_folder_made_before_is_taken(temp):
    default_compile_cache().mkdir(mode=0o755)  # torch's own, under the usual umask
    private_compile_cache()
    assert os.environ[CACHE_ENV] == str(default_compile_cache())


def test_a_cache_folder_the_user_names_is_theirs_to_vouch_for(temp, tmp_path, monkeypatch):
    mine = tmp_path / "mine"
    monkeypatch.setenv(CACHE_ENV, str(mine))
    private_compile_cache()
    assert os.environ[CACHE_ENV] == str(mine) and not default_compile_cache().exists()


def test_a_folder_writable_by_the_users_private_group_is_taken(temp, monkeypatch):
    """Ubuntu's umask 002 made torch's own folder 775: group-writable, the group the user's alone."""
    import grp
    import pwd

    me = pwd.getpwuid(os.getuid())
    private = grp.struct_group((me.pw_name, "x", me.pw_gid, []))
    monkeypatch.setattr(grp, "getgrgid", lambda gid: private)
    monkeypatch.setattr(
        pwd, "getpwall", lambda: [me]
    )  # no other user's primary group, whatever this machine has
    folder = default_compile_cache()
    folder.mkdir()
    folder.chmod(0o775)
    if folder.stat().st_gid != me.pw_gid:
        pytest.skip("the temp folder gives a new folder another group than the user's own (setgid)")
    private_compile_cache()
    assert os.environ[CACHE_ENV] == str(folder)
    shared = grp.struct_group(("staff", "x", me.pw_gid, [me.pw_name, "bob"]))
    monkeypatch.setattr(grp, "getgrgid", lambda gid: shared)
    (folder / "entry").write_bytes(b"planted")
    with pytest.raises(UserError, match=r"is writable by its group \(gid \d+\), which other users may be in"):
        private_compile_cache()


def test_a_group_named_as_the_user_that_is_another_users_primary_group_is_not_private(temp, monkeypatch):
    """A group's member list names its supplementary members only: a user whose primary group it is (passwd's
    gid) is in it unlisted, and could write to a 775 folder of that group."""
    import grp
    import pwd

    me = pwd.getpwuid(os.getuid())
    monkeypatch.setattr(grp, "getgrgid", lambda gid: grp.struct_group((me.pw_name, "x", me.pw_gid, [])))
    bob = pwd.struct_passwd(("bob", "x", me.pw_uid + 1, me.pw_gid, "", "/home/bob", "/bin/sh"))
    monkeypatch.setattr(pwd, "getpwall", lambda: [me, bob])
    folder = default_compile_cache()
    folder.mkdir()
    (folder / "entry").write_bytes(b"planted")  # held: not the empty folder that is tightened and taken
    folder.chmod(0o775)
    if folder.stat().st_gid != me.pw_gid:
        pytest.skip("the temp folder gives a new folder another group than the user's own (setgid)")
    with pytest.raises(UserError, match=r"is writable by its group \(gid \d+\), which other users may be in"):
        private_compile_cache()
    assert CACHE_ENV not in os.environ and (folder.stat().st_mode & 0o777) == 0o775


def test_a_flex_mask_built_on_cuda_refuses_an_open_cache_folder_before_it_compiles(temp, monkeypatch):
    """Building a forward's flex BlockMask on CUDA compiles (`create_block_mask(_compile=True)`), before the
    compiled flex attention that checked the folder: a command on CUDA without scale.compile (eval, analyze,
    pretrain with scale.compile=false) read inductor's cache unchecked."""
    import torch

    from encoderlab.model import attention

    planted = default_compile_cache()
    planted.mkdir()
    (planted / "entry").write_bytes(b"planted")  # what another user left for this one's runs
    planted.chmod(0o777)
    built: list = []
    monkeypatch.setattr(attention, "create_block_mask", lambda *args, **kwargs: built.append(kwargs))
    doc_ids = torch.zeros(1, 8, dtype=torch.long)
    with pytest.raises(UserError, match=r"is writable by other users \(mode 777\)"):  # was: compiled
        attention.block_mask(8, "bidirectional", doc_ids, None, torch.device("cuda"))
    assert built == []
    attention.block_mask(8, "bidirectional", doc_ids, None, torch.device("cpu"))  # eager: nothing compiles
    assert built == [{"device": torch.device("cpu"), "_compile": False}]


def test_an_empty_open_folder_of_the_users_own_is_tightened_and_taken_a_full_one_refused_and_left(temp):
    """torch's import makes the folder with the umask's mode (775 under umask 002) before a multi-GPU run's
    check: with a group others are in, every run was refused, and removing the folder did not help."""
    folder = default_compile_cache()
    folder.mkdir()
    folder.chmod(0o777)
    private_compile_cache()
    assert (folder.stat().st_mode & 0o777) == 0o700 and os.environ[CACHE_ENV] == str(folder)
    del os.environ[CACHE_ENV]
    (folder / "entry").write_bytes(b"planted")
    folder.chmod(0o777)
    with pytest.raises(UserError, match=r"is writable by other users \(mode 777\)"):
        private_compile_cache()
    assert (folder.stat().st_mode & 0o777) == 0o777 and CACHE_ENV not in os.environ
