"""`encoderlab study ...` as a new user meets it: `study list`'s `?`, a study folder that does not exist and a
study file named as a built-in study, each said in one line with its fix, writing nothing."""

from __future__ import annotations

import pytest

from encoderlab.cli import main

FIX = "give the folder `study run --out` wrote (runs/NAME-SCALE by default)"


def _refused(capsys, argv: list[str]) -> str:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    err = capsys.readouterr().err.strip().splitlines()
    assert exc.value.code == 2 and len(err) == 1 and "Traceback" not in err[0], err
    return err[0].removeprefix("encoderlab: error: ")


def test_study_list_says_what_a_question_mark_of_passes_means(monkeypatch, capsys):
    """A corpus not fetched yet shows `?` passes; the legend said what `>=` means and not `?`."""
    row = ("paper1-pfs", "cpu", 180.0, "2 CPU cores", "?", "setup")
    monkeypatch.setattr("encoderlab.study.cli.list_studies", lambda: [row])
    main(["study", "list"])
    out = capsys.readouterr().out.splitlines()
    assert out[1].split()[4] == "?"
    assert "?: unknown until its corpus is fetched" in next(
        line for line in out if line.startswith("passes: ")
    )


@pytest.mark.parametrize("command", ["status", "report"])
def test_a_study_folder_that_does_not_exist_is_said_so_with_the_one_it_is_near(
    command, tmp_path, monkeypatch, capsys
):
    """Was "runs/paper1-pfs-dem is not a study folder (no study.json/graph.json); run: encoderlab study run NAME
    --out runs/paper1-pfs-dem": a typo of a finished study's folder was sent to start a new study there."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "runs" / "paper1-pfs-demo").mkdir(parents=True)
    (tmp_path / "runs" / "paper1-pfs-demo" / "study.json").write_text("{}")
    assert _refused(capsys, ["study", command, "runs/paper1-pfs-dem"]) == (
        f"study folder runs/paper1-pfs-dem does not exist (runs/paper1-pfs-demo?); {FIX}"
    )
    assert (
        _refused(capsys, ["study", command, "elsewhere/mine"])
        == f"study folder elsewhere/mine does not exist; {FIX}"
    )
    assert sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*")) == [
        "runs",
        "runs/paper1-pfs-demo",
        "runs/paper1-pfs-demo/study.json",
    ]


@pytest.mark.parametrize("command", ["run", "plan", "show"])
def test_a_missing_study_file_named_as_a_built_in_study_says_to_name_it_alone(
    command, tmp_path, monkeypatch, capsys
):
    """Was "study file paper1-pfs.yaml does not exist", which did not say that paper1-pfs is built in."""
    monkeypatch.chdir(tmp_path)
    assert _refused(capsys, ["study", command, "paper1-pfs.yaml"]) == (
        "study file paper1-pfs.yaml does not exist; paper1-pfs is a built-in study: name it without .yaml "
        "(encoderlab study list), or write the file first with `encoderlab study show paper1-pfs > paper1-pfs.yaml`"
    )
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("command", ["run", "plan"])
def test_a_missing_study_file_names_the_one_beside_it_or_where_it_was_looked_for(
    command, tmp_path, monkeypatch, capsys
):
    """Was "study file my-studdy.yaml does not exist", naming no fix: a typo of the file beside it, or a
    relative path read from another working directory than the user thought."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "my-study.yaml").write_text("name: mine\n")
    assert _refused(capsys, ["study", command, "my-studdy.yaml", "--out", "o"]) == (
        "study file my-studdy.yaml does not exist; did you mean my-study.yaml?"
    )
    assert _refused(capsys, ["study", command, str(tmp_path / "my-studdy.yaml"), "--out", "o"]) == (
        f"study file {tmp_path}/my-studdy.yaml does not exist; did you mean {tmp_path}/my-study.yaml?"
    )
    assert _refused(capsys, ["study", command, "other.yaml", "--out", "o"]) == (
        "study file other.yaml does not exist; check the path (a relative path is read from the working "
        f"directory, {tmp_path})"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["my-study.yaml"]


def test_a_missing_short_name_is_not_told_another_for_their_shared_suffix(tmp_path, monkeypatch, capsys):
    """Was "study file a.yaml does not exist; did you mean b.yaml?": names were compared with their `.yaml`,
    which alone made any two short names near. Stems are compared, so `study.yml` still finds
    `study.yaml`, and a task file's line (`task_files`, the same helper) is told so too."""
    monkeypatch.chdir(tmp_path)
    for name in ("b.yaml", "tc.yaml", "study.yaml"):
        (tmp_path / name).write_text("name: mine\n")
    look = f"check the path (a relative path is read from the working directory, {tmp_path})"
    assert _refused(capsys, ["study", "plan", "a.yaml"]) == f"study file a.yaml does not exist; {look}"
    assert _refused(capsys, ["study", "plan", "study.yml"]) == (
        "study file study.yml does not exist; did you mean study.yaml?"
    )
    assert _refused(capsys, ["eval", "m", "--task-file", "sc.yaml", "--check"]) == (
        "task file sc.yaml does not exist; give the path of a task YAML file or of a folder of them "
        '(docs/evaluation.md, "Your own tasks (task files)")'
    )


def _dataset_line(**data) -> str:
    from dataclasses import replace

    from encoderlab.study.catalog import get_study
    from encoderlab.study.plan import plan_study
    from encoderlab.study.plantext import plan_text

    spec = get_study("paper1-pfs", "demo")
    spec = replace(spec, data=tuple(replace(d, **data) for d in spec.data))
    return next(
        line for line in plan_text(plan_study(spec)).splitlines() if line.startswith("dataset main: ")
    )


def test_the_plan_says_why_a_dataset_is_decontaminated_against_nothing():
    """ "decontaminated against nothing" read alike for `decontaminate: false`, for a folder prepared elsewhere
    and for `decontaminate: true` in a study whose tasks read no set it is done against (the demo's)."""
    assert _dataset_line().endswith(
        "; decontaminated against nothing: that is done against the long-text evaluation assets its tasks read "
        "(squad-v1-dev, squad-shifts-*, boolq, vitaminc, bbc-news, pubmedqa), and its tasks read none"
    )
    assert _dataset_line(decontaminate=False).endswith("; not decontaminated (decontaminate: false)")


@pytest.mark.parametrize("command", ["run", "plan"])
def test_a_prepared_folder_for_a_built_in_study_that_trains_its_tokenizer_says_how_to_name_it(
    command, tmp_path, monkeypatch, capsys
):
    """Said "... so it takes no max_docs and names the tokenizer the folder was prepared with", words for a
    study file's author: a built-in study (demo: it trains its tokenizer) has no file to edit (the
    cluster-route hunt). The way it now names is a study file, written by `study show` and edited."""
    monkeypatch.chdir(tmp_path)
    said = _refused(capsys, ["study", command, "paper1-pfs", "--scale", "cpu", "--prepared", "main=data"])
    assert said == (
        f"dataset main trains its own tokenizer, so it cannot read the prepared folder {tmp_path}/data; export the "
        f"study with `encoderlab study show paper1-pfs --scale cpu > my.yaml`, set dataset main's tokenizer to "
        f"{tmp_path}/data/tokenizer (the one the folder was prepared with) and run `encoderlab study run my.yaml "
        f"--prepared main={tmp_path}/data`"
    )
    assert list(tmp_path.iterdir()) == []
    main(["study", "show", "paper1-pfs", "--scale", "cpu"])  # the way it names passes the spec's checks
    edited = capsys.readouterr().out.replace("tokenizer: train", f"tokenizer: {tmp_path}/data/tokenizer")
    (tmp_path / "my.yaml").write_text(edited)
    assert "holds no prepared data (no meta.json)" in _refused(
        capsys, ["study", "plan", "my.yaml", "--prepared", f"main={tmp_path}/data"]
    )
