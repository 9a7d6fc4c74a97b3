"""Where encoderlab keeps fetched assets: $ENCODERLAB_HOME, default ~/.cache/encoderlab."""

from __future__ import annotations

import os
from pathlib import Path


def encoderlab_home() -> Path:
    """The cache root; created on first use."""
    root = Path(os.environ.get("ENCODERLAB_HOME", Path.home() / ".cache" / "encoderlab")).expanduser()
    root.mkdir(parents=True, exist_ok=True)
    return root
