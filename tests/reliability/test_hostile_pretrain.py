"""Issue 20's pretraining cases, in the style of the hostile-input catalogue (docs/errors.md,
"Pretraining: run folders, configs and data"): every refusal is one `encoderlab: error:` line with
the documented exit code, written before the run folder exists (so nothing is left behind and a
retry is not refused), and no file that existed before changes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from tests.eval.conftest import make_tokenizer, tiny_model, vocabulary_texts
from tests.reliability.hostile_world import TINY_RUN as RUN  # two CLM steps, a checkpoint after each
from tests.reliability.test_hostile_inputs import assert_one_line, cli
from tests.reliability.treestate import assert_unchanged, world_state

from encoderlab.model.io import save_model_folder
from encoderlab.train import checkpoint as ckpt


@pytest.fixture(scope="module")
def w(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("hostile_pretrain")
    (root / "run.yaml").write_text(RUN)
    return root


def pretrain(w: Path, out: Path, *extra, capsys) -> tuple[int, str]:
    return cli(["pretrain", "--config", w / "run.yaml", "--out", out, *extra], capsys)


# (id, extra arguments, pattern of the one line): each refused before anything is written.
REFUSED_BEFORE_WRITING = [
    ("freeze-not-a-spec", "--set phases.0.freeze=abc", r"freeze spec 'abc' is not valid; write e.g. 0-7"),
    ("freeze-out-of-range", "--set phases.0.freeze=0-99", r"freeze spec '0-99': layer 4 is out of range"),
    ("lr-inf", "--set optim.lr=inf", r"optim.lr must be a finite number > 0, got inf"),
    ("lr-nan", "--set optim.lr=nan", r"optim.lr must be a finite number > 0, got nan"),
    (
        "betas-nan",
        "--set optim.betas.0=nan",
        r"optim.betas must be two numbers in \[0, 1\), got \(nan, 0.95\)",
    ),
    ("weight-decay-nan", "--set optim.weight_decay=nan", r"optim.weight_decay must be a finite number >= 0"),
    (
        "lr-past-one",
        "--set optim.lr=1e38",
        r"optim.lr must be at most 1 \(AdamW moves each weight by about the LR per step\), got 1e\+38",
    ),
    ("eps-past-float32", "--set optim.eps=1e300", r"optim.eps must be at most 3.4e\+38 \(float32's largest"),
    (
        "weight-decay-flips-weights",
        "--set optim.weight_decay=1e38",
        r"optim.weight_decay x optim.lr must be at most 1 with optim.kind=adamw \(each step multiplies the "
        r"weights by 1 - lr x weight_decay at the peak LR\), got weight_decay=1e\+38",
    ),
    (
        "clip-nan",
        "--set optim.clip=nan",
        r"optim.clip must be a finite number >= 0 \(0: no clipping\), got nan",
    ),
    ("until-step-negative", "--until-step -1", r"--until-step must be >= 1 .*got -1"),
    ("until-step-zero", "--until-step 0", r"--until-step must be >= 1 .*got 0"),
    (
        "synthetic-vocab-too-small",
        "--set data.synthetic_vocab=5",
        r"data.synthetic_vocab must be at least 6 \(5 special ids and a token to draw\), got 5",
    ),
    ("data-seed-negative", "--set data.seed=-1", r"data.seed must be >= 0, got -1; e.g. --set data.seed=0"),
    ("max-bad-steps-negative", "--set max_bad_steps=-1", r"max_bad_steps must be >= 0, got -1"),
    ("peak-tflops-nan", "--set peak_tflops=nan", r"peak_tflops must be a finite number >= 0 .*got nan"),
    (
        "data-step-offset-overflow",
        "--set data.step_offset=99999999999999999999999",
        r"data.step_offset must be below 4611686018427387902 for this run \(2 steps of 2 rows, counted in "
        r"int64\), got 99999999999999999999999; set it to the base run's step count",
    ),
    (
        "data-seed-too-big",
        "--set data.seed=99999999999999999999",
        r"data.seed must be below 18446688733643 on synthetic data \(a row's generator takes seed x 1000003 "
        r"\+ row, below 2\*\*64\), got 99999999999999999999; e.g. --set data.seed=0",
    ),
    (
        "keep-steps-outside-the-run",
        "--set checkpoint.keep_steps=[0,1,99]",
        r"checkpoint.keep_steps \[0, 99\] lie outside this run's steps 1-2, so no checkpoint would be kept "
        r"there; give steps of the run",
    ),
    ("seed-negative", "--set seed=-1", r"seed must be >= 0, got -1; e.g. --set seed=0"),
    ("seed-far-below-zero", "--set seed=-99999999999999999999999", r"seed must be >= 0, got -9+; e.g."),
    (
        "mlm-masks-nothing",
        '--set phases.0.objective={"type":"mlm","mask_ratio":0.01}',
        r"phase 0-mlm1: mask_ratio 0.01 of a 16-token row rounds to 0 positions, so exact masking predicts "
        r"nothing; raise the mask_ratio or layout.seq_len, or use selection: bernoulli",
    ),
    (
        "clm-one-token-rows",
        "--set layout.seq_len=1",
        r"phase 0-clm: a 1-token row has no next token to predict, so CLM trains nothing; set "
        r"layout.seq_len to 2 or more",
    ),
]


@pytest.mark.parametrize(
    "extra,pattern", [c[1:] for c in REFUSED_BEFORE_WRITING], ids=[c[0] for c in REFUSED_BEFORE_WRITING]
)
def test_refused_runs_leave_nothing_and_a_retry_runs(w, tmp_path, capsys, monkeypatch, extra, pattern):
    out = tmp_path / "new"
    monkeypatch.chdir(tmp_path)
    before = world_state(tmp_path, w)  # --out's parent, the working folder, the caches
    code, err = pretrain(w, out, *extra.split(), capsys=capsys)
    assert_one_line(code, err, pattern)
    assert_unchanged(before)
    code, err = pretrain(w, out, capsys=capsys)
    assert code == 0, err


def test_resume_with_nothing_to_resume_says_so_and_starts(w, tmp_path, capsys):
    code, err = pretrain(w, tmp_path / "new", "--resume", capsys=capsys)
    assert code == 0, err
    notes = [line for line in err.strip().splitlines() if "synthetic tokens" not in line]
    assert notes == [
        f"encoderlab: note: --resume: {tmp_path / 'new'} holds no run to resume; starting a new one"
    ]
    assert (tmp_path / "new" / "final").is_dir()


def test_foreign_folder_is_refused_and_untouched(w, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the working folder is one a refusal may not change
    foreign = tmp_path / "foreign"
    (foreign / "final").mkdir(parents=True)
    (foreign / "metrics.jsonl").write_text('{"mine": true}\n')
    (foreign / "final" / "keep.txt").write_text("keep me")
    before = world_state(foreign, tmp_path)
    code, err = pretrain(w, foreign, capsys=capsys)
    assert_one_line(code, err, r"--out .*foreign is a non-empty folder that encoderlab did not create")
    assert_unchanged(before)


def test_legacy_run_folder_without_the_marker_still_resumes(w, tmp_path, capsys):
    run = tmp_path / "run"
    assert pretrain(w, run, "--until-step", "1", capsys=capsys)[0] == 0
    (run / ".encoderlab.json").unlink()  # as written before the marker existed
    code, err = pretrain(w, run, "--resume", capsys=capsys)
    assert code == 0, err
    assert (run / "final" / "model.safetensors").is_file()


def test_two_pretrains_on_one_folder_at_once_one_is_refused(w, tmp_path, capsys, monkeypatch):
    """The second run starts when the first has checked the folder and is about to write it."""
    from encoderlab.train.trainer import Trainer

    run, second = tmp_path / "run", {}
    real = Trainer._write_run_files

    def racing(self):
        if "result" not in second:
            second["result"] = None  # the second run's own call to this goes straight through
            second["result"] = pretrain(w, run, "--set", "optim.lr=0.001", capsys=capsys)
        return real(self)

    monkeypatch.setattr(Trainer, "_write_run_files", racing)
    first = pretrain(w, run, capsys=capsys)
    codes = sorted([first[0], second["result"][0]])
    assert codes == [0, 2], (first, second)
    refused = first if first[0] else second["result"]
    assert_one_line(refused[0], refused[1], r"(is in use by pretrain|already holds a run)")
    steps = [json.loads(line)["step"] for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert steps == [1, 2]  # one run's lines, not two interleaved
    assert "0.0005" in (run / "config.yaml").read_text()  # the first run's, the one that trained


@pytest.mark.slow
def test_two_pretrain_processes_started_together_on_one_folder(w, tmp_path):
    """The issue's case as it happened: two processes, not a simulated race. Whatever the timing,
    exactly one trains (the other meets the lock or the finished run) and the folder holds one run."""
    import os
    import subprocess
    import sys

    run = tmp_path / "run"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "OMP_NUM_THREADS": "1"}
    argv = [
        sys.executable,
        "-m",
        "encoderlab.cli",
        "pretrain",
        "--config",
        str(w / "run.yaml"),
        "--out",
        str(run),
    ]
    procs = [
        subprocess.Popen(
            [*argv, "--set", f"optim.lr={lr}"],
            env=env,
            stderr=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            text=True,
        )
        for lr in ("0.0005", "0.001")
    ]
    done = [(p.wait(timeout=600), p.stderr.read()) for p in procs]
    assert sorted(code for code, _ in done) == [0, 2], done
    refused = next(err for code, err in done if code == 2)
    assert_one_line(2, refused, r"(is in use by pretrain|already holds a run)")
    steps = [json.loads(line)["step"] for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert steps == [1, 2]
    winner = ("0.0005", "0.001")[[code for code, _ in done].index(0)]
    assert f"lr: {winner}" in (run / "config.yaml").read_text()


def test_resume_without_config_yaml_checks_the_checkpoints_config(w, tmp_path, capsys):
    run = tmp_path / "run"
    assert pretrain(w, run, "--until-step", "1", capsys=capsys)[0] == 0
    (run / "config.yaml").unlink()
    code, err = pretrain(w, run, "--resume", "--set", "optim.lr=0.5", capsys=capsys)
    assert_one_line(code, err, r"refusing to resume .* with a changed config \(optim.lr: 0.0005 -> 0.5\)")
    assert pretrain(w, run, "--resume", capsys=capsys)[0] == 0  # the original settings resume


def test_out_inside_an_init_model_named_by_hub_id_is_refused(w, tmp_path, capsys, monkeypatch):
    """`init=OWNER/NAME` reads the model's mirror folder (an asset name: its cache folder), which the
    overlap check missed: it looked only at paths, so the run trained into the model's folder."""
    monkeypatch.chdir(tmp_path)  # the working folder is one a refusal may not change
    tok = make_tokenizer(vocabulary_texts())
    model = tmp_path / "mirror" / "someone" / "enc"
    save_model_folder(tiny_model(len(tok)), model, tok)
    monkeypatch.setenv("ENCODERLAB_HUB_MODELS", str(tmp_path / "mirror"))
    before = world_state(tmp_path / "mirror", tmp_path)
    code, err = pretrain(
        w, model / "run", "--set", "model.init=someone/enc", "model.load=weights", capsys=capsys
    )
    assert_one_line(
        code, err, r"--out .*enc/run is, contains or lies inside the source .*someone/enc; writing"
    )
    assert_unchanged(before)
    assert not (model / "run").exists()


