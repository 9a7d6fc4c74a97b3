"""The training benchmark compares like with like: same weights, same function, same data ids."""

from __future__ import annotations

import json
import re

import pytest
import torch

from encoderlab.bench.train import TrainBench
from encoderlab.errors import UserError


def test_profile_help_gives_the_number_of_profiled_steps(capsys, monkeypatch):
    """--help named the constant (`PROFILE_STEPS`) instead of saying how many steps are profiled."""
    from encoderlab.bench.train import PROFILE_STEPS
    from encoderlab.cli import main

    monkeypatch.setenv("COLUMNS", "300")
    with pytest.raises(SystemExit):
        main(["bench", "train", "--help"])
    assert f"for {PROFILE_STEPS} more steps" in " ".join(capsys.readouterr().out.replace("│", " ").split())


def test_a_profile_table_goes_into_a_new_folder_and_a_rerun_replaces_only_it(tmp_path, capsys):
    """`--profile` was written unchecked after the measuring: a missing folder was a traceback, and
    any file there was overwritten (issue 20; the refusals are in the hostile-input catalogue)."""
    from encoderlab.bench.train import PROFILE_HEADER, is_profile_table
    from encoderlab.cli import main

    table, result = tmp_path / "new" / "ops.txt", tmp_path / "result.json"
    args = "bench train --size tiny --seq-len 32 --batch 2 --vocab 256 --steps 1 --warmup 0 --no-vs-hf"
    for _ in range(2):  # the second run replaces its own earlier table
        main([*args.split(), "--profile", str(table), "--out", str(result)])
        assert table.read_text().startswith(PROFILE_HEADER) and is_profile_table(table)
    # the result names the table and the profiled step's time; the table names the model's matmuls
    profile = json.loads(result.read_text())["encoderlab"]["profile"]
    assert profile["table"] == str(table) and profile["profiled_step_s"] > 0
    assert "aten::mm" in table.read_text()
    bare = tmp_path / "bare.txt"  # torch's table as written before the header existed
    bare.write_text("-------  ------\n                 Name    Self CPU %\n")
    assert is_profile_table(bare) and not is_profile_table(tmp_path / "new")


def test_results_written_into_a_new_folder_make_one_table_row_each(tmp_path, capsys):
    from encoderlab.cli import main

    out = tmp_path / "new" / "folder"
    for objective in ("mlm", "clm"):
        args = "--size tiny --seq-len 32 --batch 2 --vocab 256 --steps 1 --warmup 1 --no-vs-hf"
        main(
            [
                "bench",
                "train",
                *args.split(),
                "--objective",
                objective,
                "--out",
                str(out / f"{objective}.json"),
            ]
        )
    results = [json.loads((out / f"{o}.json").read_text()) for o in ("clm", "mlm")]
    capsys.readouterr()
    main(["bench", "table", str(out)])
    lines = capsys.readouterr().out.strip().splitlines()
    assert (
        len(lines) == 4
        and lines[0].startswith("| result | size | objective |")
        and set(lines[1]) == {"|", "-"}
    )
    for line, result in zip(lines[2:], results, strict=True):
        cells = [c.strip() for c in line.strip("|").split("|")]
        objective = result["config"]["objective"]
        assert cells[:4] == [objective[:3], "tiny", objective, "2"]  # the file's name first
        assert cells[9] == f"{result['encoderlab']['tokens_per_s']:,.0f}"
        assert cells[10] == f"{result['encoderlab']['mfu']:.1%}"


def test_bench_train_reports_mfu_against_the_given_peak_and_memory():
    from encoderlab.bench.train import TrainBench, bench_train

    result = bench_train(
        TrainBench(
            size="tiny", seq_len=32, batch=2, vocab=256, steps=1, warmup=1, vs_hf=False, peak_tflops=1.0
        )
    )
    assert result["config"]["peak_flops"] == 1e12 and result["config"]["peak_flops_source"] == "given"
    assert set(result) == {"config", "encoderlab", "process_peak_rss_mib"}  # no reference without vs_hf
    ours = result["encoderlab"]
    assert ours["tokens_per_s"] == pytest.approx(2 * 32 / ours["step_s"])
    assert 0 < ours["mfu"] < 1 and result["process_peak_rss_mib"] > 100


def test_mfu_and_tokens_per_s_are_recomputed_from_the_result_file_alone(tmp_path, capsys):
    """A result recorded its MFU but not the FLOPs it divided, so no reader could check or recompute it."""
    from encoderlab.bench.train import bench_train_command

    out = tmp_path / "r.json"
    bench = TrainBench(size="tiny", seq_len=32, batch=2, vocab=256, steps=3, warmup=1, peak_tflops=1.0)
    bench_train_command(bench, out=out)
    result = json.loads(out.read_text())
    c = result["config"]
    for side in ("encoderlab", "transformers"):
        r = result[side]
        assert r["mfu"] == pytest.approx(r["flops_per_step"] / r["step_s"] / c["peak_flops"], rel=1e-12)
        assert r["tokens_per_s"] == pytest.approx(c["tokens_per_step"] / r["step_s"], rel=1e-12)
    assert c["tokens_per_step"] == bench.batch * bench.seq_len


@pytest.mark.parametrize(
    "field,value,message",
    [
        ("seq_len", 0, "--seq-len must be >= 1, got 0"),
        ("batch", -3, "--batch must be >= 1, got -3"),
        ("vocab", 0, "--vocab must be >= 6, got 0"),
    ],
)
def test_sizes_are_refused_under_the_flags_bench_train_has(field, value, message):
    """Were refused as the run config's fields (`layout.micro_batch_size must be >= 1`, `data.synthetic_vocab
    ...; e.g. --set data.synthetic_vocab=512`): flags `bench train` does not take."""
    with pytest.raises(UserError, match=f"^{re.escape(message)}$"):
        TrainBench(**{field: value})


