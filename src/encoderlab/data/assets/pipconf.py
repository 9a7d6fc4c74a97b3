"""pip's settings as pip itself reads them (`pip config list`), asked once per process while nothing pip reads
changes, and handed on to the sdist client in its environment.

`sdist` searches pip's find-links and indexes, in pip's order, so an sdist comes from where pip takes its wheels;
only pip knows its settings (its files, their precedence, its environment variables), so pip is asked: `pip config
list` (pip alone runs, reading its own files: no package code). A run costs about half a CPU-second, and a fetch of
many assets asked once per asset in the fetching process and again in each client. `pip_settings` keeps the
latest answer keyed on everything that run read (`_pip_inputs`: the environment pip reads, the working folder, the
bytes of each file pip reads its settings from on any system): a superset (a file pip does not read here only
costs a needless run when it changes), bytes rather than modification times (a file rewritten within one clock
tick stays seen), and only regular files read (a pipe named as `PIP_CONFIG_FILE` is keyed on its status). A
failed run is not kept. With `PIP_CONFIG_FILE` set to os.devnull pip reads no file, and nothing runs: its listing
then, its PIP_ variables, is made here as pip makes it (`_env_listed`). This cache is the one holder: `cache.fetch`
checks pip's places before it stages anything and each client's environment is made later, both from it, so one
fetch runs pip once (a holder of the fetch's settings beside it would say the same twice; were pip's files edited
mid-fetch, the client refuses what the check would have, in one line).

`pip config list` prints each file's keys in the order of the files' names, not of pip's precedence, so a key
printed twice (set in two files) is asked of `pip config get`, which gives the one pip uses (`_listed_by_pip`).

The sdist client gets its caller's settings in its environment (`SETTINGS_ENV`, `given_settings`), not on its
command line, where an index's password would show to `ps`. This module imports the standard library only: the
client, run as a script in isolated mode, loads it by its path (`sdist`).
"""

from __future__ import annotations

import ast
import json
import os
import stat
import subprocess
import sys
from pathlib import Path


def pip_settings() -> dict[str, str]:
    """pip's configured values as `pip config list` prints them (`global.index-url` -> its value); {} when
    pip is absent or fails. Only pip runs, reading its own files: no package code. pip is asked again only
    when something it reads has changed since (`_pip_inputs`): each run costs about half a CPU-second, and a
    fetch of many assets asked once per asset. With `PIP_CONFIG_FILE` set to os.devnull pip reads no file (its
    `Configuration._load_config_files`), so nothing runs: what pip lists then is its environment (`_env_listed`)."""
    if os.environ.get("PIP_CONFIG_FILE") == os.devnull:
        return _env_listed()
    inputs = _pip_inputs()
    if inputs not in _LISTED:
        listed = _listed_by_pip()
        if listed is None:  # a failure may pass (a timeout): asked again next time
            return {}
        _LISTED.clear()  # the latest only: settings seldom change within a process
        _LISTED[inputs] = listed
    return dict(_LISTED[inputs])


_LISTED: dict[tuple, dict[str, str]] = {}
"""{`_pip_inputs()` when pip was asked: what `pip config list` printed, read}."""

_PIP_ENV_PREFIXES = ("PIP_", "PYTHON", "XDG_", "LC_")
_PIP_ENV_NAMES = ("HOME", "USERPROFILE", "APPDATA", "LOCALAPPDATA", "PROGRAMDATA", "ALLUSERSPROFILE", "LANG")


def _pip_inputs() -> tuple:
    """What `pip config list` reads, as a key: the environment it reads (its PIP_ settings and config file, the
    variables that place its files, `python -m`'s own and the locale the files are decoded with), the working
    folder (`python -m` imports from it) and the bytes of each file pip reads its settings from on Linux,
    macOS or Windows (a superset: a file pip does not read on this system only costs a needless rerun
    when it changes). Bytes, not modification times: a file rewritten within one clock tick stays seen."""
    env = tuple(
        sorted(
            (k, v) for k, v in os.environ.items() if k.startswith(_PIP_ENV_PREFIXES) or k in _PIP_ENV_NAMES
        )
    )
    try:
        here = os.getcwd()
    except OSError:  # the working folder was removed: pip still runs (and reads no module from it)
        here = None
    return env, here, tuple((f, _bytes_of(f)) for f in _pip_files())