def test_a_moved_run_resumes_without_force(w, tmp_path, capsys):
    """Its saved `out` is the old place: "refusing to resume ... (out: OLD -> NEW); rerun with the
    original settings or pass --force" was a fix nobody could follow."""
    run = tmp_path / "moved"
    assert pretrain(w, tmp_path / "run", "--until-step", "1", capsys=capsys)[0] == 0
    (tmp_path / "run").rename(run)
    code, err = pretrain(w, run, "--resume", capsys=capsys)
    assert code == 0, err
    assert ckpt.complete_checkpoints(run)[-1] == 2 and str(run) in (run / "config.yaml").read_text()
    code, err = pretrain(w, run, "--resume", "--set", "optim.lr=0.5", capsys=capsys)
    assert_one_line(code, err, r"changed config \(optim.lr: 0.0005 -> 0.5\)")  # other changes still count


def test_a_run_resumes_with_another_progress_bar_sinks_or_peak_without_force(w, tmp_path, capsys):
    """Started with its bar (progress: false in run.yaml here), resumed with another: was "refusing to
    resume RUN with a changed config (progress: False -> True); ... or pass --force"."""
    run = tmp_path / "run"
    assert pretrain(w, run, "--until-step", "1", capsys=capsys)[0] == 0
    code, err = pretrain(w, run, "--resume", "--set", "progress=true", "peak_tflops=2.0", capsys=capsys)
    assert code == 0, err
    assert ckpt.complete_checkpoints(run)[-1] == 2


