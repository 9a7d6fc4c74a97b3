"""A sweep of bad inputs over every command, beside the catalogue (docs/errors.md): missing, empty and
malformed files of each kind a command reads (YAML, a TOML or JSON file given as a study, CSV, JSONL),
a file where a folder must be, someone else's folder as --out, a path through a file, flags that
exclude each other. None of these has a row of its own (the catalogue holds one per kind of line);
each must still be refused as the catalogue's are (`assert_refused_untouched`): exit 2, one
`encoderlab: error:` line (a study file's problems indented below it), no traceback, and nothing
changed or made in the world, the working folder or ENCODERLAB_HOME, at any depth. The hub is
offline (HF_HUB_OFFLINE=1): nothing may download.
"""

from __future__ import annotations

import pytest
from tests.reliability.test_hostile_arguments import assert_refused_untouched, model_folder, write_texts

FOREIGN = r"--out \S*/foreign is a non-empty folder that encoderlab did not create; nothing in it was changed"
A_FILE = r"--out \S*/a_file is a file, not a folder; choose another --out$"
THROUGH = r"--out \S*/a_file/x cannot be created: \S*/a_file is a file; choose another --out$"

# (id, argv with {w} for the shared folder, pattern of the first line)
SWEEP = [
    ("pretrain-config-toml", "pretrain --config {w}/bad.toml --out {w}/o", r"bad.toml holds 'name = .*not a mapping"),
    ("pretrain-recipe-and-config", "pretrain --recipe smoke-mlm --config {w}/empty.yaml --out {w}/o", r"give exactly one of --recipe NAME or --config FILE"),
    ("pretrain-no-out", "pretrain --recipe smoke-mlm", r"no run folder given; pass --out DIR"),
    ("pretrain-over-foreign", "pretrain --recipe smoke-mlm --out {w}/foreign", FOREIGN),
    ("pretrain-out-through-a-file", "pretrain --recipe smoke-mlm --out {w}/a_file/x", THROUGH),
    ("pretrain-data-is-a-file", "pretrain --recipe smoke-mlm --param data={w}/texts.txt --out {w}/o", r"data.path \S*/texts.txt is not a folder; run `encoderlab data prepare` first$"),
    ("pretrain-device-unknown", "pretrain --recipe smoke-mlm --set device=tpu --out {w}/o", r"device: must be one of 'auto', 'cpu', 'cuda', got 'tpu'$"),
    ("pretrain-lr-nan", "pretrain --recipe smoke-mlm --set optim.lr=nan --out {w}/o", r"optim.lr must be a finite number > 0, got nan"),
    ("pretrain-set-without-equals", "pretrain --recipe smoke-mlm --set 5 --out {w}/o", r"override '5' must look like field.path=value$"),
    ("recipes-extra-argument", "recipes extra", r"unrecognized arguments: extra; see: encoderlab recipes --help$"),
    ("assets-names-and-all", "assets fetch nope --all", r"give asset names or --all, not both$"),
    ("export-a-text-file", "export {w}/texts.txt --out {w}/x", r"texts.txt is neither an encoderlab model/run/checkpoint folder nor a Hugging Face folder"),
    ("export-out-a-file", "export {w}/model --out {w}/a_file", A_FILE),
    ("export-eval-not-a-summary", "export {w}/model --out {w}/x --eval {w}/bad.json", r"--eval \S*/bad.json: no readable summary.json of `encoderlab eval`"),
    ("eval-task-file-json-cut", "eval {w}/model --task-file {w}/bad.json --out {w}/e", r"task file \S*/bad.json is not valid YAML at line 1"),
    ("eval-task-folder-empty", "eval {w}/model --task-file {w}/foreign --out {w}/e", r"task folder \S*/foreign holds no .yaml or .yml task files; put each task's YAML in it .*--task-file a.yaml b.yaml, or a study file's eval: \{task_files: \[a.yaml, b.yaml\]\}$"),
    ("eval-out-in-model", "eval {w}/model --tasks boolq --out {w}/model/e", r"lies inside the source \S*/model"),
    ("tokenizer-jsonl-cut", "data tokenizer --source {w}/bad.json --out {w}/t", r"bad.json:1 is not valid JSON .*--on-error skip"),
    ("tokenizer-out-a-file", "data tokenizer --source {w}/texts.txt --out {w}/texts.txt", r"--out \S*/texts.txt is a file, not a folder"),
    ("tokenizer-max-docs-zero", "data tokenizer --source {w}/texts.txt --max-docs 0 --out {w}/t", r"--max-docs must be >= 1, got 0"),
    ("tokenizer-source-option-no-value", "data tokenizer --source {w}/texts.txt#weight --out {w}/t", r"source option 'weight' in .* must look like key=value$"),
    ("tokenizer-source-twice", "data tokenizer --source {w}/texts.txt {w}/texts.txt --out {w}/t", r"both read \S*/texts.txt"),
    ("prepare-tokenizer-a-text-file", "data prepare --source {w}/texts.txt --tokenizer {w}/texts.txt --out {w}/p", r"texts.txt holds no tokenizer files"),
    ("prepare-hub-offline", "data prepare --source {w}/texts.txt --tokenizer org/name --out {w}/p", r"tokenizer 'org/name' is not a folder or asset, and the hub is offline"),
    ("prepare-val-fraction-nan", "data prepare --source {w}/texts.txt --tokenizer {w}/model --val-fraction nan --out {w}/p", r"--val-fraction must be in \[0, 1\)"),
    ("prepare-max-docs-too-large", "data prepare --source {w}/texts.txt --tokenizer {w}/model --max-docs 1000000000000000000000 --out {w}/p", r"--max-docs must be at most \d+, got 1000000000000000000000; leave it out to read everything$"),
    ("prepare-shard-out-of-range", "data prepare --source {w}/texts.txt --tokenizer {w}/model --shard 3/2 --out {w}/p", r"shard 3/2 is out of range"),
    ("prepare-over-model", "data prepare --source {w}/texts.txt --tokenizer {w}/model --out {w}/model", r"--out \S*/model is a non-empty folder that encoderlab did not create"),
    ("merge-no-parts", "data merge --out {w}/foreign", r"no parts to merge: \S*/foreign.shards does not exist"),
    ("inspect-a-file", "data inspect {w}/a_file", r"a_file is not prepared data"),
    ("bench-data-empty", "bench data --source {w}/empty.txt", r"empty.txt has no non-empty document"),
    ("bench-table-missing", "bench table {w}/nope.json", r"no such file or folder: \S*/nope.json$"),
    ("bench-table-cut-json", "bench table {w}/bad.json", r"bad.json is not a `bench train --out` result"),
    ("bench-table-folder-without-results", "bench table {w}/foreign", r"no \*.json in \S*/foreign"),
    ("study-file-toml", "study run {w}/bad.toml --out {w}/s", r"study file \S*/bad.toml holds 'name = .*not a mapping"),
    ("study-file-json-cut", "study run {w}/bad.json --out {w}/s", r"study file \S*/bad.json is not valid YAML"),
    ("study-file-a-list", "study plan {w}/study_list.yaml", r"study file \S*/study_list.yaml holds a list"),
    ("study-file-wrong-types", "study run {w}/study_types.yaml --out {w}/s", r"study.name: expected str, got 5"),
    ("study-file-missing-fields", "study run {w}/study_missing.yaml --out {w}/s", r"study: missing fields data, baseline"),
    ("study-file-with-scale", "study run {w}/empty.yaml --scale cpu", r"is a study file, which sets its own scale; drop --scale cpu$"),
    ("study-foreign-folder", "study show {w}/foreign", r"foreign is a folder without study.json, so no study folder"),
    ("study-out-through-a-file", "study run paper1-pfs --out {w}/a_file/x", THROUGH),
    ("study-prepared-not-a-dataset", "study run paper1-pfs --prepared x={w}/nope --out {w}/s", r"--prepared x=\S*/nope: give NAME=DIR"),
    ("study-status-a-file", "study status {w}/a_file", r"a_file is a file, not a study folder"),
    ("advise-empty-csv", "advise {w}/empty.csv --target-flops 1e19 --out {w}/a", r"empty.csv holds no runs; add one row per pretraining run$"),
    ("advise-columns-missing", "advise {w}/ladder_hdr.csv --target-flops 1e19 --out {w}/a", r"ladder_hdr.csv:2: missing columns clm_share"),
    ("advise-jsonl-cut", "advise {w}/bad.jsonl --target-flops 1e19 --out {w}/a", r"bad.jsonl:1: not valid JSON"),
    ("advise-two-targets", "advise {w}/ladder_hdr.csv --target-flops 1e19 --target-size 1e9 --out {w}/a", r"give the target as --target-flops C, or as --target-size N with --target-tokens D$"),
    ("advise-out-a-file", "advise {w}/ladder_hdr.csv --target-flops 1e19 --out {w}/a_file", A_FILE),
    ("cka-texts-empty", "analyze cka {w}/model {w}/model --texts {w}/empty.txt --out {w}/c", r"empty.txt holds no text"),
    ("transplant-layer-out-of-range", "analyze transplant {w}/model {w}/model --layers 99 --out {w}/t", r"layer 99 is out of range"),
    ("transplant-neither-layers-nor-sweep", "analyze transplant {w}/model {w}/model --out {w}/t", r"give exactly one of --layers \(one transplant\) or --sweep \(several\)$"),
    ("probe-jsonl-cut", "analyze probe {w}/model --tasks {w}/bad.jsonl --out {w}/p", r"bad.jsonl:1: not valid JSON"),
    ("curves-sources-not-a-list", "analyze curves {w}/curves_bad.yaml --out {w}/c", r"sources: expected a list, got 5; give a list: \[a, b\] on one line or one '- ' line per item$"),
    ("curves-no-sources", "analyze curves {w}/curves_empty.yaml --out {w}/c", r"lists no sources"),
]  # fmt: skip


