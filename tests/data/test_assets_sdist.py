"""An sdist-backed asset is fetched as bytes: nothing of the package runs (`data/assets/sdist.py`).

`pip download` of an sdist runs the package's build code to read its metadata before it saves the file, so
`assets fetch` of bigbench's QA sets ran code from PyPI. Here a local index (PEP 503, served over HTTP on
127.0.0.1, as pip and the fetch both read one) holds an sdist whose in-tree build backend writes a marker
file when run; the fetch must build the asset from it and leave no marker.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import http.client
import http.server
import io
import json
import tarfile
import threading
from pathlib import Path

import pytest
from assets_fixtures import register_asset, tar_bytes

from encoderlab.data import assets
from encoderlab.data.assets import cache as fetch_mod
from encoderlab.data.assets import pipconf, sdist
from encoderlab.data.assets.registry import Source
from encoderlab.errors import UserError

BACKEND = """import pathlib
pathlib.Path({marker!r}).write_text("the package's code ran")
def get_requires_for_build_wheel(config_settings=None):
    return []
def prepare_metadata_for_build_wheel(directory, config_settings=None):
    info = pathlib.Path(directory) / "evilpkg-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\\nName: evilpkg\\nVersion: 1.0\\n")
    return info.name
"""
PYPROJECT = '[build-system]\nrequires = []\nbuild-backend = "backend"\nbackend-path = ["."]\n'


def _sdist(marker: Path) -> bytes:
    return tar_bytes(
        {
            "evilpkg-1.0/pyproject.toml": PYPROJECT,
            "evilpkg-1.0/backend.py": BACKEND.format(marker=str(marker)),
            "evilpkg-1.0/PKG-INFO": "Metadata-Version: 2.1\nName: evilpkg\nVersion: 1.0\n",
            "evilpkg-1.0/data.json": json.dumps(["alpha", "beta"]),
        }
    )


@pytest.fixture
def index(tmp_path, monkeypatch):
    """(index URL, the sdist's Source, the marker its code would write), served until the test ends."""
    marker = tmp_path / "pwned"
    root = tmp_path / "index"
    (root / "simple" / "evilpkg").mkdir(parents=True)
    (root / "files").mkdir()
    data = _sdist(marker)
    (root / "files" / "evilpkg-1.0.tar.gz").write_bytes(data)
    digest = hashlib.sha256(data).hexdigest()
    link = f'<a href="../../files/evilpkg-1.0.tar.gz#sha256={digest}">evilpkg-1.0.tar.gz</a>'
    (root / "simple" / "evilpkg" / "index.html").write_text(
        f"<!DOCTYPE html><html><body>{link}</body></html>"
    )
    handler = functools.partial(_QuietHandler, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/simple/"
    for name, value in {"PIP_INDEX_URL": url, "PIP_NO_CACHE_DIR": "1", "no_proxy": "127.0.0.1"}.items():
        monkeypatch.setenv(name, value)
    for name in ("PIP_FIND_LINKS", "PIP_NO_INDEX", "PIP_EXTRA_INDEX_URL", "http_proxy", "HTTP_PROXY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PIP_CONFIG_FILE", "/dev/null")  # no extra index of this machine's pip.conf
    monkeypatch.setenv("ENCODERLAB_HOME", str(tmp_path / "home"))
    fetch_mod._verified.clear()
    source = Source(
        registry="pypi", package="evilpkg", version="1.0", filename="evilpkg-1.0.tar.gz", sha256=digest,
        size=len(data), licence="MIT",
    )  # fmt: skip
    yield url, source, marker
    server.shutdown()
    server.server_close()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:  # the server's request lines are not the test's output
        pass


def _records(inp):
    with tarfile.open(inp.archive) as tf:
        texts = json.loads(tf.extractfile("evilpkg-1.0/data.json").read())
    for i, text in enumerate(texts):
        yield {"id": f"evil/{i}", "text": text, "meta": {}}


def test_an_sdist_asset_is_fetched_without_running_the_packages_code(index, monkeypatch):
    _, source, marker = index
    register_asset(monkeypatch, "evil", source=source, records=_records)
    assets.fetch(["evil"])
    texts = [json.loads(line)["text"] for line in assets.asset_jsonl("evil").read_text().splitlines()]
    assert texts == ["alpha", "beta"]
    assert not marker.exists(), "the sdist's build backend ran during the download"


def test_no_index_without_find_links_is_one_line_naming_pips_settings_not_the_pin(
    index, tmp_path, monkeypatch
):
    """pip's no-index with no find-links leaves nowhere to look: it was said as a withdrawn pin ("is not available
    from PyPI; if it was withdrawn update the pin"), where the fix is pip's settings."""
    from tests.reliability.treestate import assert_unchanged, world_state

    _, source, _ = index
    register_asset(monkeypatch, "evil", source=source, records=_records)
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.chdir(tmp_path)
    before = world_state(tmp_path)
    with pytest.raises(UserError) as refused:
        assets.fetch(["evil"])
    line = str(refused.value)
    assert "\n" not in line and "withdrawn" not in line and "find-links" in line and "no-index" in line, line
    assert_unchanged(before)


def test_an_sdist_the_index_does_not_list_is_one_line_naming_the_pin(index, monkeypatch):
    _, source, marker = index
    gone = Source(**{**source.__dict__, "package": "otherpkg", "filename": "otherpkg-1.0.tar.gz"})
    register_asset(monkeypatch, "gone", source=gone, records=_records)
    with pytest.raises(UserError, match=r"otherpkg==1.0 is not available from PyPI; if it was withdrawn"):
        assets.fetch(["gone"])


def test_the_json_page_of_an_index_is_read_as_the_html_one(tmp_path, monkeypatch):
    page = {"files": [{"filename": "x-1.tar.gz", "url": "../../files/x-1.tar.gz#sha256=00"}]}

    class Answer(io.BytesIO):
        headers = http.client.HTTPMessage()
        headers["Content-Type"] = sdist.JSON_PAGE

        def __enter__(self):
            return self

        def geturl(self) -> str:  # where it was served from: no redirect
            return "https://example.org/simple/x/"

    monkeypatch.setattr(sdist.urllib.request, "urlopen", lambda *a, **k: Answer(json.dumps(page).encode()))
    assert (
        sdist.file_url("https://example.org/simple", "X", "x-1.tar.gz")
        == "https://example.org/files/x-1.tar.gz"
    )
    with pytest.raises(LookupError, match="y-1.tar.gz was not found on https://example.org/simple/x/"):
        sdist.file_url("https://example.org/simple", "X", "y-1.tar.gz")


def test_an_index_address_is_logged_without_its_password():
    assert sdist.shown("https://me:secret@mirror.example/simple/") == "https://mirror.example/simple/"
    assert sdist.shown("https://pypi.org/simple/x/") == "https://pypi.org/simple/x/"


def test_the_indexes_are_pips_in_pips_order(tmp_path, monkeypatch):
    for name in ("PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL"):
        monkeypatch.delenv(name, raising=False)
    conf = tmp_path / "pip.conf"
    conf.write_text(
        "[global]\nindex-url = https://mirror.example/simple/\nextra-index-url =\n"
        "    https://one.example/simple/\n    file:///opt/wheels-index/\n"
    )
    monkeypatch.setenv("PIP_CONFIG_FILE", str(conf))
    assert sdist.index_urls() == [
        "https://mirror.example/simple/", "https://one.example/simple/", "file:///opt/wheels-index/",
    ]  # fmt: skip
    conf.write_text(conf.read_text() + "[download]\nindex-url = https://download.example/simple/\n")
    assert sdist.index_urls()[0] == "https://download.example/simple/"
    monkeypatch.setenv("PIP_INDEX_URL", "https://env.example/simple/")
    monkeypatch.setenv("PIP_EXTRA_INDEX_URL", "")
    assert sdist.index_urls() == ["https://env.example/simple/"]
    assert sdist.index_urls({}) == ["https://env.example/simple/"]
    monkeypatch.delenv("PIP_INDEX_URL")
    assert sdist.index_urls({}) == [sdist.DEFAULT_INDEX]


def test_an_index_without_the_file_passes_to_the_next_a_file_folder_index_included(index, tmp_path):
    url, source, marker = index
    folder = tmp_path / "index"  # the served tree, read as a file:// index folder
    dest = tmp_path / "out.tar.gz"
    missing = url.replace("/simple/", "/nothing/")  # the server answers 404 for every page under it
    assert (
        sdist.main([source.package, source.filename, str(dest), missing, (folder / "simple").as_uri()]) == 0
    )
    assert hashlib.sha256(dest.read_bytes()).hexdigest() == source.sha256
    assert sdist.main([source.package, source.filename, str(dest), missing, url]) == 0
    assert not marker.exists()


def test_no_index_listing_the_file_is_its_not_found_line_and_an_unreachable_one_a_network_line(
    index, tmp_path, capsys
):
    url, source, _ = index
    args = [source.package, "evilpkg-2.0.tar.gz", str(tmp_path / "x")]
    assert sdist.main([*args, url, (tmp_path / "none").as_uri()]) == 1
    assert capsys.readouterr().out.startswith("evilpkg-2.0.tar.gz was not found")
    assert sdist.main([*args, "http://127.0.0.1:9/simple/", url]) == 1
    assert capsys.readouterr().out.startswith(
        "could not fetch evilpkg-2.0.tar.gz from http://127.0.0.1:9/simple/"
    )


class _GuardedHandler(_QuietHandler):
    """The index of a mirror that asks for a user and password (basic auth), as private mirrors do."""

    expected = "Basic " + base64.b64encode(b"me:s3@cret").decode()

    def do_GET(self) -> None:
        if self.headers.get("Authorization") != self.expected:
            self.send_error(401, "Unauthorized")
            return
        super().do_GET()


@pytest.fixture
def guarded(index, tmp_path):
    """The address, user and password included, of the fixture's index served behind basic auth."""
    handler = functools.partial(_GuardedHandler, directory=str(tmp_path / "index"))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    yield f"http://me:s3%40cret@127.0.0.1:{server.server_address[1]}/simple/"
    server.shutdown()
    server.server_close()


def test_an_index_address_with_a_user_and_password_is_read_with_them(index, guarded, tmp_path):
    _, source, marker = index
    dest = tmp_path / "out.tar.gz"
    assert sdist.main([source.package, source.filename, str(dest), guarded]) == 0
    assert hashlib.sha256(dest.read_bytes()).hexdigest() == source.sha256
    assert not marker.exists()


def test_the_client_command_line_carries_no_index_password(index, guarded, tmp_path, monkeypatch):
    """Every user of a machine can read a command line (`ps`); the index, with its password, was one of
    the client's arguments. It reads pip's indexes itself, from the environment it inherits."""
    import os
    import subprocess

    _, source, marker = index
    monkeypatch.setenv("PIP_INDEX_URL", guarded)
    out = tmp_path / "staged"
    out.mkdir()
    command = fetch_mod.client_command(source, out)
    assert not any("s3%40cret" in arg or "127.0.0.1" in arg for arg in command)
    done = subprocess.run(command, cwd=out, env=dict(os.environ), capture_output=True)
    assert done.returncode == 0, done.stdout.decode()[-300:] + done.stderr.decode()[-300:]
    assert hashlib.sha256((out / source.filename).read_bytes()).hexdigest() == source.sha256
    assert not marker.exists()


def test_the_client_runs_where_encoderlab_is_not_importable(index, tmp_path):
    """An install-free run from a checkout's src/ spawned `python -m encoderlab.data.assets.sdist` in a
    staging folder, where encoderlab cannot be imported; `-S` (no site-packages, so no installed encoderlab)
    and no PYTHONPATH stand in for that."""
    import os
    import subprocess
    import sys

    url, source, marker = index
    dest = tmp_path / "staged" / source.filename
    dest.parent.mkdir()
    command = sdist.client_command(source.package, source.filename, dest)  # the index: PIP_INDEX_URL
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run([sys.executable, "-S", *command[1:]], cwd=dest.parent, env=env, capture_output=True)
    assert done.returncode == 0, done.stderr.decode()[-300:]
    assert hashlib.sha256(dest.read_bytes()).hexdigest() == source.sha256 and not marker.exists()


UNREACHABLE = "http://127.0.0.1:9/simple/"  # nothing listens on port 9: an index behind a firewall


def _fetched(source, dest: Path) -> bool:
    done = sdist.main([source.package, source.filename, str(dest)]) == 0
    return done and hashlib.sha256(dest.read_bytes()).hexdigest() == source.sha256


def test_pips_find_links_folder_serves_the_sdist_and_no_index_keeps_the_index_unasked(
    index, tmp_path, monkeypatch
):
    """A machine whose pip takes its files from a folder and never from an index (`PIP_NO_INDEX`,
    `PIP_FIND_LINKS`): the sdist was asked of the index all the same."""
    _, source, marker = index
    monkeypatch.setenv("PIP_INDEX_URL", UNREACHABLE)
    monkeypatch.setenv("PIP_FIND_LINKS", f"{tmp_path / 'elsewhere'} {tmp_path / 'index' / 'files'}")
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    assert _fetched(source, tmp_path / "out.tar.gz") and not marker.exists()


def test_pip_conf_find_links_page_and_no_index_are_honoured(index, tmp_path, monkeypatch):
    url, source, _ = index
    monkeypatch.delenv("PIP_INDEX_URL")
    page = url + "evilpkg/"  # a page linking to the file, as a find-links page does
    conf = tmp_path / "pip.conf"
    conf.write_text(f"[global]\nindex-url = {UNREACHABLE}\nno-index = true\nfind-links = {page}\n")
    monkeypatch.setenv("PIP_CONFIG_FILE", str(conf))
    assert sdist.places() == [sdist.Place(page, True)]
    assert _fetched(source, tmp_path / "out.tar.gz")


def test_no_index_without_the_file_in_find_links_is_not_found_even_where_the_index_has_it(
    index, tmp_path, monkeypatch, capsys
):
    url, source, _ = index  # PIP_INDEX_URL: the fixture's index, which lists the file
    monkeypatch.setenv("PIP_NO_INDEX", "yes")
    assert not _fetched(source, tmp_path / "out.tar.gz")
    assert capsys.readouterr().out.startswith(sdist.NOWHERE)  # no find-links: nowhere to look
    monkeypatch.setenv("PIP_NO_INDEX", "false")  # pip's "no": the index is searched
    assert sdist.places({}) == [sdist.Place(url)]
    assert _fetched(source, tmp_path / "out.tar.gz")


def test_a_relative_find_links_folder_is_read_from_where_the_command_runs(index, tmp_path, monkeypatch):
    """The clients run in their staging folder: `PIP_FIND_LINKS=index/files` was looked for there, so the
    fetch said the pin was not available, for pip's wheels as for the sdist."""
    _, source, marker = index
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PIP_INDEX_URL", UNREACHABLE)
    monkeypatch.setenv("PIP_FIND_LINKS", "index/files")
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    register_asset(monkeypatch, "evil", source=source, records=_records)
    assets.fetch(["evil"])
    assert [json.loads(line)["text"] for line in assets.asset_jsonl("evil").read_text().splitlines()] == [
        "alpha",
        "beta",
    ]
    assert not marker.exists()


def test_a_relative_find_links_folder_of_pip_conf_is_read_from_where_the_command_runs(
    index, tmp_path, monkeypatch
):
    """pip reads a relative find-links of pip.conf from where it runs, as it reads `PIP_FIND_LINKS`: the clients,
    run in their staging folder, looked for `index/files` there, and the fetch said the pin was not available."""
    _, source, marker = index
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PIP_INDEX_URL")
    conf = tmp_path / "pip.conf"
    conf.write_text(f"[global]\nindex-url = {UNREACHABLE}\nno-index = true\nfind-links = index/files\n")
    monkeypatch.setenv("PIP_CONFIG_FILE", str(conf))
    register_asset(monkeypatch, "evil", source=source, records=_records)
    runs, listed = [], pipconf._listed_by_pip
    monkeypatch.setattr(pipconf, "_listed_by_pip", lambda: runs.append(1) or listed())
    monkeypatch.setattr(pipconf, "_LISTED", {})
    assets.fetch(["evil"])
    assert assets.asset_jsonl("evil").is_file() and not marker.exists()
    assert len(runs) == 1  # the check before staging and the client's environment share one `pip config list`


def test_a_find_links_page_linking_through_a_base_address_serves_the_file(index, tmp_path, monkeypatch):
    """A page's relative links are read against its `<base href>`, as pip reads them: they were read against the
    page's own address, so the file was looked for where it is not."""
    _, source, _ = index
    page = tmp_path / "links" / "page.html"
    page.parent.mkdir()
    base = (tmp_path / "index" / "files").as_uri() + "/"
    page.write_text(
        f'<html><head><base href="{base}"></head><a href="{source.filename}">{source.filename}</a></html>'
    )
    monkeypatch.setenv("PIP_INDEX_URL", UNREACHABLE)
    monkeypatch.setenv("PIP_FIND_LINKS", str(page))
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    assert _fetched(source, tmp_path / "out.tar.gz")