def test_corrupt_state_json_is_one_line(w, tmp_path, capsys):
    run = tmp_path / "run"
    assert pretrain(w, run, "--until-step", "1", capsys=capsys)[0] == 0
    state = ckpt.checkpoint_dir(run, 1) / "state.json"
    state.write_text('{"progress": {"step": 1, "tok')
    code, err = pretrain(w, run, "--resume", capsys=capsys)
    assert_one_line(code, err, r"state.json is corrupt .*delete .*step_0000001 to resume from the one before")


@pytest.mark.parametrize(
    "progress,named",
    [
        ({"step": "x"}, r"progress.step is 'x'"),
        ({"step": 1, "skipped": 3}, r"progress.skipped is 3, not a list"),
    ],
)
def test_a_state_json_counter_of_the_wrong_type_is_one_line(
    w, tmp_path, capsys, progress, named, monkeypatch
):
    """JSON of the right shape with a text step, or a number for the skipped steps: was a TypeError
    traceback when the resume compared the step with the run's length."""
    monkeypatch.chdir(tmp_path)  # the working folder is one a refusal may not change
    run = tmp_path / "run"
    assert pretrain(w, run, "--until-step", "1", capsys=capsys)[0] == 0
    (ckpt.checkpoint_dir(run, 1) / "state.json").write_text(json.dumps({"progress": progress}))
    before = world_state(run, tmp_path)
    code, err = pretrain(w, run, "--resume", capsys=capsys)
    assert_one_line(
        code, err, rf"state.json is corrupt \(TypeError: {named}.*\); delete .*step_0000001 to resume"
    )
    assert_unchanged(before)