def test_a_mask_ratio_for_clm_is_refused_and_mlm_masks_30_percent_by_default():
    """`bench train --objective clm --mask-ratio 0.3` measured CLM and ignored the ratio without a word."""
    with pytest.raises(UserError) as err:
        TrainBench(objective="clm", mask_ratio=0.3)
    assert str(err.value) == (
        "--mask-ratio 0.3 is an MLM setting, but --objective clm masks nothing; drop --mask-ratio, or use "
        "--objective mlm"
    )
    assert TrainBench().mask_ratio == 0.30 and TrainBench(objective="clm").mask_ratio is None


def test_out_replaces_only_an_earlier_result_never_another_json_file(tmp_path, capsys):
    """Any JSON object was taken for an earlier result: `--out config.json` in a model folder replaced
    the model's config.json with the benchmark's numbers."""
    from encoderlab.bench.train import is_train_result
    from encoderlab.cli import main

    config = tmp_path / "config.json"
    config.write_text('{"a": 1}')
    small = "--size tiny --seq-len 32 --batch 2 --vocab 256 --steps 1 --warmup 0 --no-vs-hf"
    args = ["bench", "train", *small.split(), "--out"]
    with pytest.raises(SystemExit) as exc:
        main([*args, str(config)])
    err = capsys.readouterr().err.strip().splitlines()
    assert exc.value.code == 2 and len(err) == 1, err
    assert err[0].endswith(
        "config.json exists and is not a `bench train` result; nothing was changed: choose another --out"
    )
    assert config.read_text() == '{"a": 1}' and sorted(tmp_path.iterdir()) == [config]
    result = tmp_path / "result.json"
    for _ in range(2):  # the second run replaces the first's result
        main([*args, str(result)])
        assert is_train_result(result)
    assert json.loads(result.read_text())["config"]["size"] == "tiny"


def test_a_run_too_big_for_memory_is_refused_naming_only_bench_trains_flags(monkeypatch):
    """The memory refusal is pretrain's, and suggested `layout.micro_batch_size`, `layout.grad_accum`,
    `scale.activation_checkpointing`, `scale.data_parallel` and `model.size`: `bench train` takes none."""
    from encoderlab.bench.train import TrainBench, bench_train
    from encoderlab.train import memory

    monkeypatch.setattr(memory, "available_bytes", lambda device: 1)
    with pytest.raises(UserError) as exc:
        bench_train(TrainBench(size="tiny", seq_len=32, batch=2, vocab=256, steps=1, warmup=0, vs_hf=False))
    message = str(exc.value)
    assert message.startswith("this run needs at least") and "." not in message.split("; ")[-1]
    assert message.endswith("; lower --batch, lower --seq-len, or pick a smaller --size"), message


def test_the_result_says_which_peak_its_mfu_is_against(monkeypatch):
    """Without --peak-tflops the record said "datasheet or measured matmul" whichever it was, so an MFU of
    a GPU the datasheet table does not know (against a measured matmul) read like one against its
    datasheet."""
    import torch

    from encoderlab.bench.train import TrainBench, bench_train
    from encoderlab.train import flops

    result = bench_train(
        TrainBench(size="nano", seq_len=16, batch=1, vocab=256, steps=1, warmup=0, vs_hf=False)
    )
    assert result["config"]["device"] == "cpu" and result["config"]["peak_flops_source"] == "measured matmul"
    cuda = torch.device("cuda", 0)
    for name, source in (
        ("NVIDIA H100 80GB HBM3", "datasheet H100 (bf16)"),
        ("NVIDIA B300", "measured matmul"),
    ):
        monkeypatch.setattr(torch.cuda, "get_device_name", lambda _device, name=name: name)
        assert flops.peak_flops_source(cuda) == source
    assert flops.peak_flops_source(cuda, override_tflops=2.0) == "given"


@pytest.mark.parametrize("precision,copy", [("fp32", torch.float32), ("bf16", torch.bfloat16)])
def test_the_memory_check_counts_sdpas_float_copy_of_the_dense_mask(monkeypatch, precision, copy):
    """SDPA turns the boolean (B, 1, T, T) mask into an additive one in the compute dtype: with room
    for the boolean mask alone, `bench train --seq-len 100000` passed the check and was a RuntimeError
    traceback from the allocator (80 GB asked) in the first step."""
    from encoderlab.bench.train import FLAGS, _run_config
    from encoderlab.train import memory

    b = TrainBench(size="nano", seq_len=1000, batch=2, vocab=1024, precision=precision)
    entries = b.batch * b.seq_len**2
    need = entries * (1 + torch.empty((), dtype=copy).element_size())
    for have, refused in ((need - 1, True), (need, False)):
        monkeypatch.setattr(memory, "available_bytes", lambda device, have=have: have)
        if refused:
            with pytest.raises(UserError, match="dense attention mask .*lower --batch, or lower --seq-len"):
                memory.check_fits(None, _run_config(b), "cpu", FLAGS)
        else:
            memory.check_fits(None, _run_config(b), "cpu", FLAGS)


def test_device_cuda_without_a_gpu_names_bench_trains_own_flag(monkeypatch):
    """Said "device=cuda but no CUDA device is visible; use device=cpu or auto", a setting `bench train`
    does not take (its flag is --device)."""
    from encoderlab.bench.train import bench_train

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    b = TrainBench(
        size="nano", seq_len=16, batch=1, vocab=1024, steps=1, warmup=0, device="cuda", vs_hf=False
    )
    with pytest.raises(
        UserError, match=r"^--device cuda but no CUDA device is visible; use --device cpu or auto$"
    ):
        bench_train(b)
