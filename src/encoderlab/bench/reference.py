"""transformers' side of `bench train`: our weights in its model, its collator and a torch AdamW.

The reference is what our step is measured against, so it is kept as plain as transformers' own
recipe: `EuroBertForMaskedLM` + `DataCollatorForLanguageModeling` (80/10/10) for MLM, and
`LlamaForCausalLM` + the collator with `mlm=False` for CLM (EuroBERT has no causal mode), full
logits and attention over whole rows. It trains on the very rows our side draws at each step
(`TrainStep.source`), from our initial weights (`model/hf_eurobert.py`), so the two differ only in
the implementation. Kept apart from `bench/train.py` (the measuring loop and its result) because it
is the one piece that imports transformers: `--no-vs-hf` never loads it. Its FLOPs are counted
with the same `train/flops.py` as ours, for the work it really does (whole rows, dense head).
"""

from __future__ import annotations

import time

import torch

from encoderlab.data.synthetic import synthetic_tokenizer
from encoderlab.objectives import ObjectiveInputs
from encoderlab.train.flops import forward_flops
from encoderlab.train.step import TrainStep


def hf_model(model, spec, objective: str):
    """transformers' model of `objective` holding `model`'s weights, on its device, in training mode."""

    from transformers import EuroBertForMaskedLM, LlamaConfig, LlamaForCausalLM

    from encoderlab.model.hf_eurobert import eurobert_config, eurobert_state

    eb = eurobert_config(model, spec)
    if objective == "mlm":
        hf = EuroBertForMaskedLM(eb)
    else:
        keys = (
            "vocab_size",
            "hidden_size",
            "intermediate_size",
            "num_hidden_layers",
            "num_attention_heads",
            "num_key_value_heads",
            "head_dim",
            "max_position_embeddings",
            "rms_norm_eps",
            "rope_parameters",
            "tie_word_embeddings",
            "pad_token_id",
            "bos_token_id",
            "eos_token_id",
        )
        hf = LlamaForCausalLM(LlamaConfig(**{k: getattr(eb, k) for k in keys}))
    hf.load_state_dict(eurobert_state(model), strict=False)
    return hf.to(next(model.parameters()).device).train()


class Reference:
    """transformers' side: our weights in its model, its collator and a torch AdamW, on our rows."""

    def __init__(self, ours: TrainStep, *, objective: str, mask_ratio: float | None, bf16: bool):
        from transformers import DataCollatorForLanguageModeling

        self.ours, self.dev = ours, ours.device
        self.hf = hf_model(ours.model, ours.spec, objective)
        self.opt = torch.optim.AdamW(
            self.hf.parameters(), lr=5e-4, betas=(0.9, 0.95), eps=1e-5, weight_decay=0.1
        )
        self.collator = DataCollatorForLanguageModeling(
            synthetic_tokenizer(ours.spec), mlm=objective == "mlm", mlm_probability=mask_ratio
        )
        self.autocast = torch.autocast(self.dev.type, torch.bfloat16, enabled=bf16)

    def step(self, step: int) -> float:
        """Seconds of one training step on the rows our side trains on at `step`."""
        t0 = time.perf_counter()
        rows = self.ours.source.batch(step, 0, 0).input_ids
        batch = self.collator([{"input_ids": r} for r in rows.tolist()])
        with self.autocast:
            loss = self.hf(
                input_ids=batch["input_ids"].to(self.dev), labels=batch["labels"].to(self.dev)
            ).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.hf.parameters(), 1.0)
        self.opt.step()
        self.opt.zero_grad(set_to_none=True)
        if self.dev.type == "cuda":
            torch.cuda.synchronize()
        return time.perf_counter() - t0

    def flops(self, step: int) -> int:
        """Its FLOPs at `step`: attention over whole rows and logits at every position."""
        x = self.ours.micro_batches(step)[0]  # recomputed for counting only (cheap, deterministic)
        whole = ObjectiveInputs(
            input_ids=x.input_ids,
            position_ids=x.position_ids,
            doc_ids=torch.zeros_like(x.doc_ids),
            attention_mode=x.attention_mode,
            targets=torch.zeros_like(x.targets),  # dense head: logits at every position
        )
        return 3 * forward_flops(self.ours.model.config, whole)
