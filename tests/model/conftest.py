"""Fixtures for model tests (helpers live in `model_fixtures`, importable under any pytest runner)."""

from __future__ import annotations

import pytest
import torch
from model_fixtures import VOCAB


@pytest.fixture
def ids() -> torch.Tensor:
    g = torch.Generator().manual_seed(1)
    return torch.randint(4, VOCAB, (2, 24), generator=g)
