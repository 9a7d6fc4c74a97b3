"""`encoderlab study ...` command lines: the study folder arguments of `report`, `status` and `plan --out`."""

from __future__ import annotations

import os
from dataclasses import replace

import pytest

from encoderlab.cli import main

FIX = "give the folder `study run --out` wrote (runs/NAME-SCALE by default)"


def _refused(capsys, argv: list[str]) -> str:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    err = capsys.readouterr().err.strip().splitlines()
    assert exc.value.code == 2 and len(err) == 1, err
    return err[0].removeprefix("encoderlab: error: ")


@pytest.mark.parametrize("command", ["report", "status"])
def test_a_file_given_as_the_study_folder_is_named_a_file(tmp_path, monkeypatch, capsys, command):
    """Was "cannot use some.json/study.json: Not a directory; choose another path or fix its permissions"."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "some.json").write_text("{}")
    assert (
        _refused(capsys, ["study", command, "some.json"]) == f"some.json is a file, not a study folder; {FIX}"
    )
    assert _refused(capsys, ["study", command, "some.json/s"]) == (
        f"some.json/s cannot be a study folder: some.json is a file; {FIX}"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["some.json"]
    assert (tmp_path / "some.json").read_text() == "{}"


def test_plan_out_that_is_a_file_is_refused(tmp_path, monkeypatch, capsys):
    """Was planned as a folder without prepared data ("holds no finished prepared data"), exit 0."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "some.json").write_text("{}")
    assert _refused(capsys, ["study", "plan", "paper1-pfs", "--out", "some.json"]) == (
        f"--out some.json is a file, not a study folder; {FIX}, or drop --out for estimated counts"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["some.json"]


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """A finished fake study's folder."""
    from fake_study import backend, small_spec

    from encoderlab.study.runner import run_study

    out = tmp_path_factory.mktemp("fake") / "study"
    run_study(small_spec(), out, backend(), progress=False)
    return out


def test_a_study_folder_names_the_study_it_was_run_with(folder, tmp_path, monkeypatch, capsys):
    """`study show DIR` said "unknown study 'DIR'": it prints the study the folder was last run with, which
    reads back as that study; `study run DIR` continues it in DIR, not in runs/NAME-SCALE."""
    import fake_study

    from encoderlab.study.data import read_study
    from encoderlab.study.files import load_study_file

    main(["study", "show", str(folder)])
    shown = capsys.readouterr().out
    assert shown.startswith(f"# encoderlab study exported from the study folder {folder}.")
    (tmp_path / "again.yaml").write_text(shown)
    # all but the fake corpus name, which a study file reads as a path beside it
    recorded = read_study(folder)[0]
    assert replace(load_study_file(tmp_path / "again.yaml"), data=recorded.data) == recorded
    assert _refused(capsys, ["study", "show", str(folder), "--scale", "cpu"]) == (
        f"{folder} is a study folder, which keeps the scale it was run at; drop --scale cpu"
    )
    (tmp_path / "empty").mkdir()
    assert _refused(capsys, ["study", "show", str(tmp_path / "empty")]).startswith(
        f"{tmp_path / 'empty'} is a folder without study.json, so no study folder; give a built-in study name"
    )
    monkeypatch.chdir(tmp_path)
    (tmp_path / "paper1-pfs").mkdir()  # a folder of a built-in study's name: the name still means the study
    main(["study", "show", "paper1-pfs"])
    assert "exported from paper1-pfs --scale demo" in capsys.readouterr().out
    monkeypatch.setattr("encoderlab.study.cli.default_backend", fake_study.backend)
    main(["study", "run", str(folder)])
    assert capsys.readouterr().out.startswith(f"report: {folder / 'report' / 'report.html'}\n")
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize("hardware", ["8 GPUs (H100 class)", "2 CPU cores"])
def test_a_gpu_study_planned_without_a_gpu_skips_the_cpu_memory_check(
    tmp_path, monkeypatch, capsys, hardware
):
    """`study plan paper1-cpt --scale gpu-610m` on a machine without CUDA was refused: its runs were
    checked against this CPU's memory, which says nothing of the GPUs they train on. A study sized for
    CPUs is still checked (`study run` checks every study on the machine it runs on)."""
    import torch
    import yaml

    from encoderlab.errors import UserError
    from encoderlab.study import runchecks

    def too_big(spec, p, meta):
        raise UserError(f"run {p.run.name}: too big for this CPU")

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(runchecks, "_check_memory", too_big)
    main(["study", "show", "paper1-cpt", "--scale", "gpu-610m"])
    study = yaml.safe_load(capsys.readouterr().out)
    (tmp_path / "s.yaml").write_text(yaml.safe_dump({**study, "hardware": hardware}))
    if hardware.startswith("2 CPU"):
        assert "too big for this CPU" in _refused(capsys, ["study", "plan", str(tmp_path / "s.yaml")])
        return
    main(["study", "plan", str(tmp_path / "s.yaml")])
    out = capsys.readouterr().out
    assert "note: memory is not checked: this study is sized for 8 GPUs (H100 class) and no CUDA" in out


def test_status_says_whether_the_study_runs_or_was_stopped(folder, tmp_path, capsys):
    """`study status` listed the nodes of a study killed mid-way as it listed those of one running ("to
    run: ..."), so neither could be told from the other; it now reads the study's lock."""
    import json
    import shutil
    import socket
    import subprocess
    import sys

    from encoderlab.study.marker import MARKER
    from encoderlab.study.runner import LOCK

    shutil.copytree(folder, tmp_path / "s")
    s = tmp_path / "s"
    main(["study", "status", str(s)])
    assert capsys.readouterr().out.splitlines()[1] == "not running"
    next(s.glob(f"nodes/report/*/{MARKER}")).unlink()
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True)
    for pid, host, said in (
        (os.getpid(), socket.gethostname(), f"running: pid {os.getpid()} on {socket.gethostname()} since T"),
        (int(dead.stdout), socket.gethostname(), "not running: the study that ran here (pid {pid} on {host} "
         "since T) was stopped before it finished; rerun `encoderlab study run {s}` to resume"),
        (1, "elsewhere", "held by pid 1 on elsewhere since T, which cannot be checked from here; if that "
         "process is gone, delete {s}/.study.lock"),
        ("abc", socket.gethostname(), "held by pid abc on {host} since T, which cannot be checked from here; "
         "if that process is gone, delete {s}/.study.lock"),
        (None, None, "not running; rerun `encoderlab study run {s}` to resume"),
    ):  # fmt: skip
        (s / LOCK).unlink(missing_ok=True)
        if pid is not None:
            (s / LOCK).write_text(json.dumps({"pid": pid, "host": host, "since": "T", "what": "study"}))
        main(["study", "status", str(s)])
        out = capsys.readouterr().out.splitlines()
        assert out[1] == said.format(pid=pid, host=host, s=s)
        assert out[-1] == "  report: 0 of 1 finished; not finished: report"


