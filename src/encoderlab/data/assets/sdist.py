"""A source distribution's file fetched from the package index as bytes, never through pip.

`pip download` of an sdist builds the package's metadata before it saves the file: it runs the package's
own build code (its setup.py, or the backend its pyproject.toml names, with build requirements installed
unpinned from the index into a throwaway environment). That happens before the file's sha256 pin can be
checked, so `assets fetch` of an sdist-backed asset (bigbench's QA sets) ran code from PyPI on the user's
machine. Wheels are not built (`--only-binary :all:`), npm tarballs are not packed from source and Debian
packages are only downloaded, so those clients stay.

Here the file is found on the index's project page (PEP 691 JSON, or the PEP 503 HTML every index serves)
and copied as bytes: `python -I sdist.py PACKAGE FILENAME DEST` (standard library and `pipconf` only), run by
`cache.py` as the other clients are (its log, its exit status, the progress bar over its file), so the
file is verified against its pin before it is renamed into place, exactly as before. Nothing in it is read.
The client reads the indexes itself (`index_urls`, from the environment it inherits): an index address
may carry a user and password, and a command line is readable by every user of the machine (`ps`,
/proc/PID/cmdline) where the environment is not; pip is given none on its command line either.

The indexes are pip's own, in pip's order: its index (`PIP_INDEX_URL`, else pip.conf's `download`, then
`global` `index-url`, else PyPI's), then its extra indexes (`PIP_EXTRA_INDEX_URL` or pip.conf's
`extra-index-url`), read with `pip config list` (pip alone runs: it reads its files, no package; asked once
per process while nothing it reads changes, and handed to the client in its environment: `pipconf`,
`client_env`). The first index whose page lists the file serves it; a mirror configured for pip (a cluster
behind a firewall) serves the sdist as it served the wheels. A `file://` index folder is read through its `index.html`, as pip does.
pip's `find-links` (`PIP_FIND_LINKS`, pip.conf's `find-links`) are searched first: a folder (a path or a
`file:` address, in any of RFC 8089's forms: `file:/x`, `file:///x`, `file://localhost/x`) for the file by name, a
page (a local HTML file or an http(s) address) for a link to it, its relative links read against the address it
was served from after any redirect (as its `<base href>` says, if it has one), an index's project page too; and
pip's `no-index` (`PIP_NO_INDEX`, pip.conf's `no-index`, read as pip reads a yes/no) leaves the
find-links alone (`places`). A machine set up to fetch from a folder and never from an index fetched the
sdist from PyPI all the same (or failed behind its firewall), where pip took its wheels from the folder.

A `file:` address is a path of this machine only when it names no host or `localhost` (`local_path`): it matches
pip 26.3's `pip._internal.utils.urls.url_to_path` on POSIX, which compares the host as written (`localhost`, not
`LOCALHOST`) and raises "non-local file URIs are not supported on this platform" for any other; pip then stops
with that traceback, wheels included. `file://otherhost/x` was read as the local path /x (another folder than the
one meant, or the same path by chance on this machine), so `cache.fetch` refuses one among pip's places before it
stages anything (`non_local`), and the client, if run by hand, says it in one line rather than read /x.

Trade-offs: this is a small HTTP client of our own, where the others are the registries' (pip, npm,
apt-get). urllib honours the `*_proxy` environment; pip's credentials store and keyring are not read (a
user and password in an index address are, sent as pip sends them: basic auth, to that host only). Behind such a setup, the pinned file can be put into
`$ENCODERLAB_HOME/downloads/` by hand: fetch checks it against its pin and uses it.
"""

from __future__ import annotations

import base64
import html.parser
import json
import os
import re
import shutil
import sys
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import NamedTuple

if __package__:
    from encoderlab.data.assets import pipconf
else:  # run as the client script (`python -I`, which puts no folder of it on sys.path): its sibling, by path
    import importlib.util

    _spec = importlib.util.spec_from_file_location("pipconf", Path(__file__).with_name("pipconf.py"))
    pipconf = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(pipconf)

DEFAULT_INDEX = "https://pypi.org/simple/"
JSON_PAGE = "application/vnd.pypi.simple.v1+json"
TIMEOUT_S = 30
TRIES = 3


def _setting(settings: dict[str, str], name: str) -> str:
    """One pip setting by pip's precedence for `pip download`: environment, then [download], then [global]."""
    env = os.environ.get("PIP_" + name.upper().replace("-", "_"))
    if env is not None:
        return env
    return (
        settings.get(f":env:.{name}")
        or settings.get(f"download.{name}")
        or settings.get(f"global.{name}", "")
    )


