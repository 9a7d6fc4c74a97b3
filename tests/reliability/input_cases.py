"""The table of `test_hostile_inputs`: one case per docs/errors.md row of the configs, sources,
output folders, models, evaluation and analyses sections (a declarative table, kept apart so the
tests stay readable)."""

from __future__ import annotations

FOREIGN = r"--out .*foreign is a non-empty folder that encoderlab did not create; nothing in it was changed"

IN_STUDY = r"--out .*study/nodes/\w lies inside the study folder .*study, whose folders are that study's; choose another --out outside it"

# (id, argv with {w} for the shared folder, pattern of the one line, exit code)
CASES = [
    (
        "malformed-yaml",
        "pretrain --config {w}/malformed.yaml --out {w}/o",
        r"malformed.yaml is not valid YAML at line 2, column 10: expected ',' or '\]', but got ':' \(while parsing a "
        r"flow sequence\); fix the syntax$",
    ),
    (
        "non-utf8-yaml",
        "pretrain --config {w}/latin1.yaml --out {w}/o",
        r"latin1.yaml is not UTF-8 text \(byte 0xe9 cannot start or continue a UTF-8 character\); save it as UTF-8, "
        r"e.g. `iconv -f latin1 -t utf-8 latin1.yaml > utf8-latin1.yaml`$",
    ),
    (
        "yaml-key-twice",
        "pretrain --config {w}/twice.yaml --out {w}/o",
        r"config file .*twice.yaml: key 'seed' is given twice \(lines 1 and 2\); keep one",
    ),
    (  # held 4.8 GB after a minute and grew: aliases share a node until something walks them
        "yaml-alias-bomb",
        "pretrain --config {w}/laughs.yaml --out {w}/o",
        r"config file .*laughs.yaml: its aliases \(\*name\) expand it to over 100,000 values; write the values "
        r"out, or use fewer aliases",
    ),
    (  # said "out: expected str, got [[...]]"; a recursive list in a list field never ends
        "yaml-self-alias",
        "pretrain --config {w}/self_alias.yaml --out {w}/o",
        r"config file .*self_alias.yaml: the anchor on line 1 holds an alias to itself; write the value out",
    ),
    (  # was a RecursionError traceback from PyYAML's composer
        "yaml-nested-too-deep",
        "pretrain --config {w}/deep.yaml --out {w}/o",
        r"config file .*deep.yaml: it nests lists or mappings thousands deep; flatten it",
    ),
    (  # were "must hold a mapping of fields, got NoneType" (and "got list"): Python's type, no fix
        "empty-config",
        "pretrain --config {w}/empty.yaml --out {w}/o",
        r"config file .*empty.yaml is empty; write its fields in it, one `name: value` per line",
    ),
    (
        "config-is-a-list",
        "pretrain --config {w}/list.yaml --out {w}/o",
        r"config file .*list.yaml holds a list, not a mapping of fields; write its fields as `name: value` lines",
    ),
    (
        "config-is-a-folder",
        "pretrain --config {w}/a_folder.yaml --out {w}/o",
        r"config file .*a_folder.yaml is a folder; pass the YAML file",
    ),
    ("missing-config", "pretrain --config {w}/nope.yaml --out {w}/o", r"config file .* does not exist"),
    ("wrong-type", "pretrain --config {w}/wrong_type.yaml --out {w}/o", r"seed: expected int, got 'lots'"),
    (
        "list-field-given-one-value",
        "pretrain --recipe smoke-mlm --set sinks=tensorboard --out {w}/o",
        r"sinks: expected a list, got 'tensorboard'; give a list: \[tensorboard\] for this one value, \[a, b\] on "
        r"one line or one '- ' line per item$",
    ),
    (
        "value-field-given-a-list",
        "pretrain --recipe smoke-mlm --set seed=[3] --out {w}/o",
        r"seed: expected int, got the list \[3\]; write 3 without the brackets \(one value, not a list\)$",
    ),
    (  # said "expected a mapping of MLM fields, got 'clm'" (the union's first member) of a CLM phase
        "objective-given-as-a-name",
        "pretrain --recipe smoke-clm --set phases.0.objective=clm --out {w}/o",
        r"phases\[0\].objective: expected a mapping with a `type` \(clm, mlm\), got 'clm'; write it as "
        r"\{type: clm\} \(any other field of it beside `type`\)$",
    ),
    (
        "section-given-a-value",
        "pretrain --recipe smoke-mlm --set layout=64 --out {w}/o",
        r"layout: expected a mapping of BatchLayout fields, got 64; give one 'name: value' line per entry below "
        r"it, or \{name: value\} on one line \(fields: grad_accum, micro_batch_size, seq_len, world_size\)$",
    ),
    (
        "unknown-field",
        "pretrain --config {w}/unknown_field.yaml --out {w}/o",
        r"unknown field layot \(layout\?\); valid:",
    ),
    (  # was dropped without a word from every mapping (schedule: {type: cosine} ran a constant schedule)
        "type-is-no-field",
        "pretrain --config {w}/type_field.yaml --out {w}/o",
        r"type_field.yaml: unknown field type; valid: checkpoint,",
    ),
    ("unknown-recipe", "pretrain --recipe nope --out {w}/o", r"unknown recipe 'nope'; valid: cpt-mlm"),
    (
        "unknown-override",
        "pretrain --recipe smoke-mlm --set nope.x=1 --out {w}/o",
        r"no field 'nope'; valid:",
    ),
    (  # a path on through a value: was a TypeError traceback ('int' object does not support item assignment)
        "override-through-a-value",
        "pretrain --recipe smoke-mlm --set layout.seq_len.x=1 --out {w}/o",
        r"override 'layout.seq_len.x': layout.seq_len is a value \(\d+\), not a section with fields; set it as layout.seq_len=VALUE",
    ),
    (
        "unknown-param",
        "pretrain --recipe smoke-mlm --param nope=1 --out {w}/o",
        r"no parameter 'nope'; valid:",
    ),
    (  # said "cpt-mlm.mask_token: expected str, got ['MASK']": YAML's list, no fix named
        "param-text-read-as-list",
        "pretrain --recipe cpt-mlm --param mask_token=[MASK] --out {w}/o",
        r"cpt-mlm.mask_token: expected str, got the list \[MASK\] \(YAML reads .*\); quote it inside the shell's "
        r"quotes to give it as text: mask_token=\"'\[MASK\]'\"$",
    ),
    (  # `--param data=$DATA` with DATA unset: was "smoke-mlm.data: expected str, got None"
        "empty-param-value",
        "pretrain --recipe smoke-mlm --param data= --out {w}/o",
        r"data.path is empty; set it to a prepared data folder \(or 'synthetic'\)",
    ),
    (
        "bad-param-type",
        "pretrain --recipe smoke-mlm --param steps=abc --out {w}/o",
        r"expected int, got 'abc'",
    ),
    (
        "zero-length",
        "pretrain --recipe smoke-mlm --set layout.seq_len=0 --out {w}/o",
        r"seq_len must be >= 1",
    ),
    (
        "negative-steps",
        "pretrain --recipe smoke-mlm --set phases.0.steps=-5 --out {w}/o",
        r"steps and tokens must be >= 0 \(got steps=-5, tokens=0\); give one positive length, e\.g\. steps=1000",
    ),
    (  # named no fix
        "schedule-warmup-negative",
        "pretrain --recipe smoke-mlm --set phases.0.schedule.warmup=-1 --out {w}/o",
        r"schedule warmup and decay must be >= 0, got -1 and 8; give 0 or more updates \(0: none\), e\.g\. warmup=100",
    ),
    (  # said "got CheckpointConfig(every=10, keep_last=0, keep_steps=())": Python's repr, no fix
        "checkpoint-keep-last-zero",
        "pretrain --recipe smoke-mlm --set checkpoint.keep_last=0 --out {w}/o",
        r"checkpoint.keep_last must be >= 1 \(--resume continues from the newest\), got 0; "
        r"e.g. --set checkpoint.keep_last=2$",
    ),
    (
        "checkpoint-every-negative",
        "pretrain --recipe smoke-mlm --set checkpoint.every=-1 --out {w}/o",
        r"checkpoint.every must be >= 0 \(0: only at phase ends\), got -1; e.g. --set checkpoint.every=1000$",
    ),
    (
        "unknown-size",
        "pretrain --recipe smoke-mlm --set model.size=huge --out {w}/o",
        r"unknown model size 'huge'",
    ),
    (
        "cannot-fit-in-memory",
        "pretrain --recipe smoke-mlm --set model.size=1b layout.micro_batch_size=512 layout.seq_len=8192 --out {w}/o",
        r"needs at least .* GiB .* is available; lower layout.micro_batch_size",
    ),
    (
        "synthetic-docs-too-short",
        "pretrain --recipe smoke-mlm --set data.synthetic_doc_len=2 --out {w}/o",
        r"data.synthetic_doc_len must be at least 5 .*got 2; use 5 or more",
    ),
    (
        "validation-rows-past-the-maximum",
        "pretrain --recipe smoke-mlm --set validation.rows=5000000 validation.every=0 --out {w}/o",
        r"validation.rows 5,000,000 is above 100,000, the most held-out rows scored .*; lower validation.rows",
    ),
    (
        "bench-docs-too-short",
        "bench train --doc-len 3",
        r"--doc-len must be at least 5 .*got 3; use 5 or more, or --seq-len",
    ),
    (
        "bad-compile-choice",
        "pretrain --recipe smoke-mlm --set scale.compile=maybe --out {w}/o",
        r"scale.compile: must be one of 'auto', true, false, got 'maybe'",
    ),
    (  # said "is not a folder; run `encoderlab data prepare` first" of a path that is nothing
        "no-data",
        "pretrain --recipe smoke-mlm --set data.path={w}/nope --out {w}/o",
        r"data.path \S*/nope does not exist; give the folder `encoderlab data prepare --out` wrote, or prepare one "
        r"there first$",
    ),
    (
        "out-under-a-file",
        "pretrain --config {w}/tiny.yaml --out {w}/a_file/run",
        r"--out .*a_file/run cannot be created: .*a_file is a file; choose another --out",
    ),
    ("unknown-command", "nope", r"has no command 'nope'; valid:"),
    ("unknown-asset", "assets fetch nope", r"unknown asset 'nope'; valid:"),
    ("unknown-task", "eval {w}/model --tasks nope --out {w}/e", r"unknown task 'nope'; valid:"),
    ("unknown-study", "study run nope", r"unknown study 'nope'; valid:"),
    ("unknown-scale", "study run paper1-pfs --scale nope --out {w}/s", r"scale 'nope'"),
    ("study-no-jobs", "study run paper1-pfs --jobs 0 --out {w}/s", r"jobs must be >= 1, got 0"),
    (  # said what was wrong, not what to pass
        "bad-lr-grid",
        "eval {w}/model --tasks boolq --lrs 0 --out {w}/e",
        r"learning rates must be .*positive numbers, got \[0.0\]; pass positive numbers as separate arguments, "
        r"e.g. --lrs 1e-4 3e-4$",
    ),
    (
        "eval-seeds-empty",
        "eval {w}/model --tasks boolq --seeds --out {w}/e",
        r"seeds must be a non-empty list of non-negative integers, got \[\]; pass non-negative integers as "
        r"separate arguments, e.g. --seeds 0 1$",
    ),
    (  # ran: the summary's header listed "seeds [0, 0]" over n=1
        "eval-grid-repeats",
        "eval {w}/model --tasks boolq --seeds 0 0 --out {w}/e",
        r"seeds repeat 0; give each once",
    ),
    ("corrupt-safetensors", "export {w}/corrupt --out {w}/x", r"cannot read .*model.safetensors .*corrupt"),
    ("vocab-mismatch", "export {w}/small_vocab --out {w}/x", r"tokenizer has \d+ ids but .* 64 rows"),
    (
        "pickle-weights",
        "export {w}/hf_pickle --out {w}/x",
        r"weights as pickle .*convert them to safetensors",
    ),
    ("remote-code", "export {w}/hf_remote --out {w}/x", r"ships its own modelling code .*trust_remote_code"),
    ("non-utf8-corpus", "data tokenizer --source {w}/latin1.txt --out {w}/t", r"not UTF-8 .*--on-error skip"),
    ("empty-corpus", "data tokenizer --source {w}/empty.txt --out {w}/t", r"no non-empty document"),
    (
        "lz4-corpus",
        "data tokenizer --source {w}/pile.jsonl.lz4 --out {w}/t",
        r"compressed as .lz4, .*lz4 -d",
    ),
    (
        "truncated-gzip-corpus",
        "data tokenizer --source {w}/cut.jsonl.gz --out {w}/t",
        r"cannot read .*cut.jsonl.gz \(Compressed file ended",
    ),
    ("symlink-loop", "data tokenizer --source {w}/loop.txt --out {w}/t", r"loop\.txt"),
    ("not-prepared", "data inspect {w}/model", r"not prepared data .*data prepare"),
    ("not-prepared-file", "data inspect {w}/latin1.txt", r"latin1.txt is not prepared data .*data prepare"),
    (
        "unknown-flag",
        "pretrain --bogus 1",
        r"unrecognized arguments: --bogus 1; see: encoderlab pretrain --help",
    ),
    ("missing-argument", "export", r"missing required arguments: RUN, --out; see: encoderlab export --help"),
    (
        "positional-as-flag",
        "export --ckpt {w}/run",
        r"missing required arguments: RUN \(given without a flag: encoderlab export RUN \.\.\.\); see:",
    ),
    ("flag-without-value", "eval {w}/model --suite", r"--suite needs a value; see: encoderlab eval --help"),
    ("bad-choice", "eval {w}/model --suite nope --out {w}/e", r"--suite got 'nope'; valid: .*eval --help"),
    ("existing-run", "pretrain --config {w}/tiny.yaml --out {w}/run", r"already holds a run; pass --resume"),
    (
        "resume-changed-config",
        "pretrain --config {w}/tiny.yaml --set optim.lr=0.1 --out {w}/run --resume",
        r"changed config \(optim.lr: 0.0005 -> 0.1\).*--force",
    ),
    # ---- issue 20: nothing lost (every command that writes a folder goes through encoderlab.outdir)
    (
        "eval-foreign-results",
        "eval {w}/model --tasks boolq --lrs 1e-4 --seeds 0 --out {w}/foreign_eval",
        r"--out .*foreign_eval is a non-empty folder that encoderlab did not create; nothing in it was changed",
    ),
    ("eval-into-model", "eval {w}/run --tasks boolq --out {w}/run/final", r"lies inside the source .*run"),
    ("transplant-over-foreign", "analyze transplant {w}/run {w}/run --layers 0 --out {w}/foreign", FOREIGN),
    (
        "transplant-over-model-b",
        "analyze transplant {w}/model {w}/run --layers 0 --out {w}/run/final",
        r"--out .*run/final is, contains or lies inside the source .*run; writing there would destroy",
    ),
    (
        "export-over-source",
        "export {w}/run --out {w}/run --overwrite",
        r"--out .*run is, contains or lies inside",
    ),
    ("export-into-source", "export {w}/run --out {w}/run/final/hf", r"lies inside the source"),
    ("export-over-foreign", "export {w}/run --out {w}/foreign --overwrite", FOREIGN),
    (
        "cka-over-foreign",
        "analyze cka {w}/run {w}/run --texts {w}/texts.txt --n 50 --out {w}/foreign",
        FOREIGN,
    ),
    ("probe-over-foreign", "analyze probe {w}/run --tasks {w}/one_class.jsonl --out {w}/foreign", FOREIGN),
    ("curves-over-foreign", "analyze curves {w}/curves.yaml --out {w}/foreign", FOREIGN),
    (
        "curves-folder",
        "analyze curves {w}/model --out {w}/c",
        r"config file .*model is a folder; pass the YAML file",
    ),
    ("study-over-foreign", "study run paper1-pfs --out {w}/foreign", FOREIGN),
    # a folder inside a study folder is the study's: `study status` listed what was written there as a
    # leftover of an earlier version, to delete (`study run` itself was refused there already)
    ("pretrain-out-in-study", "pretrain --config {w}/tiny.yaml --out {w}/study/nodes/p", IN_STUDY),
    (
        "eval-out-in-study",
        "eval {w}/model --tasks boolq --lrs 1e-4 --seeds 0 --out {w}/study/nodes/e",
        IN_STUDY,
    ),
    ("export-out-in-study", "export {w}/run --out {w}/study/nodes/x", IN_STUDY),
    (
        "cka-out-in-study",
        "analyze cka {w}/run {w}/run --texts {w}/texts.txt --n 50 --out {w}/study/nodes/c",
        IN_STUDY,
    ),
    ("advise-out-in-study", "advise {w}/ladder.csv --target-flops 1e19 --out {w}/study/nodes/a", IN_STUDY),
    ("tokenizer-over-foreign", "data tokenizer --source {w}/texts.txt --out {w}/foreign", FOREIGN),
    (
        "tokenizer-into-source",
        "data tokenizer --source {w}/corpus --out {w}/corpus/tok",
        r"--out .*corpus/tok is, contains or lies inside the source .*corpus",
    ),
    (
        "bench-out-is-a-folder",
        "bench train --out {w}/foreign",
        r"--out .*foreign is a folder; give a file name",
    ),
    (
        "bench-out-foreign-file",
        "bench train --out {w}/tiny.yaml",
        r"--out .*tiny.yaml exists and is not a `bench train` result; nothing was changed",
    ),
    (
        "bench-profile-is-a-folder",
        "bench train --profile {w}/foreign",
        r"--profile .*foreign is a folder; give a file name for a `bench train --profile` table, e.g. .*foreign/ops.txt",
    ),
    (
        "bench-profile-foreign-file",
        "bench train --profile {w}/tiny.yaml",
        r"--profile .*tiny.yaml exists and is not a `bench train --profile` table; nothing was changed",
    ),
    (
        "bench-profile-under-a-file",
        "bench train --profile {w}/a_file/ops.txt",
        r"--profile .*a_file/ops.txt cannot be created: .*a_file is a file; choose another --profile",
    ),
    (
        "bench-profile-same-as-out",
        "bench train --out {w}/b.json --profile {w}/b.json",
        r"--profile and --out both name .*b.json; give the op table its own file",
    ),
    (
        "tokenizer-foreign-tmp-sibling",
        "data tokenizer --source {w}/texts.txt --out {w}/sibling",
        r"sibling.tmp exists and is not a leftover of encoderlab .*nothing in it was changed: move it away",
    ),
    (
        "export-foreign-tmp-sibling",
        "export {w}/run --out {w}/sibling",
        r"sibling.tmp exists and is not a leftover of encoderlab .*nothing in it was changed: move it away",
    ),
    (
        "pretrain-out-is-a-file",
        "pretrain --config {w}/tiny.yaml --out {w}/a_file",
        r"--out .*a_file is a file, not a folder",
    ),
    (
        "pretrain-out-self-symlink",
        "pretrain --config {w}/tiny.yaml --out {w}/loop.txt",
        r"--out .*loop.txt is a symlink that loops \(to loop.txt\); remove it or choose another --out",
    ),
    # ---- issue 20: silent or unclear inputs
    (
        "eval-lr-inf",
        "eval {w}/model --tasks boolq --lrs inf --out {w}/e",
        r"finite positive numbers, got \[inf\]; pass positive numbers as separate arguments, e.g. --lrs 1e-4",
    ),
    (
        "eval-lr-past-one",
        "eval {w}/model --tasks boolq --lrs 1e-4 1e38 --out {w}/e",
        r"learning rates must be at most 1 \(AdamW's step is about the LR\), got \[0.0001, 1e\+38\]; fine-tuning "
        r"LRs are small \(paper 1's grid: 1e-5 to 5e-4\): pass positive numbers as separate arguments, e.g. --lrs "
        r"1e-4 3e-4$",
    ),
    (
        "eval-lr-nan",
        "eval {w}/model --tasks boolq --lrs nan --out {w}/e",
        r"finite positive numbers, got \[nan\]; pass positive numbers as separate arguments, e.g. --lrs 1e-4",
    ),
    (
        "shard-outside-folder",
        "export {w}/shard_escape --out {w}/x",
        r"points weight shards outside the model folder \(\.\./outside\.safetensors\)",
    ),
    (
        "shard-absolute-path",
        "export {w}/shard_absolute --out {w}/x",
        r"weight shards outside the model folder \(/",
    ),
    (
        "malformed-shard-index",
        "export {w}/shard_badindex --out {w}/x",
        r"index.json is not a valid shard index",
    ),
    (
        "hf-hidden-not-multiple",
        "export {w}/hf_hidden33 --out {w}/x",
        r"hidden_size 33 is not a multiple of num_attention_heads 2",
    ),
    ("hf-hidden-zero", "export {w}/hf_hidden0 --out {w}/x", r"hidden_size must be a positive integer, got 0"),
    (
        "wrong-hidden-size",
        "export {w}/wrong_hidden --out {w}/x",
        r"weight '.*' has shape .* but .*config.json implies .*restore the original config.json",
    ),
    (
        "truncated-final",
        "export {w}/truncated_run --out {w}/x",
        r"final/model.safetensors .*corrupt, truncated",
    ),
    (
        "truncated-checkpoint",
        "export {w}/truncated_run/checkpoints/step_0000001 --out {w}/x",
        r"step_0000001/model/model.safetensors .*delete that checkpoint folder and --resume",
    ),
    (
        "damaged-final-config",
        "export {w}/damaged_config_run --out {w}/x",
        r"damaged_config_run/final/config.json is not an encoderlab model config \(damaged or replaced\): restore",
    ),
    (
        "probe-one-class",
        "analyze probe {w}/run --tasks {w}/one_class.jsonl --out {w}/p",
        r"one_class.jsonl has only one class \(pos\) .*at least two classes",
    ),
    (
        "cka-max-length",
        "analyze cka {w}/run {w}/run --texts {w}/texts.txt --n 50 --max-length 100000 --out {w}/c",
        r"--max-length 100000 is outside what the models take \(1-\d+ tokens\)",
    ),
    (
        "cka-max-length-not-positive",
        "analyze cka {w}/run {w}/run --texts {w}/texts.txt --n 50 --max-length 0 --out {w}/c",
        r"--max-length 0 leaves no token to read; pass a positive --max-length, e\.g\. \d+$",
    ),
    (
        "study-other-scale",
        "study run paper1-pfs --scale cpu --out {w}/study_demo",
        r"holds study paper1-pfs \(scale demo\); run paper1-pfs \(scale cpu\) in another --out",
    ),
    (  # the plan counted the unique tokens from the other study's prepared data, exit 0
        "study-plan-other-scale",
        "study plan paper1-pfs --scale cpu --out {w}/study_demo",
        r"holds study paper1-pfs \(scale demo\); run paper1-pfs \(scale cpu\) in another --out",
    ),
    (
        "study-json-damaged",
        "study run paper1-pfs --scale demo --out {w}/study_damaged",
        r"study_damaged/study.json is not a study's record \(damaged or someone else's\); nothing was changed",
    ),
    ("bench-zero-steps", "bench train --steps 0", r"--steps must be >= 1"),
    (
        "bench-data-work-is-a-file",
        "bench data --source {w}/texts.txt --work {w}/a_file",
        r"--work .*a_file is a file, not a folder; choose another --work",
    ),
    (
        "bench-data-out-foreign-file",
        "bench data --source {w}/texts.txt --out {w}/tiny.yaml",
        r"--out .*tiny.yaml exists and is not a `bench data` result; nothing was changed",
    ),
    (
        "report-not-a-study",
        "study report {w}/foreign",
        r"foreign is not a study folder \(no study.json/graph.json\)",
    ),
    (
        "bench-data-work-foreign",
        "bench data --source {w}/texts.txt --work {w}/foreign",
        r"--work .*foreign is a non-empty folder that encoderlab did not create; nothing in it was changed",
    ),
    (
        "bench-data-work-in-source",
        "bench data --source {w}/corpus --work {w}/corpus/w",
        r"--work .*corpus/w is, contains or lies inside the source .*corpus; writing there would destroy",
    ),
    (
        "jsonl-text-field",
        "data tokenizer --source {w}/bodies.jsonl --out {w}/t",
        r"has no field 'text' \(fields: id, body\); name the text field .*#text_field=body",
    ),
]
