"""A task's hub dataset read with the hub gone down and HF_HUB_OFFLINE unset: a cached one in a new process
as the CLI reads it (tests/data/hub_server.py's server filled the caches online first; this process
remembers that read), an uncached one in this process.

`datasets` 5.2 resolves a hub dataset through huggingface_hub's `hf_hub_download`, which retries a file it
does not hold five times on a connection error (file_download.py: a second `_get_metadata_or_catch_error`
with `retry_on_errors=True`, utils/_http.py `http_backoff`: 1+2+4+8+8 s), logging "Retrying in Ns [Retry
k/5]" each time: ~23 s of such lines before the cached copy was read or the one-line refusal came. Now
`load_hub` asks the hub once first (`hubdown.hub_down`) and, unanswered, reads the cache (saying once which
commit) or refuses, asking nothing more. The reads skip the libraries' sleeps (as
test_hub_server_datasets.py's does): what fails on the old code is the attempts and the lines, not a time."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from contextlib import nullcontext

import pytest
from tests.data.hub_server import ServedRepo
from tests.data.hub_server_fixtures import down_hub, repo_files
from tests.eval.fixtures import model_folder
from tests.eval.test_hub_server_datasets import COMMIT, READ_IN_A_NEW_PROCESS, serve_dataset

from encoderlab.data import hubdown
from encoderlab.errors import UserError
from encoderlab.eval.tasks.hub import load_hub
from encoderlab.eval.tasks.hubsource import HubSource
from encoderlab.model.hub import load_pretrained
from encoderlab.model.sources import source_path

pytestmark = pytest.mark.usefixtures("isolated_tasks")
CSV = (b"review,stars\nfine,1\n", b"review,stars\nbad,0\n")


def _read_with_the_hub(url: str, repo: str) -> tuple[object, list[str]]:
    """`load_hub` of `repo` in a new process, HF_ENDPOINT `url`: what it read (or its refusal), and its
    stderr's lines other than progress bars."""
    env = {**os.environ, "HF_ENDPOINT": url}
    code = READ_IN_A_NEW_PROCESS.replace('"me/reviews"', repr(repo))
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert run.returncode == 0, run.stderr[-2000:]
    lines = [line for line in run.stderr.splitlines() if line.strip() and "examples/s" not in line]
    return json.loads(run.stdout.splitlines()[-1]), lines


@pytest.mark.parametrize("mode", ["refused", "reset"])
def test_a_cached_hub_dataset_with_the_hub_down_is_read_with_one_note_and_no_retries(hub_server, mode):
    serve_dataset(hub_server, "me/reviews", ".csv", *CSV)
    online = load_hub(HubSource("me/reviews"))
    hub_server.stop()  # refused: its port refuses; reset: a hub accepting and resetting in its place
    with down_hub("reset") if mode == "reset" else nullcontext() as down:
        read, lines = _read_with_the_hub(down.url if down else hub_server.url, "me/reviews")
    assert read == {s: online[s].to_list() for s in online}
    cause = (
        "ReadError: [Errno 104] Connection reset by peer"
        if down
        else "ConnectError: [Errno 111] Connection refused"
    )
    assert (
        lines
        == [  # refused, was six "... thrown while requesting HEAD" and five "Retrying in Ns [Retry k/5]" lines; reset, nothing said
            f"encoderlab: note: the Hugging Face hub did not answer ({cause}); dataset 'me/reviews' is read from "
            f"the local hub cache's snapshot at commit {COMMIT}"
        ]
    )
    assert down is None or len(down.asked()) == 1


def test_an_uncached_hub_dataset_with_the_hub_down_is_one_line_after_one_attempt(
    hub_server, monkeypatch, capfd
):
    """Read in this process (nothing it read before is of me/absent), pointed at the hub gone down, the
    libraries' sleeps skipped; its stderr read at fd 2, where huggingface_hub's logger writes."""
    monkeypatch.setattr(time, "sleep", lambda seconds: None)  # the libraries' retries, unwaited
    with down_hub("reset", monkeypatch=monkeypatch) as down:
        capfd.readouterr()
        with pytest.raises(UserError) as refused:
            load_hub(HubSource("me/absent"))
        refusal = str(refused.value)
        lines = [line for line in capfd.readouterr().err.splitlines() if line.strip()]
    assert lines == [] and len(down.asked()) == 1, (
        lines,
        down.requests,
    )  # was 2: the card's HEAD, then `_hub_line`'s repo_info
    assert refusal == (
        "cannot load me/absent from me/absent: the hub did not answer (ReadError: [Errno 104] Connection reset "
        "by peer); check the name and your connection, or set ENCODERLAB_HUB_DATA=DIR to read a local mirror"
    )


def test_a_model_and_a_dataset_sharing_an_id_read_from_the_cache_each_say_so(
    hub_server, tmp_path, monkeypatch, capsys
):
    """A model repo and a dataset repo both named me/reviews, read online, then with the port refusing: one
    note each, naming its kind and commit. Before, the notes were kept by id alone (`hubdown._NOTED`), so
    the second repo read from the cache said nothing of the commit it read."""
    model_commit = "b" * 40
    files = repo_files(model_folder(tmp_path / "repo"))
    hub_server.add(ServedRepo("me/reviews", commits={model_commit: files}, refs={"main": model_commit}))
    serve_dataset(hub_server, "me/reviews", ".csv", *CSV)
    load_pretrained("me/reviews")
    online = load_hub(HubSource("me/reviews"))
    hub_server.stop()
    monkeypatch.setattr(hubdown, "_NOTED", set())
    capsys.readouterr()
    assert source_path("me/reviews").name == model_commit
    read = load_hub(HubSource("me/reviews"))
    assert {s: read[s].to_list() for s in read} == {s: online[s].to_list() for s in online}
    notes = [line for line in capsys.readouterr().err.splitlines() if line.startswith("encoderlab: note")]
    said = (
        "encoderlab: note: the Hugging Face hub did not answer (ConnectError: [Errno 111] Connection refused)"
    )
    assert notes == [
        f"{said}; model 'me/reviews' is read from the local hub cache's snapshot at commit {model_commit}",
        f"{said}; dataset 'me/reviews' is read from the local hub cache's snapshot at commit {COMMIT}",
    ], notes
