"""The encoder model, its configuration and named sizes."""

from encoderlab.model.config import SIZES, AttentionMode, ModelConfig
from encoderlab.model.encoder import Encoder, EncoderOutput

__all__ = ["SIZES", "AttentionMode", "Encoder", "EncoderOutput", "ModelConfig"]