def test_until_step_that_is_not_ahead_of_the_run_is_refused(w, tmp_path, capsys):
    run = tmp_path / "run"
    assert pretrain(w, run, "--until-step", "1", capsys=capsys)[0] == 0
    code, err = pretrain(w, run, "--resume", "--until-step", "1", capsys=capsys)
    assert_one_line(code, err, r"--until-step 1 is not after step 1, where .*run already is")


def test_a_forced_resume_past_the_shortened_run_is_refused_and_changes_nothing(
    w, tmp_path, capsys, monkeypatch
):
    """A run cut to 1 step resumed with --force from its step-2 checkpoint saved that step-2 model as the
    1-step run's `final`, without validation or a word."""
    monkeypatch.chdir(tmp_path)  # the working folder is one a refusal may not change
    run = tmp_path / "run"
    assert pretrain(w, run, capsys=capsys)[0] == 0
    shutil.rmtree(run / "final")  # as if killed before its final folder was written
    before = world_state(run, tmp_path)
    code, err = pretrain(w, run, "--resume", "--force", "--set", "phases.0.steps=1", capsys=capsys)
    assert_one_line(
        code,
        err,
        r"--resume: \S*/step_0000002 is past the last step \(1\) of this config; lengthen the phases to 2 "
        r"steps or more, delete the checkpoints after step 1 to resume from an earlier one, or start a new",
    )
    assert_unchanged(before)
    assert not (run / "final").exists()


def test_until_step_output_names_an_existing_model(w, tmp_path, capsys):
    from encoderlab.cli import main

    run = tmp_path / "run"
    capsys.readouterr()
    main(["pretrain", "--config", str(w / "run.yaml"), "--out", str(run), "--until-step", "1"])
    printed = capsys.readouterr().out
    paths = [line.split(": ", 1)[1] for line in printed.splitlines() if line.startswith("model: ")]
    assert paths == [str(ckpt.checkpoint_dir(run, 1) / "model")] and Path(paths[0]).is_dir(), printed
    assert "final" not in printed


def test_a_dense_attention_mask_that_cannot_fit_is_refused(w, tmp_path, capsys, monkeypatch):
    from encoderlab.train import memory
    from encoderlab.train.trainer import Trainer

    monkeypatch.setattr(memory, "available_bytes", lambda device: 16 * memory.GIB)
    monkeypatch.setattr(Trainer, "run", lambda self, *a: pytest.fail("the run started"))
    code, err = pretrain(w, tmp_path / "o", "--set", "layout.seq_len=100000", capsys=capsys)
    assert_one_line(code, err, r"needs at least .*GiB of dense attention mask .*scale.attn_impl=flex")
    assert not (tmp_path / "o").exists()


