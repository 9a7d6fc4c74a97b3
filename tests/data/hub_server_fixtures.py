"""Tests' hold on the local hub server (hub_server.py): `serve_hub` starts one and points huggingface_hub,
`datasets` and encoderlab at it with a fresh HF_HOME (the `hub_server` fixture of tests/conftest.py),
`go_offline` stops it and sets HF_HUB_OFFLINE=1, `down_hub` puts a hub gone down (`DownHub`) in its place,
`down_after_first_file` has it go down in the middle of a download,
`repo_files` is a folder as a served repo holds it.

huggingface_hub reads HF_ENDPOINT, HF_HOME and HF_HUB_OFFLINE once, at import (constants.py), and so does
`datasets` (config.py): the environment alone would not reach them, so their constants are patched too."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.data.hub_server import DownHub, HubServer


def serve_hub(monkeypatch, home: Path) -> HubServer:
    """A started server that huggingface_hub asks, online, with a fresh HF_HOME `home` (its cache
    `home/hub`), no mirror, and an ENCODERLAB_HOME beside it (`home.parent / "encoderlab-home"`): the
    records of what was fetched into that cache (`hubcomplete.SNAPSHOT_RECORDS`) are the test's own, for
    the processes it starts too (they were left in the developer's home and read by later runs; no test of
    the hub server reads a fetched asset); the caller stops it. The environment is set too, for
    encoderlab's own `hub_offline` and any process a test starts."""
    from huggingface_hub import constants

    server = HubServer()
    monkeypatch.setenv("ENCODERLAB_HOME", str(home.parent / "encoderlab-home"))
    point_at(monkeypatch, server.url)
    monkeypatch.setenv("HF_HOME", str(home))
    monkeypatch.setattr(constants, "HF_HOME", str(home))
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(home / "hub"))
    monkeypatch.setattr(constants, "AGENT_HARNESSES_PATH", str(home / ".agent_harnesses.json"))
    set_offline(monkeypatch, False)
    monkeypatch.delenv("ENCODERLAB_HUB_MODELS", raising=False)
    monkeypatch.delenv("ENCODERLAB_HUB_DATA", raising=False)
    return server


def point_at(monkeypatch, url: str) -> None:
    """Point huggingface_hub, `datasets` and any process a test starts at the hub `url` (`serve_hub`'s
    server, or a `DownHub` in its place: the same cache, a hub gone down)."""
    import datasets.config
    from huggingface_hub import constants, hf_api

    monkeypatch.setenv("HF_ENDPOINT", url)
    monkeypatch.setattr(constants, "ENDPOINT", url)
    monkeypatch.setattr(
        constants, "HUGGINGFACE_CO_URL_TEMPLATE", url + "/{repo_id}/resolve/{revision}/{filename}"
    )
    monkeypatch.setattr(hf_api.api, "endpoint", url)  # the module-level HfApi, built at import
    monkeypatch.setattr(datasets.config, "HF_ENDPOINT", url)  # `datasets` passes it to HfApi
    monkeypatch.setattr(
        datasets.config, "HUB_DATASETS_URL", url + "/datasets/{repo_id}/resolve/{revision}/{path}"
    )


@contextmanager
def down_hub(mode: str, *, server: HubServer | None = None, monkeypatch=None) -> Iterator[DownHub]:
    """A `DownHub` in `mode` ("reset" or "silent") in place of `server` (stopped first: its port would
    refuse, another case), stopped when the block ends. With `monkeypatch`, this process asks it
    (`point_at`) and huggingface_hub's HF_HUB_ETAG_TIMEOUT is 1 s, so a silent hub costs the test a second,
    not the library's 10; without, only the processes a test starts with its `url` ask it."""
    from huggingface_hub import constants

    if server is not None:
        server.stop()
    down = DownHub(mode)
    if monkeypatch is not None:
        point_at(monkeypatch, down.url)
        monkeypatch.setattr(constants, "HF_HUB_ETAG_TIMEOUT", 1)
    try:
        yield down
    finally:
        down.stop()


def down_after_first_file(server: HubServer, monkeypatch, is_data: Callable[[str], bool]) -> list[str]:
    """Have `server` go down once it has served one file whose URL `is_data` picks: each later request's
    connection is closed unanswered. huggingface_hub's retries are not waited for. Returns the list that holds
    the URL served (empty until then)."""
    from huggingface_hub import file_download

    route, answered = server.route, []

    def cut_after_first_data_file(url: str):
        if answered:
            raise ConnectionAbortedError("the hub went down")  # the handler closes the connection
        reply = route(url)
        if "/resolve/" in url and is_data(url) and reply.status == 200:
            answered.append(url)
        return reply

    monkeypatch.setattr(server, "route", cut_after_first_data_file)
    monkeypatch.setattr(file_download.time, "sleep", lambda seconds: None)  # its retries, unwaited
    return answered


def set_offline(monkeypatch, offline: bool) -> None:
    """HF_HUB_OFFLINE as huggingface_hub (its constant, read at import), `datasets` (its config, likewise)
    and encoderlab (`data.hub.hub_offline`, the environment) read it; tests/conftest.py sets it to 1."""
    import datasets.config
    from huggingface_hub import constants

    monkeypatch.setenv("HF_HUB_OFFLINE", "1" if offline else "0")
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", offline)
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", offline)


REPO_EXTRAS = {
    ".gitattributes": b"*.safetensors filter=lfs diff=lfs merge=lfs -text\n",
    "README.md": b"# card\n",
}
"""Files every hub repo holds and no model load reads."""


def repo_files(folder: Path) -> dict[str, bytes]:
    """A folder's files as a served repo holds them (repo path -> bytes), with `REPO_EXTRAS`."""
    files = {p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*") if p.is_file()}
    return files | REPO_EXTRAS


def go_offline(server: HubServer, monkeypatch) -> int:
    """Stop `server` and set HF_HUB_OFFLINE=1; how many requests it had answered (a test then checks it
    answered no more: a stopped server answers none, and its port refuses)."""
    server.stop()
    set_offline(monkeypatch, True)
    return len(server.requests)
