"""`analyze cka` on broken or edge inputs: one line naming the problem, nothing written."""

from __future__ import annotations

import pytest
import torch
from analysis_helpers import make_model, make_texts, make_tokenizer

from encoderlab.cli import main
from encoderlab.model.io import save_model_folder


def test_a_model_with_nan_weights_is_refused_not_read_as_constant_features(tmp_path, capsys):
    """NaN hidden states (a diverged checkpoint, or float16 overflow) gave NaN CKA in every layer from the
    broken one on, and the low-layer sentence blamed features constant across the texts."""
    tok = make_tokenizer()
    broken = make_model(0)
    with torch.no_grad():
        broken.layers[1].mlp.down_proj.weight.fill_(float("nan"))
    a = save_model_folder(broken, tmp_path / "a", tokenizer=tok)
    b = save_model_folder(make_model(1), tmp_path / "b", tokenizer=tok)
    twin = save_model_folder(make_model(2), tmp_path / "b2", tokenizer=tok)
    (tmp_path / "texts.txt").write_text("\n".join(make_texts(60)) + "\n")
    argv = ["analyze", "cka", str(a), str(b), "--baseline", str(twin), "--n", "50"]
    argv += ["--texts", str(tmp_path / "texts.txt"), "--out", str(tmp_path / "o")]
    with pytest.raises(SystemExit) as exc:
        main(argv)
    err = capsys.readouterr().err  # the progress bars of the forward passes, then the one line
    assert exc.value.code == 2 and "Traceback" not in err, err
    line = err.strip().splitlines()[-1]
    assert f"model A ({a}) gives hidden states that are not finite (NaN or inf) in layers 1-2" in line
    assert not (tmp_path / "o").exists()
