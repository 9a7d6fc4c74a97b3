"""The command table stays importable and every error path prints one line."""

from __future__ import annotations

import inspect
import os
import runpy
import subprocess
import sys
from pathlib import Path
from typing import Annotated, Literal

import pytest
import tyro

import encoderlab
from encoderlab.cli import COMMANDS, main, resolve, summary
from encoderlab.cliargs import Repeated


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
    # the listing reads the summary from the source: the table names where the function is defined
    # its first paragraph, whole: `study status`'s, wrapped over two lines, was cut at "and the node"
    assert summary(target) == " ".join(inspect.cleandoc(fn.__doc__).partition("\n\n")[0].split())
    assert summary(target).endswith((".", ")")), summary(target)


@pytest.mark.parametrize("path,target", list(_leaves(COMMANDS)))
def test_every_positional_argument_has_a_name_for_the_usage_line(path, target):
    # was: `usage: encoderlab eval [-h] [OPTIONS] STR`, and "missing required arguments: ckpt" for
    # what the README calls RUN: tyro names a positional by its type unless given a metavar
    import typing

    import tyro

    hints = typing.get_type_hints(resolve(target), include_extras=True)
    for name, hint in hints.items():
        meta = getattr(hint, "__metadata__", ())
        if any(m is tyro.conf.Positional for m in meta):
            assert any(getattr(m, "metavar", None) for m in meta), (
                f"{' '.join(path)}: positional {name} needs tyro.conf.arg(metavar=...)"
            )


def test_listing_the_commands_imports_none_of_them():
    done = _importing_none(
        "from encoderlab.cli import main; main(['--help']); main(['study', '--help'])",
        ("torch", "transformers", "sklearn"),
    )
    assert "Pretrain an encoder" in done.stdout and "List the built-in studies" in done.stdout


def test_planning_a_study_imports_no_scoring_library():
    # `study list` and `study plan` read the eval specs and the plan; scipy, scikit-learn (via seqeval)
    # are imported when a score is taken, not there (~1.5 s of CPU on every listing)
    _importing_none(
        "import encoderlab.study.plan, encoderlab.study.evalcost, encoderlab.eval.spec",
        ("scipy", "sklearn", "seqeval"),
    )


def test_listing_and_planning_studies_import_no_training_loop():
    # `study list` and `study plan` read run configs, a start model's positions and task specs; the trainer's
    # optimizer, distributed and checkpoint code (torch.distributed.checkpoint, ~0.5 s of every listing) and
    # the fine-tuning loop are imported when a run trains or fine-tunes, not there (was: through the eager
    # package files of `encoderlab.train` and `encoderlab.eval`, `train.build` and `eval.protocol`; a CPU
    # study's plan steps its training shapes only when asked: `--probe`, study/cputime.py)
    for argv in (["study", "list"], ["study", "plan", "paper1-pfs", "--scale", "demo"]):
        done = _importing_none(
            f"from encoderlab.cli import main; main({argv!r})",
            ("torch.distributed.checkpoint", "encoderlab.train.trainer", "encoderlab.train.build")
            + ("encoderlab.eval.protocol", "encoderlab.eval.finetune"),
        )
        assert "paper1-pfs" in done.stdout, done.stdout


@pytest.mark.parametrize(
    "argv",
    [
        ["study", "list"],
        ["study", "plan", "paper1-pfs", "--scale", "demo"],  # a CPU study: its steps timed only with --probe
        ["study", "plan", "paper2-detour", "--scale", "demo"],  # from an asset: its config read when fetched
    ],
)
def test_listing_and_planning_studies_import_no_torch(argv):
    # `study list` and `study plan` read run configs, objectives' declared fields, start models' configs and
    # every graph's cost; torch (~1 s of every listing), transformers and datasets are imported when a model
    # is built, loaded or scored, not there (was: through `objectives`, `model/__init__`, `model.hub`, the
    # report node's CKA, `eval.batching` and the memory check's device). A machine without a GPU driver is
    # what the test stands for: with one, whether a run trains on CUDA is torch's to say (`cuda_visible`).
    code = f"import encoderlab.train.start as s; s.GPU_DRIVERS = (); from encoderlab.cli import main; main({argv!r})"
    done = _importing_none(code, ("torch", "transformers", "datasets", "safetensors"))
    expected = "paper1-pfs" if argv[1] == "list" else f"study {argv[2]} at scale demo"
    assert expected in done.stdout, done.stdout


