"""A task's hub dataset pinned to its parquet export (`data: {hub: OWNER/NAME, revision:
refs/convert/parquet, config: CONFIG}`, `eval/tasks/hubexport.py`) with the hub going down: mid-download,
unreachable with the export cached, unreachable with nothing cached; HF_HUB_OFFLINE unset, through the
local hub server (tests/data/hub_server.py) and huggingface_hub's and `datasets`' real code.

Before: the export's listing (`HfApi.list_repo_files`, whose pages huggingface_hub fetches with
`http_backoff`: five retries, 1+2+4+8+8 s) waited ~23 s on a hub refusing connections, then left the
source as named, so a cached export was refused as "nothing tells its snapshot ... complete" (its files
were never read as the export's config), and an uncached one was the hub line after that wait. Now the hub
is asked once (`hubdown.hub_down`) and, unanswered, the export is listed from the local hub cache (as
offline), or refused in one line; mid-download, the client's error is one line, not an httpx2 traceback. The reads run in a new process,
the libraries' sleeps skipped (what fails on the old code is the requests and the lines, not a time)."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys

import pandas as pd
import pytest
from tests.data.hub_server import DownHub, ServedRepo
from tests.data.hub_server_fixtures import REPO_EXTRAS

from encoderlab.errors import UserError
from encoderlab.eval.tasks.hub import PARQUET_EXPORT, HubSource, load_hub
from encoderlab.eval.tasks.hubexport import export_source

pytestmark = pytest.mark.usefixtures("isolated_tasks")
MAIN, EXPORT = "a" * 40, "e" * 40
READ = """
import json
import time
time.sleep = lambda seconds: None  # the libraries' retries, unwaited
from encoderlab.errors import UserError
from encoderlab.eval.tasks.hub import HubSource, load_hub
from encoderlab.eval.tasks.hubexport import export_source
try:
    ds = load_hub(export_source(HubSource(REPO, "default", "refs/convert/parquet")))
except UserError as exc:
    print(json.dumps(str(exc)))
else:
    print(json.dumps({s: ds[s].to_list() for s in ds}))
"""


def _parquet(rows: dict) -> bytes:
    buffer = io.BytesIO()
    pd.DataFrame(rows).to_parquet(buffer, index=False)
    return buffer.getvalue()


def _serve(hub_server, repo: str) -> None:
    """`repo`: a main branch of a loading script (no data files), its parquet export on refs/convert/parquet."""
    export = {
        ".gitattributes": REPO_EXTRAS[".gitattributes"],
        "default/train/0000.parquet": _parquet({"text": ["a b", "c d"], "label": [0, 1]}),
        "default/test/0000.parquet": _parquet({"text": ["e f"], "label": [1]}),
    }
    commits = {MAIN: {**REPO_EXTRAS, "multi.py": b"# a loading script\n"}, EXPORT: export}
    hub_server.add(ServedRepo(repo, "dataset", commits, {"main": MAIN, PARQUET_EXPORT: EXPORT}))


def _source(repo: str) -> HubSource:
    return export_source(HubSource(repo, "default", PARQUET_EXPORT))


def _read_in_a_new_process(url: str, repo: str) -> tuple[object, list[str]]:
    """What a new process reads of `repo`'s export with HF_ENDPOINT `url` (or its refusal), and its stderr's
    lines other than progress bars."""
    import datasets.config

    env = {
        **os.environ,
        "HF_ENDPOINT": url,
        "HF_DATASETS_CACHE": datasets.config.HF_DATASETS_CACHE,
    }  # `isolated_tasks`'
    code = READ.replace("REPO", repr(repo))
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert run.returncode == 0, run.stderr[-2000:]
    lines = [line for line in run.stderr.splitlines() if line.strip() and "examples/s" not in line]
    return json.loads(run.stdout.splitlines()[-1]), lines


def test_a_cached_export_with_the_hub_down_is_listed_from_the_cache_after_one_request(hub_server):
    """The export's config is found in the cache's snapshot (was: six requests for the listing, then the
    export taken for no export, "(config default) ... nothing tells its snapshot ... complete"). Its rows are
    still not read: `datasets` finds no copy it prepared under the config it resolves offline ("Couldn't
    find cache for me/multi for config 'default-...'"), as with HF_HUB_OFFLINE=1 (left open: the line is
    `load_hub`'s generic one)."""
    _serve(hub_server, "me/multi")
    assert load_hub(_source("me/multi"))["train"]["text"] == ["a b", "c d"]
    hub_server.stop()
    down = DownHub("reset")
    try:
        read, lines = _read_in_a_new_process(down.url, "me/multi")
    finally:
        down.stop()
    assert isinstance(read, str) and read.startswith(
        "cannot load me/multi (config default of its parquet export) at refs/convert/parquet"
    ), read
    assert lines == [] and not any("/tree/" in r for r in down.asked()), (
        down.requests,
        lines,
    )  # was 6 listings


def test_an_uncached_export_with_the_hub_down_is_one_line_after_one_request(hub_server):
    down = DownHub("reset")
    try:
        refusal, lines = _read_in_a_new_process(down.url, "me/absent")
    finally:
        down.stop()
    assert refusal == (  # was the same line, after six requests for the export's listing
        "cannot load me/absent (config default) at refs/convert/parquet from me/absent: the hub did not answer "
        "(ReadError: [Errno 104] Connection reset by peer); check the name and your connection, or set "
        "ENCODERLAB_HUB_DATA=DIR to read a local mirror"
    )
    assert len(down.asked()) == 2 and lines == [], (down.requests, lines)


def test_an_export_whose_hub_goes_down_mid_download_is_one_line(hub_server, monkeypatch):
    """The hub gone after the export's first data file: one line naming the client's error."""
    from huggingface_hub import file_download

    _serve(hub_server, "me/multi")
    route, answered = hub_server.route, []

    def cut_after_first_data_file(url: str):
        if answered:
            raise ConnectionAbortedError("the hub went down")  # the handler closes the connection
        reply = route(url)
        if "/resolve/" in url and url.endswith(".parquet") and reply.status == 200:
            answered.append(url)
        return reply

    monkeypatch.setattr(hub_server, "route", cut_after_first_data_file)
    monkeypatch.setattr(file_download.time, "sleep", lambda seconds: None)  # its retries, unwaited
    with pytest.raises(UserError) as caught:
        load_hub(_source("me/multi"))
    line = str(caught.value)
    assert line.startswith(
        "cannot load me/multi (config default of its parquet export) at refs/convert/parquet"
    )
    assert "\n" not in line and answered, line
