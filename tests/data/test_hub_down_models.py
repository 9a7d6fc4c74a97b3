"""A model repo downloaded through huggingface_hub's real code from the local hub server
(tests/data/hub_server.py), then loaded with the hub gone down and HF_HUB_OFFLINE unset, as a user whose
network or hub failed finds it: the port refusing (the server stopped), the connection reset, or the
connection accepted and never answered (`DownHub`).

`snapshot_download` (huggingface_hub 2.4) asks `repo_info` with no timeout and reads the cache only on a
ConnectError or a timeout, silently: a silent hub held the load until the connection dropped, a reset
connection refused a fully cached model, and a refused one read the cache without a word of which
commit. Now `hubmodels.download_model_repo` asks once, within HF_HUB_ETAG_TIMEOUT, and says once, in one
line, that it reads the cached snapshot at its commit; with nothing cached, a hub that does not answer that
request is one line naming its URL (the download waited on a silent hub until it dropped the connection)."""

from __future__ import annotations

import pytest
from tests.data.hub_cache_fixtures import SHA_B
from tests.data.hub_server import ServedRepo
from tests.data.hub_server_fixtures import down_hub, repo_files
from tests.eval.fixtures import model_folder

from encoderlab.data import hubdown
from encoderlab.data.hubmodels import check_model_repo
from encoderlab.errors import UserError
from encoderlab.model.hub import load_pretrained
from encoderlab.model.sources import source_path

HUB_ID = "someone/enc"
NOTE = (
    "encoderlab: note: the Hugging Face hub did not answer ({cause}); model 'someone/enc' is read from the "
    f"local hub cache's snapshot at commit {SHA_B}"
)


@pytest.fixture
def cached(hub_server, tmp_path, monkeypatch, capsys):
    """someone/enc served at SHA_B, loaded once online (the library's cache filled), the server stopped
    (its port refuses); nothing said yet this process."""
    hub_server.add(
        ServedRepo(HUB_ID, commits={SHA_B: repo_files(model_folder(tmp_path / "repo"))}, refs={"main": SHA_B})
    )
    online = load_pretrained(HUB_ID)
    hub_server.stop()
    monkeypatch.setattr(hubdown, "_NOTED", set(), raising=False)
    capsys.readouterr()
    return online


def _notes(capsys) -> list[str]:
    return [line for line in capsys.readouterr().err.splitlines() if line.startswith("encoderlab:")]


def test_a_cached_model_with_the_port_refusing_is_read_with_one_line_naming_its_commit(cached, capsys):
    loaded = load_pretrained(HUB_ID)  # was read silently: nothing said the hub was not asked
    assert source_path(HUB_ID).name == SHA_B  # a second load of the id says nothing more
    assert _notes(capsys) == [NOTE.format(cause="ConnectError: [Errno 111] Connection refused")]
    assert loaded.tokenizer.get_vocab() == cached.tokenizer.get_vocab()


def test_a_cached_model_read_by_a_second_rank_of_a_node_says_nothing(cached, monkeypatch, capsys):
    """torchrun's LOCAL_RANK 1 of 2 reads the cache as rank 0 does; the note was printed by every rank of a
    node (one line per GPU); the node's first process says it (`launchenv.first_on_its_node`)."""
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("LOCAL_RANK", "1")
    assert source_path(HUB_ID).name == SHA_B
    assert _notes(capsys) == []
    monkeypatch.setenv("LOCAL_RANK", "0")
    assert source_path(HUB_ID).name == SHA_B
    assert _notes(capsys) == [NOTE.format(cause="ConnectError: [Errno 111] Connection refused")]


@pytest.mark.parametrize("mode", ["reset", "silent"])
def test_a_cached_model_with_the_hub_down_but_accepting_is_read_after_one_attempt(
    cached, mode, monkeypatch, capsys
):
    """reset: was refused ("cannot download ... (ReadError: ... reset by peer)"), the cache full;
    silent: `repo_info` has no timeout and waited until the hub dropped the connection (RemoteProtocolError,
    refused the same way); now the library's HF_HUB_ETAG_TIMEOUT bounds the one request."""
    with down_hub(mode, monkeypatch=monkeypatch) as down:
        assert source_path(HUB_ID).name == SHA_B
    cause = "ReadError: [Errno 104] Connection reset by peer" if mode == "reset" else "ReadTimeout: timed out"
    assert _notes(capsys) == [NOTE.format(cause=cause)] and len(down.asked()) == 1


@pytest.mark.parametrize("pin", ["", f"@{SHA_B}"])
def test_an_uncached_model_with_the_hub_silent_is_one_line_naming_the_hub_after_one_request(
    hub_server, pin, monkeypatch
):
    """Nothing cached (a branch, or a commit pin): `snapshot_download` asked `repo_info`, or at once
    `list_repo_tree`, with no timeout, and waited until the hub dropped the connection ("RemoteProtocolError:
    Server disconnected without sending a response", a hub that never drops it: forever). Now the one
    request, bounded by HF_HUB_ETAG_TIMEOUT, is the line, which names the hub's URL and the fixes."""
    with (
        down_hub("silent", server=hub_server, monkeypatch=monkeypatch) as down,
        pytest.raises(UserError) as refused,
    ):
        source_path(HUB_ID + pin)
    line = str(refused.value)
    assert line.startswith(
        f"cannot download model '{HUB_ID}{pin}': the Hugging Face hub at {down.url} did not answer within "
        "HF_HUB_ETAG_TIMEOUT=1 s (ReadTimeout: timed out), and there is no folder "
    ) and line.endswith(
        ", and the local hub cache holds no complete copy of it; check HF_ENDPOINT and the network, or set "
        "HF_HUB_OFFLINE=1 to read a copy cached before"
    ), line
    assert len(down.asked()) == 1, down.requests


def test_a_model_check_with_the_hub_silent_is_bounded_by_the_etag_timeout(hub_server, monkeypatch):
    """`check_model_repo` (a study's check of its hub ids before anything runs) asks `reach_hub`'s one
    request, which had no timeout: it waited until the silent hub dropped the connection and named that
    ("RemoteProtocolError: Server disconnected ..."; a hub that never drops it: forever). Now every probe of
    the hub (`hub.probe_hub`) is bounded by huggingface_hub's HF_HUB_ETAG_TIMEOUT."""
    with (
        down_hub("silent", server=hub_server, monkeypatch=monkeypatch) as down,
        pytest.raises(UserError) as refused,
    ):
        check_model_repo(HUB_ID)
    assert f"cannot download model '{HUB_ID}' from the Hugging Face hub (ReadTimeout: timed out)" in str(
        refused.value
    ), refused.value
    assert len(down.asked()) == 1, down.requests
