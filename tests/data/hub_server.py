"""A local hub server on 127.0.0.1 answering what huggingface_hub 2.4 asks of the hub for a model or
dataset repo, so tests run the library's real download and cache code (`snapshot_download`,
`hf_hub_download`: blobs, refs, snapshots, trees/COMMIT.json) instead of a cache written by hand, which
missed that hub 2.4 caches a repo's whole file list (so every offline load of a hub id was refused).

Served (huggingface_hub 2.4.0; where the library asks each):
  * GET /api/{models,datasets}/OWNER/NAME[/revision/REV]: `id`, `sha`, `siblings` at REV (main if none)
    (hf_api.py `model_info` / `dataset_info` through `repo_info`: `snapshot_download` resolving a branch
    or tag, encoderlab's `reach_hub`);
  * GET /api/{models,datasets}/OWNER/NAME/tree/REV[/PATH]?recursive=..: the files and folders under
    PATH, one page (no `Link` header; hf_api.py `_iter_repo_tree_pages`): `snapshot_download` lists the
    whole repo and caches it as trees/COMMIT.json, `datasets`' HfFileSystem lists a data folder;
  * HEAD and GET /[datasets/]OWNER/NAME/resolve/REV/PATH (file_download.py `hf_hub_url`; HEAD:
    `get_hf_file_metadata` reads `X-Repo-Commit`, `ETag`, the git blob sha1, and `Content-Length`; GET:
    `http_get`). A `*.safetensors` file is an LFS file: `X-Linked-Etag` (its sha256, the blob's name in
    the cache), `X-Linked-Size`, an `lfs` record in the tree; the hub's CDN redirect is left out;
  * errors with the hub's `X-Error-Code` (utils/_http.py `hf_raise_for_status`): RepoNotFound,
    RevisionNotFound, EntryNotFound (with `X-Repo-Commit`, which the library records in `.no_exist`), and
    a 401 GatedRepo for every request of a repo served `gated`.
`datasets` 5.2's `load_dataset` of a hub id asks these only: the card (resolve/main/README.md), the repo
info at its commit, a data folder's tree, HEADs of files it may lack (`.huggingface.yaml`, ...), the data.

Anything else is a 404 without an error code, recorded in `requests` so a test sees it: xet (no
`X-Xet-Hash` header, so the library downloads over plain HTTP), `paths-info`, uploads, and
`/api/agent-harnesses`, which the library asks once a day for its user agent (utils/_detect_agent.py;
a failure reads as "no agent"). Trade-off: one page per listing and no redirects keep the server short;
the library's code for pages and CDN redirects is not exercised.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import socket
import struct
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote

from tests.eval.hub_snapshot_fixtures import blob_id

LFS_SUFFIXES = (".safetensors",)
"""Files served as LFS files, as a hub repo's `.gitattributes` tracks weights."""


@dataclass
class ServedRepo:
    """One repo the server holds: each commit's files (repo path -> bytes), and its branches and tags."""

    repo_id: str
    kind: str = "model"
    """"model" or "dataset" (the hub's namespaces: `/api/models/...`, `/api/datasets/...`)."""
    commits: dict[str, dict[str, bytes]] = field(default_factory=dict)
    refs: dict[str, str] = field(default_factory=dict)
    """Branch or tag name -> commit sha (`main` is the default revision)."""
    gated: bool = False
    """Answer every request for it as the hub answers a gated repo to a user not granted access: 401 with
    `X-Error-Code: GatedRepo` (utils/_http.py `hf_raise_for_status` raises GatedRepoError)."""

    def commit_of(self, revision: str) -> str | None:
        """The commit `revision` names (a branch, a tag or a commit sha the repo holds), or None."""
        return self.refs.get(revision) or (revision if revision in self.commits else None)


@dataclass(frozen=True)
class Reply:
    """One answer: status, headers and body (a HEAD sends the headers only)."""

    status: int
    headers: dict[str, str]
    body: bytes = b""


def _json(payload: object) -> Reply:
    return Reply(200, {"Content-Type": "application/json"}, json.dumps(payload).encode())


def _error(code: str, commit: str | None = None) -> Reply:
    headers = {"X-Error-Code": code, **({"X-Repo-Commit": commit} if commit else {})}
    return Reply(404, headers, json.dumps({"error": code}).encode())


def _tree(files: dict[str, bytes], under: str, recursive: bool) -> list[dict]:
    """The listing the hub answers of the folder `under` ("" the root): each folder, then each file (with
    its LFS record); with `recursive`, all below it, else its own entries only."""
    prefix = f"{under}/" if under else ""
    folders = {"/".join(p.split("/")[:i]) for p in files for i in range(1, p.count("/") + 1)}

    def listed(path: str) -> bool:
        return path.startswith(prefix) and (recursive or "/" not in path[len(prefix) :])

    entries: list[dict] = [
        {"type": "directory", "path": d, "oid": "0" * 40, "size": 0} for d in sorted(folders) if listed(d)
    ]
    for path in filter(listed, sorted(files)):
        data = files[path]
        entry = {"type": "file", "path": path, "size": len(data), "oid": blob_id(data)}
        if path.endswith(LFS_SUFFIXES):
            entry["lfs"] = {"oid": hashlib.sha256(data).hexdigest(), "size": len(data), "pointerSize": 134}
        entries.append(entry)
    return entries


