"""torch's optimizers without the guards that import `torch._dynamo`: the one base pretraining and fine-tuning share.

`torch.optim.Optimizer` wraps `add_param_group`, `zero_grad`, `state_dict` and `load_state_dict` (and
torch's AdamW its `step`) in guards that keep `torch.compile` from tracing them, and each guard imports
`torch._dynamo` on its first call: about as much CPU as importing torch itself (2.9-3.3 s of a fresh
process's start-up here), paid before the first step by every study worker, resumed run and `eval`
process, although nothing is compiled (a DDP rank pays it anyway: torch's `DistributedDataParallel`
reads dynamo's config when it is built). `EagerOptimizer` calls the functions under those guards
directly (their `__wrapped__`, only where the wrapper is that guard's: a torch that wraps them otherwise
keeps its wrapper); the guards do nothing in eager mode, so the update is the same, bit for bit.

Users: `train/optim.py` (`AdamW` for `optim.kind=adamw`, and the base of its decoupled rules) and
`eval/finetune.py` (fine-tuning's AdamW). It lives in `model/`, the layer below both, because the import
layers keep training and evaluation apart (docs/architecture.md, "Layers") and one implementation should
serve both: two copies of the guard-skipping would drift apart at the next torch release.

The cost: a torch that adds work to those guards would not run it here. Watched by
tests/train/test_optim.py and tests/eval/test_finetune_optim.py: each steps ours against torch's AdamW
bit for bit, and checks that a fresh training or `eval` process never imports `torch._dynamo`. A run that
compiles its blocks (`scale.compile`) still imports dynamo, for them.
"""

from __future__ import annotations

import torch
from torch.optim import optimizer as torch_optimizer


def _guarded(wrapper_of) -> object:
    """The code object of the wrapper `wrapper_of` puts around a function (to recognise it)."""
    return wrapper_of(lambda: None).__code__


# torch's own guards, by the code of their wrappers: the lazy `_disable_dynamo` and AdamW's step's
_DYNAMO_GUARDS = (_guarded(torch._disable_dynamo), _guarded(torch_optimizer._use_grad_for_differentiable))


# the step hooks torch's first instance of a class puts on its `step` (`Optimizer._patch_step_function`)
_STEP_HOOKS = _guarded(torch.optim.Optimizer.profile_hook_step)


def _unguarded(fn):
    """`fn` without torch's dynamo guard around it (itself when its wrapper is anything else). A step
    hooked already (a torch AdamW made before this module was imported) is unwrapped first: its hooks
    would run inside our `no_grad`, and its `hooked` mark, copied onto ours by `functools.wraps`, kept our
    class from getting its own hooks around the step (torch runs them outside its guard)."""
    inner, code = getattr(fn, "__wrapped__", None), getattr(fn, "__code__", None)
    if inner is not None and code == _STEP_HOOKS:
        return _unguarded(inner)
    return inner if inner is not None and code in _DYNAMO_GUARDS else fn


class EagerOptimizer(torch.optim.Optimizer):
    """An optimizer whose bookkeeping does not import `torch._dynamo` (the module docstring)."""

    add_param_group = _unguarded(torch.optim.Optimizer.add_param_group)
    zero_grad = _unguarded(torch.optim.Optimizer.zero_grad)
    state_dict = _unguarded(torch.optim.Optimizer.state_dict)
    load_state_dict = _unguarded(torch.optim.Optimizer.load_state_dict)


class AdamW(EagerOptimizer, torch.optim.AdamW):
    """torch's AdamW, stepped without its dynamo guard: under `no_grad`, which is what the guard sets
    for an optimizer that is not `differentiable` (ours never is)."""

    step = torch.no_grad()(_unguarded(torch.optim.AdamW.step))
