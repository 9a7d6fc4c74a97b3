"""The command table stays importable and every error path prints one line."""

from __future__ import annotations

import pytest

from encoderlab.cli import COMMANDS, main, resolve


def _leaves(node, path=()):
    for word, sub in node.items():
        if isinstance(sub, str):
            yield (*path, word), sub
        else:
            yield from _leaves(sub, (*path, word))


@pytest.mark.parametrize("path,target", list(_leaves(COMMANDS)))
def test_every_command_resolves_to_a_documented_function(path, target):
    fn = resolve(target)
    assert callable(fn) and (fn.__doc__ or "").strip(), f"{' '.join(path)} needs a docstring"


def test_unknown_command_is_one_line(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["no-such-command"])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no command 'no-such-command'" in err[0]
