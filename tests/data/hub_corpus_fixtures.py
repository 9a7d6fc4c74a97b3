"""A simulated Hugging Face hub for the data tests: repos laid out as the hub serves them, read
through `ENCODERLAB_HUB_DATA` / `ENCODERLAB_HUB_MODELS` (encoderlab/data/hub.py) by the same calls
as a hub id (tests/eval/hub_fixtures.py does the same for the evaluation datasets).

Each builder writes one repo under `ROOT/OWNER/NAME/` (ROOT: the datasets' or the models' mirror folder),
with the real file paths, dataset-card `configs`, column names and dtypes of the repo it stands for;
its docstring cites where that layout comes from. The text is generated (tests never ship real
data); only the structure is the hub's.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import yaml
from corpus_fixtures import sentence

from encoderlab.data.prepare import PrepareConfig
from encoderlab.data.sources import SourceConfig

# ---------------------------------------------------------------- FineWeb-Edu

FINEWEB_EDU = "HuggingFaceFW/fineweb-edu"
FINEWEB_EDU_SCHEMA = pa.schema(
    [
        ("text", pa.string()),
        ("id", pa.string()),
        ("dump", pa.string()),
        ("url", pa.string()),
        ("date", pa.string()),
        ("file_path", pa.string()),
        ("language", pa.string()),
        ("language_score", pa.float64()),
        ("token_count", pa.int64()),
        ("score", pa.float64()),
        ("int_score", pa.int64()),
    ]
)
"""FineWeb-Edu's columns and dtypes, in the card's order."""


def _card(configs: list[dict], features: pa.Schema, extra: str = "", featured: tuple[str, ...] = ()) -> str:
    """A dataset card whose YAML header has the hub's `configs` (and `dataset_info` features: of every
    config, or of those in `featured` only)."""
    kinds = {pa.string(): "string", pa.float64(): "float64", pa.int64(): "int64", pa.int32(): "int32"}

    def feature(f: pa.Field) -> dict:  # the card's notation: `dtype`, or `sequence` for a list
        if pa.types.is_list(f.type):
            return {"name": f.name, "sequence": kinds[f.type.value_type]}
        return {"name": f.name, "dtype": kinds[f.type]}

    feats = [feature(f) for f in features]
    header = {
        "configs": configs,
        "dataset_info": [
            {"config_name": c["config_name"], "features": feats}
            for c in configs
            if not featured or c["config_name"] in featured
        ],
    }
    return f"---\n{yaml.safe_dump(header, sort_keys=False)}---\n{extra}\n"


def fineweb_edu_rows(first: int, n: int) -> dict[str, list]:
    """n FineWeb-Edu records with generated text; documents `first`..`first + n - 1`."""
    texts = [" ".join(sentence(i * 5 + j) for j in range(1 + i % 6)) for i in range(first, first + n)]
    return {
        "text": texts,
        "id": [f"<urn:uuid:{i:08d}-0000-4000-8000-{i:012d}>" for i in range(first, first + n)],
        "dump": ["CC-MAIN-2024-10"] * n,
        "url": [f"https://example.org/page/{i}" for i in range(first, first + n)],
        "date": ["2024-02-21T10:11:12Z"] * n,
        "file_path": [
            f"s3://commoncrawl/crawl-data/CC-MAIN-2024-10/segments/1707947473347.0/warc/CC-MAIN-{i:05d}.warc.gz"
            for i in range(first, first + n)
        ],
        "language": ["en"] * n,
        "language_score": [0.95 + (i % 5) / 100 for i in range(first, first + n)],
        "token_count": [len(t.split()) for t in texts],
        "score": [2.5 + (i % 10) / 10 for i in range(first, first + n)],
        "int_score": [3 + i % 2 for i in range(first, first + n)],
    }


def make_fineweb_edu(
    root: Path, files_10bt: int = 4, rows_per_file: int = 40, files_350bt: int = 1, sample_date: bool = True
) -> Path:
    """`HuggingFaceFW/fineweb-edu` as the hub lays it out.

    Source: the dataset card (README v1.4.0): configs
    `default` (`data/*/*`), `sample-10BT` (`sample/10BT/*`), `sample-100BT` (`sample/100BT/*`),
    `sample-350BT`, per-dump `CC-MAIN-YYYY-WW` (`data/CC-MAIN-YYYY-WW/*`), split `train` only; the
    eleven columns and dtypes of FINEWEB_EDU_SCHEMA; sample files named `sample/10BT/000_00000.parquet`,
    `001_00000.parquet`, ... Row counts are small (the real files hold about a million rows).

    `date` in the sample files is unverified [U]. The card's commit 81fd597 ("Add "date" column to
    "default" subset (#20)", huggingface.co/datasets/HuggingFaceFW/fineweb-edu/blob/main/README.md)
    declares the eleven features, `date` among them, under the `default` config only; the sample configs
    declare none, and copies made from the earlier files have no `date` (airtrain-ai/fineweb-edu-fortified's
    card: the other ten). So the sample files may lack it. `sample_date=True` (the default) writes it
    everywhere and declares the features for every config; `sample_date=False` writes the sample files
    without it and declares the features for `default` alone, as that card does. encoderlab reads `text`
    only (`SourceConfig.text_field`), so both read the same (tests/data/test_corpora.py).
    """
    repo = root / FINEWEB_EDU
    dumps = ["CC-MAIN-2024-10"]
    configs = [
        {"config_name": "default", "data_files": [{"split": "train", "path": "data/*/*"}]},
        *(
            {"config_name": f"sample-{n}BT", "data_files": [{"split": "train", "path": f"sample/{n}BT/*"}]}
            for n in (10, 100, 350)
        ),
        *({"config_name": d, "data_files": [{"split": "train", "path": f"data/{d}/*"}]} for d in dumps),
    ]
    repo.mkdir(parents=True, exist_ok=True)
    featured = () if sample_date else ("default",)
    (repo / "README.md").write_text(_card(configs, FINEWEB_EDU_SCHEMA, "# FineWeb-Edu (simulated)", featured))
    sample_schema = (
        FINEWEB_EDU_SCHEMA
        if sample_date
        else FINEWEB_EDU_SCHEMA.remove(FINEWEB_EDU_SCHEMA.get_field_index("date"))
    )
    doc = 0
    for folder, n_files in (("sample/10BT", files_10bt), ("sample/100BT", 2), ("sample/350BT", files_350bt)):
        (repo / folder).mkdir(parents=True, exist_ok=True)
        for k in range(n_files):
            rows = {c: v for c, v in fineweb_edu_rows(doc, rows_per_file).items() if c in sample_schema.names}
            pq.write_table(pa.table(rows, schema=sample_schema), repo / folder / f"{k:03d}_00000.parquet")
            doc += rows_per_file
    (repo / "data" / dumps[0]).mkdir(parents=True, exist_ok=True)
    table = pa.table(fineweb_edu_rows(doc, rows_per_file), schema=FINEWEB_EDU_SCHEMA)
    pq.write_table(table, repo / "data" / dumps[0] / "train-00000-of-00001.parquet")
    return repo


# ---------------------------------------------------------------- EuroBERT's tokenizer

EUROBERT = "EuroBERT/EuroBERT-210m"
LLAMA3_PATTERN = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+"
    r"|\s+(?!\S)|\s+"
)
"""The pre-tokenization regex of Llama 3's tokenizer (and so EuroBERT's)."""
EUROBERT_BPE_SIZE = 128_000
EUROBERT_SPECIALS = {128_000: "<|begin_of_text|>", 128_001: "<|end_of_text|>", 128_002: "<|mask|>"}


def _filler_merges(n: int, used: set[bytes]) -> list[tuple[bytes, bytes]]:
    """n merges over bytes 0x80-0xff, each what merging by id gives (so tiktoken may replay them):
    all two-byte tokens, then three-byte tokens `xy + z` with rank(xy) < rank(yz)."""
    high = range(0x80, 0x100)
    pairs = [(bytes([x]), bytes([y])) for x in high for y in high]
    triples = [(bytes([x, y]), bytes([z])) for x in high for y in high if x < y for z in high]
    merges = [m for m in pairs + triples if m[0] + m[1] not in used]
    return merges[:n]


def make_eurobert_tokenizer(root: Path, corpus: list[str]) -> Path:
    """A tokenizer laid out as `EuroBERT/EuroBERT-210m`'s, at ROOT/EuroBERT/EuroBERT-210m/ (ROOT: the
    models' mirror folder).

    Source: EuroBERT/EuroBERT-210m's config.json and EuroBERT-2.1B's special_tokens_map.json:
    128,256 ids; bos `<|begin_of_text|>` =
    128000, eos `<|end_of_text|>` = 128001, pad = eos, mask `<|mask|>` = 128002 (lstrip), no unk;
    the Llama 3 pre-tokenizer (a regex Split, then ByteLevel). The BPE has 128,000 entries like
    Llama 3's: a BPE trained here on `corpus`, then merges over non-ASCII bytes up to 128,000, so
    the special tokens sit at their real ids and the files need uint32. The other 253 added tokens
    are named `<|reserved_special_token_N|>` as in Llama 3; the post-processor (unverified there)
    is left out, since prepare wraps documents itself.
    """
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    split = pre_tokenizers.Split(Regex(LLAMA3_PATTERN), behavior="isolated", invert=False)
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [split, pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)]
    )
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=1000, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False
    )
    tok.train_from_iterator(corpus, trainer=trainer)
    spec = json.loads(tok.to_str())
    vocab: dict[str, int] = spec["model"]["vocab"]
    from encoderlab.data.fastbpe import _to_bytes, _unicode_to_byte

    to_char = {b: c for c, b in _unicode_to_byte().items()}
    used = {_to_bytes(t) for t in vocab}
    for a, b in _filler_merges(EUROBERT_BPE_SIZE - len(vocab), used):
        ta, tb = ("".join(to_char[x] for x in part) for part in (a, b))
        vocab[ta + tb] = len(vocab)
        spec["model"]["merges"].append([ta, tb])
    assert len(vocab) == EUROBERT_BPE_SIZE
    spec["model"]["ignore_merges"] = True
    spec["added_tokens"] = [
        {
            "id": i,
            "content": EUROBERT_SPECIALS.get(i, f"<|reserved_special_token_{i - 128_002}|>"),
            "single_word": False,
            "lstrip": i == 128_002,
            "rstrip": False,
            "normalized": False,
            "special": True,
        }
        for i in range(128_000, 128_256)
    ]
    folder = root / EUROBERT
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "tokenizer.json").write_text(json.dumps(spec, ensure_ascii=False))
    config = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "bos_token": "<|begin_of_text|>",
        "eos_token": "<|end_of_text|>",
        "pad_token": "<|end_of_text|>",
        "mask_token": "<|mask|>",
        "model_max_length": 8192,
    }
    (folder / "tokenizer_config.json").write_text(json.dumps(config, indent=1))
    return folder


# ---------------------------------------------------------------- domain corpora

BIOMED_ENRICHED = "almanach/Biomed-Enriched"
BIOMED_ENRICHED_SCHEMA = pa.schema(
    [
        ("id", pa.string()),
        ("article_id", pa.string()),
        ("path", pa.string()),
        ("text", pa.string()),
        ("language", pa.string()),
        ("section_title", pa.string()),
        ("domain", pa.string()),
        ("document_type", pa.string()),
        ("educational_score", pa.float64()),
        ("domain_scores", pa.list_(pa.float64())),
        ("document_type_scores", pa.list_(pa.float64())),
        ("language_score", pa.float64()),
        ("authors", pa.list_(pa.string())),
        ("article_url", pa.string()),
        ("license_url", pa.string()),
    ]
)
"""Biomed-Enriched's columns and dtypes, in the card's `dataset_info` order."""


def _biomed_rows(first: int, n: int) -> dict[str, list]:
    texts = [f"Patients with condition {i % 7} were treated. " + sentence(i) for i in range(first, first + n)]
    return {
        "id": [f"PMC{1000 + i // 4}_{i % 4}" for i in range(first, first + n)],
        "article_id": [f"PMC{1000 + i // 4}" for i in range(first, first + n)],
        "path": [f"oa_comm/xml/all/PMC{1000 + i // 4}.xml" for i in range(first, first + n)],
        "text": texts,
        "language": ["en"] * n,
        "section_title": ["Case presentation"] * n,
        "domain": ["clinical", "biomedical"] * (n // 2) + ["other"] * (n % 2),
        "document_type": ["Clinical case"] * n,
        "educational_score": [float(1 + i % 5) for i in range(first, first + n)],
        "domain_scores": [[0.7, 0.2, 0.1]] * n,
        "document_type_scores": [[0.6, 0.2, 0.1, 0.1]] * n,
        "language_score": [0.99] * n,
        "authors": [["A. Author", "B. Author"]] * n,
        "article_url": [
            f"https://www.ncbi.nlm.nih.gov/pmc/articles/PMC{1000 + i // 4}/" for i in range(first, first + n)
        ],
        "license_url": ["https://creativecommons.org/licenses/by/4.0/"] * n,
    }


def make_biomed_enriched(root: Path, files: int = 2, rows_per_file: int = 20) -> Path:
    """`almanach/Biomed-Enriched` (paper 2's English corpus) as the hub lays it out.

    Source: its dataset card (https://huggingface.co/datasets/almanach/Biomed-Enriched, README header,
    read through the `search` tool): config `default` with splits `commercial` (`data/commercial-*`,
    98,595,508 rows) and `noncommercial` (`data/noncommercial-*`, 47,449,067 rows); the fifteen
    columns and dtypes of BIOMED_ENRICHED_SCHEMA. File names follow the `push_to_hub` pattern the
    globs match (`data/commercial-00000-of-000NN.parquet`); the real shard count is not stated.
    """
    repo = root / BIOMED_ENRICHED
    configs = [
        {
            "config_name": "default",
            "data_files": [
                {"split": "commercial", "path": "data/commercial-*"},
                {"split": "noncommercial", "path": "data/noncommercial-*"},
            ],
        }
    ]
    (repo / "data").mkdir(parents=True, exist_ok=True)
    (repo / "README.md").write_text(_card(configs, BIOMED_ENRICHED_SCHEMA, "# Biomed-Enriched (simulated)"))
    doc = 0
    for split, n_files in (("commercial", files), ("noncommercial", 1)):
        for k in range(n_files):
            table = pa.table(_biomed_rows(doc, rows_per_file), schema=BIOMED_ENRICHED_SCHEMA)
            pq.write_table(table, repo / "data" / f"{split}-{k:05d}-of-{n_files:05d}.parquet")
            doc += rows_per_file
    return repo


STARCODERDATA = "bigcode/starcoderdata"
STARCODERDATA_SCHEMA = pa.schema(
    [
        ("max_stars_repo_path", pa.string()),
        ("max_stars_repo_name", pa.string()),
        ("max_stars_count", pa.int64()),
        ("id", pa.string()),
        ("content", pa.string()),
    ]
)
"""starcoderdata's columns for a programming language folder."""


def make_starcoderdata(root: Path, files: int = 2, rows_per_file: int = 15) -> Path:
    """`bigcode/starcoderdata` (code) as the hub lays it out.

    Source: its dataset card (README copy in daniel-p-green/alain-ai-learning-platform, read through
    the `search` tool): one folder per language, loaded with `load_dataset("bigcode/starcoderdata",
    data_dir="python", split="train")`, no `configs` in the card; columns `max_stars_repo_path`,
    `max_stars_repo_name`, `max_stars_count`, `id`, `content` (listed in code that reads the python
    folder). Parquet files named `python/train-0000K-of-000NN.parquet` [file names and dtypes of
    `max_stars_count` and `id` assumed]. Also a `go` folder, so `data_dir` is what selects python.
    """
    repo = root / STARCODERDATA
    repo.mkdir(parents=True, exist_ok=True)
    (repo / "README.md").write_text("---\nlicense: other\n---\n# StarCoder Training Dataset (simulated)\n")
    for lang, ext, n_files in (("python", "py", files), ("go", "go", 1)):
        (repo / lang).mkdir(exist_ok=True)
        for k in range(n_files):
            first = k * rows_per_file
            rows = {
                "max_stars_repo_path": [f"src/mod_{i}.{ext}" for i in range(first, first + rows_per_file)],
                "max_stars_repo_name": [
                    f"user{i % 3}/repo{i % 5}" for i in range(first, first + rows_per_file)
                ],
                "max_stars_count": [i % 50 for i in range(first, first + rows_per_file)],
                "id": [f"{lang}-{i}" for i in range(first, first + rows_per_file)],
                "content": [
                    f"def f{i}(x):\n    # {sentence(i, 6)}\n    return x + {i}\n"
                    if lang == "python"
                    else f"package m{i}\n"
                    for i in range(first, first + rows_per_file)
                ],
            }
            pq.write_table(
                pa.table(rows, schema=STARCODERDATA_SCHEMA),
                repo / lang / f"train-{k:05d}-of-{n_files:05d}.parquet",
            )
    return repo


def fineweb_config(tok, revision=None) -> PrepareConfig:
    """Preparing FineWeb-Edu's sample-10BT (at `revision`) with `tok`, a tenth held out."""
    source = SourceConfig(location=f"hf:{FINEWEB_EDU}", hf_config="sample-10BT", hf_revision=revision)
    return PrepareConfig(sources=(source,), tokenizer=str(tok), decontaminate=(), val_fraction=0.1)


def forget_mirror_commit(folder) -> None:
    """`folder` as an earlier encoderlab wrote it: no `mirror_commit` recorded."""
    meta = json.loads((folder / "meta.json").read_text())
    del meta["sources"][0]["mirror_commit"]
    (folder / "meta.json").write_text(json.dumps(meta, indent=2))
