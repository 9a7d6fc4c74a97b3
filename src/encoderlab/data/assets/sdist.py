"""A source distribution's file fetched from the package index as bytes, never through pip.

`pip download` of an sdist builds the package's metadata before it saves the file: it runs the package's
own build code (its setup.py, or the backend its pyproject.toml names, with build requirements installed
unpinned from the index into a throwaway environment). That happens before the file's sha256 pin can be
checked, so `assets fetch` of an sdist-backed asset (bigbench's QA sets) ran code from PyPI on the user's
machine. Wheels are not built (`--only-binary :all:`), npm tarballs are not packed from source and Debian
packages are only downloaded, so those clients stay.

Here the file is found on the index's project page (PEP 691 JSON, or the PEP 503 HTML every index serves)
and copied as bytes: `python -m encoderlab.data.assets.sdist INDEX PACKAGE FILENAME DEST`, run by
`cache.py` as the other clients are (its log, its exit status, the progress bar over its file), so the
file is verified against its pin before it is renamed into place, exactly as before. Nothing in it is read.

Trade-offs: this is a small HTTP client of our own, where the others are the registries' (pip, npm,
apt-get). urllib honours the `*_proxy` environment; the index is `PIP_INDEX_URL` when set, else PyPI's; a
pip.conf index, pip's credentials store and keyring are not read. Behind such a setup, the pinned file can
be put into `$ENCODERLAB_HOME/downloads/` by hand: fetch checks it against its pin and uses it.
"""

from __future__ import annotations

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

DEFAULT_INDEX = "https://pypi.org/simple/"
INDEX_ENV = "PIP_INDEX_URL"
JSON_PAGE = "application/vnd.pypi.simple.v1+json"
TIMEOUT_S = 30
TRIES = 3


def index_url() -> str:
    """The package index sdists are fetched from: `PIP_INDEX_URL`, as pip reads it, else PyPI's."""
    return os.environ.get(INDEX_ENV) or DEFAULT_INDEX


def client_command(index: str, package: str, filename: str, dest: Path) -> list[str]:
    """The command that writes `filename` of `package` from `index` to `dest` (this module, run alone)."""
    return [sys.executable, "-m", __name__, index, package, filename, str(dest)]


def project_page(index: str, package: str) -> str:
    """The index's page of `package`, by its normalized name (PEP 503)."""
    return index.rstrip("/") + "/" + re.sub(r"[-_.]+", "-", package).lower() + "/"


class _Links(html.parser.HTMLParser):
    """The `href` of each anchor of a PEP 503 page."""

    def __init__(self) -> None:
        super().__init__()
        self.hrefs: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        href = dict(attrs).get("href")
        if tag == "a" and href:
            self.hrefs.append(href)


def file_url(index: str, package: str, filename: str) -> str:
    """The address of `filename` on `package`'s page; LookupError when the page does not list it."""
    page = project_page(index, package)
    request = urllib.request.Request(page, headers={"Accept": f"{JSON_PAGE}, text/html;q=0.1"})
    with urllib.request.urlopen(request, timeout=TIMEOUT_S) as answer:
        body, kind = answer.read(), answer.headers.get_content_type()
    if kind == JSON_PAGE:
        hrefs = [f.get("url", "") for f in json.loads(body).get("files", []) if f.get("filename") == filename]
    else:
        links = _Links()
        links.feed(body.decode("utf-8", errors="replace"))
        hrefs = [h for h in links.hrefs if _named(h) == filename]
    if not hrefs:
        raise LookupError(f"{filename} was not found on {shown(page)}")
    return urllib.parse.urldefrag(urllib.parse.urljoin(page, hrefs[0])).url


def shown(url: str) -> str:
    """`url` without the user and password an index address may carry (the log is kept for the user)."""
    parts = urllib.parse.urlsplit(url)
    return parts._replace(netloc=parts.netloc.rpartition("@")[2]).geturl()


def _named(href: str) -> str:
    """The file name an index link points to (its path's last part, unquoted)."""
    return urllib.parse.unquote(urllib.parse.urlsplit(href).path).rsplit("/", 1)[-1]


def fetch(index: str, package: str, filename: str, dest: Path) -> None:
    """Copy `filename` from the index to `dest`, as bytes."""
    url = file_url(index, package, filename)
    with urllib.request.urlopen(url, timeout=TIMEOUT_S) as answer, open(dest, "wb") as out:
        shutil.copyfileobj(answer, out, 1 << 20)


def main(argv: list[str] | None = None) -> int:
    """Fetch, retrying a failed connection; one line on stdout for the log `cache.explain_failure` reads."""
    index, package, filename, dest = argv if argv is not None else sys.argv[1:]
    problem = ""
    for _ in range(TRIES):
        try:
            fetch(index, package, filename, Path(dest))
            return 0
        except urllib.error.HTTPError as exc:  # the index answered: trying again changes nothing
            gone = (
                f"{filename} was not found: " if exc.code in (404, 410) else ""
            )  # as `cache._GONE_ERRORS` read
            print(f"{gone}{exc.code} {exc.reason} at {shown(exc.url)}")
            return 1
        except LookupError as exc:
            print(exc)
            return 1
        except (urllib.error.URLError, OSError) as exc:  # refused, unresolved, timed out: a network's
            problem = str(getattr(exc, "reason", exc))
    print(f"could not fetch {filename} from {shown(index)}: {problem}")
    return 1


if __name__ == "__main__":
    sys.exit(main())
