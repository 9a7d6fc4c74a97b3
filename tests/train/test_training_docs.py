"""The numbers docs/training.md and docs/recipes.md state are the code's.

Each is written here from the code's constant, default or resolved recipe config and looked up in the
doc's text (line breaks read as spaces), so a default changed in one place and not the other fails here
instead of leaving a doc that reads as true. The prose around each number is part of what is looked up,
so a number that also appears elsewhere in the doc cannot stand in for it; the trade-off is that
rewording such a sentence means editing its line here too.

The `encoderlab pretrain --recipe` commands the training, determinism and recipes docs show are held to
the duration estimate `pretrain` applies (`train.cli.estimated_seconds`): one that even the fastest GPU
encoderlab knows would take over a day must pass `--yes`, or it stops as shown.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

from encoderlab.config import MAX_LR
from encoderlab.errors import UserError
from encoderlab.objectives import MLM
from encoderlab.train.config import MAX_VALIDATION_ROWS, RunConfig, ValidationConfig
from encoderlab.train.recipe_scaling import SCALING
from encoderlab.train.recipes import make_recipe, recipe_defaults

DOCS = Path(__file__).resolve().parents[2] / "docs"


def _doc(name: str) -> str:
    return " ".join((DOCS / name).read_text().split())


def _k(n: int) -> str:
    """A count as the docs write it: 42000 -> 42k, 200 -> 200."""
    return f"{n // 1000}k" if n >= 1000 and n % 1000 == 0 else str(n)


def _tokens(n: int) -> str:
    """A token count as the docs write it: 100M, 10B."""
    for unit, size in (("B", 10**9), ("M", 10**6)):
        if n >= size and n % size == 0:
            return f"{n // size}{unit}"
    raise AssertionError(f"{n} tokens have no short form")


def _e(x: float) -> str:
    """A small number as the docs write it: 5e-4, 1e-5."""
    mantissa, exponent = f"{x:.0e}".split("e")
    assert float(f"{mantissa}e{exponent}") == x, x
    return f"{mantissa}e{int(exponent)}"


def _default(name: str):
    return RunConfig.__dataclass_fields__[name].default


def test_training_md_states_the_codes_limits_and_defaults():
    from encoderlab.model.runlayout import checkpoint_dir
    from encoderlab.train.cli import ASSUMED_MFU, REASONABLE_HOURS
    from encoderlab.yamltext import MAX_EXPANDED_VALUES

    doc, val, folder = _doc("training.md"), ValidationConfig(), checkpoint_dir(Path("RUN"), 1000).name
    expected = [
        f"at {ASSUMED_MFU:.0%} of this machine's peak",
        f"Above {REASONABLE_HOURS} hours it stops",
        f"an lr of at most {MAX_LR:g} (`config.MAX_LR`)",
        f"up to {MAX_EXPANDED_VALUES:,} values with every alias written out",
        f"Every `validation.every` steps (default {val.every}; 0 turns it off)",
        f"`validation.rows` (default {val.rows}; at most {MAX_VALIDATION_ROWS:,}, "
        "`train/config.py:MAX_VALIDATION_ROWS`",
        f"`mask_ratio` (default {MLM().mask_ratio:.2f})",
        f"`nan_policy`: `{_default('nan_policy')}` (default)",
        f"`max_bad_steps` (default {_default('max_bad_steps')})",
        f"checkpoints/{folder}/",
        f"A checkpoint is written as `{folder}.tmp` (the step in seven digits)",
    ]
    assert [s for s in expected if s not in doc] == []


def test_training_md_says_no_built_in_recipe_masks_exactly():
    """ "`exact` (... no built-in recipe uses it)" and "`bernoulli` (every built-in recipe ...)"."""
    from encoderlab.train.recipes import RECIPES

    selections = set()
    for name in RECIPES:
        params = {"init": "minilm"} if name == "cpt-mlm" else {}
        selections |= {getattr(p.objective, "selection", None) for p in make_recipe(name, params).phases}
    assert selections - {None} == {"bernoulli"}
    doc = _doc("training.md")
    assert f"`{MLM().selection}` (the objective's default; no built-in recipe uses it)" in doc
    assert "`bernoulli` (every built-in recipe:" in doc
    assert MLM().selection != "bernoulli"


def test_recipes_md_table_gives_each_recipes_defaults():
    doc = _doc("recipes.md")
    pfs, cpt, detour = (recipe_defaults(n) for n in ("pfs-mlm", "cpt-mlm", "detour"))
    expected = [
        f"`pfs-mlm` | Paper 1, MLM from scratch (`ratio` 0.2/0.3/0.4/0.5) | {_k(pfs['steps'])} steps, WSD "
        f"{_k(pfs['warmup'])} warmup / {_k(pfs['decay'])} decay |",
        f"CLM for `clm_fraction` ({recipe_defaults('pfs-clm-mlm')['clm_fraction']}) of the steps",
        f"| {_k(cpt['steps'])} steps, WSD {_k(cpt['warmup'])} warmup / {_k(cpt['decay'])} decay, `step_offset` "
        f"{cpt['step_offset']}, `mask_token` `{cpt['mask_token']}` |",
        f"CLM for `tokens` ({_tokens(detour['tokens'])}), then MLM-15% for {detour['decay_fraction']:.0%} of them",
        f"CLM: {_tokens(detour['warmup_tokens'])}-token warmup to {_e(make_recipe('detour').optim.lr)}",
        f"checkpoints; {pfs['checkpoint_every']} for paper 1's, {detour['checkpoint_every']} for paper 2's)",
    ]
    assert [s for s in expected if s not in doc] == []


def test_recipes_md_smoke_lengths_are_the_recipes():
    doc = _doc("recipes.md")
    steps = {n: make_recipe(n).steps for n in ("smoke-mlm", "smoke-clm", "smoke-clm-mlm")}
    assert len(set(steps.values())) == 1, steps
    (n,) = set(steps.values())
    detour = [p.steps for p in make_recipe("smoke-detour").plan()]
    layout = make_recipe("smoke-mlm").layout
    expected = [
        f"synthetic data, {n} steps (`smoke-detour`: {detour[0]} of CLM, then {detour[1]} of decay)",
        f"{n} steps of {layout.global_batch_size} x {layout.seq_len} tokens each (`smoke-detour`: {sum(detour)})",
        f"from ln {make_recipe('smoke-mlm').data.synthetic_vocab} = "
        f"{math.log(make_recipe('smoke-mlm').data.synthetic_vocab):.2f}",
    ]
    assert [s for s in expected if s not in doc] == []


def test_recipes_md_paper_hyperparameters_are_the_recipes():
    doc = _doc("recipes.md")
    p1, p2 = make_recipe("pfs-mlm"), make_recipe("detour")
    lay1, lay2 = p1.layout, p2.layout
    warmup = p2.phases[0].schedule.warmup
    assert warmup == math.ceil(recipe_defaults("detour")["warmup_tokens"] / lay2.tokens_per_step)
    expected = [
        f"AdamW betas {tuple(p1.optim.betas)}, eps {_e(p1.optim.eps)}, weight decay {p1.optim.weight_decay:g} on "
        f"every parameter, clip {p1.optim.clip:.1f}, peak LR {_e(p1.optim.lr)}",
        f"{lay1.global_batch_size} rows x {lay1.seq_len} tokens = {lay1.tokens_per_step:,} tokens/step",
        f"`micro_batch_size` {lay1.micro_batch_size} x `grad_accum` {lay1.grad_accum} x `world_size` "
        f"{lay1.world_size}",
        f"Betas {tuple(p2.optim.betas)}, eps {_e(p2.optim.eps)}, weight decay {_e(p2.optim.weight_decay)}",
        f"{lay2.global_batch_size} x {lay2.seq_len}-token batches, data seed {p2.data.seed}, training seed "
        f"{p2.seed}",
        f"W = {warmup} updates",
        f"LR {_e(p2.optim.lr)} with a {_tokens(recipe_defaults('detour')['warmup_tokens'])}-token warmup then "
        f"{p2.phases[0].schedule.kind}",
        f"Phase 2: MLM-{p2.phases[1].objective.mask_ratio:.0%}, {recipe_defaults('detour')['decay_fraction']:.0%} "
        f"of phase 1's tokens, {p2.phases[1].schedule.kind} to {p2.phases[1].schedule.end_fraction:.0%} of the peak",
    ]
    decay = p1.phases[-1].schedule
    assert (decay.kind, decay.decay_shape, decay.end_fraction) == (
        "wsd",
        "linear",
        0.0,
    )  # "linear decay to 0"
    assert p1.optim.decay_norms_and_biases and not p2.optim.decay_norms_and_biases  # "on every parameter"
    assert [s for s in expected if s not in doc] == []


@pytest.mark.parametrize(
    ("name", "written"),
    [("pfs-mlm", "paper 1's {w}/{n} and {d}/{n}"), ("cpt-mlm", "`cpt-mlm`'s {w}/{n} and {d}/{n}")],
)
def test_recipes_md_scaling_shares_are_the_recipes(name, written):
    defaults = recipe_defaults(name)
    rule = SCALING[name]
    assert (
        rule.warmup == defaults["warmup"] / defaults["steps"]
        and rule.decay == defaults["decay"] / defaults["steps"]
    )
    text = written.format(w=_k(defaults["warmup"]), d=_k(defaults["decay"]), n=_k(defaults["steps"]))
    assert text in _doc("recipes.md")


def test_recipes_md_paper2_scaling_share_is_the_recipes():
    defaults = recipe_defaults("detour")
    assert SCALING["detour"].warmup == defaults["warmup_tokens"] / defaults["tokens"]
    text = f"paper 2's {_tokens(defaults['warmup_tokens'])}/{_tokens(defaults['tokens'])}-token warmup"
    assert text in _doc("recipes.md")


def _pretrain_commands() -> list[tuple[str, list[str]]]:
    """Each `encoderlab pretrain --recipe` command the docs and README show, in a bash block or inline (doc, argv
    after `pretrain`, comments and line continuations dropped)."""
    import re
    import shlex

    found = []
    # errors.md shows refused commands on purpose
    for path in [*sorted(set(DOCS.glob("*.md")) - {DOCS / "errors.md"}), DOCS.parent / "README.md"]:
        text = path.read_text()
        blocks = re.findall(r"```bash\n(.*?)```", text, re.S)
        lines = [line for b in blocks for line in b.replace("\\\n", " ").splitlines()]
        # inline commands too (`encoderlab pretrain ...` in a sentence, wrapped over lines)
        lines += [
            " ".join(c.split())
            for c in re.findall(r"`(encoderlab pretrain [^`]*)`", re.sub(r"```.*?```", "", text, flags=re.S))
        ]
        for line in lines:
            words = shlex.split(line, comments=True)
            if words[:2] == ["encoderlab", "pretrain"] and "--recipe" in words:
                found.append((path.name, words[2:]))
    return found


def _values(argv: list[str], flag: str) -> list[str]:
    """The values given after each `flag` (up to the next `--` option)."""
    out, taking = [], False
    for word in argv:
        if word.startswith("--"):
            taking = word == flag
        elif taking:
            out.append(word)
    return out


def test_the_docs_paper_scale_commands_pass_yes_where_even_a_gpu_takes_over_a_day():
    """docs/training.md showed `pretrain --recipe pfs-clm-mlm ... --out runs/pfs50` without `--yes`: 42k steps
    of paper 1's batch are more than a day at the assumed MFU of the fastest GPU encoderlab knows (the
    smallest vocabulary, too), so the command as shown stops with "pass --yes" on any machine."""
    from encoderlab.model.config import ModelConfig
    from encoderlab.train.cli import REASONABLE_HOURS, estimated_seconds, resolve_config
    from encoderlab.train.flops import GPU_PEAK_TFLOPS

    commands = _pretrain_commands()
    assert {"training.md", "determinism.md", "recipes.md", "reproduce.md"} <= {name for name, _ in commands}
    fastest = max(GPU_PEAK_TFLOPS.values()) * 1e12
    refused = []
    for name, argv in commands:
        if {"--dry-run", "--resume", "--yes"} & set(argv):
            continue
        recipe = argv[argv.index("--recipe") + 1]
        try:
            cfg = resolve_config(recipe, None, tuple(_values(argv, "--param")), tuple(_values(argv, "--set")))
        except UserError:
            if any(
                re.search(r"(^|=)[A-Z][A-Z_]*$", w) for w in argv
            ):  # a placeholder (`tokens=N`, NAME) to fill in
                continue
            raise
        if cfg.model.init:  # the start model's size is not known here
            continue
        until = _values(argv, "--until-step")
        steps = min(int(until[0]), cfg.steps) if until else cfg.steps
        config = ModelConfig.from_size(cfg.model.size, vocab_size=cfg.data.synthetic_vocab)
        if estimated_seconds(config, cfg, steps, fastest) > REASONABLE_HOURS * 3600:
            refused.append(f"{name}: encoderlab pretrain {' '.join(argv)}")
    assert refused == []


def test_the_paper2_layer_groups_the_docs_give_are_the_codes():
    """training.md and recipes.md spell out the groups `paper2-low|mid|late` give on other depths."""
    from encoderlab.model.config import SIZES
    from encoderlab.train.freeze import paper2_groups

    def spans(n: int) -> str:
        return " / ".join(f"{g[0]}-{g[-1]}" for g in paper2_groups(n))

    def sets(n: int) -> str:
        return " / ".join("{" + ", ".join(map(str, g)) + "}" for g in paper2_groups(n))

    tiny = SIZES["tiny"].n_layers
    training, recipes = _doc("training.md"), _doc("recipes.md")
    assert (
        f"ModernBERT-large (28 layers) {spans(28)}, a 12-layer BERT {spans(12)}, `tiny` {sets(tiny)}"
        in training
    )
    assert f"ModernBERT-large, 28 layers: {spans(28)}; `tiny`: {sets(tiny)}" in recipes
    assert f"(low {spans(22).replace(' / ', ', mid ', 1).replace(' / ', ', late ', 1)})" in recipes
