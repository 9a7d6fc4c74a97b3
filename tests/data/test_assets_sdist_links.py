"""Where an sdist's find-links and index pages are read from: a redirected page's links against the address it
was served from, a `file:` find-links address in each of RFC 8089's forms (`sdist.py`), and a `file:` address of
another host refused, as pip refuses it."""

from __future__ import annotations

import hashlib
import http.server
import threading
import urllib.parse
from pathlib import Path

import pytest
import test_assets_sdist
from assets_fixtures import register_asset

from encoderlab.data import assets
from encoderlab.data.assets import sdist
from encoderlab.errors import UserError

index = test_assets_sdist.index  # the fixture: an index serving one sdist


@pytest.fixture
def moved(index):
    """The address of a server that redirects each of its `/old/...` pages to the index's own `/...` page, as a
    mirror that moved does; anything else there is a 404, so a link read against the old address is missing."""
    url = index[0]
    target = urllib.parse.urlsplit(url)

    class Moved(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args) -> None:  # the server's request lines are not the test's output
            pass

        def do_GET(self) -> None:
            if not self.path.startswith("/old/simple/"):
                self.send_error(404)
                return
            self.send_response(302)
            self.send_header("Location", target._replace(path=self.path.removeprefix("/old")).geturl())
            self.end_headers()

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Moved)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/old"
    server.shutdown()
    server.server_close()


def _served(place: sdist.Place, source, dest: Path) -> bool:
    """Whether `place` serves `source`'s file whole (fetched as the client fetches it, without asking pip)."""
    sdist.fetch(place, source.package, source.filename, dest)
    return hashlib.sha256(dest.read_bytes()).hexdigest() == source.sha256


def test_a_redirected_find_links_page_reads_its_links_from_where_it_was_served(index, moved, tmp_path):
    """The page's relative link (`../../files/F`) was read against the address asked, where the file is not."""
    _, source, _ = index
    assert _served(sdist.Place(f"{moved}/simple/evilpkg/", True), source, tmp_path / "out.tar.gz")


def test_a_redirected_index_page_reads_its_links_from_where_it_was_served(index, moved, tmp_path):
    _, source, _ = index
    assert _served(sdist.Place(f"{moved}/simple/"), source, tmp_path / "out.tar.gz")


@pytest.mark.parametrize("form", ["file:{path}", "file://{path}", "file://localhost{path}", "FILE:{path}"])
def test_a_file_address_of_each_rfc_8089_form_is_a_find_links_folder(tmp_path, monkeypatch, form):
    """`file:/x` was read as a relative path, ./file:/x, from where the client runs: the file was not found."""
    folder = tmp_path / "wheels"
    folder.mkdir()
    (folder / "pkg-1.0.tar.gz").write_bytes(b"sdist")
    monkeypatch.setenv("PIP_FIND_LINKS", form.format(path=folder))
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    assert sdist.places({}) == [sdist.Place(folder.as_uri(), True)]
    assert sdist.absolute_find_links({}) == {"PIP_FIND_LINKS": folder.as_uri()}
    sdist.fetch(sdist.places({})[0], "pkg", "pkg-1.0.tar.gz", tmp_path / "out.tar.gz")
    assert (tmp_path / "out.tar.gz").read_bytes() == b"sdist"


@pytest.mark.parametrize(
    "setting, address",
    [
        ("PIP_FIND_LINKS", "file://otherhost{root}/files"),
        ("PIP_INDEX_URL", "file://otherhost{root}/simple/"),
        ("PIP_FIND_LINKS", "file://LOCALHOST{root}/files"),  # pip compares the host as written
    ],
)
def test_a_file_address_of_another_host_is_refused_before_anything_is_written(
    index, tmp_path, monkeypatch, setting, address
):
    """`file://otherhost/x` was read as this machine's /x (the sdist fetched from a folder that was not the one
    meant; an index of it said "could not reach PyPI"), where pip refuses a file: address of another host."""
    from tests.reliability.treestate import assert_unchanged, world_state

    _, source, _ = index
    register_asset(monkeypatch, "evil", source=source)  # refused before its records are read
    given = address.format(root=tmp_path / "index")
    monkeypatch.setenv(setting, given)
    monkeypatch.setenv("PIP_NO_INDEX", "1" if setting == "PIP_FIND_LINKS" else "0")
    monkeypatch.chdir(tmp_path)
    before = world_state(tmp_path)
    with pytest.raises(UserError) as refused:
        assets.fetch(["evil"])
    line = str(refused.value)
    assert (
        "\n" not in line
        and given in line
        and "mount" in line
        and "rerun: encoderlab assets fetch evil" in line
    )
    assert_unchanged(before)


def test_the_client_run_by_hand_says_a_file_address_of_another_host_in_one_line(tmp_path, capsys):
    """The client read `file://otherhost/x` as /x too: the line said the project's page was not found there."""
    address = f"file://otherhost{tmp_path}/simple/"
    assert sdist.main(["pkg", "pkg-1.0.tar.gz", str(tmp_path / "out.tar.gz"), address]) == 1
    line = capsys.readouterr().out.strip()
    assert address in line and "mount" in line and "\n" not in line, line
