"""`pipconf.pip_settings` asks pip (`pip config list`) again exactly when something pip reads changed.

The key is checked against pip itself (`pip config debug` names every file it reads), and the reuse against a
stand-in for pip that reads its config file, so a stale answer shows as a wrong value.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from encoderlab.data.assets import pipconf, sdist


def _stand_in(monkeypatch, answers: list) -> list[str]:
    """Replace pip with one that reads `PIP_CONFIG_FILE`'s text as the index (or fails, for None in
    `answers`); returns the list of what each run read."""
    runs: list[str] = []

    def listed():
        text = Path(pipconf.os.environ["PIP_CONFIG_FILE"]).read_text(encoding="utf-8")
        runs.append(text)
        return None if answers and answers.pop(0) is None else {"global.index-url": text}

    monkeypatch.setattr(pipconf, "_listed_by_pip", listed)
    monkeypatch.setattr(pipconf, "_LISTED", {})
    return runs


def test_pip_is_asked_again_only_when_what_it_reads_changed(tmp_path, monkeypatch):
    runs = _stand_in(monkeypatch, [])
    conf = tmp_path / "pip.conf"
    conf.write_text("https://one.example/")
    monkeypatch.setenv("PIP_CONFIG_FILE", str(conf))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    assert pipconf.pip_settings()["global.index-url"] == "https://one.example/"
    assert pipconf.pip_settings()["global.index-url"] == "https://one.example/"
    assert len(runs) == 1  # the same inputs: pip's answer reused
    conf.write_text("https://two.example/")  # the same size, likely the same modification time
    assert pipconf.pip_settings()["global.index-url"] == "https://two.example/"
    user = tmp_path / "home" / ".config" / "pip" / "pip.conf"
    user.parent.mkdir(parents=True)
    user.write_text("[global]\nno-index = yes\n")  # a user file pip reads appears
    pipconf.pip_settings()
    monkeypatch.setenv("HOME", str(tmp_path / "other"))
    pipconf.pip_settings()
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    pipconf.pip_settings()
    assert len(runs) == 5


def test_a_failed_pip_is_asked_again(tmp_path, monkeypatch):
    runs = _stand_in(monkeypatch, [None])
    conf = tmp_path / "pip.conf"
    conf.write_text("https://one.example/")
    monkeypatch.setenv("PIP_CONFIG_FILE", str(conf))
    assert pipconf.pip_settings() == {}
    assert pipconf.pip_settings() == {"global.index-url": "https://one.example/"}
    assert len(runs) == 2


def test_every_file_pip_reads_is_part_of_the_key(tmp_path, monkeypatch):
    """pip's own list of the files it reads (`pip config debug`, this pip and system): each is one
    `_pip_files` watches, so no change to one is missed."""
    monkeypatch.setenv("PIP_CONFIG_FILE", str(tmp_path / "pip.conf"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    debug = subprocess.run(
        [sys.executable, "-m", "pip", "config", "debug"], capture_output=True, text=True, check=True
    ).stdout
    read = re.findall(r"^  (\S.*), exists: (?:True|False)$", debug, flags=re.MULTILINE)
    assert str(tmp_path / "pip.conf") in read and any(str(tmp_path / "home") in f for f in read)
    watched = set(pipconf._pip_files())
    assert [f for f in read if f not in watched] == []


@pytest.mark.parametrize(
    "home, config_home, config_dirs",
    [("home", "  ", f"relative{os.pathsep}"), ("", "relative", f" {os.sep}elsewhere ")],
    ids=["blank, none absolute", "empty home, relative, padded"],
)
def test_every_file_pip_reads_with_odd_xdg_variables_is_part_of_the_key(
    tmp_path, monkeypatch, home, config_home, config_dirs
):
    """pip 26's platformdirs strips an XDG variable and takes an absolute folder only, else its default: a
    blank or relative `XDG_CONFIG_HOME` is ~/.config, an `XDG_CONFIG_DIRS` of no absolute folder /etc/xdg, an
    empty `HOME` the passwd home. Those files were not watched, so an edit of one kept pip's old answer."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PIP_CONFIG_FILE", str(tmp_path / "pip.conf"))
    monkeypatch.setenv("HOME", str(tmp_path / home) if home else "")
    monkeypatch.setenv("XDG_CONFIG_HOME", config_home)
    monkeypatch.setenv("XDG_CONFIG_DIRS", config_dirs.replace(os.sep, str(tmp_path) + os.sep, 1))
    debug = subprocess.run(
        [sys.executable, "-m", "pip", "config", "debug"], capture_output=True, text=True, check=True
    ).stdout
    read = re.findall(r"^  (\S.*), exists: (?:True|False)$", debug, flags=re.MULTILINE)
    assert len(read) >= 5  # the env file, two global, one site and two user files: the listing was read
    watched = set(pipconf._pip_files())
    assert [f for f in read if f not in watched] == []