def index_urls(settings: dict[str, str] | None = None) -> list[str]:
    """The indexes pip would search, in its order: its index (PyPI's unless set), then its extra indexes."""
    settings = pipconf.pip_settings() if settings is None else settings
    extras = _setting(settings, "extra-index-url").split()
    return [_setting(settings, "index-url") or DEFAULT_INDEX, *extras]


class Place(NamedTuple):
    """Somewhere pip looks for a file: an index (the project's page under it) or a find-links location (a
    folder listing files, or a page linking to them)."""

    url: str
    find_links: bool = False


_YES, _NO = ("y", "yes", "t", "true", "on", "1"), ("n", "no", "f", "false", "off", "0", "")


def _yes(value: str) -> bool:
    """A yes/no setting as pip reads one (its `strtobool`); a value it would refuse is read as no, so the
    indexes stay searched (pip itself then refuses every download, wheels included)."""
    return value.strip().lower() in _YES


def places(settings: dict[str, str] | None = None) -> list[Place]:
    """Where pip would look, in the order searched here: its find-links, then its indexes unless no-index."""
    settings = pipconf.pip_settings() if settings is None else settings
    links = [Place(_local_url(entry), True) for entry in _setting(settings, "find-links").split()]
    if _yes(_setting(settings, "no-index")):
        return links
    return [*links, *(Place(index) for index in index_urls(settings))]


def _local_url(entry: str) -> str:
    """A find-links entry as an address: a path (relative ones from the working folder, as pip reads them)
    is a `file://` one; a `file:` address of this machine in any of RFC 8089's forms (`file:/x`, `file:///x`,
    `file://localhost/x`) is the `file:///x` one; another address stays as it is. `file:/x` was read as a
    relative path (./file:/x), since only `SCHEME://` was taken for an address."""
    parts = urllib.parse.urlsplit(entry)
    if parts.scheme == "file" and parts.netloc in LOCAL_HOSTS:
        return urllib.parse.urlunsplit(("file", "", parts.path, parts.query, parts.fragment))
    if re.match(r"^[A-Za-z][A-Za-z0-9+.-]*://", entry):
        return entry
    return Path(entry).expanduser().resolve().as_uri()


LOCAL_HOSTS = ("", "localhost")
"""The hosts a `file:` address of this machine names (RFC 8089), compared as written, as pip compares them."""


class NonLocalFile(ValueError):
    """A `file:` address naming another host (`file://otherhost/x`), which pip refuses on POSIX."""


def local_path(url: str, find_links: bool = False) -> Path:
    """The path of a `file:` address of this machine, as pip's `url_to_path` reads it on POSIX; `NonLocalFile` for
    one naming another host (it was read as the local path of its path part). `find_links`: where it was set."""
    parts = urllib.parse.urlsplit(url)
    if parts.netloc not in LOCAL_HOSTS:
        raise NonLocalFile(non_local_line(Place(url, find_links)))
    return Path(urllib.request.url2pathname(parts.path))


def non_local(where: list[Place]) -> Place | None:
    """The first of `where` that is a `file:` address naming another host, which pip refuses; None if none is."""
    addresses = [(place, urllib.parse.urlsplit(place.url)) for place in where]
    return next(
        (p for p, parts in addresses if parts.scheme == "file" and parts.netloc not in LOCAL_HOSTS), None
    )


def non_local_line(place: Place) -> str:
    """What is wrong with a `file:` address of another host among pip's settings, and the fix."""
    setting = "find-links" if place.find_links else "index"
    host = urllib.parse.urlsplit(place.url).netloc.rpartition("@")[2]  # as written: pip compares it so
    return (
        f"pip's {setting} address {shown(place.url)} is a file: address on the host {host}, which pip does not "
        f"read (only file:///PATH or file://localhost/PATH are this machine's); mount the folder and name its "
        "local path, or serve it over http(s)"
    )


def absolute_find_links(settings: dict[str, str] | None = None) -> dict[str, str]:
    """pip's find-links (`PIP_FIND_LINKS`, else pip.conf's, by `_setting`'s precedence) with each local path as an
    absolute `file://` address, as `PIP_FIND_LINKS` for a client's environment: the clients run in their staging
    folder, where pip (and `places`) would read `./wheels` from, while pip run by hand reads it from where it runs
    (pip.conf's relative paths too: pip resolves none against the file); {} when none is set."""
    given = os.environ.get("PIP_FIND_LINKS")
    if given is None:
        given = _setting(pipconf.pip_settings() if settings is None else settings, "find-links")
    entries = given.split()
    return {"PIP_FIND_LINKS": " ".join(_local_url(e) for e in entries)} if entries else {}