def test_disk_full_in_safetensors_is_exit_3(w, tmp_path, capsys, monkeypatch):
    """safetensors reports a full disk as SafetensorError, not OSError (message as seen on a full tmpfs)."""
    from safetensors import SafetensorError

    from encoderlab.model import io as model_io

    real, calls = model_io.save_file, {"n": 0}

    def full_disk(tensors, filename, *a, **k):
        calls["n"] += 1
        if calls["n"] == 2:  # the checkpoint of step 2
            raise SafetensorError("Error while serializing: I/O error: No space left on device (os error 28)")
        return real(tensors, filename, *a, **k)

    monkeypatch.setattr(model_io, "save_file", full_disk)
    run = tmp_path / "run"
    code, err = pretrain(w, run, capsys=capsys)
    assert_one_line(
        code,
        err,
        r"disk full while writing .*step_0000002\.tmp.*; free space and rerun with --resume \(completed work is "
        r"kept\)$",  # a plain rerun is refused: "already holds a run"
        exit_code=3,
    )
    assert ckpt.complete_checkpoints(run) == [1]
    monkeypatch.setattr(model_io, "save_file", real)
    assert pretrain(w, run, "--resume", capsys=capsys)[0] == 0


# ---- prepared data: token ids and tokenizers ----------------------------------------------------


@pytest.fixture(scope="module")
def prepared(w, tmp_path_factory) -> dict[str, Path]:
    """Data prepared with tokenizer A, and a model folder that ships tokenizer B (more rows than A)."""
    from encoderlab.cli import main

    root = tmp_path_factory.mktemp("prepared")
    tok_a = make_tokenizer(vocabulary_texts())
    tok_a.save_pretrained(root / "tok_a")
    corpus = root / "corpus.jsonl"
    corpus.write_text(
        "".join(json.dumps({"id": str(i), "text": t}) + "\n" for i, t in enumerate(vocabulary_texts()))
    )
    main(["data", "prepare", "--source", str(corpus), "--tokenizer", str(root / "tok_a"), "--out", str(root / "data"),
          "--decontaminate", "none", "--workers", "1"])  # fmt: skip
    tok_b = make_tokenizer(["zebra quantum violin harbour " * 40])
    save_model_folder(tiny_model(len(tok_a) + 8), root / "model_b", tok_b)
    save_model_folder(tiny_model(len(tok_a)), root / "model_a", tok_a)
    return {
        "data": root / "data",
        "model_b": root / "model_b",
        "model_a": root / "model_a",
        "vocab": len(tok_a),
    }


def test_resume_on_data_prepared_again_with_another_tokenizer_is_refused(w, tmp_path, capsys, monkeypatch):
    """The data folder prepared again with another tokenizer of the same size: the resume trained on,
    on ids that now mean other words, without a word."""
    from encoderlab.cli import main

    monkeypatch.chdir(tmp_path)  # the working folder is one a refusal may not change
    texts = vocabulary_texts()
    for name, words in (("a", texts), ("b", [" ".join(t.split()[::-1]).upper() + " zq xv" for t in texts])):
        (tmp_path / f"{name}.jsonl").write_text("".join(json.dumps({"text": t}) + "\n" for t in words * 4))
        main(["data", "tokenizer", "--source", str(tmp_path / f"{name}.jsonl"), "--vocab-size", "300",
              "--out", str(tmp_path / f"tok_{name}")])  # fmt: skip
    data, run = tmp_path / "data", tmp_path / "run"
    for name in ("a", "b"):
        shutil.rmtree(data, ignore_errors=True)
        main(["data", "prepare", "--source", str(tmp_path / "a.jsonl"), "--tokenizer", str(tmp_path / f"tok_{name}"),
              "--out", str(data), "--decontaminate", "none", "--workers", "1"])  # fmt: skip
        if name == "a":
            assert pretrain(w, run, "--set", f"data.path={data}", "--until-step", "1", capsys=capsys)[0] == 0
    before = world_state(run, tmp_path)
    code, err = pretrain(w, run, "--resume", "--set", f"data.path={data}", capsys=capsys)
    assert_one_line(
        code,
        err,
        r"step_0000001 was trained with tokenizer \w{12}, but data.path \S+ now gives tokenizer \w{12} "
        r"\(prepared again\?\); resume on the data the run started with, or start a new run folder",
    )
    assert_unchanged(before)


CPT = "--recipe cpt-mlm --param seq_len=16 global_batch=2 micro_batch_size=2 steps=2 warmup=0 decay=1 checkpoint_every=1"


