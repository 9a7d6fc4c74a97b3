"""A task's hub dataset pinned to its parquet export (`data: {hub: OWNER/NAME, revision:
refs/convert/parquet, config: CONFIG}`, `eval/tasks/hubexport.py`) with the hub going down: mid-download,
unreachable with the export cached, unreachable with nothing cached; HF_HUB_OFFLINE unset, through the
local hub server (tests/data/hub_server.py) and huggingface_hub's and `datasets`' real code.

Before: the export's listing (`HfApi.list_repo_files`, whose pages huggingface_hub fetches with
`http_backoff`: five retries, 1+2+4+8+8 s) waited ~23 s on a hub refusing connections, then left the
source as named, so a cached export was refused as "nothing tells its snapshot ... complete" (its files
were never read as the export's config), and an uncached one was the hub line after that wait. Now the hub
is asked once (`hubdown.hub_down`) and, unanswered, the export is listed and read from the local hub
cache's snapshot (as offline), or refused in one line; mid-download, the client's error is one line, not an httpx2 traceback. A cached export's read with the
hub down runs in a new process, as the CLI reads it (in this one the libraries remember the online read's
answers); an uncached one in this process (~2 CPU-s less each: nothing it read before is of me/absent),
stderr read at fd 2, where huggingface_hub's logger writes. The libraries' sleeps are skipped (what fails
on the old code is the requests and the lines, not a time)."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import time

import pandas as pd
import pytest
from tests.data.hub_server import ServedRepo
from tests.data.hub_server_fixtures import REPO_EXTRAS, down_after_first_file, down_hub

from encoderlab.errors import UserError
from encoderlab.eval.tasks.hub import load_hub
from encoderlab.eval.tasks.hubexport import export_source
from encoderlab.eval.tasks.hubsource import PARQUET_EXPORT, HubSource, parquet_export

pytestmark = pytest.mark.usefixtures("isolated_tasks", "own_home")


@pytest.fixture
def own_home(tmp_path, monkeypatch):
    """A private ENCODERLAB_HOME (and so its records of the hub cache's snapshots, `hubcomplete`), also for
    the processes a test starts: one test's record of me/multi's export told the next one it was complete."""
    monkeypatch.setenv("ENCODERLAB_HOME", str(tmp_path / "encoderlab-home"))


MAIN, EXPORT = "a" * 40, "e" * 40
READ = """
import json
import time
time.sleep = lambda seconds: None  # the libraries' retries, unwaited
from encoderlab.errors import UserError
from encoderlab.eval.tasks.hub import load_hub
from encoderlab.eval.tasks.hubsource import HubSource, parquet_export
from encoderlab.eval.tasks.hubexport import export_source
try:
    ds = load_hub(SOURCE)
except UserError as exc:
    print(json.dumps(str(exc)))
else:
    print(json.dumps({s: ds[s].to_list() for s in ds}))
"""
LISTED = 'export_source(HubSource(REPO, "default", "refs/convert/parquet"))'
"""A task file's export (`data: {hub: REPO, revision: refs/convert/parquet, config: default}`): listed first."""
NAMED = 'parquet_export(REPO, "default", ("test", "train"))'
"""An export as the built-in tasks name it, its config's splits known: nothing lists the repo's files."""


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


def _read_in_a_new_process(
    url: str, repo: str, source: str = LISTED, **extra: str
) -> tuple[object, list[str]]:
    """What a new process reads of `repo`'s export (`source`: LISTED or NAMED) with HF_ENDPOINT `url` and the
    variables `extra` (or its refusal), and its stderr's lines other than progress bars."""
    import datasets.config

    env = {
        **os.environ,
        "HF_ENDPOINT": url,
        "HF_DATASETS_CACHE": datasets.config.HF_DATASETS_CACHE,
        **extra,
    }  # `isolated_tasks`'
    code = READ.replace("SOURCE", source).replace("REPO", repr(repo))
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert run.returncode == 0, run.stderr[-2000:]
    lines = [line for line in run.stderr.splitlines() if line.strip() and "examples/s" not in line]
    return json.loads(run.stdout.splitlines()[-1]), lines


def _read_in_this_process(monkeypatch, capfd, source: HubSource) -> tuple[object, list[str]]:
    """What this process reads of `source` (or its refusal), pointed at the hub by `down_hub(...,
    monkeypatch=...)`, the libraries' sleeps skipped, and its stderr's lines (fd 2: huggingface_hub's
    logger writes to the stderr it found at import) other than progress bars. For a repo nothing read
    before: nothing this process remembers of an earlier read can answer for the hub."""
    monkeypatch.setattr(time, "sleep", lambda seconds: None)  # the libraries' retries, unwaited
    capfd.readouterr()
    try:
        ds = load_hub(source)
    except UserError as exc:
        read: object = str(exc)
    else:
        read = {s: ds[s].to_list() for s in ds}
    err = capfd.readouterr().err
    return read, [line for line in err.splitlines() if line.strip() and "examples/s" not in line]


ROWS = {
    "test": [{"text": "e f", "label": 1}],
    "train": [{"text": "a b", "label": 0}, {"text": "c d", "label": 1}],
}


@pytest.mark.parametrize("offline", [False, True])
@pytest.mark.parametrize("named", [LISTED, NAMED])
def test_a_cached_export_with_the_hub_down_or_offline_is_read_from_the_hub_cache(
    hub_server, offline, named, tmp_path
):
    """Read online once, the export's rows are read again with the hub down (one request for its read, and
    one for its listing where it is listed; one note naming the commit) or with HF_HUB_OFFLINE=1 (none),
    from the hub cache's snapshot: its files are fetched into it at the export's commit, recorded, and read
    from there, online and offline alike (`hubsnapshot._export_parquet`), also where the process's `datasets` cache
    is another, empty one (a job's own HF_DATASETS_CACHE, or one cleared). Before, the snapshot, unrecorded,
    was left to `datasets`' offline read, which looked for the copy it prepared online under a config id it
    did not find ("Couldn't find cache for me/multi for config 'default-...'"), and the export was refused:
    "nothing tells its snapshot ... complete"."""
    _serve(hub_server, "me/multi")
    source = (
        _source("me/multi") if named == LISTED else parquet_export("me/multi", "default", ("test", "train"))
    )
    assert load_hub(source)["train"]["text"] == ["a b", "c d"]
    # a task file's export in the same `datasets` cache; a built-in task's in another, empty one
    extra = {"HF_DATASETS_CACHE": str(tmp_path / "another-datasets-cache")} if named == NAMED else {}
    with down_hub("reset", server=hub_server) as down:
        read, lines = _read_in_a_new_process(
            down.url, "me/multi", named, **extra, **({"HF_HUB_OFFLINE": "1"} if offline else {})
        )
    assert read == ROWS, read
    note = (
        "encoderlab: note: the Hugging Face hub did not answer (ReadError: [Errno 104] Connection reset by "
        f"peer); dataset 'me/multi' is read from the local hub cache's snapshot at commit {EXPORT}"
    )
    assert lines == ([] if offline else [note]), lines
    # the read's request, and the listing's (was 6)
    assert len(down.asked()) == (0 if offline else 1 + (named == LISTED)), down.requests


def test_an_uncached_export_with_the_hub_down_is_one_line_after_one_request(hub_server, monkeypatch, capfd):
    with down_hub("reset", monkeypatch=monkeypatch) as down:
        refusal, lines = _read_in_this_process(monkeypatch, capfd, _source("me/absent"))
    assert refusal == (  # was the same line, after six requests for the export's listing
        "cannot load me/absent (config default) at refs/convert/parquet from me/absent: the hub did not answer "
        "(ReadError: [Errno 104] Connection reset by peer); check the name and your connection, or set "
        "ENCODERLAB_HUB_DATA=DIR to read a local mirror"
    )
    assert len(down.asked()) == 2 and lines == [], (down.requests, lines)


def test_an_uncached_named_export_with_the_hub_down_asks_the_hub_once(hub_server, monkeypatch, capfd):
    """An export as the built-in tasks name it, nothing cached, the hub down: its read's one request, then
    one line. Before, the line's check of the export's config and splits (`export_problem`) asked the hub
    again (`hub_down`) after the read found it down: two requests, on a silent hub a second wait of up to
    HF_HUB_ETAG_TIMEOUT."""
    with down_hub("reset", monkeypatch=monkeypatch) as down:
        read = parquet_export("me/absent", "default", ("test", "train"))
        refusal, lines = _read_in_this_process(monkeypatch, capfd, read)
    assert isinstance(refusal, str) and "the hub did not answer (ReadError" in refusal, refusal
    assert len(down.asked()) == 1 and lines == [], (down.requests, lines)


def test_an_export_whose_hub_goes_down_mid_download_is_one_line(hub_server, monkeypatch):
    """The hub gone after the export's first data file: one line naming the client's error."""
    _serve(hub_server, "me/multi")
    answered = down_after_first_file(hub_server, monkeypatch, lambda url: url.endswith(".parquet"))
    with pytest.raises(UserError) as caught:
        load_hub(_source("me/multi"))
    line = str(caught.value)
    assert line.startswith(
        "cannot load me/multi (config default of its parquet export) at refs/convert/parquet"
    )
    assert "\n" not in line and answered, line


def test_an_export_cut_short_online_is_refused_offline_naming_the_files_it_lacks(hub_server, monkeypatch):
    """An export named as the built-in tasks name it, its download cut after its first data file, read
    again with HF_HUB_OFFLINE=1: refused, naming the file the snapshot lacks, as a CSV dataset's is
    (`hubcomplete.check_complete`: the files were recorded before the fetch). Before, nothing recorded them,
    so the snapshot was left to `datasets`' offline read, which took the files fetched so far for the export."""
    _serve(hub_server, "me/multi")
    answered = down_after_first_file(hub_server, monkeypatch, lambda url: url.endswith(".parquet"))
    with pytest.raises(UserError):
        load_hub(parquet_export("me/multi", "default", ("test", "train")))
    hub_server.stop()
    read, lines = _read_in_a_new_process(hub_server.url, "me/multi", NAMED, HF_HUB_OFFLINE="1")
    assert isinstance(read, str) and read.startswith("cannot load me/multi"), (read, answered)
    assert "lacks" in read or "missing" in read, read
