"""The hub down: a request to it that the client could not complete (refused, reset, timed out, a 5xx),
told apart from the hub's refusal of a repo, and what a read that falls back on the local hub cache says.

The libraries read the cache silently when the hub does not answer (huggingface_hub's `snapshot_download`
only on a ConnectError or a timeout, after `repo_info` with no timeout; `datasets` after five retries of a
file it lacks). Callers ask once first (`hub_down`, `hub.probe_hub`, bounded by huggingface_hub's own
`HF_HUB_ETAG_TIMEOUT`), then read the cache or refuse in one line, and say once which commit they read
(`note_cached_read`). Trade-off: one request more where the hub answers (a dataset's load asks it once
before `datasets` resolves the repo), for no wait and no retry notices where it does not.

Sources: huggingface_hub 2.4.0's own code (utils/_http.py `http_backoff`: `max_retries=5`, waits 1, 2, 4, 8,
8 s on `TimeoutException`, `NetworkError`, `RemoteProtocolError`; file_download.py: a file not cached is
asked again with `retry_on_errors=True`; hf_api.py `repo_info`: `timeout=None`); the retries were added "as in
hf/datasets ... if you have bad wifi" (huggingface/huggingface_hub#22), and a refused connection reaching
the cache only "after exhausting retries" is huggingface/huggingface_hub#4487.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator

from encoderlab.data.hub import probe_hub, transport_errors
from encoderlab.errors import first_line
from encoderlab.launchenv import first_on_its_node


def unreachable(exc: BaseException) -> bool:
    """True when `exc` says the hub could not be reached rather than refused the repo: the client's
    transport errors (refused, reset, timed out; `transport_errors`) and a 5xx answer (the hub down
    behind its proxy), the failures on which `snapshot_download` itself reads the local hub cache."""
    from huggingface_hub.errors import HfHubHTTPError

    if isinstance(exc, HfHubHTTPError):
        response = getattr(exc, "response", None)
        return response is not None and response.status_code >= 500
    return isinstance(exc, (*transport_errors(), ConnectionError))


class HubUnanswered(ConnectionError):
    """The hub did not answer a request of ours (`unanswered`): no need to ask it again why. `cause`: the
    client's error, as "ConnectError: [Errno 111] Connection refused"."""

    def __init__(self, cause: str) -> None:
        super().__init__(f"the hub did not answer ({cause})")
        self.cause = cause


def unanswered(exc: BaseException) -> ConnectionError:
    """A `transport_errors` error (or a ConnectionError, as it is) as the ConnectionError that the callers
    reading a hub dataset catch: one line naming the client's own, as "the hub did not answer (...)"."""
    if isinstance(exc, ConnectionError):
        return exc
    return HubUnanswered(f"{type(exc).__name__}: {first_line(exc)}")


def hub_down(hub_id: str, repo_type: str, revision: str | None) -> Exception | None:
    """What the hub's one request for `hub_id`'s repo raised when it says the hub could not be reached
    (`unreachable`; asked within huggingface_hub's `HF_HUB_ETAG_TIMEOUT`), else None (served, or refused:
    the library's own read says why). Asked before a library reads a repo whose files the local hub cache
    may hold: `datasets` 5.2 retried a refused connection five times (huggingface_hub's
    `hf_hub_download` of a file not cached retries with `retry_on_errors=True`: ~23 s of "Retrying in Ns
    [Retry k/5]" lines) before reading the cache or refusing."""
    from huggingface_hub import constants

    if constants.HF_HUB_OFFLINE:  # the library asks nothing, so retries nothing: nothing to tell first
        return None
    answer = probe_hub(hub_id, repo_type, revision)
    return answer if isinstance(answer, Exception) and unreachable(answer) else None


_NOTED: set[tuple[str, str]] = set()
"""(repo type, hub id) of each repo whose cached snapshot this process has said it reads for a hub not
answering (said once): a model and a dataset may share an id, and are two repos, each with its own note."""


def note_cached_read(what: str, repo_type: str, hub_id: str, exc: BaseException, commit: str) -> None:
    """Say once per process and repo (`repo_type`, "model" or "dataset", and `hub_id`), in one line, that
    `hub_id` is read from the local hub cache's snapshot at `commit` because the hub did not answer (`exc`):
    the libraries read it silently, and a run could not tell it read an older commit than the hub's. Under `torchrun` every rank loads the model: said by
    each node's first process only (`first_on_its_node`; the cache read is the node's own), as the CLI's
    other per-node lines, where each of a node's ranks printed it."""
    if (repo_type, hub_id) in _NOTED or not first_on_its_node():
        return
    _NOTED.add((repo_type, hub_id))
    cause = exc.cause if isinstance(exc, HubUnanswered) else f"{type(exc).__name__}: {first_line(exc)}"
    print(
        f"encoderlab: note: the Hugging Face hub did not answer ({cause}); {what} '{hub_id}' is read from the "
        f"local hub cache's snapshot at commit {commit}",
        file=sys.stderr,
    )


@contextlib.contextmanager
def libraries_offline() -> Iterator[None]:
    """huggingface_hub and `datasets` offline for the duration (their HF_HUB_OFFLINE, read at import), so a
    read after the hub did not answer takes their offline path (the copy `datasets` prepared) at once,
    rather than asking the hub again through their retries."""
    import datasets.config
    from huggingface_hub import constants

    before = constants.HF_HUB_OFFLINE, datasets.config.HF_HUB_OFFLINE
    constants.HF_HUB_OFFLINE = datasets.config.HF_HUB_OFFLINE = True
    try:
        yield
    finally:
        constants.HF_HUB_OFFLINE, datasets.config.HF_HUB_OFFLINE = before
