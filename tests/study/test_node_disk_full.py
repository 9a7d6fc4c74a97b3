"""A full disk (or a spent quota, a file past the size limit, or a file system gone read-only) while a study node writes: one line that
names the node, the file and the fix, the exit code of a full disk, no traceback, and no marker, so the
node is not taken for finished. Before, the line named the file alone (one of a study's many node
folders), and a spent quota was a traceback."""

from __future__ import annotations

import fake_study
import pytest
from fake_study import backend, small_spec

import encoderlab.study.runner as runner
from encoderlab.errors import DiskFull, UserError
from encoderlab.study.graph import build_graph
from encoderlab.study.marker import MARKER

FIXES = {
    "disk": ("disk full", "free space", DiskFull.exit_code),
    "quota": ("disk quota exceeded", "free space within your quota", DiskFull.exit_code),
    "size": (
        "file too large",
        "raise the file size limit (`ulimit -f`) or write to a disk that holds larger files",
        DiskFull.exit_code,
    ),
    "readonly": ("read-only file system", "make it writable again", UserError.exit_code),
}


def _node(name_part: str):
    return next(n for n in build_graph(small_spec(), backend()) if name_part in n.name)


def _study_run(out, monkeypatch, capsys, *extra) -> tuple[int, str]:
    from encoderlab.cli import main

    monkeypatch.setattr("encoderlab.study.cli.default_backend", backend)
    monkeypatch.setattr("encoderlab.study.cli.get_study", lambda name, scale: small_spec())
    with pytest.raises(SystemExit) as exc:
        main(["study", "run", "paper1-pfs", "--out", str(out), *extra])
    return exc.value.code, capsys.readouterr().err


@pytest.mark.parametrize("fail_as", sorted(FIXES))
def test_a_full_disk_in_a_node_is_one_line_naming_the_node_and_leaves_it_unfinished(
    fail_as, tmp_path, capsys, monkeypatch
):
    monkeypatch.setitem(fake_study.FAIL_ON, "node", "pretrain/clm")
    monkeypatch.setitem(fake_study.FAIL_ON, "as", fail_as)
    code, err = _study_run(tmp_path, monkeypatch, capsys)
    what, fix, exit_code = FIXES[fail_as]
    node = _node("pretrain/clm")
    folder = runner.node_dir(tmp_path, node)
    assert code == exit_code and "Traceback" not in err, err
    assert [line for line in err.splitlines() if line.startswith("encoderlab: error")] == [
        f"encoderlab: error: study node {node.name}: {what} while writing {folder / 'partial.bin'}; {fix} and "
        "rerun the same command (finished nodes are kept and this one resumes), or run the study again with "
        "--out on another disk"
    ]
    assert not (folder / MARKER).exists()
    assert runner.read_marker(tmp_path, node) is None


def test_the_rerun_after_a_full_disk_finishes_the_study(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(fake_study.FAIL_ON, "node", "pretrain/clm")
    code, _ = _study_run(tmp_path, monkeypatch, capsys)
    assert code == DiskFull.exit_code
    report = runner.run_study(small_spec(), tmp_path, backend(), progress=False)
    assert report.is_file()
    assert runner.read_marker(tmp_path, _node("pretrain/clm")) is not None


def test_a_full_disk_in_a_worker_names_its_node(tmp_path, monkeypatch):
    """With --jobs 2 the OSError comes back from a worker process, and is said the same way."""
    monkeypatch.setenv("FAKE_STUDY_FAIL_ON", "mlm40@")  # an eval node of the baseline, in a worker
    monkeypatch.setenv("FAKE_STUDY_FAIL_AS", "disk")
    with pytest.raises(DiskFull) as exc:
        runner.run_study(small_spec(), tmp_path / "s", backend(), progress=False, jobs=2)
    node = _node("mlm40@")
    folder = runner.node_dir(tmp_path / "s", node)
    assert str(exc.value).startswith(
        f"study node {node.name}: disk full while writing {folder / 'partial.bin'}; free space and rerun"
    )
    assert not (folder / MARKER).exists()


def test_another_os_error_in_a_node_keeps_its_traceback(tmp_path, monkeypatch):
    """Only the disk's refusals are said as the user's to fix: anything else is a bug and stays one."""
    import errno

    from encoderlab.study.graph import NodeKind

    def broken(ctx):
        raise OSError(errno.EIO, "Input/output error", str(ctx.out_dir / "x"))

    b = backend()
    b.kinds["pretrain"] = NodeKind(run=broken)
    with pytest.raises(OSError) as exc:
        runner.run_study(small_spec(), tmp_path, b, progress=False)
    assert exc.value.errno == errno.EIO