def test_a_study_inside_another_study_folder_is_refused(folder, capsys):
    """`--out runs/a/nodes/new` ran a study there, and `study status runs/a` then listed its folders as
    runs/a's, left by an earlier version, to delete."""
    from fake_study import backend, small_spec

    from encoderlab.errors import UserError
    from encoderlab.study.runner import run_study

    inner = folder / "nodes" / "new"
    with pytest.raises(UserError) as err:
        run_study(small_spec(), inner, backend(), progress=False)
    assert str(err.value) == (
        f"--out {inner} lies inside the study folder {folder.resolve()}, whose folders are that study's; choose "
        "another --out outside it"
    )
    assert not inner.exists()
    main(["study", "status", str(folder)])
    assert "belong to no node" not in capsys.readouterr().out


@pytest.mark.parametrize("lock", ['{"pid": "abc", "host": "HOST", "since": "T", "what": "study"}', "[1, 2]"])
def test_a_lock_of_no_process_id_is_named_not_a_traceback(folder, tmp_path, lock):
    """A hand-edited or foreign `.study.lock` (a pid that is no number) was a ValueError traceback of
    `study run` (int("abc")); a JSON list an AttributeError. It is now a holder that cannot be checked."""
    import shutil
    import socket

    from fake_study import backend, small_spec

    from encoderlab.errors import UserError
    from encoderlab.study.runner import LOCK, run_study

    shutil.copytree(folder, tmp_path / "s")
    (tmp_path / "s" / LOCK).write_text(lock.replace("HOST", socket.gethostname()))
    with pytest.raises(UserError) as err:
        run_study(small_spec(), tmp_path / "s", backend(), progress=False)
    assert str(err.value).startswith(f"{tmp_path / 's'} is in use by ")
    assert str(err.value).endswith(f"delete {tmp_path / 's' / LOCK} if that process is gone")


def test_status_counts_the_nodes_downstream_of_a_deleted_node_as_not_finished(folder, tmp_path, capsys):
    """A pretraining node's folder deleted: `study status` listed only that node as not finished, and its
    evaluations and the report as finished, while `study run` runs them all again (they read its old outputs)."""
    import shutil

    from encoderlab.study.data import read_study
    from encoderlab.study.runner import node_dir, pending_nodes

    s = tmp_path / "s"
    shutil.copytree(folder, s)
    _, nodes = read_study(s)
    gone = next(n for n in nodes if n.kind == "pretrain")
    shutil.rmtree(node_dir(s, gone))
    to_run = pending_nodes(s, nodes)
    assert len(to_run) > 2 and gone in to_run  # the node, its evaluations and the report
    main(["study", "status", str(s)])
    out = capsys.readouterr().out.splitlines()
    assert out[0].endswith(f": {len(nodes) - len(to_run)} of {len(nodes)} nodes finished")
    assert out[-1] == "  report: 0 of 1 finished; not finished: report"