def _importing_none(code: str, heavy: tuple[str, ...]) -> subprocess.CompletedProcess:
    """Run `code` in a fresh interpreter and assert it left none of the `heavy` modules imported."""
    check = f"import sys; {code}; heavy = sorted(m for m in {heavy!r} if m in sys.modules); assert not heavy, heavy"
    done = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done


def test_unknown_command_is_one_line(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["no-such-command"])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no command 'no-such-command'" in err[0]


def test_version_names_encoderlab_and_the_libraries_it_runs_on(capsys):
    # was: "'encoderlab' has no command '--version'", exit 2
    from importlib import metadata

    import encoderlab

    main(["--version"])
    out = capsys.readouterr().out.strip()
    assert out.startswith(f"encoderlab {encoderlab.__version__} (torch {metadata.version('torch')}, "), out
    assert metadata.version("encoderlab") == encoderlab.__version__  # pyproject and the package agree
    main(["--help"])
    assert "encoderlab --version" in capsys.readouterr().out


def test_python_dash_m_encoderlab_runs_the_cli():
    # was: "No module named encoderlab.__main__; 'encoderlab' is a package and cannot be directly executed"
    done = subprocess.run([sys.executable, "-m", "encoderlab", "--version"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("encoderlab "), done.stdout


def test_python_dash_m_encoderlab_imports_nothing_from_the_working_folder(tmp_path):
    # was: `python -m` put the working folder first on the path, so its ast.py was imported by the cli, and ran
    marker = tmp_path / "pwned"
    (tmp_path / "ast.py").write_text(f"import pathlib\npathlib.Path({str(marker)!r}).write_text('ran')\n")
    argv = [sys.executable, "-m", "encoderlab", "--version"]
    done = subprocess.run(argv, capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 0 and not marker.exists(), done.stderr


def test_python_dash_m_encoderlab_keeps_the_working_folder_the_package_came_from(monkeypatch):
    # was: `cd src && python -m encoderlab ...` in a checkout dropped src/ from the path, which the workers
    # multiprocessing spawns start from: they could not import encoderlab
    home = os.path.realpath(Path(encoderlab.__file__).parents[1])
    monkeypatch.chdir(home)
    monkeypatch.setattr(sys, "path", [home, *sys.path])
    runpy.run_module("encoderlab.__main__", run_name="encoderlab_main_under_test")  # main() not called
    assert sys.path[0] == home


def _one_line_error(capsys, argv) -> str:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    err = capsys.readouterr().err.strip().splitlines()
    assert exc.value.code == 2 and len(err) == 1, err
    assert err[0].startswith("encoderlab: error: ")
    return err[0]


@pytest.mark.parametrize(
    "argv,expected",
    [
        (["recipes", "--bogus", "1"], "unrecognized arguments: --bogus 1; see: encoderlab recipes --help"),
        (["export"], "missing required arguments: RUN, --out; see: encoderlab export --help"),
        (
            ["analyze", "transplant", "a", "b", "--out", "o", "--part", "x"],
            "--part got 'x'; valid: attention, block, mlp; see: encoderlab analyze transplant --help",
        ),
        (  # an optional choice: tyro gives its values in a set's order, different in every process (and None)
            ["eval", "m", "--suite", "nope", "--out", "e"],
            "--suite got 'nope'; valid: biomed, domain, paper, pocket; see: encoderlab eval --help",
        ),
        (["pretrain", "--until-step", "x"], "bad value for --until-step: "),
        (  # was "bad value None for model"
            ["eval", "--model", "x"],
            "missing required arguments: MODEL (given without a flag: encoderlab eval MODEL ...); see:",
        ),
        (
            ["eval", "m", "--suite"],
            "--suite needs a value; see: encoderlab eval --help",
        ),  # was "bad value None"
    ],
    ids=[
        "unknown-flag",
        "missing-required",
        "bad-choice",
        "bad-optional-choice",
        "bad-type",
        "positional-as-flag",
        "flag-without-value",
    ],
)
def test_argument_parse_errors_are_one_line_with_the_help_hint(capsys, argv, expected):
    assert expected in _one_line_error(capsys, argv)


def test_help_still_prints_the_full_help(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["export", "--help"])
    out = capsys.readouterr().out
    assert exc.value.code == 0 and "--out" in out and len(out.splitlines()) > 5


@pytest.mark.parametrize("path,target", list(_leaves(COMMANDS)))
def test_no_help_shows_an_empty_default(capsys, path, target):
    """A list argument left empty showed "(default: )" (advise RUNS, probe MODEL, assets fetch NAME,
    bench table RESULT, study run/plan --prepared): it says what an empty list means instead."""
    with pytest.raises(SystemExit):
        main([*path, "--help"])
    out = capsys.readouterr().out
    assert "(default: )" not in out and "(default: '')" not in out  # `pretrain --recipe`, `--out` showed ''


@pytest.mark.parametrize("path,target", list(_leaves(COMMANDS)))
def test_no_help_shows_none_for_an_optional_flag(capsys, path, target):
    """`study run --help` read `--scale {None}|STR ... default demo. (default: None)`: an optional flag
    shows its type's metavar and no None default, which its text explains (`cliargs.path_registry`)."""
    with pytest.raises(SystemExit):
        main([*path, "--help"])
    out = " ".join(capsys.readouterr().out.replace("│", " ").split())  # a hint may wrap in the box
    assert "{None" not in out and "(default: None)" not in out


def test_an_optional_flag_shows_its_type_and_a_real_default_still_shows(capsys):
    with pytest.raises(SystemExit):
        main(["eval", "--help"])
    out = " ".join(capsys.readouterr().out.replace("│", " ").split())
    assert "--lrs [FLOAT [FLOAT ...]]" in out and "--hub-data PATH" in out and "--device STR" in out
    assert "--suite {pocket,domain,paper,biomed}" in out and "(default: eval)" in out  # --out's own


def _options(target: str) -> list[tuple[str, bool]]:
    """(option, appends) of every flag of a command, as tyro's own parser has them."""
    import warnings

    import tyro.extras

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # get_parser: here only as the reference
        parser = tyro.extras.get_parser(resolve(target))
    return [
        (option, type(action).__name__ == "_AppendAction")
        for action in parser._actions
        if action.dest != "help"
        for option in action.option_strings
    ]


@pytest.mark.parametrize("path,target", list(_leaves(COMMANDS)))
def test_a_repeated_flag_appends_or_is_refused_never_dropped(capsys, path, target):
    """Issue 18 item 3: argparse keeps the last of a flag given twice (`eval --tasks a --tasks b` ran b
    alone); every flag of every command either appends or is refused in one line."""
    for option, appends in _options(target):
        argv = [*path, option, "1", option, "2"]
        if appends:  # both values kept: the command fails later, on the values (not real ones here)
            with pytest.raises(SystemExit):
                main(argv)
            assert "more than once" not in capsys.readouterr().err, argv
            continue
        canonical = option.replace("--no-", "--")
        err = _one_line_error(capsys, argv)
        assert f"{canonical} is given more than once, and only the last would count; give it once" in err


def test_encoderlabs_own_warnings_print_as_one_note_line(capsys, monkeypatch, recwarn):
    # was: `analyze cka` on paper 2's 500 texts at width 768 printed Python's warning display,
    # ".../analysis/commands.py:123: UserWarning: CKA on 500 texts ..." and then a line of source code
    import warnings

    import encoderlab.analysis.cka as cka

    def warn(filename: str) -> None:
        warnings.warn_explicit("CKA on 500 texts with hidden size up to 768", UserWarning, filename, 7)

    monkeypatch.setattr(
        "encoderlab.cli._dispatch", lambda argv: (warn(cka.__file__), warn("/elsewhere/lib.py"))
    )
    main(["anything"])
    assert capsys.readouterr().err == "encoderlab: note: CKA on 500 texts with hidden size up to 768\n"
    # another library's warning goes where it went before (here: pytest's record of it)
    assert [w.filename for w in recwarn] == ["/elsewhere/lib.py"]


@pytest.mark.parametrize(
    "argv,flag",
    [
        (["eval", "m", "--task-file", "--out", "e"], "--task-file"),
        (["eval", "m", "--tasks", "boolq", "--tasks", "--out", "e"], "--tasks"),
        (
            ["data", "prepare", "--source", "a.txt", "--tokenizer", "t", "--decontaminate", "--out", "o"],
            "--decontaminate",
        ),
        (["data", "tokenizer", "--source", "a.txt", "--source", "--out", "o"], "--source"),
        (["pretrain", "--recipe", "smoke-mlm", "--param", "--out", "o"], "--param"),
        (["pretrain", "--recipe", "smoke-mlm", "--set", "--out", "o"], "--set"),
        (["study", "plan", "paper1-pfs", "--prepared", "--scale", "demo"], "--prepared"),
    ],
)
def test_a_flag_of_several_values_given_without_one_is_refused(tmp_path, monkeypatch, capsys, argv, flag):
    """Was dropped: `eval --task-file` alone ran the default pocket suite, `data prepare
    --decontaminate` alone decontaminated against every fetched set."""
    monkeypatch.chdir(tmp_path)
    err = _one_line_error(capsys, argv)
    assert f"{flag} is given without a value; put at least one after it ({flag} A B)" in err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "argv",
    [
        ["study", "plan", "some.json/x.yaml"],
        ["study", "show", "some.json/x.yaml"],
        ["pretrain", "--config", "some.json/x.yaml", "--out", "o"],
    ],
    ids=["study-plan", "study-show", "pretrain-config"],
)
def test_a_path_through_a_file_names_the_file(tmp_path, monkeypatch, capsys, argv):
    """Was "cannot use some.json/x.yaml: Not a directory; choose another path or fix its permissions":
    no permission is at fault, the path is."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "some.json").write_text("{}")
    err = _one_line_error(capsys, argv)
    assert err == "encoderlab: error: some.json is a file, so some.json/x.yaml cannot exist; fix the path"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["some.json"]


def test_a_file_listed_as_a_folder_is_named_as_a_file(tmp_path, monkeypatch, capsys):
    """ENOTDIR on the path itself (listing a file as a folder) names it a file, not a permission."""
    import os

    (tmp_path / "notes.txt").write_text("")
    monkeypatch.setattr("encoderlab.cli._dispatch", lambda argv: os.listdir(tmp_path / "notes.txt"))
    err = _one_line_error(capsys, ["anything"])
    assert err == f"encoderlab: error: {tmp_path / 'notes.txt'} is a file, not a folder; fix the path"


@pytest.mark.parametrize(
    "argv,spaced", [(["--lrs", "1e-4,5e-4"], "--lrs 1e-4 5e-4"), (["--seeds", "0,1,", "2"], "--seeds 0 1 2")]
)
def test_a_list_given_with_commas_names_the_spaced_form(capsys, argv, spaced):
    """`eval --lrs 1e-4,5e-4` (lists as other tools take them) said only tyro's "no type matching
    {None}|{[FLOAT [FLOAT ...]]} could be instantiated from ['1e-4,5e-4']", then (with the fix added) still
    began with that type text: the line now says what was given and how to write it, nothing of tyro's."""
    with pytest.raises(SystemExit) as exc:
        main(["eval", "m", "--tasks", "boolq", *argv])
    err = capsys.readouterr().err.strip().splitlines()
    assert exc.value.code == 2 and len(err) == 1, err
    assert err[0] == (
        f"encoderlab: error: bad value for {argv[0]}: {' '.join(argv[1:])!r} (values joined by commas); give "
        f"several values separated by spaces, not commas: {spaced}; see: encoderlab eval --help"
    )


@pytest.mark.parametrize(
    "argv,said",
    [
        (
            ["--lrs", "1e-4 5e-4"],
            "error: bad value for --lrs: '1e-4 5e-4' (one quoted argument); give several values as separate "
            "arguments, not one quoted one: --lrs 1e-4 5e-4;",
        ),
        (
            ["--seeds", " 0  1 "],
            "; give several values as separate arguments, not one quoted one: --seeds 0 1;",
        ),
        (
            ["--seeds", "0", "1.5"],
            "error: bad value for --seeds: '1.5' is not an integer; see: encoderlab eval --help",
        ),
        (
            ["--lrs", "1e-4", "abc"],
            "error: bad value for --lrs: 'abc' is not a number; see: encoderlab eval --help",
        ),
    ],
)
def test_a_list_flag_s_wrong_form_names_the_one_that_works(capsys, argv, said):
    """`eval --lrs "1e-4 5e-4"` (one quoted argument) and `--seeds 0 1.5` said only tyro's "no type matching
    {None}|{[INT [INT ...]]} could be instantiated from ['0', '1.5']", neither the value nor the fix."""
    with pytest.raises(SystemExit) as exc:
        main(["eval", "m", "--tasks", "boolq", *argv])
    err = capsys.readouterr().err.strip().splitlines()
    assert exc.value.code == 2 and len(err) == 1, err
    assert said in err[0], err[0]


@pytest.mark.parametrize(
    "argv,said",
    [
        (["advise", "l.csv", "--target-flops", "abc", "--out", "o"], "--target-flops: 'abc' is not a number; see: encoderlab advise"),
        (["analyze", "cka", "a", "b", "--texts", "t", "--max-length", "x", "--out", "o"], "--max-length: 'x' is not an integer; see: encoderlab analyze cka"),
    ],
)  # fmt: skip
def test_an_optional_number_that_is_not_one_is_said_plainly(capsys, argv, said):
    """`advise --target-flops abc` said tyro's "no type matching {None}|FLOAT could be instantiated from ['abc']"."""
    with pytest.raises(SystemExit) as exc:
        main(argv)
    err = capsys.readouterr().err.strip().splitlines()
    assert exc.value.code == 2 and err == [f"encoderlab: error: bad value for {said} --help"]


@pytest.mark.parametrize(
    "argv", [["pretrain", "--bogus"], ["pretrian"], ["pretrain", "--out", "a", "--out", "b"]]
)
@pytest.mark.parametrize("local_rank", ["0", "1"])
def test_under_torchrun_an_argument_error_is_said_once_per_node(capsys, monkeypatch, argv, local_rank):
    """`torchrun` starts every rank with the same arguments, and each printed the same refusal."""
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("LOCAL_RANK", local_rank)
    with pytest.raises(SystemExit) as done:
        main(argv)
    err = capsys.readouterr().err
    assert done.value.code == 2
    assert err.startswith("encoderlab: error: ") if local_rank == "0" else err == ""


def _shapes(
    name: Annotated[str, tyro.conf.Positional, tyro.conf.arg(metavar="NAME")],
    /,
    scale: str | None = None,
    out: Path | None = None,
    lrs: tuple[float, ...] | None = None,
    suite: Literal["a", "b"] | None = None,
    jobs: int = 1,
    prepared: Repeated = (),
) -> dict:
    """Every flag shape the commands use, returned as parsed.

    Args:
        scale: Default demo.
    """
    return {
        "name": name,
        "scale": scale,
        "out": out,
        "lrs": lrs,
        "suite": suite,
        "jobs": jobs,
        "prepared": prepared,
    }


@pytest.mark.parametrize(
    "argv",
    [
        ["n"],
        ["n", "--scale", "cpu", "--out", "o", "--lrs", "1e-4", "5e-4", "--suite", "b", "--jobs", "3"],
        [
            "n",
            "--scale",
            "None",
            "--lrs",
            "None",
            "--suite",
            "None",
            "--prepared",
            "a=b",
            "--prepared",
            "c=d",
        ],
    ],
)
def test_the_help_of_an_optional_flag_changes_no_parse(argv):
    """The registry that shows `X | None = None` as X in --help parses every shape as tyro's own does."""
    from encoderlab.cliargs import path_registry

    assert tyro.cli(_shapes, args=argv, registry=path_registry()) == tyro.cli(_shapes, args=argv)


@pytest.mark.parametrize("changed", ["gone", "other signature"])
def test_a_changed_private_tyro_reader_costs_the_help_its_look_not_the_parse(changed, monkeypatch):
    """`cliargs._function_spec` reads a command through tyro's private `_fields` (pinned, but private): a
    tyro whose reader is renamed or takes other arguments was a traceback of every command, --help too."""
    import types

    def other_signature(fn, default):  # no `markers`
        raise AssertionError("not reached: called with markers")

    stand_in = (
        types.SimpleNamespace()
        if changed == "gone"
        else types.SimpleNamespace(_field_list_from_function=other_signature)
    )
    monkeypatch.setattr(tyro, "_fields", stand_in)  # tyro's own modules keep theirs
    from encoderlab.cliargs import path_registry

    argv = ["n", "--scale", "cpu", "--lrs", "1e-4"]
    assert tyro.cli(_shapes, args=argv, registry=path_registry()) == tyro.cli(_shapes, args=argv)
