"""Test-wide settings: offline hub, a private cache, deterministic CPU threads."""

from __future__ import annotations

import os

import pytest
import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("WANDB_MODE", "disabled")
# One thread: tiny test models are overhead-bound, and the two pytest workers (`make test`) and the
# processes tests start share the 2 CI cores; the variable reaches those processes.
os.environ.setdefault("OMP_NUM_THREADS", "1")
torch.set_num_threads(1)


@pytest.fixture(autouse=True)
def _isolated_hf_home(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("HF_HOME", str(tmp_path_factory.getbasetemp() / "hf_home"))


@pytest.fixture
def hub_server(tmp_path, monkeypatch):
    """A local hub server (tests/data/hub_server.py, `hub_server_fixtures.serve_hub`), online, with a fresh HF_HOME; the working folder is
    the test's own (a hub id is looked for as a folder first). Stopped at the test's end."""
    from tests.data.hub_server_fixtures import serve_hub

    monkeypatch.chdir(tmp_path)
    server = serve_hub(monkeypatch, tmp_path / "hf-home")
    yield server
    server.stop()


@pytest.fixture(autouse=True)
def _task_registry_restored():
    """Tasks a test registers from a task file (`eval.tasks.register`, process-wide as in the CLI)
    leave with it: a later test's "valid tasks" list must not depend on which tests ran before."""
    from encoderlab.eval.tasks import TASKS

    before = dict(TASKS)
    yield
    TASKS.clear()
    TASKS.update(before)
