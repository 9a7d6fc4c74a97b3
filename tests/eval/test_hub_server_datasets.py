"""Hub datasets read by `eval.tasks.hub.load_hub` through huggingface_hub's and `datasets`' real download
and cache code, from a local hub server (tests/data/hub_server.py), then read offline, the server stopped,
from the caches those libraries wrote: a CSV dataset (fetched into a hub cache snapshot and read as a
mirror is) and a parquet one (read by `datasets`, its snapshot checked complete offline).

test_hub_csv_snapshot.py simulates the hub at the libraries' calls (`hf_hub_download`, `HfApi`,
`dataset_module_factory`); here nothing of either library is replaced, so what they write (refs, blobs,
`.no_exist`, trees/COMMIT.json) is what an offline run finds."""

from __future__ import annotations

import io

import pandas as pd
import pytest
from tests.data.hub_server import ServedRepo
from tests.data.hub_server_fixtures import REPO_EXTRAS, down_after_first_file, go_offline

from encoderlab.errors import UserError
from encoderlab.eval.tasks.hub import load_hub
from encoderlab.eval.tasks.hubsource import HubSource

pytestmark = pytest.mark.usefixtures("isolated_tasks")
COMMIT = "c" * 40
CARD = """---
configs:
- config_name: default
  data_files:
  - split: train
    path: data/train{suffix}
  - split: test
    path: data/test{suffix}
---
# reviews
"""


def serve_dataset(hub_server, repo: str, suffix: str, train: bytes, test: bytes) -> None:
    files = {
        "README.md": CARD.format(suffix=suffix).encode(),
        f"data/train{suffix}": train,
        f"data/test{suffix}": test,
    }
    hub_server.add(ServedRepo(repo, "dataset", {COMMIT: {**REPO_EXTRAS, **files}}, {"main": COMMIT}))


def test_a_hub_csv_dataset_read_online_is_read_offline_as_written(hub_server, monkeypatch):
    serve_dataset(
        hub_server, "me/reviews", ".csv", b"review,stars\n00123,N/A\nfine,1\n", b"review,stars\nNULL,0\n"
    )
    online = load_hub(HubSource("me/reviews"))
    assert online["train"]["review"] == ["00123", "fine"] and online["test"]["review"] == ["NULL"]
    answered = go_offline(hub_server, monkeypatch)
    offline = load_hub(HubSource("me/reviews"))
    assert {s: offline[s].to_list() for s in offline} == {s: online[s].to_list() for s in online}
    assert len(hub_server.requests) == answered


def _parquet(rows: dict) -> bytes:
    buffer = io.BytesIO()
    pd.DataFrame(rows).to_parquet(buffer, index=False)
    return buffer.getvalue()


def test_a_hub_parquet_dataset_read_online_is_read_offline(hub_server, monkeypatch):
    train, test = _parquet({"text": ["a b", "c d"], "label": [0, 1]}), _parquet({"text": ["e"], "label": [1]})
    serve_dataset(hub_server, "me/pq", ".parquet", train, test)
    online = load_hub(HubSource("me/pq"))
    assert online["train"]["text"] == ["a b", "c d"]
    answered = go_offline(hub_server, monkeypatch)
    offline = load_hub(HubSource("me/pq"))
    assert {s: offline[s].to_list() for s in offline} == {s: online[s].to_list() for s in online}
    assert len(hub_server.requests) == answered


OLDER = "a" * 40


@pytest.mark.parametrize("pin", ["v1", OLDER])
def test_a_hub_dataset_pinned_to_a_tag_or_commit_is_read_at_it_online_then_offline(
    hub_server, monkeypatch, pin
):
    """A task file's `data.revision` (`HubSource.revision`): the commit OLDER, tagged v1, not main's."""

    def commit(text: str) -> dict[str, bytes]:
        rows = {
            "data/train.csv": f"review,stars\n{text},1\n",
            "data/test.csv": f"review,stars\n{text} test,0\n",
        }
        return {
            **REPO_EXTRAS,
            "README.md": CARD.format(suffix=".csv").encode(),
            **{k: v.encode() for k, v in rows.items()},
        }

    refs = {"main": COMMIT, "v1": OLDER}
    hub_server.add(ServedRepo("me/reviews", "dataset", {COMMIT: commit("new"), OLDER: commit("old")}, refs))
    assert load_hub(HubSource("me/reviews", revision=pin))["train"]["review"] == ["old"]
    assert load_hub(HubSource("me/reviews"))["train"]["review"] == ["new"]
    answered = go_offline(hub_server, monkeypatch)
    assert load_hub(HubSource("me/reviews", revision=pin))["train"]["review"] == ["old"]
    assert load_hub(HubSource("me/reviews"))["train"]["review"] == ["new"]
    assert len(hub_server.requests) == answered