def test_the_client_reads_its_callers_settings_and_asks_no_pip(tmp_path, monkeypatch):
    """`cache` runs the client with `client_env`: the caller's settings (here pip.conf's find-links and no-index)
    are where the client looks, without a `pip config list` of its own."""
    folder = tmp_path / "wheels"
    folder.mkdir()
    (folder / "pkg-1.0.tar.gz").write_bytes(b"the sdist")
    for name in ("PIP_FIND_LINKS", "PIP_NO_INDEX", "PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_CONFIG_FILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(pipconf, "_LISTED", {})
    monkeypatch.setattr(
        pipconf, "_listed_by_pip", lambda: {"global.find-links": str(folder), "global.no-index": "yes"}
    )
    env = sdist.client_env(wheel=False)
    assert env["PIP_FIND_LINKS"] == folder.as_uri()
    assert pipconf.SETTINGS_ENV not in sdist.client_env(wheel=True)  # pip's own client reads its own
    monkeypatch.setattr(pipconf, "_listed_by_pip", lambda: pytest.fail("the client asked pip again"))
    monkeypatch.setattr(pipconf, "_LISTED", {})
    monkeypatch.setenv(pipconf.SETTINGS_ENV, env[pipconf.SETTINGS_ENV])
    assert sdist.main(["pkg", "pkg-1.0.tar.gz", str(tmp_path / "out")]) == 0
    assert (tmp_path / "out").read_bytes() == b"the sdist"


@pytest.mark.parametrize("given", ["", "not json", '["a list"]', '{"global.no-index": 1}'])
def test_a_client_without_readable_settings_asks_pip(given, monkeypatch):
    monkeypatch.setenv(pipconf.SETTINGS_ENV, given)
    assert pipconf.given_settings() is None


def test_a_pipe_named_as_the_config_file_is_not_read_for_the_key(tmp_path, monkeypatch):
    """Reading a FIFO (or /dev/stdin) waits for a writer and takes its input: it is keyed on its status."""
    fifo = tmp_path / "pip.conf"
    pipconf.os.mkfifo(fifo)

    def refuse(path):
        raise AssertionError(f"{path} was read")

    monkeypatch.setattr(Path, "read_bytes", refuse)
    assert pipconf._bytes_of(str(fifo)) is not None
    assert pipconf._bytes_of(str(tmp_path / "missing.conf")) is None


def test_a_key_set_in_two_files_is_the_one_pip_gives_it(tmp_path, monkeypatch):
    """`PIP_CONFIG_FILE` is above the global file in pip's order, but `pip config list` prints the files by name:
    the global one (zz/) last. Its line won, so the sdist was fetched from another index than pip's wheels."""
    (tmp_path / "zz" / "pip").mkdir(parents=True)
    (tmp_path / "zz" / "pip" / "pip.conf").write_text(
        "[global]\nindex-url = https://global.example/simple/\n"
    )
    (tmp_path / "aa.conf").write_text("[global]\nindex-url = https://env-file.example/simple/\n")
    monkeypatch.setenv("XDG_CONFIG_DIRS", str(tmp_path / "zz"))
    monkeypatch.setenv("PIP_CONFIG_FILE", str(tmp_path / "aa.conf"))
    monkeypatch.delenv("PIP_INDEX_URL", raising=False)
    monkeypatch.setattr(pipconf, "_LISTED", {})
    assert pipconf.pip_settings()["global.index-url"] == "https://env-file.example/simple/"
    assert sdist.index_urls()[0] == "https://env-file.example/simple/"


def test_a_removed_working_folder_still_reads_the_settings(tmp_path, monkeypatch):
    runs = _stand_in(monkeypatch, [])
    (tmp_path / "pip.conf").write_text("https://one.example/")
    monkeypatch.setenv("PIP_CONFIG_FILE", str(tmp_path / "pip.conf"))
    gone = tmp_path / "gone"
    gone.mkdir()
    monkeypatch.chdir(gone)
    gone.rmdir()
    assert pipconf.pip_settings() == {"global.index-url": "https://one.example/"} and len(runs) == 1


def test_with_os_devnull_as_the_config_file_pip_is_not_run_and_its_variables_count(monkeypatch):
    """pip reads no file with `PIP_CONFIG_FILE=os.devnull` but still lists (and uses) its PIP_ variables, named as
    it names them: `PIP_index_url` is its index-url. The shortcut gave {} there, so the sdist came from PyPI where
    pip took its wheels from that index. Checked against pip's own listing, which is not run again."""
    for name in ("PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_FIND_LINKS", "PIP_NO_INDEX"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("PIP_index_url", "https://mixed-case.example/simple/")
    listed = pipconf._listed_by_pip()
    monkeypatch.setattr(pipconf, "_listed_by_pip", lambda: pytest.fail("pip was run"))
    assert pipconf.pip_settings() == listed
    assert sdist.index_urls()[0] == "https://mixed-case.example/simple/"