def _file(repo: ServedRepo, commit: str, path: str) -> Reply:
    data = repo.commits[commit].get(path)
    if data is None:
        return _error("EntryNotFound", commit)
    headers = {"X-Repo-Commit": commit, "ETag": f'"{blob_id(data)}"', "Content-Length": str(len(data))}
    if path.endswith(LFS_SUFFIXES):
        headers |= {"X-Linked-Etag": f'"{hashlib.sha256(data).hexdigest()}"', "X-Linked-Size": str(len(data))}
    return Reply(200, headers, data)


class HubServer:
    """The server, in a thread, serving `repos`; `requests` records each (method, path) it answered."""

    def __init__(self) -> None:
        self.repos: dict[tuple[str, str], ServedRepo] = {}
        self.requests: list[tuple[str, str]] = []
        self._connections: set[socket.socket] = set()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, as httpx expects of the hub

            def do_GET(self) -> None:
                self._answer(send_body=True)

            def do_HEAD(self) -> None:
                self._answer(send_body=False)

            def _answer(self, send_body: bool) -> None:
                server.requests.append((self.command, self.path))
                reply = server.route(self.path)
                self.send_response(reply.status)
                for name, value in {"Content-Length": str(len(reply.body)), **reply.headers}.items():
                    self.send_header(name, value)
                self.end_headers()
                if send_body:
                    self.wfile.write(reply.body)

            def setup(self) -> None:
                super().setup()
                server._connections.add(self.connection)

            def log_message(self, *args) -> None:  # the requests are recorded; stderr stays the test's
                pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}"
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()

    def add(self, repo: ServedRepo) -> ServedRepo:
        self.repos[(repo.kind, repo.repo_id)] = repo
        return repo

    def stop(self) -> None:
        """Stop answering and free the port: a later request fails to connect, as an unreachable hub. The
        connections the client keeps open (keep-alive) are closed too: their handler threads outlive
        `shutdown` and answered every later request of the same process, as if the hub were up."""
        if not self._thread.is_alive():
            return
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join()
        for connection in list(self._connections):
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)

    def route(self, url: str) -> Reply:
        """The reply to a request for `url` (module docstring: the endpoints)."""
        path, _, query = url.partition("?")
        parts = path.strip("/").split("/")
        api = parts[0] == "api"
        kind = "dataset" if parts[int(api)] == "datasets" else "model"
        rest = parts[int(api) + (kind == "dataset" or api) :]
        repo = self.repos.get((kind, "/".join(rest[:2])))
        if repo is None or len(rest) < 2:
            return _error("RepoNotFound")
        if repo.gated:
            return Reply(401, {"X-Error-Code": "GatedRepo", "X-Error-Message": "Access restricted"}, b"{}")
        verb, revision = (rest[2], unquote(rest[3])) if len(rest) >= 4 else ("revision", "main")
        commit = repo.commit_of(revision)
        if commit is None:
            return _error("RevisionNotFound")
        if api and verb == "revision" and len(rest) <= 4:
            siblings = [{"rfilename": p} for p in sorted(repo.commits[commit])]
            return _json({"id": repo.repo_id, "sha": commit, "siblings": siblings, "private": False})
        if api and verb == "tree":
            under, recursive = unquote("/".join(rest[4:])), "recursive=true" in query.lower()
            return _json(_tree(repo.commits[commit], under, recursive))
        if not api and verb == "resolve" and len(rest) > 4:
            return _file(repo, commit, unquote("/".join(rest[4:])))
        return Reply(404, {}, b"not served")


class DownHub:
    """A hub that is down but not gone, on 127.0.0.1: it accepts each connection, reads the request (its
    first line recorded in `requests`) and then, in `mode`, "reset": resets the connection (the client
    reads a ReadError, connection reset by peer), or "silent": answers nothing and closes it after
    `hold_s` seconds (a proxy or load balancer whose hub does not answer; a client without a timeout
    waits that long, then reads "disconnected without a response")."""

    def __init__(self, mode: str, hold_s: float = 5.0) -> None:
        self.mode, self.hold_s = mode, hold_s
        self.requests: list[str] = []
        self._socket = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._socket.getsockname()[1]}"
        threading.Thread(target=self._accept, daemon=True).start()

    def asked(self) -> list[str]:
        """The requests but huggingface_hub's daily `/api/agent-harnesses` (module docstring)."""
        return [r for r in self.requests if "/api/agent-harnesses" not in r]

    def _accept(self) -> None:
        while True:
            try:
                connection, _ = self._socket.accept()
            except OSError:  # closed by `stop`
                return
            self.requests.append(connection.recv(65536).decode(errors="replace").split("\r\n")[0])
            if self.mode == "silent":
                threading.Timer(self.hold_s, connection.close).start()
                continue
            connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            connection.close()  # lingering 0 s: a reset, not an orderly close

    def stop(self) -> None:
        self._socket.close()