@pytest.mark.parametrize(
    ("repo", "revision", "line"),
    [
        (
            "me/reviewz",
            None,
            "dataset 'me/reviewz' is not on the Hugging Face hub, or is private; check the id",
        ),
        (
            "me/gated",
            None,
            "dataset 'me/gated' is gated on the Hugging Face hub; accept its terms on its page",
        ),
        (
            "me/reviews",
            "nosuch",
            "dataset 'me/reviews' has no revision 'nosuch' on the Hugging Face hub; fix",
        ),
        (
            "me/reviews",
            "b" * 40,
            f"dataset 'me/reviews' has no revision '{'b' * 40}' on the Hugging Face hub",
        ),
    ],
)
def test_a_hub_dataset_the_hub_refuses_is_one_line_naming_the_fix(hub_server, repo, revision, line):
    """A typo'd id (404 RepoNotFound), a gated repo (401 GatedRepo) and a revision the repo lacks were
    `datasets`' words, "doesn't exist on the Hub or cannot be accessed" or "is a gated dataset", with
    "check the name and your connection" as the fix; now the hub's refusal with its own fix, as a model's."""
    serve_dataset(hub_server, "me/reviews", ".csv", b"review,stars\nfine,1\n", b"review,stars\nbad,0\n")
    hub_server.add(
        ServedRepo("me/gated", "dataset", {COMMIT: dict(REPO_EXTRAS)}, {"main": COMMIT}, gated=True)
    )
    with pytest.raises(UserError) as caught:
        load_hub(HubSource(repo, revision=revision))
    message = str(caught.value)
    assert message.startswith(line) and "\n" not in message
    assert "connection" not in message


def test_a_hub_that_stops_answering_mid_download_is_one_line_then_offline_the_cut_snapshot_too(
    hub_server, monkeypatch
):
    """The hub gone after its first data file (every later request's connection closed unanswered): the
    fetch raised httpx2's RemoteProtocolError, neither an OSError nor a ConnectionError, as a traceback;
    now one line naming it, and offline the snapshot cut short is refused naming the files it lacks."""
    serve_dataset(hub_server, "me/reviews", ".csv", b"review,stars\nfine,1\n", b"review,stars\nbad,0\n")
    answered = down_after_first_file(hub_server, monkeypatch, lambda url: "/data/" in url)
    with pytest.raises(UserError) as caught:
        load_hub(HubSource("me/reviews"))
    assert str(caught.value).startswith("cannot load me/reviews from me/reviews: the hub did not answer (")
    assert "\n" not in str(caught.value) and answered
    go_offline(hub_server, monkeypatch)
    with pytest.raises(UserError, match=r"lacks data/.*run once with the hub reachable"):
        load_hub(HubSource("me/reviews"))


@pytest.mark.parametrize("cut", [False, True])
def test_a_refused_read_of_a_hub_csv_dataset_leaves_nothing_in_the_datasets_cache(
    hub_server, monkeypatch, cut
):
    """The builder resolving a CSV dataset on the hub, read only for its file list (the files are fetched
    into the hub cache's snapshot and read from there), took a lock file in `datasets`' cache and left it
    behind a refusal: a header naming a column twice, or the hub gone in the middle of the fetch. The hub
    cache keeps what was fetched (a later read, offline too, reads it), as `hf download` would."""
    from pathlib import Path

    import datasets.config
    from tests.reliability.treestate import assert_unchanged, tree_state

    header = b"review,stars" if cut else b"review,stars,stars"
    serve_dataset(hub_server, "me/reviews", ".csv", header + b"\nfine,1\n", header + b"\nbad,0\n")
    cache = Path(datasets.config.HF_DATASETS_CACHE)
    before = {str(cache): tree_state(cache)}
    if cut:
        down_after_first_file(hub_server, monkeypatch, lambda url: "/data/" in url)
    told = "the hub did not answer" if cut else "names the column 'stars' twice"
    with pytest.raises(UserError, match=told):
        load_hub(HubSource("me/reviews"))
    assert_unchanged(before)


READ_IN_A_NEW_PROCESS = """
import json
import time
time.sleep = lambda seconds: None  # the libraries' retries of a refused connection, unwaited
from encoderlab.errors import UserError
from encoderlab.eval.tasks.hub import load_hub
from encoderlab.eval.tasks.hubsource import HubSource
try:
    ds = load_hub(HubSource("me/reviews"))
except UserError as exc:
    print(json.dumps(str(exc)))
else:
    print(json.dumps({s: ds[s].to_list() for s in ds}))
"""


def test_a_hub_dataset_read_online_is_read_from_the_cache_when_the_hub_is_down_and_not_offline(hub_server):
    """The hub unreachable with HF_HUB_OFFLINE unset (a laptop off the network): `datasets` 5.2 wraps the
    ConnectError of its first request (the card) as a ConnectionError, but not that of the `repo_info` its
    HfFileSystem then asks (load.py `get_module` -> `cached_path` -> `resolve_path`), an httpx2 error that
    `hubsnapshot.hub_snapshot` did not take for an unreachable hub: a traceback; now the snapshot the cache holds is read. Read in a
    new process, as the CLI reads it: in this one the libraries remember the first read's answers."""
    import json
    import subprocess
    import sys

    serve_dataset(hub_server, "me/reviews", ".csv", b"review,stars\nfine,1\n", b"review,stars\nbad,0\n")
    online = load_hub(HubSource("me/reviews"))
    hub_server.stop()  # HF_HUB_OFFLINE stays 0 (the fixture's environment): the library asks, and is refused
    run = subprocess.run([sys.executable, "-c", READ_IN_A_NEW_PROCESS], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-2000:]
    assert json.loads(run.stdout.splitlines()[-1]) == {s: online[s].to_list() for s in online}