@pytest.fixture(scope="module")
def sweep_world(tmp_path_factory):
    """A tiny model folder, texts, someone else's folder and file, and empty or malformed inputs."""
    root = tmp_path_factory.mktemp("refusal-sweep")
    model_folder(root)
    write_texts(root)
    (root / "foreign").mkdir()
    (root / "foreign" / "notes.txt").write_text("mine, not encoderlab's")
    files = {
        "a_file": "a file",
        "empty.yaml": "",
        "empty.txt": "",
        "empty.csv": "",
        "bad.json": '{"name": "x", ',
        "bad.jsonl": "{not json\n",
        "bad.toml": 'name = "x"\n[[runs]]\nname = "a"\n',
        "study_list.yaml": "- a\n- b\n",
        "study_types.yaml": "name: 5\nruns: notalist\n",
        "study_missing.yaml": "name: x\nruns: []\n",
        "ladder_hdr.csv": "a,b\n1,2\n",
        "curves_bad.yaml": "sources: 5\n",
        "curves_empty.yaml": "sources: []\n",
    }
    for name, text in files.items():
        (root / name).write_text(text)
    return root


@pytest.mark.parametrize("case,argv,pattern", SWEEP, ids=[c[0] for c in SWEEP])
def test_bad_input_is_refused_in_one_line_touching_nothing(
    sweep_world, capsys, monkeypatch, case, argv, pattern
):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert_refused_untouched(sweep_world, capsys, monkeypatch, case, argv, pattern)
