"""`atomic.py`: files and folders appear whole or not at all, and every writer goes through it."""

from __future__ import annotations

import os
import re
from pathlib import Path

import numpy as np
import pytest

import encoderlab
from encoderlab import atomic
from encoderlab.atomic import atomic_file, atomic_folder, cached_arrays, write_csv_atomic, write_text_atomic
from encoderlab.config import load_yaml, save_yaml
from encoderlab.errors import UserError
from encoderlab.train.config import OptimConfig


def test_folder_appears_whole_on_success(tmp_path):
    with atomic_folder(tmp_path / "out") as tmp:
        assert tmp == tmp_path / "out.tmp" and not (tmp_path / "out").exists()
        (tmp / "a.txt").write_text("a")
    assert (tmp_path / "out" / "a.txt").read_text() == "a" and not tmp.exists()


def test_folder_is_removed_on_an_exception_and_the_old_one_is_untouched(tmp_path):
    old = tmp_path / "out"
    old.mkdir()
    (old / "keep.txt").write_text("old")
    with pytest.raises(ValueError), atomic_folder(old, replace=True) as tmp:
        (tmp / "half").write_text("x")
        raise ValueError("disk full")
    assert not tmp.exists() and (old / "keep.txt").read_text() == "old"


def _contents(folder: Path) -> dict[str, str]:
    return {p.name: p.read_text() for p in folder.iterdir() if p.name != atomic.PARTIAL}


def test_a_ctrl_c_while_the_old_folder_is_removed_leaves_it_or_the_new_one_whole(tmp_path, monkeypatch):
    """Ctrl-C landing in the removal of the folder a replace takes the place of (seconds for a model), after
    one of its files went: was half the old folder at `out`, and the complete new one removed."""
    import shutil

    out = tmp_path / "out"
    out.mkdir()
    for name in ("a", "b", "c"):
        (out / name).write_text("old")
    real, calls = shutil.rmtree, []

    def interrupted(folder, *args, **kwargs):
        calls.append(folder)
        files = sorted(Path(folder).glob("[abc]")) if Path(folder).is_dir() else []
        if len(calls) == 1 and files and files[0].read_text() == "old":
            files[0].unlink()
            raise KeyboardInterrupt
        real(folder, *args, **kwargs)

    monkeypatch.setattr(shutil, "rmtree", interrupted)
    with pytest.raises(KeyboardInterrupt), atomic_folder(out, replace=True) as tmp:
        for name in ("a", "b"):
            (tmp / name).write_text("new")
    monkeypatch.undo()
    assert _contents(out) in ({"a": "old", "b": "old", "c": "old"}, {"a": "new", "b": "new"})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]  # no sibling left


