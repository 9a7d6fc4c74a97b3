"""`bench table` prints saved results as rows, and refuses in one line what is not one of them."""

from __future__ import annotations

import json
import re

import pytest


@pytest.mark.parametrize(
    "make,pattern",
    [
        (lambda d: [], "needs RESULT files or folders"),
        (lambda d: [str(d / "nope")], "no such file or folder: .*nope"),
        (lambda d: [str(d)], r"no \*.json in"),
        (
            lambda d: [str(d / "x.json")],
            r"x.json is not a `bench train --out` result \(it has no field 'config'\)",
        ),
    ],
    ids=["nothing", "missing", "empty-folder", "not-a-result"],
)
def test_bench_table_refuses_what_is_not_a_result_in_one_line(tmp_path, capsys, make, pattern):
    from encoderlab.cli import main

    args = make(tmp_path)
    if args and args[0].endswith("x.json"):
        (tmp_path / "x.json").write_text('{"speed": 1}')
    with pytest.raises(SystemExit) as exc:
        main(["bench", "table", *args])
    err = capsys.readouterr().err.strip().splitlines()
    assert exc.value.code == 2 and len(err) == 1 and re.search(pattern, err[0]), err


def test_bench_table_names_the_machine_of_each_result(tmp_path, capsys):
    """An H100's result beside a CPU's read alike (MFU against another peak), the machine in neither row."""
    from encoderlab.cli import main

    config = {"size": "tiny", "objective": "mlm", "batch": 2, "seq_len": 16, "precision": "fp32"}
    config |= {"attn_impl": "sdpa", "compile": False}
    machines = {
        "gpu": {"device": "cuda:0", "gpu": "NVIDIA H100 80GB HBM3"},
        "cpu": {"device": "cpu", "threads": 2},
    }
    for name, machine in machines.items():
        result = {"config": config | machine, "encoderlab": {"tokens_per_s": 1, "mfu": 0.1}}
        (tmp_path / f"{name}.json").write_text(json.dumps(result))
    main(["bench", "table", str(tmp_path)])
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0].endswith("| speedup | device |")
    assert [line.split("|")[-2].strip() for line in lines[2:]] == ["cpu, 2 threads", "NVIDIA H100 80GB HBM3"]


@pytest.mark.parametrize(
    "given,twice",
    [
        (["r.json", "r.json"], ""),
        (["", "r.json"], " ({d}/r.json in folder {d}, and {d}/r.json)"),
    ],
    ids=["file-twice", "folder-and-its-file"],
)
def test_bench_table_refuses_a_result_given_twice(tmp_path, capsys, given, twice):
    """Both printed the result as two rows: two measurements where there was one."""
    from encoderlab.cli import main

    (tmp_path / "r.json").write_text(
        '{"config": {"size": "tiny", "objective": "mlm", "batch": 2, "seq_len": 16, "precision": "fp32", '
        '"attn_impl": "sdpa", "compile": false}, "encoderlab": {"tokens_per_s": 1, "mfu": 0}}'
    )
    with pytest.raises(SystemExit) as exc:
        main(["bench", "table", *(str(tmp_path / g) if g else str(tmp_path) for g in given)])
    err = capsys.readouterr().err.strip().splitlines()
    assert exc.value.code == 2 and len(err) == 1, err
    assert err[0].endswith(
        f"result {tmp_path}/r.json given twice{twice.format(d=tmp_path)}; give each result once"
    ), err


@pytest.mark.parametrize(
    "text,why",
    [
        (
            '{"config": {"size": "tiny", "objective": "mlm", "batch": 2, "seq_len": 16, "precision": "fp32", '
            '"attn_impl": "sdpa", "compile": true, "inductor_env": ["a"]}, "encoderlab": {"tokens_per_s": 1, "mfu": 0}}',
            "a field holds a value of another type",
        ),
        ("[" * 100_000 + "]" * 100_000, "its JSON is nested too deep"),
        ('{"config": ', "not JSON: Expecting value at line 1"),
    ],
    ids=["inductor-env-a-list", "nested-too-deep", "cut-short"],
)
def test_bench_table_refuses_a_damaged_result_in_one_line(tmp_path, capsys, text, why):
    """The first two were tracebacks (AttributeError, RecursionError); all three then printed a Python
    exception's repr, which told a user nothing."""
    from encoderlab.cli import main

    (tmp_path / "r.json").write_text(text)
    with pytest.raises(SystemExit) as exc:
        main(["bench", "table", str(tmp_path / "r.json")])
    err = capsys.readouterr().err.strip().splitlines()
    assert exc.value.code == 2 and len(err) == 1, err
    assert re.search(
        rf"r.json is not a `bench train --out` result \({re.escape(why)}\); pass those files only$", err[0]
    )


def test_bench_table_skips_a_folders_hidden_files(tmp_path, capsys):
    """A folder's `.encoderlab.json` (another command's output marker) was read as a result and refused,
    `pathlib`'s glob matching hidden names; named on its own, a hidden file is still read."""
    from encoderlab.cli import main
    from encoderlab.outdir import MARKER

    config = {"size": "tiny", "objective": "mlm", "batch": 2, "seq_len": 16, "precision": "fp32"}
    result = {
        "config": config | {"attn_impl": "sdpa", "compile": False},
        "encoderlab": {"tokens_per_s": 1, "mfu": 0},
    }
    (tmp_path / "r.json").write_text(json.dumps(result))
    (tmp_path / MARKER).write_text('{"kind": "bench"}')
    main(["bench", "table", str(tmp_path)])
    rows = capsys.readouterr().out.strip().splitlines()[2:]
    assert [row.split("|")[1].strip() for row in rows] == ["r"]
    with pytest.raises(SystemExit) as exc:
        main(["bench", "table", str(tmp_path / MARKER)])
    assert exc.value.code == 2 and "is not a `bench train --out` result" in capsys.readouterr().err
