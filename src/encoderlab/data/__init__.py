"""Pretraining data: from a corpus to the packed rows every run reads, the same on every rerun.

Layer 1 (docs/architecture.md): it imports only core, so a corpus is prepared, inspected and served
without a model, and everything above reads token streams through one contract, `batch.BatchSource`
(the row at (step, micro-step, rank) is a pure function of those numbers). The cost of that order: what
data needs from evaluation (the test texts a corpus is decontaminated against) is handed down as data
(`prepare.PrepareConfig.text_sets`), never imported.

Modules, in the order the data flows:
- where a corpus comes from: `sources` (assets, local files, hub datasets, a mixture), `corpora` (the
  named hub corpora), `mixing`, `filekinds`, `filereaders`, `fieldpath` and `filerecords` (local files,
  their compressions, a nested text field, what each file held), `hub`, `hubread`, `hubmodels`, `hubdown`,
  `mirrorpin` and `localpath` (hub ids, their mirrors and the local hub cache, a hub that does not
  answer, a name that names nothing), and `assets/` (the pinned corpora, labelled sets and models);
- tokenizers: `tokenizer` (load one; `token_spec`, the vocabulary facts everything reads),
  `tokenizer_training` (train one) and `fastbpe` (the same ids, faster);
- `data prepare`: `prepare` (tokenize once, on all cores), `encode` (its worker processes),
  `decontaminate`, `holdout` (the validation split), `shard` and `merge` (across machines), `resume`
  (an interrupted prepare), `freshness` and `txtscans` (does a folder still hold what its sources hold),
  `target` (may the folder be written), `prepmetrics` (its progress lines) and `packed` (the folder's
  format);
- serving: `batch` (the contract), `reader` (packed rows from a prepared folder) and `synthetic` (random
  rows for tests and benchmarks, under the same contract);
- `commands` (`encoderlab data tokenizer|prepare|merge|inspect`).
Nothing is imported here: a command reads the modules it needs.
"""