def test_a_replace_killed_while_removing_the_old_folder_is_cleaned_up_by_the_next(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    killed = tmp_path / ".out.999999.replaced.tmp"  # what a SIGKILL in the removal leaves
    killed.mkdir()
    (killed / atomic.PARTIAL).touch()
    (killed / "a").write_text("old")
    mine = tmp_path / ".out.1.replaced.tmp"  # a user's folder of that name, without the marker: kept
    mine.mkdir()
    (mine / "keep").write_text("x")
    with atomic_folder(out, replace=True) as tmp:
        (tmp / "a").write_text("new")
    assert _contents(out) == {"a": "new"} and not killed.exists() and _contents(mine) == {"keep": "x"}


KILLED_IN_THE_SWAP = """
import os, sys
from pathlib import Path
from encoderlab import atomic
step, at = sys.argv[2], int(sys.argv[3])
owner, name = (Path, "rename") if step == "rename" else (atomic.shutil, "rmtree")
real, calls = getattr(owner, name), []
def killed(*args, **kwargs):
    calls.append(1)
    if len(calls) == at:
        os._exit(9)  # SIGKILL's effect: no handler, no cleanup
    return real(*args, **kwargs)
setattr(owner, name, killed)
with atomic.atomic_folder(Path(sys.argv[1]), replace=True) as tmp:
    (tmp / "a").write_text("new")
"""


def _killed_replace(out: Path, step: str, at: int) -> None:
    """Replace `out` by {"a": "new"} in a child process killed at call `at` of `step` (`Path.rename` or
    `shutil.rmtree`), before that call does anything."""
    import subprocess
    import sys

    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    child = subprocess.run([sys.executable, "-c", KILLED_IN_THE_SWAP, str(out), step, str(at)], env=env)
    assert child.returncode == 9


@pytest.mark.parametrize(("step", "at"), [("rename", 1), ("rename", 2), ("rmtree", 1)])
def test_a_replace_killed_at_any_step_of_the_swap_is_cleaned_up_by_the_next(tmp_path, step, at):
    """A SIGKILL between the swap's renames left the old folder, unmarked, at a hidden name and no `out`: the
    next write then renamed without a swap, and nothing ever removed that hidden folder."""
    out = tmp_path / "out"
    out.mkdir()
    (out / "a").write_text("old")
    _killed_replace(out, step, at)
    whole = [_contents(f) for f in (out, tmp_path / "out.tmp") if f.is_dir()]
    assert {"a": "old"} in whole or {"a": "new"} in whole  # one of them, whole, somewhere a user finds it
    with atomic_folder(out, replace=True) as tmp:
        (tmp / "a").write_text("newer")
    assert _contents(out) == {"a": "newer"} and sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_an_interruption_removes_the_folder_unless_asked_to_keep_it(tmp_path):
    with pytest.raises(KeyboardInterrupt), atomic_folder(tmp_path / "out") as tmp:
        raise KeyboardInterrupt
    assert not tmp.exists()
    with pytest.raises(KeyboardInterrupt), atomic_folder(tmp_path / "out", keep_on_interrupt=True) as tmp:
        (tmp / "half").write_text("x")
        raise KeyboardInterrupt
    assert (tmp / "half").exists() and not (tmp_path / "out").exists()
    with atomic_folder(tmp_path / "out") as tmp:
        assert [p.name for p in tmp.iterdir()] == [atomic.PARTIAL]  # the leftover is never mixed in
        (tmp / "whole").write_text("y")
    assert [p.name for p in (tmp_path / "out").iterdir()] == ["whole"]  # the marker is not delivered


@pytest.mark.parametrize("replace", [False, True])
def test_a_foreign_tmp_sibling_is_refused_and_left_alone(tmp_path, replace):
    """`NAME.tmp` that atomic_folder did not make (no marker) is someone's folder: the old code
    deleted it on entry."""
    theirs = tmp_path / "out.tmp"
    theirs.mkdir()
    (theirs / "notes.txt").write_text("keep me")
    refused = r"out.tmp exists and is not a leftover of encoderlab .*move it away"
    with pytest.raises(UserError, match=refused), atomic_folder(tmp_path / "out", replace=replace):
        pytest.fail("the block ran")
    assert (theirs / "notes.txt").read_text() == "keep me" and not (tmp_path / "out").exists()
    (tmp_path / "f.tmp").write_text("a file")
    with pytest.raises(UserError, match="is not a folder encoderlab left behind"):
        atomic.check_sibling(tmp_path / "f")
    assert (tmp_path / "f.tmp").read_text() == "a file"


def test_our_leftover_and_an_empty_sibling_are_reused(tmp_path):
    with pytest.raises(KeyboardInterrupt), atomic_folder(tmp_path / "out", keep_on_interrupt=True) as tmp:
        (tmp / "half").write_text("x")
        raise KeyboardInterrupt
    with atomic_folder(tmp_path / "out") as tmp:  # marked: ours, started afresh
        assert [p.name for p in tmp.iterdir()] == [atomic.PARTIAL]
    (tmp_path / "e.tmp").mkdir()  # empty: nothing in it to lose
    with atomic_folder(tmp_path / "e") as tmp:
        (tmp / "a").write_text("a")
    assert [p.name for p in (tmp_path / "e").iterdir()] == ["a"] and not tmp.exists()


def test_a_non_empty_folder_is_replaced_only_when_asked(tmp_path):
    """Filled while the block ran (a second `data tokenizer` on one --out finished first): one line, was
    an OSError traceback ("Directory not empty")."""
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "theirs.txt").write_text("theirs")
    message = r"out was filled by another command while this one ran .*nothing of this one was kept"
    with pytest.raises(UserError, match=message), atomic_folder(tmp_path / "out") as tmp:
        (tmp / "ours.txt").write_text("ours")
    assert [p.name for p in (tmp_path / "out").iterdir()] == ["theirs.txt"] and not tmp.exists()
    (tmp_path / "empty").mkdir()
    with atomic_folder(tmp_path / "empty") as tmp:  # an empty folder is always replaced
        (tmp / "ours.txt").write_text("ours")
    assert (tmp_path / "empty" / "ours.txt").exists()