def test_study_report_prints_the_html_and_the_markdown_path_as_study_run_does(folder, capsys):
    """`study report` printed only report.html; `study run` prints both artefacts, one line each."""
    capsys.readouterr()
    main(["study", "report", str(folder)])
    html, md = folder / "report" / "report.html", folder / "report" / "report.md"
    assert capsys.readouterr().out.splitlines() == [f"report: {html}", f"markdown: {md}"]
    assert html.is_file() and md.is_file()


def test_a_study_json_value_of_the_wrong_type_names_the_rerun_alone(tmp_path):
    """study.json is encoderlab's record, whose fix is to run the study again into it: a value of the
    wrong type there said that after the config fix "give a whole number such as 1000" (two fixes, the
    first to edit a file encoderlab wrote); `problem_of` keeps the problem alone, as for a node.json."""
    import json

    from encoderlab.errors import UserError
    from encoderlab.study.data import read_study

    (tmp_path / "graph.json").write_text("[]")
    spec = {"name": "s", "data": [], "runs": [], "baseline": "b", "seq_len": "long"}
    (tmp_path / "study.json").write_text(json.dumps(spec))
    with pytest.raises(UserError) as refused:
        read_study(tmp_path)
    assert str(refused.value) == (
        f"{tmp_path}/study.json does not match this encoderlab (study.json: seq_len: expected int, got 'long'); "
        "run the study again into it with the same command (finished nodes whose config did not change are kept)"
    )


def test_status_of_a_study_still_in_its_start_checks_says_it_is_starting(tmp_path, capsys):
    """Between taking its lock and writing study.json and graph.json (its checks, an asset fetch: minutes on a
    fresh machine), `status` said "is not a study folder (no study.json/graph.json); run: encoderlab study run
    NAME --out s", a run the lock then refused (found by the new-user hunt, 2026-12-06). Once the holder is
    gone, the folder is no study again."""
    import json
    import socket
    import subprocess
    import sys

    from encoderlab.study.runner import LOCK

    s = tmp_path / "s"
    s.mkdir()
    me = {"pid": os.getpid(), "host": socket.gethostname(), "since": "T", "what": "study paper1-pfs"}
    (s / LOCK).write_text(json.dumps(me))
    main(["study", "status", str(s)])
    assert capsys.readouterr().out.splitlines() == [
        f"study paper1-pfs in {s}: starting (its checks and assets before the first node; no node has run yet)",
        f"running: pid {os.getpid()} on {socket.gethostname()} since T",
    ]
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True)
    (s / LOCK).write_text(json.dumps({**me, "pid": int(dead.stdout)}))
    assert _refused(capsys, ["study", "status", str(s)]).startswith(f"{s} is not a study folder")


def test_status_resume_command_runs_as_written_for_a_folder_with_a_space(folder, tmp_path, capsys):
    """`study status` of a stopped study in `my study/out` said "rerun `encoderlab study run /tmp/my
    study/out` to resume": copied, the shell gave `study run` two arguments. The folder is now quoted
    where a shell would split it, so the command, read as a shell reads it, names the folder whole."""
    import re
    import shlex
    import shutil

    from encoderlab.study.marker import MARKER

    s = tmp_path / "my study" / "out"
    shutil.copytree(folder, s)
    next(s.glob(f"nodes/report/*/{MARKER}")).unlink()
    main(["study", "status", str(s)])
    line = capsys.readouterr().out.splitlines()[1]
    command = re.fullmatch(r"not running; rerun `(.+)` to resume", line)
    assert command, line
    assert shlex.split(command.group(1)) == ["encoderlab", "study", "run", str(s)]


def test_a_task_file_given_as_a_study_names_a_command_that_runs_as_written(tmp_path, capsys):
    """The command a task file given to `study plan` is told (`eval MODEL --task-file PATH`) split a path
    with a space in two; it is now quoted as a shell needs it."""
    import re
    import shlex

    path = tmp_path / "my tasks" / "pairs.yaml"
    path.parent.mkdir()
    path.write_text("name: mine\nfamily: sc\ndata: {train: a.csv, test: b.csv}\n")
    line = _refused(capsys, ["study", "plan", str(path)])
    command = re.search(r"pass it with `([^`]+)`", line)
    assert command, line
    assert shlex.split(command.group(1)) == ["encoderlab", "eval", "MODEL", "--task-file", str(path)]
