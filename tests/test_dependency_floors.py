"""pyproject.toml's lower bounds leave out the releases of a dependency that run code from a file encoderlab reads.

encoderlab's own readers refuse pickles and remote code, but some of those promises rest on a library doing its
part: `torch.load(weights_only=True)` (the Python API's `allow_pickle=True` path) could still run code before
torch 2.6 (CVE-2025-32434); pyarrow before 14.0.1 unpickled a parquet file's extension types (CVE-2023-47248);
`datasets` before 4 ran a dataset folder's loading script; and matplotlib before 3.10.9 `eval`ed the
`axes.prop_cycle` of a `matplotlibrc` in the working folder as it was imported (every command that draws a
figure: `analyze`, `study report`, `advise`). A floor lowered below any of these would let pip install one.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

FIRST_SAFE = {
    "torch": "2.6",  # torch.load(weights_only=True) RCE fixed
    "pyarrow": "14.0.1",  # PyExtensionType deserialization disabled
    "datasets": "4",  # dataset scripts no longer run
    "matplotlib": "3.10.9",  # validate_cycler no longer evals a matplotlibrc's prop_cycle
}


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split("."))


def _floors() -> dict[str, list[str]]:
    """Each requirement's `>=` floor, by distribution, over the dependencies and every extra."""
    import tomllib

    project = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text())["project"]
    specs = list(project["dependencies"])
    for extra in project["optional-dependencies"].values():
        specs += extra
    floors: dict[str, list[str]] = {}
    for spec in specs:
        name = re.split(r"[<>=!~\[; ]", spec, maxsplit=1)[0].lower()
        floor = re.search(r">=\s*([0-9][0-9.]*)", spec)
        floors.setdefault(name, []).append(floor.group(1) if floor else "0")
    return floors


@pytest.mark.parametrize("name", sorted(FIRST_SAFE))
def test_no_requirement_admits_a_release_that_runs_code_from_a_file(name):
    floors = _floors()
    assert name in floors, f"{name} is no longer required: drop it from FIRST_SAFE"
    low = [f for f in floors[name] if _version(f) < _version(FIRST_SAFE[name])]
    assert not low, f"pyproject.toml lets {name} {low[0]} be installed; require {name}>={FIRST_SAFE[name]}"
