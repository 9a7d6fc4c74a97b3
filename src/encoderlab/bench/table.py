"""`encoderlab bench table`: saved `bench train` results as one Markdown table.

It reads result files only (never runs a benchmark), so it imports no torch: one row per file, in
the order given (a folder's *.json in name order). A result from an older version is read as far as
it goes (a missing `doc_len` was the synthetic source's 48, a missing `gpu` or `threads` leaves the
device column to `device`); a file that is not a result is refused in one line naming the file and
why, rather than printing a partial table. A file reached twice is refused: two rows would read as
two measurements where there was one. Kept apart from `bench/train.py`, which measures and writes
those results: the two share only the result's field names.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Annotated

import tyro

from encoderlab.errors import UserError
from encoderlab.words import count

TABLE_HEADER = (
    "| result | size | objective | batch | seq | doc length | precision | attention | compile | tokens/s | MFU | peak memory (GiB) "
    "| transformers tokens/s | speedup | device |"
)


def table_row(name: str, result: dict) -> str:
    """One Markdown row of the `bench train` result `name` ("-" where it has no such number)."""
    c, ours, hf = result["config"], result["encoderlab"], result.get("transformers")
    memory = f"{ours['peak_memory_mib'] / 1024:.1f}" if "peak_memory_mib" in ours else "-"
    mfu = "-" if ours["mfu"] is None else f"{ours['mfu']:.1%}"  # null: not a number when measured
    compiled = "no"
    if c["compile"]:
        knobs = c.get("inductor_env") or {}
        compiled = "yes" + (" (" + ", ".join(f"{k}={v}" for k, v in knobs.items()) + ")" if knobs else "")
    reference = f"{hf['tokens_per_s']:,.0f} | {result['speedup']:.2f}x" if hf else "- | -"
    # results from two machines read alike (an H100's beside a CPU's, MFU against another peak): say whose
    device = c.get("gpu") or (
        f"cpu, {count(c['threads'], 'thread')}" if c.get("device") == "cpu" and "threads" in c else None
    )
    # results saved before --doc-len existed ran the synthetic source's 48-token documents
    return (
        f"| {name} | {c['size']} | {c['objective']} | {c['batch']} | {c['seq_len']} | {c.get('doc_len', 48)} | "
        f"{c['precision']} | {c['attn_impl']} | {compiled} | {ours['tokens_per_s']:,.0f} | {mfu} | {memory} | {reference} | "
        f"{device or c.get('device') or '-'} |"
    )


def _why(exc: Exception) -> str:
    """What is wrong with a file read as a result, in words (a Python repr told a user nothing)."""
    if isinstance(exc, KeyError):
        return f"it has no field {exc.args[0]!r}"
    if isinstance(exc, RecursionError):
        return "its JSON is nested too deep"
    if isinstance(exc, json.JSONDecodeError):
        return f"not JSON: {exc.msg} at line {exc.lineno}"
    if isinstance(exc, UnicodeDecodeError):
        return "not UTF-8 text"
    if isinstance(exc, OSError):
        return exc.strerror or type(exc).__name__
    return "a field holds a value of another type"


def _result_files(results: tuple[Path, ...]) -> list[Path]:
    """The result files named, a folder's *.json in name order; a file reached twice (named twice, or named and
    in a folder named) is refused: it was printed as two rows, two measurements where there was one. A folder's
    hidden files are skipped (pathlib's glob, unlike a shell's, reads them): another command's marker there, an
    output folder's `.encoderlab.json`, was refused as no result; a hidden file named on its own is read."""
    seen: dict[str, str] = {}
    files = []
    for r in map(Path, results):
        shown = [f for f in sorted(r.glob("*.json")) if not f.name.startswith(".")] if r.is_dir() else [r]
        for f in shown:
            how = str(f) if f == r else f"{f} in folder {r}"
            if (key := os.path.realpath(f)) in seen:
                also = f" ({seen[key]}, and {how})" if seen[key] != how else ""
                raise UserError(f"result {f} given twice{also}; give each result once")
            seen[key] = how
            files.append(f)
    return files


def bench_table_command(
    results: Annotated[
        tuple[Path, ...],
        tyro.conf.Positional,
        tyro.conf.arg(metavar="RESULT ...", help_behavior_hint="(required)"),
    ] = (),
) -> None:
    """Print a Markdown table of `bench train` JSON results (files, or folders of *.json).

    Args:
        results: JSON files written by `bench train --out`, or folders holding them.
    """
    if not results:
        raise UserError("bench table needs RESULT files or folders, written by `bench train --out F.json`")
    missing = [str(r) for r in results if not Path(r).exists()]
    if missing:
        raise UserError(f"no such file or folder: {', '.join(missing)}")
    files = _result_files(results)
    if not files:
        raise UserError(
            f"no *.json in {', '.join(map(str, results))}; write results with `bench train --out F.json`"
        )
    rows = []
    for f in files:
        try:
            rows.append(table_row(f.stem, json.loads(f.read_text())))
        # AttributeError: a hand-edited value of another type; RecursionError: JSON nested too deep
        except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError) as exc:
            raise UserError(
                f"{f} is not a `bench train --out` result ({_why(exc)}); pass those files only"
            ) from None
    print("\n".join([TABLE_HEADER, "|---" * TABLE_HEADER.count(" | ") + "|---|", *rows]))
