"""The encoder model, its configuration and named sizes.

The names below are imported when first read (PEP 562): `encoderlab.model.config` (sizes, attention
modes) is read by run configs and objectives, which `study list` and `study plan` import, and an eager
`Encoder` here would bring torch into every listing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from encoderlab.lazy import lazy_names

if TYPE_CHECKING:
    from encoderlab.model.config import SIZES, AttentionMode, ModelConfig
    from encoderlab.model.encoder import Encoder, EncoderOutput

_HOMES = {
    "SIZES": "config",
    "AttentionMode": "config",
    "ModelConfig": "config",
    "Encoder": "encoder",
    "EncoderOutput": "encoder",
}
"""Each public name and the module of this package that defines it."""

__all__ = ["SIZES", "AttentionMode", "Encoder", "EncoderOutput", "ModelConfig"]


__getattr__, __dir__ = lazy_names(__name__, _HOMES, globals(), __all__)
