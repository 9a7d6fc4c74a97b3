"""The shared word-level tokenizer fixture of the analysis tests."""

from __future__ import annotations

import pytest
from analysis_helpers import make_tokenizer


@pytest.fixture(scope="session")
def tokenizer():
    return make_tokenizer()
