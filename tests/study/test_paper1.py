"""Paper 1's studies as they resolve: what each scale trains, on what, and how it says so."""

from __future__ import annotations

from encoderlab.study.catalog import get_study
from encoderlab.study.graph import build_graph
from encoderlab.study.nodes import real_backend, run_config

MINILM_POSITIONS = 512
"""all-MiniLM-L6-v2's max_position_embeddings (its config.json in the `minilm` asset)."""
PAPER1_TOKENS_PER_STEP = 2_359_296
"""papers.md 1.3."""


def _configs(study: str, scale: str) -> dict:
    graph = build_graph(get_study(study, scale), real_backend())
    return {n.name.split("/", 1)[1]: run_config(n) for n in graph if n.kind == "pretrain"}


def test_the_real_model_arm_fits_minilm_and_gives_smollm2_a_mask_token():
    runs = _configs("paper1-cpt", "gpu-210m")
    smol, mini = runs["smollm2+mlm"], runs["minilm+mlm"]
    for run in (smol, mini):
        assert run.layout.seq_len <= MINILM_POSITIONS
        assert run.layout.tokens_per_step == PAPER1_TOKENS_PER_STEP
        assert run.model.mask_token  # added where the tokenizer has none (SmolLM2), ignored by MiniLM
    assert (smol.model.init, mini.model.init) == ("smollm2-135m", "minilm")
    assert smol.steps == mini.steps