def client_env(wheel: bool) -> dict[str, str]:
    """What a pypi client's environment adds to this one's: `absolute_find_links`, and for this file's client (not
    pip's, `wheel`) this process's pip settings (`pipconf.SETTINGS_ENV`: pip asked once per process,
    `pipconf.pip_settings`, where each client asked it again)."""
    if wheel:
        return absolute_find_links()
    settings = pipconf.pip_settings()
    return {**absolute_find_links(settings), pipconf.SETTINGS_ENV: json.dumps(settings)}


def client_command(package: str, filename: str, dest: Path) -> list[str]:
    """The command that writes `filename` of `package` from the first of pip's indexes listing it to `dest`:
    this file run as a script in isolated mode (it imports the standard library and its sibling `pipconf` only),
    so it runs where encoderlab is not installed (a source checkout's src/) and no folder's module can shadow one
    it uses.
    No index is on it: the client reads them itself (`main`), so a password in one is not shown to `ps`."""
    return [sys.executable, "-I", str(Path(__file__).resolve()), package, filename, str(dest)]


def project_page(index: str, package: str) -> str:
    """The index's page of `package`, by its normalized name (PEP 503)."""
    return index.rstrip("/") + "/" + re.sub(r"[-_.]+", "-", package).lower() + "/"


class _Links(html.parser.HTMLParser):
    """The `href` of each anchor of a PEP 503 page, and the page's first `<base href>`, which its relative links are
    read against (as pip reads them: a find-links page generated elsewhere often links through one)."""

    def __init__(self) -> None:
        super().__init__()
        self.hrefs: list[str] = []
        self.base: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        href = dict(attrs).get("href")
        if tag == "a" and href:
            self.hrefs.append(href)
        elif tag == "base" and href and self.base is None:
            self.base = href

    def address(self, page: str, href: str) -> str:
        """`href`, a link of the page at `page`, as an address (its fragment, a hash, dropped)."""
        base = urllib.parse.urljoin(page, self.base) if self.base else page
        return urllib.parse.urldefrag(urllib.parse.urljoin(base, href)).url


def file_url(index: str, package: str, filename: str) -> str:
    """The address of `filename` on `package`'s page; LookupError when the page does not list it."""
    page = project_page(index, package)
    body, kind, served = _read_page(page)
    if kind == JSON_PAGE:
        found = [f.get("url", "") for f in json.loads(body).get("files", []) if f.get("filename") == filename]
        addresses = [_Links().address(served, h) for h in found]  # a JSON page has no <base>
    else:
        addresses = _named_links(body, served, filename)
    return _first(addresses, page, filename)


def link_url(location: str, filename: str) -> str:
    """The address of `filename` at a find-links location: in a local folder, the file of that name; on a
    page (a local HTML file, or any http(s) address), the link named so. LookupError when it is not there,
    FileNotFoundError when a local location is missing."""
    parts = urllib.parse.urlsplit(location)
    if parts.scheme == "file":
        path = local_path(location, find_links=True)
        if path.is_dir():
            if not (path / filename).is_file():
                raise LookupError(f"{filename} was not found in {path}")
            return (path / filename).as_uri()
        body, page = path.read_bytes(), location
    else:
        with _opened(location, location, {"Accept": "text/html"}) as answer:
            # after a redirect, the page's links are read from where it was served
            body, page = answer.read(), answer.geturl()
    return _first(_named_links(body, page, filename), location, filename)


def _named_links(body: bytes, page: str, filename: str) -> list[str]:
    """The addresses of the links of the HTML page at `page` (an index's project page, a find-links page: one
    reading for both) whose file is named `filename`."""
    links = _Links()
    links.feed(body.decode("utf-8", errors="replace"))
    return [links.address(page, h) for h in links.hrefs if _named(h) == filename]


def _first(addresses: list[str], page: str, filename: str) -> str:
    """The first of `addresses` (found on `page`); LookupError when there is none."""
    if not addresses:
        raise LookupError(f"{filename} was not found on {shown(page)}")
    return addresses[0]


def _read_page(page: str) -> tuple[bytes, str, str]:
    """A project page's bytes, content type and address, the one it was served from after any redirect (its
    relative links are read against that one, as a browser and pip read them: against the address asked, a
    mirror that moved its pages linked to files that are not there); a `file://` index folder's page is its
    index.html (pip's rule), served as HTML."""
    parts = urllib.parse.urlsplit(page)
    if parts.scheme == "file":
        return (local_path(page) / "index.html").read_bytes(), "text/html", page
    with _opened(page, page, {"Accept": f"{JSON_PAGE}, text/html;q=0.1"}) as answer:
        return answer.read(), answer.headers.get_content_type(), answer.geturl()