def _pip_files() -> list[str]:
    """The files pip reads its settings from (pip's `configuration.get_configuration_files`, with
    platformdirs' folders of each system), and `PIP_CONFIG_FILE`. An XDG variable's folders are taken both as
    written and as pip 26's platformdirs takes them (stripped, an absolute one only, else the default), and
    the default folders always: a relative `XDG_CONFIG_HOME`, a blank one or an `XDG_CONFIG_DIRS` of no
    absolute folder sent pip to ~/.config and /etc/xdg, which were not watched (nor the passwd home an empty
    `HOME` leaves platformdirs)."""
    homes = [os.path.expanduser("~"), _passwd_home()]  # expanduser never raises (Path.home() does)
    user = os.environ.get("XDG_CONFIG_HOME", "")
    site_dirs = os.environ.get("XDG_CONFIG_DIRS", "").split(os.pathsep)
    folders = [
        *site_dirs,
        *(d.strip() for d in site_dirs),
        "/etc/xdg",
        "/etc",
        user,
        user.strip(),
        *(os.path.join(h, d) for h in homes if h is not None for d in (".config", ".pip", "pip")),
        *(os.path.join(h, "Library", "Application Support") for h in homes if h is not None),
        "/Library/Application Support",
        *(os.environ.get(k, "") for k in ("APPDATA", "LOCALAPPDATA", "PROGRAMDATA", "ALLUSERSPROFILE")),
    ]
    files = [
        os.path.join(f, n)
        for f in dict.fromkeys(folders)
        if f
        for n in ("pip.conf", "pip.ini", "pip/pip.conf", "pip/pip.ini")
    ]
    return [
        *files,
        os.path.join(sys.prefix, "pip.conf"),
        os.path.join(sys.prefix, "pip.ini"),
        os.environ.get("PIP_CONFIG_FILE", ""),
    ]


def _passwd_home() -> str | None:
    """The home folder the password database gives this user (platformdirs' when `HOME` is empty); None
    where there is none (Windows, no entry)."""
    try:
        import pwd

        return pwd.getpwuid(os.getuid()).pw_dir
    except (ImportError, KeyError, AttributeError):
        return None


def _bytes_of(path: str) -> bytes | tuple | None:
    """The bytes of file `path`; None when it is missing or unreadable (a folder, no permission). Only a regular
    file is read: a pipe or a device named as `PIP_CONFIG_FILE` is keyed on its status (reading /dev/stdin here
    would wait for, and take, this process's input)."""
    try:
        status = os.stat(path) if path else None
        if status is None or not stat.S_ISREG(status.st_mode):
            return None if status is None else (status.st_mode, status.st_ino, status.st_mtime_ns)
        return Path(path).read_bytes()
    except OSError:
        return None


def _env_listed() -> dict[str, str]:
    """What `pip config list` prints when it reads no file: its PIP_ variables as `:env:` values, named as pip's
    `Configuration.get_environ_vars` and `_normalize_name` name them (`PIP_index_url` is `:env:.index-url` too,
    which `sdist._setting`'s look-up of `PIP_INDEX_URL` misses; {} here made pip's index PyPI's)."""
    names = ((key, key[4:].lower()) for key in os.environ if key.startswith("PIP_"))
    return {
        ":env:." + name.replace("_", "-").removeprefix("--"): os.environ[key]
        for key, name in names
        if name not in ("version", "help")  # pip's ENV_NAMES_IGNORED
    }


def _listed_by_pip() -> dict[str, str] | None:
    """What `pip config list` prints, read (`_unquoted`); None when pip is absent or fails. A key it prints more
    than once (set in two files) is `pip config get`'s value: pip lists each file's keys in the order of the
    files' names, not of its precedence, so the last line printed was the winner only by name (a
    `PIP_CONFIG_FILE` under /dev/shm lost to /etc/xdg/pip/pip.conf, which pip puts below it)."""
    listed = _pip_config("list")
    if listed is None:
        return None
    lines = (line.partition("=") for line in listed.splitlines())
    pairs = [(key.strip(), _unquoted(value.strip())) for key, sep, value in lines if sep]
    settings, keys = dict(pairs), [key for key, _ in pairs]
    for key in {key for key in keys if keys.count(key) > 1}:
        chosen = _pip_config("get", key)
        if chosen is None:
            return None
        settings[key] = chosen.removesuffix("\n")
    return settings


def _pip_config(*args: str) -> str | None:
    """The output of `pip config ARGS`; None when pip is absent or fails."""
    try:
        return subprocess.run(
            [sys.executable, "-m", "pip", "config", *args],
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None


def _unquoted(shown: str) -> str:
    """A value `pip config list` shows as its Python repr (a multi-line extra-index-url as '...\\n...');
    literal_eval reads literals only, nothing runs."""
    try:
        value = ast.literal_eval(shown)
    except (ValueError, SyntaxError):
        return shown
    return value if isinstance(value, str) else shown


SETTINGS_ENV = "ENCODERLAB_PIP_SETTINGS"
"""The client's environment variable holding its caller's `pip_settings()` as JSON (`sdist.client_env` sets it),
which the client reads instead of running pip again (half a CPU-second per fetch). The environment, as for the
indexes: an index's password in it is not shown to `ps`."""


def given_settings() -> dict[str, str] | None:
    """The settings the caller gave in `SETTINGS_ENV`; None when it gave none (or not a JSON object of strings)."""
    try:
        given = json.loads(os.environ.get(SETTINGS_ENV) or "null")
    except ValueError:
        return None
    if isinstance(given, dict) and all(isinstance(v, str) for v in given.values()):
        return given
    return None