def test_init_model_with_another_tokenizer_is_refused_naming_both_hashes(prepared, tmp_path, capsys):
    from encoderlab.data.tokenizer import load_tokenizer, tokenizer_hash

    want = json.loads((prepared["data"] / "meta.json").read_text())["tokenizer"]["hash"]
    got = tokenizer_hash(load_tokenizer(str(prepared["model_b"])))
    argv = [*CPT.split(), f"init={prepared['model_b']}", f"data={prepared['data']}", "--set", "device=cpu"]
    code, err = cli(["pretrain", *argv, "--out", tmp_path / "o"], capsys)
    assert_one_line(code, err, rf"tokenizer {want[:12]}.* but the init model .*tokenizer {got[:12]}")
    assert not (tmp_path / "o").exists()
    argv = [*CPT.split(), f"init={prepared['model_a']}", f"data={prepared['data']}", "--set", "device=cpu"]
    # a given peak: measuring a CPU's bf16 peak (cpt-mlm's precision) takes seconds; the duration check still runs
    argv += ["--set", "peak_tflops=1"]
    assert cli(["pretrain", *argv, "--set", "progress=false", "--out", tmp_path / "ok"], capsys)[0] == 0


# ---- checkpoints are data, never code (the API-level tests are tests/train/test_checkpoint_security.py)


def test_a_planted_pickle_runs_nothing_on_resume_or_as_an_init_model(w, tmp_path, capsys):
    """A `.metadata` pickle whose `__reduce__` writes a file, where torch.distributed.checkpoint's
    reader looked for it: the old code ran it on `--resume` and on `init=CKPT load=full`."""
    from tests.train.helpers import plant_malicious_checkpoint

    run, marker = tmp_path / "run", tmp_path / "pwned"
    assert pretrain(w, run, "--until-step", "1", capsys=capsys)[0] == 0
    step = ckpt.checkpoint_dir(run, 1)
    plant_malicious_checkpoint(step, marker)
    code, err = pretrain(w, run, "--resume", capsys=capsys)
    assert code == 0 and not marker.exists(), err
    code, err = pretrain(
        w, tmp_path / "cont", "--set", f"model.init={step}", "model.load=full", capsys=capsys
    )
    assert code == 0 and not marker.exists(), err


@pytest.mark.parametrize("damage", ["config-missing", "config-truncated"])
def test_a_checkpoint_with_a_damaged_model_config_is_one_line(w, tmp_path, capsys, damage, monkeypatch):
    """The checkpoint's model/config.json deleted or cut short (a bad copy, a hand edit): was a
    FileNotFoundError or JSONDecodeError traceback on --resume."""
    monkeypatch.chdir(tmp_path)  # the working folder is one a refusal may not change
    run = tmp_path / "run"
    assert pretrain(w, run, "--until-step", "1", capsys=capsys)[0] == 0
    config = ckpt.checkpoint_dir(run, 1) / "model" / "config.json"
    if damage == "config-missing":
        config.unlink()
        pattern = (
            r"step_0000001/model holds no model \(no config.json\); restore it from a copy, or for a run's"
        )
    else:
        config.write_text(config.read_text()[:30])
        pattern = r"cannot read .*step_0000001/model/config.json \(JSONDecodeError: .*\); the file is corrupt: restore"
    before = world_state(run, tmp_path)
    code, err = pretrain(w, run, "--resume", capsys=capsys)
    assert_one_line(code, err, pattern + r".*delete that checkpoint folder and --resume from the one before")
    assert_unchanged(before)


@pytest.mark.parametrize("damage", ["old-layout", "truncated"])
def test_a_checkpoint_without_readable_train_state_is_one_line(w, tmp_path, capsys, damage, monkeypatch):
    """An old checkpoint (DCP folder, pickled metadata) is refused unread; a truncated train state
    (was: a truncated .distcp, a traceback) names the file and the way on."""
    from tests.train.helpers import plant_malicious_checkpoint

    monkeypatch.chdir(tmp_path)  # the working folder is one a refusal may not change
    run = tmp_path / "run"
    assert pretrain(w, run, "--until-step", "1", capsys=capsys)[0] == 0
    step = ckpt.checkpoint_dir(run, 1)
    state = step / ckpt.TRAIN_STATE
    if damage == "old-layout":
        state.unlink()
        plant_malicious_checkpoint(step, tmp_path / "pwned")
        pattern = r"has no train_state.safetensors \(.*never read because its metadata is a pickle\)"
    else:
        state.write_bytes(state.read_bytes()[:100])
        pattern = r"train_state.safetensors is damaged \(.*\); resume from an earlier checkpoint"
    before = world_state(run, tmp_path)
    code, err = pretrain(w, run, "--resume", capsys=capsys)
    assert_one_line(code, err, pattern)
    assert_unchanged(before)
    assert not (tmp_path / "pwned").exists()