def _opened(url: str, index: str, headers: dict[str, str] | None = None):  # urlopen's answer
    """`url` opened with the user and password of its address, or of `index`'s on the same host (as pip sends
    them), as HTTP basic auth: urllib itself reads `user:password@host` as a host name, so such a mirror was
    'could not fetch'. The header is not sent on to where the index redirects (another host, a CDN)."""
    parts, their = urllib.parse.urlsplit(url), urllib.parse.urlsplit(index)
    owner = parts if parts.username is not None else their
    request = urllib.request.Request(shown(url), headers=headers or {})
    if owner.username is not None and (owner.hostname, owner.port) == (parts.hostname, parts.port):
        pair = f"{urllib.parse.unquote(owner.username)}:{urllib.parse.unquote(owner.password or '')}"
        request.add_unredirected_header("Authorization", "Basic " + base64.b64encode(pair.encode()).decode())
    return urllib.request.urlopen(request, timeout=TIMEOUT_S)


def shown(url: str) -> str:
    """`url` without the user and password an index address may carry (the log is kept for the user)."""
    parts = urllib.parse.urlsplit(url)
    return parts._replace(netloc=parts.netloc.rpartition("@")[2]).geturl()


def _named(href: str) -> str:
    """The file name an index link points to (its path's last part, unquoted)."""
    return urllib.parse.unquote(urllib.parse.urlsplit(href).path).rsplit("/", 1)[-1]


def fetch(place: Place | str, package: str, filename: str, dest: Path) -> None:
    """Copy `filename` from an index (or a find-links `Place`) to `dest`, as bytes."""
    place = Place(place) if isinstance(place, str) else place
    if place.find_links:
        url, page = link_url(place.url, filename), place.url
    else:
        url, page = file_url(place.url, package, filename), project_page(place.url, package)
    with _opened(url, page) as answer, open(dest, "wb") as out:
        shutil.copyfileobj(answer, out, 1 << 20)


def _from(index: Place | str, package: str, filename: str, dest: Path) -> tuple[bool, str]:
    """(fetched, why not) for one index, retrying a failed connection; a page without the file, or an index
    answering 404/410, is that index's "not found" (pip then asks the next index too)."""
    problem = ""
    for _ in range(TRIES):
        try:
            fetch(index, package, filename, dest)
            return True, ""
        except urllib.error.HTTPError as exc:  # the index answered: trying again changes nothing
            gone = (
                f"{filename} was not found: " if exc.code in (404, 410) else ""
            )  # as `cache._GONE_ERRORS` read
            return False, f"{gone}{exc.code} {exc.reason} at {shown(exc.url)}"
        except (LookupError, NonLocalFile) as exc:
            return False, str(exc)
        except FileNotFoundError as exc:  # a file:// index without this project's folder
            return False, f"{filename} was not found: no {exc.filename}"
        except (urllib.error.URLError, OSError) as exc:  # refused, unresolved, timed out: a network's
            problem = str(getattr(exc, "reason", exc))
    where = index.url if isinstance(index, Place) else index
    return False, f"could not fetch {filename} from {shown(where)}: {problem}"


def main(argv: list[str] | None = None) -> int:
    """Fetch from the first place that has the file (the indexes given after DEST, else pip's: `places`);
    else one line on stdout for the log `cache.explain_failure` reads: a network failure's if any place
    could not be reached (the file may be there), else the first one's "not found" (no-index with no
    find-links leaves nowhere to look: `NOWHERE`)."""
    package, filename, dest, *indexes = argv if argv is not None else sys.argv[1:]
    lines = []
    for place in [Place(index) for index in indexes] or places(pipconf.given_settings()):
        fetched, why = _from(place, package, filename, Path(dest))
        if fetched:
            return 0
        lines.append(why)
    unreached = [line for line in lines if line.startswith("could not fetch")]
    print((unreached or lines or [NOWHERE])[0])
    return 1


NOWHERE = "nowhere to look: pip's no-index is set and no find-links is"
"""The client's line when pip's settings leave no place (`places`): `cache.explain_failure` says it as such. It was
"FILE was not found", which read as a withdrawn pin ("update the pin"), where the fix is pip's settings."""


if __name__ == "__main__":
    sys.exit(main())