def test_a_symlink_to_a_folder_writes_that_folder_and_stays_a_link(tmp_path):
    """`export --out LINK --overwrite`, LINK naming an earlier export: "Cannot call rmtree on a symbolic
    link", a traceback after the whole export."""
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "old.txt").write_text("old")
    (tmp_path / "link").symlink_to(tmp_path / "real")
    with atomic_folder(tmp_path / "link", replace=True) as tmp:
        assert tmp == tmp_path / "real.tmp"
        (tmp / "new.txt").write_text("new")
    assert (tmp_path / "link").is_symlink() and (tmp_path / "link").resolve() == tmp_path / "real"
    assert [p.name for p in (tmp_path / "real").iterdir()] == ["new.txt"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link", "real"]


def test_a_file_write_that_fails_leaves_the_old_file_and_no_temporary(tmp_path):
    target = tmp_path / "cache.npz"
    target.write_text("old")
    with pytest.raises(RuntimeError), atomic_file(target, suffix=".npz") as tmp:
        assert tmp.name.endswith(".tmp.npz")
        tmp.write_text("half")
        raise RuntimeError
    assert target.read_text() == "old" and list(tmp_path.iterdir()) == [target]


def test_save_yaml_is_atomic(tmp_path, monkeypatch):
    path = tmp_path / "config.yaml"
    save_yaml(OptimConfig(lr=1e-3), path)

    def crash(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(atomic.os, "replace", crash)
    with pytest.raises(OSError):
        save_yaml(OptimConfig(lr=0.5), path)
    assert load_yaml(OptimConfig, path).lr == 1e-3 and list(tmp_path.iterdir()) == [path]


def test_csv_rows_take_every_column_in_first_seen_order(tmp_path):
    write_csv_atomic(tmp_path / "t.csv", [{"a": 1, "b": 2.5}, {"b": 3, "c": "x,y"}])
    assert (tmp_path / "t.csv").read_bytes() == b'a,b,c\r\n1,2.5,\r\n,3,"x,y"\r\n'
    write_csv_atomic(tmp_path / "t.csv", [{"b": 1}], columns=["b", "a"])
    assert (tmp_path / "t.csv").read_text() == "b,a\n1,\n"


def test_a_figure_and_its_numbers_are_replaced_whole_or_not_at_all(tmp_path, monkeypatch):
    """An analysis figure (PNG, CSV, JSON) rewritten when the disk fills keeps the previous files."""
    from encoderlab.analysis.plots import plot_cka

    stem = tmp_path / "cka"
    plot_cka([{"layer": i, "divergence": 0.1 * i} for i in range(3)], stem)
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    assert sorted(before) == ["cka.csv", "cka.json", "cka.png"]

    def crash(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(atomic.os, "replace", crash)
    with pytest.raises(OSError):
        plot_cka([{"layer": i, "divergence": 0.5} for i in range(4)], stem)
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before


FIGURE_WRITERS_ALLOWED: set[str] = set()


def _outside_atomic(pattern: str, allowed: set[str]) -> list[str]:
    """'module:line' of each line matching `pattern` in src/encoderlab, atomic.py and `allowed` aside."""
    root, regex = Path(encoderlab.__file__).parent, re.compile(pattern)
    return [
        f"{path.relative_to(root)}:{n}"
        for path in sorted(root.rglob("*.py"))
        if path.name != "atomic.py" and str(path.relative_to(root)) not in allowed
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if regex.search(line)
    ]


def test_figures_and_csv_tables_are_written_through_atomic():
    offenders = _outside_atomic(r"\.savefig\(|csv\.(Dict)?[Ww]riter\(", FIGURE_WRITERS_ALLOWED)
    assert offenders == [], "write figures with atomic.savefig_atomic and tables with atomic.write_csv_atomic"


# Renames left outside atomic.py, each for a reason atomic_folder does not cover.
RENAMES_ALLOWED = {
    "data/assets/archives.py",  # concurrent extractions into a mkdtemp folder: the first finished wins
    "data/assets/cache.py",  # a registry client's download moved out of its staging folder
}


def test_no_module_writes_its_own_tmp_then_rename():
    assert _outside_atomic(r"\.rename\(|os\.replace\(|tmp\.replace\(", RENAMES_ALLOWED) == []


def test_text_writes_are_whole(tmp_path):
    write_text_atomic(tmp_path / "a.md", "x" * 10_000)
    assert (tmp_path / "a.md").read_text() == "x" * 10_000


@pytest.mark.parametrize("damage", ["cut", "not-npz", "pickle"])
def test_an_unreadable_npz_cache_is_computed_again(tmp_path, capsys, damage):
    """A damaged cache file (a probe's feature cache in its --out, the decontamination cache in
    ENCODERLAB_HOME: a copy cut short, someone's file, an object array) was a traceback on every later
    run; it is a cache miss now, and a pickle is never loaded."""
    path = tmp_path / "features.npz"
    cached_arrays(path, lambda: {"x": np.arange(4.0)})
    if damage == "cut":
        path.write_bytes(path.read_bytes()[:100])
    elif damage == "not-npz":
        path.write_text("not an npz")
    else:
        np.savez(path, x=np.array([{"a": 1}], dtype=object))
    assert cached_arrays(path, lambda: {"x": np.arange(3.0)})["x"].tolist() == [0.0, 1.0, 2.0]
    assert f"the cache {path} is unreadable" in capsys.readouterr().err
    assert cached_arrays(path, lambda: pytest.fail("computed again"))["x"].tolist() == [0.0, 1.0, 2.0]


def test_a_safetensors_file_in_a_finished_folder_is_as_readable_as_its_neighbours(tmp_path):
    """safetensors writes through a private temporary file: every model.safetensors was 0600 under
    umask 022 while the config beside it was 0644, so a shared export could not be loaded by others."""
    import torch
    from safetensors.torch import save_file

    old = os.umask(0o022)
    try:
        with atomic_folder(tmp_path / "model") as tmp:
            save_file({"w": torch.zeros(2)}, str(tmp / "model.safetensors"))
            (tmp / "config.json").write_text("{}")
    finally:
        os.umask(old)
    modes = {f.name: f.stat().st_mode & 0o777 for f in (tmp_path / "model").iterdir()}
    assert modes == {"model.safetensors": 0o644, "config.json": 0o644}


_HOLD = """
import sys
from pathlib import Path
from encoderlab.atomic import atomic_folder
with atomic_folder(Path(sys.argv[1]), replace=True) as tmp:
    (tmp / "theirs.txt").write_text("theirs")
    print("in", flush=True)
    sys.stdin.readline()
"""


def _holding(out: Path):
    """A child process inside `atomic_folder(out)`, its file written, waiting for a line on stdin."""
    import os
    import subprocess
    import sys

    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(Path(encoderlab.__file__).parents[1]), *sys.path]),
    }
    child = subprocess.Popen(
        [sys.executable, "-c", _HOLD, str(out)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert child.stdout.readline() == "in\n"
    return child


def test_a_sibling_another_live_process_fills_is_refused_and_left_to_it(tmp_path):
    """Two commands writing one folder at once (`export --overwrite`, `data tokenizer` on one --out): the
    second took the first one's marked sibling for a leftover and deleted it while it was being filled."""
    out = tmp_path / "out"
    child = _holding(out)
    try:
        busy = rf"out.tmp is being written by another process \(pid {child.pid}\)"
        with pytest.raises(UserError, match=busy), atomic_folder(out, replace=True):
            pytest.fail("the block ran")
        with pytest.raises(UserError, match="another command writes"):
            atomic.check_sibling(out)
        assert (tmp_path / "out.tmp" / "theirs.txt").read_text() == "theirs"
    finally:
        child.communicate("go\n")
    assert child.returncode == 0 and (out / "theirs.txt").read_text() == "theirs"


def test_the_sibling_of_a_killed_writer_is_a_leftover_started_afresh(tmp_path):
    out = tmp_path / "out"
    child = _holding(out)
    child.kill()  # SIGKILL: no cleanup, its marked sibling stays with its (now gone) pid
    child.communicate()
    with atomic_folder(out) as tmp:
        assert [p.name for p in tmp.iterdir()] == [atomic.PARTIAL]
        (tmp / "mine.txt").write_text("mine")
    assert [p.name for p in out.iterdir()] == ["mine.txt"]
