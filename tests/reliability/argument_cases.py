"""The table of `test_hostile_arguments`: one case per docs/errors.md row of the arguments, task
files and advise ladders it checks (a declarative table, kept apart so the tests stay readable)."""

from __future__ import annotations

# (id, argv with {w} for the shared folder, pattern of the error)
ARGUMENT_CASES = [
    (  # named no --param: "mlm mask_ratio must be between 0 and 1 (exclusive), got 0.0"
        "recipe-param-ratio-out-of-range",
        "pretrain --recipe pfs-mlm --param ratio=0 --out {w}/o",
        r"recipe pfs-mlm with --param ratio=0: mlm mask_ratio must be between 0 and 1 \(exclusive\), got 0.0",
    ),
    (
        "recipe-micro-batch-zero",
        "pretrain --recipe pfs-mlm --param micro_batch_size=0 --out {w}/o",
        r"recipe parameter micro_batch_size must be >= 1, got 0; pass --param micro_batch_size=N",
    ),
    (
        "eval-device-unknown",
        "eval {w}/model --tasks boolq --device tpu --out {w}/e",
        r"--device 'tpu' is not a device encoderlab runs on; use cpu, cuda or cuda:N",
    ),
    (
        "eval-device-not-visible",
        "eval {w}/model --tasks boolq --device cuda:64 --out {w}/e",
        r"--device cuda:64, but \d+ CUDA devices? (is|are) visible; use --device cpu",
    ),
    (
        "cka-device-unknown",
        "analyze cka {w}/model {w}/model --texts {w}/texts.txt --n 50 --device tpu --out {w}/c",
        r"--device 'tpu' is not a device encoderlab runs on",
    ),
    (
        "probe-device-not-visible",
        "analyze probe {w}/model --tasks {w}/two_class.jsonl --device cuda:64 --out {w}/p",
        r"--device cuda:64, but \d+ CUDA devices? (is|are) visible",
    ),
    (
        "task-file-batch-zero",
        "eval {w}/model --task-file {w}/task_batch0.yaml --lrs 1e-4 --seeds 0 --out {w}/e",
        r"task_batch0.yaml: finetune: batch_size and micro_batch_size must be >= 1, got batch_size: 0, "
        r"micro_batch_size: 16",
    ),
    (
        "task-file-options-not-a-mapping",
        "eval {w}/model --task-file {w}/task_options_list.yaml --lrs 1e-4 --seeds 0 --out {w}/e",
        r"task file .*/task_options_list.yaml: options: expected a mapping, got the list \['pooling'\]; give one "
        r"'name: value' line per entry below it, or \{name: value\} on one line$",
    ),
    (
        "task-file-max-steps-negative",
        "eval {w}/model --task-file {w}/task_max_steps_negative.yaml --lrs 1e-4 --seeds 0 --out {w}/e",
        r"task_max_steps_negative.yaml: finetune: max_steps must be >= 1, or null for `epochs`, got max_steps: -1$",
    ),
    (
        "task-file-patience-without-best-epoch",
        "eval {w}/model --task-file {w}/task_patience_without_best_epoch.yaml --lrs 1e-4 --seeds 0 --out {w}/e",
        r"task_patience_without_best_epoch.yaml: finetune: patience is read only with select: best_epoch, "
        r"got patience: 3$",
    ),
    (
        "task-file-seed-negative",
        "eval {w}/model --task-file {w}/task_seed_negative.yaml --lrs 1e-4 --seeds 0 --out {w}/e",
        r"task_seed_negative.yaml: data.seed must be >= 0, got -1",
    ),
    (
        "task-file-max-length-negative",
        "eval {w}/model --task-file {w}/task_max_length_negative.yaml --lrs 1e-4 --seeds 0 --out {w}/e",
        r"task_max_length_negative.yaml: max_length must be >= 1 tokens, or null for the model's, got -5",
    ),
    (
        "task-file-qa-head-metric",
        "eval {w}/model --task-file {w}/task_qa_tagger_f1.yaml --lrs 1e-4 --seeds 0 --out {w}/e",
        r"task_qa_tagger_f1.yaml: metric 'f1' is not reported by the QA head 'tagger'; use one of position_f1, "
        r"exact_positions",
    ),
    (
        "cka-batch-size-zero",
        "analyze cka {w}/model {w}/model --texts {w}/texts.txt --n 50 --batch-size 0 --out {w}/c",
        r"--batch-size must be >= 1, got 0",
    ),
    (
        "cka-seed-negative",
        "analyze cka {w}/model {w}/model --texts {w}/texts.txt --n 50 --seeds -1 --out {w}/c",
        r"--seeds must be >= 0 \(numpy's generators take no negative seed\), got \[-1\]",
    ),
    (
        "probe-seed-negative",
        "analyze probe {w}/model --tasks {w}/two_class.jsonl --seed -1 --out {w}/p",
        r"--seed must be >= 0 \(numpy's generators take no negative seed\), got \[-1\]",
    ),
    (
        "probe-max-examples-negative",
        "analyze probe {w}/model --tasks {w}/two_class.jsonl --max-examples -5 --out {w}/p",
        r"--max-examples must be >= 1, got -5",
    ),
    (
        "transplant-sweep-with-part",
        "analyze transplant {w}/model {w}/model --sweep layers --part mlp --embeddings --out {w}/t",
        r"--sweep layers builds its own transplants and would ignore --part mlp, --embeddings; drop them",
    ),
    (
        "transplant-groups-without-groups-sweep",
        "analyze transplant {w}/model {w}/model --layers 0 --groups 2 --out {w}/t",
        r"--groups 2 splits the layers of --sweep groups or all, but --layers would ignore it",
    ),
    (
        "cka-twin-is-b",
        "analyze cka {w}/model {w}/model --baseline {w}/model --texts {w}/texts.txt --n 50 --out {w}/c",
        r"--baseline \S+/model has the very weights of model B \(\S+/model\), so the seed noise would be 0",
    ),
    (
        "cka-seeds-repeated",
        "analyze cka {w}/model {w}/model --texts {w}/texts.txt --n 50 --seeds 42 42 43 --out {w}/c",
        r"sampling seeds 42, 42, 43 repeat seed 42: .*give each seed once, e\.g\. --seeds 42 43 44",
    ),
    (
        "probe-too-few-examples",
        "analyze probe {w}/model --tasks {w}/two_class.jsonl --max-examples 6 --out {w}/p",
        r"two_class.jsonl: probing needs at least 10 examples to split 60/20/20, got 6",
    ),
    (
        "transplant-sweep-probe-too-few-examples",
        "analyze transplant {w}/model {w}/model --sweep parts --probe-task {w}/two_class.jsonl "
        "--max-examples 6 --out {w}/t",
        r"two_class.jsonl: probing needs at least 10 examples to split 60/20/20, got 6",
    ),
    ("inspect-seed-negative", "data inspect {w}/data --seed -1", r"--seed must be >= 0, got -1"),
    (
        "advise-seed-negative",
        "advise {w}/ladder.csv --seed -1 --target-flops 1e19 --out {w}/a",
        r"--seed must be >= 0, got -1",
    ),
    (
        "advise-ceiling-nan",
        "advise {w}/ladder.csv --ceiling nan --target-flops 1e19 --out {w}/a",
        r"--ceiling must be a finite number \(the best possible val/mlm15\), got nan",
    ),
    (
        "advise-seed-noise-inf",
        "advise {w}/ladder.csv --seed-noise inf --target-flops 1e19 --out {w}/a",
        r"--seed-noise must be a finite positive standard deviation, got inf$",
    ),
    (  # was taken: the fit ran as least squares, not the Huber loss the option names
        "advise-huber-delta-inf",
        "advise {w}/ladder.csv --huber-delta inf --target-flops 1e19 --out {w}/a",
        r"--huber-delta must be a threshold on log residuals from 1e-05 to 1 \(Chinchilla's and OLMo's 0.001\), "
        r"got inf$",
    ),
    (  # was taken, as inf was: least squares (and a numpy overflow warning on stderr)
        "advise-huber-delta-out-of-range",
        "advise {w}/ladder.csv --huber-delta 1e300 --target-flops 1e19 --out {w}/a",
        r"--huber-delta must be a threshold on log residuals from 1e-05 to 1 \(Chinchilla's and OLMo's 0.001\), "
        r"got 1e\+300$",
    ),
    (
        "advise-row-seed-nan",
        "advise {w}/ladder_seed_nan.csv --target-flops 1e19 --out {w}/a",
        r"ladder_seed_nan.csv:3: column seed must be an integer, got 'nan'$",
    ),
    (  # was fitted as a measurement
        "advise-row-loss-nan",
        "advise {w}/ladder_loss_nan.csv --target-flops 1e19 --out {w}/a",
        r"ladder_loss_nan.csv:3: column val/mlm15 must be a finite number, got 'nan'; leave out the row of a "
        r"run that diverged \(its loss is not finite\)$",
    ),
    (
        "advise-row-extra-value",
        "advise {w}/ladder_extra.csv --target-flops 1e19 --out {w}/a",
        r"ladder_extra.csv:2 has 7 values but the header names 6 columns; quote a value that holds a comma",
    ),
    (  # was csv's "_csv.Error: field larger than field limit (131072)", a traceback
        "advise-row-over-field-limit",
        "advise {w}/ladder_huge.csv --target-flops 1e19 --out {w}/a",
        r"ladder_huge.csv:3 is not valid CSV \(field larger than field limit \(131072\)\); fix the row$",
    ),
    (  # said line 3: rows were counted, not lines, so a blank line shifted every later number
        "advise-row-after-a-blank-line",
        "advise {w}/ladder_blank.csv --target-flops 1e19 --out {w}/a",
        r"ladder_blank.csv:4: column seed must be a number, got 'two'$",
    ),
    (
        "advise-ladder-twice",
        "advise {w}/ladder.csv {w}/ladder.csv --target-flops 1e19 --out {w}/a",
        r"ladder .*/ladder.csv given twice; give each once$",
    ),
    (
        "advise-row-boolean",
        "advise {w}/ladder_bool.jsonl --target-flops 1e19 --out {w}/a",
        r"ladder_bool.jsonl:1: column seed must be a number, got True$",
    ),
    (
        "advise-row-bad-schedule",
        "advise {w}/ladder_share.csv --target-flops 1e19 --out {w}/a",
        r"ladder_share.csv:4: clm_share must be in \[0, 1\], got 1.5$",
    ),
    (  # ranked "same > same", and the backtest, pairing schedules by name, failed on no pair
        "advise-schedules-of-one-name",
        "advise {w}/ladder_labels.csv --target-flops 1e19 --out {w}/a",
        r"two schedules are named 'same' \(MLM at mask 0.4 100% at .*ladder_labels.csv:2; CLM 100% at "
        r".*ladder_labels.csv:\d+\); give each schedule its own label$",
    ),
    (  # said "mlm mask_ratio must be ...", naming no flag of `bench train`
        "bench-train-mask-ratio-out-of-range",
        "bench train --objective mlm --mask-ratio 0",
        r"--mask-ratio must be between 0 and 1 \(exclusive\), got 0\.0; e\.g\. --mask-ratio 0\.3$",
    ),
    (  # said "set layout.seq_len to 2 or more", a field `bench train` has no flag for
        "bench-train-clm-one-token-rows",
        "bench train --objective clm --seq-len 1",
        r"--seq-len 1 leaves CLM no next token to predict; pass --seq-len 2 or more$",
    ),
    (  # measured CLM and ignored the ratio without a word
        "bench-train-mask-ratio-for-clm",
        "bench train --objective clm --mask-ratio 0.3",
        r"--mask-ratio 0.3 is an MLM setting, but --objective clm masks nothing; drop --mask-ratio, or use "
        r"--objective mlm$",
    ),
    (  # said "lower its steps (at most 1152921504606846975)", counting 3 profiled steps and naming no flag
        "bench-train-rows-overflow",
        "bench train --size nano --batch 99999999999999999999",
        r"--batch 99999999999999999999 x 10 steps \(--warmup 2 \+ --steps 5 \+ 3 profiled\) has more rows than "
        r"int64 counts; lower --batch, --steps or --warmup$",
    ),
    (  # said "a run of 40 steps of ... rows has more rows than int64 counts; lower its steps (at most 0)"
        "pretrain-batch-overflow",
        "pretrain --recipe smoke-mlm --set layout.micro_batch_size=9999999999999999999 --out {w}/o",
        r"a step of 19999999999999999998 rows \(layout\.micro_batch_size x layout\.grad_accum x world size\) "
        r"has more rows than int64 counts; lower layout\.micro_batch_size or layout\.grad_accum$",
    ),
    (
        "bench-data-repeats-zero",
        "bench data --source {w}/texts.txt --repeats 0",
        r"--repeats must be >= 1, got 0",
    ),
    (  # these three were accepted, and started a corpus and runs of unbounded size
        "bench-data-scale-past-disk",
        "bench data --source {w}/texts.txt --scale 99999999999999999999 --work {w}/bench",
        r"--scale 99999999999999999999 copies the corpus \(\d+ bytes\) 100000000000000000000 times, more than "
        r"the \d+ bytes free on the disk of --work .*/bench; at most --scale \d+ fits, or choose a --work on a "
        r"larger disk$",
    ),
    (
        "bench-data-repeats-too-many",
        "bench data --source {w}/texts.txt --repeats 99999999999999999999",
        r"--repeats must be <= 100 \(the fastest is kept; a few suffice\), got 99999999999999999999$",
    ),
    (
        "bench-data-workers-past-cpus",
        "bench data --source {w}/texts.txt --workers 99999999999999999999",
        r"--workers must be <= \d+ \(the CPUs of this machine; 0 uses all cores\), got 99999999999999999999$",
    ),
    (
        "txt-source-text-field",
        "data tokenizer --source {w}/texts.txt#text_field=body --out {w}/t",
        r"source .*texts.txt: text_field=body names a JSONL or parquet field, but its files are .txt, which have none",
    ),
    (
        "named-corpus-option-clash",
        "data tokenizer --source fineweb-edu-10bt#text_field=body --out {w}/t",
        r"source fineweb-edu-10bt: text_field=body differs from what the named corpus reads \(hub id "
        r"HuggingFaceFW/fineweb-edu, config sample-10BT, split train, text field text\); drop it",
    ),
    (
        "tokenizer-wordpiece-vocab-too-small",
        "data tokenizer --source {w}/texts.txt --kind wordpiece --vocab-size 3 --out {w}/t",
        r"vocabulary size 3 is below the \d+ ids this corpus needs for a wordpiece tokenizer \(its alphabet "
        r"and special tokens\); use --vocab-size \d+ or more$",
    ),
    (
        "prepare-workers-negative",
        "data prepare --source {w}/texts.txt --tokenizer {w}/model --out {w}/p --workers -1",
        r"--workers must be >= 0 \(0: all cores\), got -1",
    ),
    (  # said only "is not a model id of the form OWNER/NAME": a mistyped path was taken for a hub id
        "prepare-tokenizer-path-missing",
        "data prepare --source {w}/texts.txt --tokenizer {w}/nope --out {w}/p",
        r"tokenizer '\S*/nope' does not exist: \S+ holds no 'nope'; pass a tokenizer or model folder, an "
        r"asset name or a hub id \(org/name\)$",
    ),
    (
        "prepare-checkpoint-every-zero",
        "data prepare --source {w}/texts.txt --tokenizer {w}/model --out {w}/p --checkpoint-every 0",
        r"--checkpoint-every must be >= 1 \(chunks between resume points\), got 0",
    ),
    (
        "bench-data-vocab-too-small",
        "bench data --source {w}/texts.txt --vocab-size 5",
        r"--vocab-size must be >= 261 for the byte-level BPE trained, got 5",
    ),
    (
        "cka-seeds-empty",
        "analyze cka {w}/model {w}/model --texts {w}/texts.txt --n 50 --seeds --out {w}/c",
        r"--seeds needs at least one seed, got none; e.g. --seeds 42 43 44",
    ),
    (
        "probe-tasks-empty",
        "analyze probe {w}/model --tasks --out {w}/p",
        r"--tasks needs at least one task, got none; e.g. --tasks brown-pos tweets",
    ),
    (
        "tokenizer-seed-negative",
        "data tokenizer --source {w}/texts.txt {w}/two_class.jsonl --seed -1 --vocab-size 300 --out {w}/t",
        r"--seed must be >= 0 \(the seed of the source mixture\), got -1",
    ),
    (
        "prepare-seed-negative",
        "data prepare --source {w}/texts.txt {w}/two_class.jsonl --tokenizer {w}/model --seed -1 --out {w}/p",
        r"--seed must be >= 0 \(the seed of the source mixture\), got -1",
    ),
    (
        "source-weight-inf",
        "data tokenizer --source {w}/texts.txt#weight=inf {w}/two_class.jsonl --vocab-size 300 --out {w}/t",
        # the source named once: "source 'X#weight=inf': source X: weight ..." named it twice
        r"source '[^']*texts\.txt#weight=inf': weight must be a finite number > 0, got inf$",
    ),
    (
        "bench-peak-tflops-nan",
        "bench train --size tiny --seq-len 16 --batch 1 --steps 1 --warmup 0 --no-vs-hf --peak-tflops nan",
        r"--peak-tflops must be a finite number >= 0 \(0: a known GPU's datasheet value, else a measured matmul\), "
        r"got nan",
    ),
    (
        "config-more-layers-than-weights",
        "export {w}/model_3_layers --out {w}/x",
        r"the weights of .*model_3_layers do not match its config.json \(missing \['layers.2.*\], unexpected \[\]\); "
        r"restore the original config.json",
    ),
    (
        "config-rope-theta-nan",
        "export {w}/model_rope_nan --out {w}/x",
        r"model_rope_nan/config.json: rope_theta must be a finite number > 0, got nan",
    ),
    (
        "weights-not-floating-point",
        "export {w}/model_int8 --out {w}/x",
        r"weight 'norm.weight' is stored as int8, not as floating-point numbers \(a quantized or damaged file\); "
        r"restore it from a copy",
    ),
    (
        "config-ties-an-untied-head",
        "export {w}/model_tied --out {w}/x",
        r"the weights of .*model_tied hold an LM head of their own \(lm_head.weight\), but its config.json ties "
        r"the head to the embeddings \(tie_embeddings: true\), which would discard it; restore the original "
        r"config.json",
    ),
    (
        "task-file-labels-names-and-numbers",
        "eval {w}/model --task-file {w}/task_labels_mixed.yaml --lrs 1e-4 --seeds 0 --out {w}/e",
        r"task_labels_mixed.yaml: the label column 'stars' holds both names \(e.g. '(bad|good)' in the train split, "
        r"line \d+ of reviews-mixed\.csv\) and numbers \(e.g. '[01]' in the train split, line \d+ of "
        r"reviews-mixed\.csv\), each of which would be a class of its own; write every label in one form, or name the "
        r"classes in `labels:`",
    ),
    (
        "task-file-column-named-twice",
        "eval {w}/model --task-file {w}/task_column_twice.yaml --lrs 1e-4 --seeds 0 --out {w}/e",
        r"task_column_twice.yaml: .*/reviews-twice.csv's header names the column 'stars' twice; rename one of "
        r"them \(a reader keeps the first as 'stars' and the second as 'stars.1'\)",
    ),
    (
        "task-file-tsv-text-opening-a-quote",
        "eval {w}/model --task-file {w}/task_tsv_quote.yaml --lrs 1e-4 --seeds 0 --out {w}/e",
        r"task_tsv_quote.yaml: train split, line 5 of reviews-quoted-train.tsv: the row's 'review' holds a tab: a "
        r"field starting with a double quote is read up to the next quote, across tabs and lines, so several rows "
        r"became one; quote that field whole",
    ),
    (
        "probe-record-without-label",
        "analyze probe {w}/model --tasks {w}/probe_no_label.jsonl --out {w}/p",
        r"probe_no_label.jsonl: record 4 has no meta.label, which the first record has; fix or drop it",
    ),
    (
        "probe-tags-shorter-than-tokens",
        "analyze probe {w}/model --tasks {w}/probe_tags_short.jsonl --out {w}/p",
        r"probe_tags_short.jsonl: record 4 does not hold meta.tokens and meta.tags lists of one length",
    ),
    (
        "probe-tags-names-and-numbers",
        "analyze probe {w}/model --tasks {w}/probe_tags_mixed.jsonl --out {w}/p",
        r"probe_tags_mixed.jsonl: record 5 has 1 in meta.tags but record 1 has \"D\"; give every tag in one "
        r"form: all names, all numbers or all true/false",
    ),
    (
        "probe-token-not-a-word",
        "analyze probe {w}/model --tasks {w}/probe_number_word.jsonl --out {w}/p",
        r"probe_number_word.jsonl: record 5 has 7 in meta.tokens, where a word \(a string\) belongs; fix or drop it",
    ),
    (
        "probe-labels-names-and-numbers",
        "analyze probe {w}/model --tasks {w}/probe_labels_mixed.jsonl --out {w}/p",
        r"probe_labels_mixed.jsonl: record 21 has \"a\" in meta.label but record 1 has 0; give every label in "
        r"one form: all names, all numbers or all true/false",
    ),
    (
        "eval-seed-too-big",
        "eval {w}/model --tasks boolq --lrs 1e-4 --seeds 99999999999999999999999 --out {w}/e",
        r"seeds must be below 2\*\*64 \(torch's generators take no larger one\), got \[99999999999999999999999\]",
    ),
    (
        "pretrain-seed-too-big",
        "pretrain --recipe smoke-clm --set seed=99999999999999999999999 --out {w}/o",
        r"seed must be below 2\*\*64 \(torch's generators take no larger one\), got 99999999999999999999999",
    ),
    (
        "recipe-clm-fraction-drops-a-phase",
        "pretrain --recipe smoke-clm-mlm --param clm_fraction=0.99 --out {w}/o",
        r"clm_fraction 0.99 of 40 steps rounds to 40 CLM steps, leaving no MLM phase; raise steps, or pass "
        r"clm_fraction=1 for a run of one objective",
    ),
    (
        "recipe-decay-fraction-nan",
        "pretrain --recipe detour --param decay_fraction=nan --out {w}/o",
        r"decay_fraction must be a finite number > 0 \(the decay's share of `tokens`\), got nan; "
        r"e.g. --param decay_fraction=0.1",
    ),
    (
        "recipe-warmup-tokens-negative",
        "pretrain --recipe detour --param warmup_tokens=-1 --out {w}/o",
        r"warmup_tokens must be >= 0, got -1; e.g. --param warmup_tokens=100000000",
    ),
    (
        "curves-results-not-a-results-file",
        "analyze curves {w}/curves_notes.yaml --out {w}/c",
        r"notes.txt holds no runs; evaluate the model first",
    ),
    (
        "curves-one-x-twice",
        "analyze curves {w}/curves_one_x_twice.yaml --out {w}/c",
        r"sources 1 and 2 are both 'M' at mask_ratio 0.4, two points at one x of its mask-ratio curve",
    ),
    (
        "bench-out-over-model-config",
        "bench train --out {w}/model/config.json",
        r"--out .*model/config.json exists and is not a `bench train` result; nothing was changed",
    ),
    (
        "bench-data-out-over-model-config",
        "bench data --source {w}/texts.txt --out {w}/model/config.json",
        r"--out .*model/config.json exists and is not a `bench data` result; nothing was changed",
    ),
    (
        "bench-cannot-fit-in-memory",
        "bench train --size 1b --batch 512 --seq-len 8192 --no-vs-hf",
        r"this run needs at least .* GiB is available; lower --batch, lower --seq-len, or pick a smaller --size$",
    ),
    (
        "probe-model-twice",
        "analyze probe {w}/model {w}/model --tasks {w}/two_class.jsonl --out {w}/p",
        r"model .*model given twice; give each once",
    ),
    (
        "probe-task-twice",
        "analyze probe {w}/model --tasks {w}/two_class.jsonl {w}/two_class.jsonl --out {w}/p",
        r"task .*two_class.jsonl given twice; give each once",
    ),
    (
        "cka-missing-model-before-texts",
        "analyze cka {w}/model {w}/nope --texts {w}/texts.txt --out {w}/c",
        r"model source '.*nope' does not exist: .* holds no 'nope'; pass a model or run folder, an asset name or a "
        r"hub id \(org/name\)$",
    ),
    (
        "flag-without-a-value",
        "eval {w}/model --task-file --lrs 1e-4 --seeds 0 --out {w}/e",
        r"--task-file is given without a value; put at least one after it \(--task-file A B\)$",
    ),
    (
        "path-through-a-file",
        "study plan {w}/notes.txt/mine.yaml",
        r"notes.txt is a file, so \S*/notes.txt/mine.yaml cannot exist; fix the path$",
    ),
    (
        "report-a-file",
        "study report {w}/notes.txt",
        r"notes.txt is a file, not a study folder; give the folder `study run --out` wrote",
    ),
    (
        "plan-out-a-file",
        "study plan paper1-pfs --out {w}/notes.txt",
        r"--out \S*/notes.txt is a file, not a study folder; .*, or drop --out for estimated counts$",
    ),
]
