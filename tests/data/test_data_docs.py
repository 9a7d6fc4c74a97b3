"""The numbers and names docs/data.md and docs/assets.md state by hand are the code's.

The named hub corpora, the source options' defaults, prepare's defaults, the decontamination sets, the
asset table's pins and download sizes, the default set and the `--all` total were copied into the docs
by hand; no test read those docs, so a repinned package or a changed default left them quietly wrong.
Each test reads the doc's own table or sentence and compares it with the code's constant (the pattern
of tests/test_doc_tables.py). The sizes, documents and characters measured by a fetch are compared with
the manifests of the assets this machine has fetched (CI fetches wiki-leads and wnut16).
"""

from __future__ import annotations

import inspect
import re
import sys
from collections import Counter
from pathlib import Path

import pytest
from tests.test_doc_tables import numbers, table_rows

from encoderlab.bench.data import DataBench
from encoderlab.data import commands
from encoderlab.data.assets import (
    ASSETS,
    DEFAULT_ASSETS,
    asset_jsonl,
    code_heldout_modules,
    is_fetched,
    read_jsonl,
    read_manifest,
)
from encoderlab.data.assets.corpora import HELDOUT_BUCKETS
from encoderlab.data.assets.registry import GENERAL_EN_PARTS
from encoderlab.data.corpora import CORPORA
from encoderlab.data.decontaminate import EVAL_ASSETS, MAX_NGRAM
from encoderlab.data.prepare import prepare
from encoderlab.data.sources import SourceConfig, describe, parse_source

ROOT = Path(__file__).resolve().parents[2]
DATA = (ROOT / "docs" / "data.md").read_text()
ASSETS_DOC = (ROOT / "docs" / "assets.md").read_text()
NUMBER_WORDS = [
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
]
HUB_TABLE = table_rows(DATA, "name | hub id")
ASSET_TABLE = table_rows(ASSETS_DOC, "asset | kind | documents")


def flat(text: str) -> str:
    return " ".join(text.split())


def test_the_named_hub_corpora_table_is_corpora():
    assert list(HUB_TABLE) == [f"`{name}`" for name in CORPORA]
    for name, c in CORPORA.items():
        _, hub_id, where, field, size, _ = HUB_TABLE[f"`{name}`"]
        assert hub_id == f"`{c.hub_id}`" and field == f"`{c.text_field}`", name
        place = f"folder `{c.data_dir}`" if c.data_dir else f"`{c.config}`" if c.config else "default"
        assert where == f"{place} / {c.split}", name
        first = numbers(size)[0]
        if c.declared_tokens:
            assert first * 1e9 == c.declared_tokens and c.token_unit in size.lower().replace("-", ""), name
        else:
            assert first == c.declared_rows and numbers(size)[1] == round(c.declared_bytes / 1e9), name


def test_the_source_option_defaults_are_source_configs():
    default = SourceConfig(location="x")
    for option in ("text_field", "id_field", "hf_split"):
        assert f"`{option}` (default `{getattr(default, option)}`)" in flat(DATA), option
    assert f"`weight` (default {default.weight:g})" in flat(DATA)


def test_prepares_defaults_and_decontamination_sets_are_the_codes():
    defaults = inspect.signature(commands.prepare).parameters
    every = defaults["checkpoint_every"].default
    chunk = inspect.signature(prepare).parameters["chunk_docs"].default
    text = flat(DATA)
    assert (
        f"(`--checkpoint-every {every}`; {every * chunk:,} documents at the default {chunk} per chunk)"
        in text
    )
    assert f"`--ngram N` sets the length (words): 3 to {MAX_NGRAM:,}." in text
    assert f"at least one word {defaults['ngram'].default}-gram" in text
    squad = [n for n in EVAL_ASSETS if n.startswith("squad-shifts-")]
    listed = (
        "`squad-v1-dev`, `squad-shifts-{" + ",".join(n.removeprefix("squad-shifts-") for n in squad) + "}`"
    )
    rest = ", ".join(f"`{n}`" for n in EVAL_ASSETS if not n.startswith("squad-"))
    assert f"uses every fetched set among {listed}, {rest}, logs" in text
    assert f"all {NUMBER_WORDS[len(EVAL_ASSETS)]} default sets" in text


def test_the_bench_data_line_gives_its_defaults():
    d = DataBench()
    assert (
        f"`encoderlab bench data [--source {d.source}] [--workers N] [--scale {d.scale}] "
        f"[--repeats {d.repeats}] [--out F]`" in DATA
    )


def test_the_asset_table_lists_every_asset_with_its_pin_and_download():
    assert list(ASSET_TABLE) == [f"`{name}`" for name in ASSETS]
    seen = set()
    for name, spec in ASSETS.items():
        row = ASSET_TABLE[f"`{name}`"]
        assert row[1] == spec.kind, name
        s = spec.source
        if s is None:
            assert row[-1] == "-", name
            continue
        assert row[-2].startswith(f"{s.registry}: `{s.package}=={s.version}`"), name
        shared = (s.registry, s.package, s.version) in seen
        assert row[-1] == ("(same)" if shared else f"{s.size / 1e6:.1f} MB"), name
        seen.add((s.registry, s.package, s.version))


def test_the_fetch_all_line_is_the_registrys_downloads():
    downloads = {(s.registry, s.package, s.version): s.size for s in (a.source for a in ASSETS.values()) if s}
    on_disk = sum(numbers(row[4])[0] for row in ASSET_TABLE.values())
    assert (
        f"everything: {sum(downloads.values()) / 1e9:.2f} GB downloaded, {on_disk / 1e3:.2f} GB in assets/"
        in (ASSETS_DOC)
    )


@pytest.mark.parametrize("name", [n for n in ASSETS if ASSETS[n].source is not None])
def test_a_fetched_assets_row_is_its_manifest(name):
    if not is_fetched(name):
        pytest.skip(f"{name} is not fetched (encoderlab assets fetch {name})")
    m = read_manifest(name)
    _, _, docs, chars, size, _, _ = ASSET_TABLE[f"`{name}`"]
    assert size == f"{m['size_bytes'] / 1e6:.1f} MB", name
    if m["documents"] is not None:
        assert (docs, chars) == (f"{m['documents']:,}", f"{m['chars'] / 1e6:.2f}M"), name


def test_the_default_set_and_ci_fetches_are_named_as_the_code_has_them():
    a, b, c = DEFAULT_ASSETS
    assert f"the `{a}` corpus and its tasks `{b}` (SC) and\n`{c}` (TC;" in ASSETS_DOC
    fetched = re.search(r"encoderlab assets fetch (.+)", (ROOT / "Makefile").read_text()).group(1).split()
    assert f"CI fetches {' and '.join(f'`{n}`' for n in fetched)}." in ASSETS_DOC
    assert f"fetches {len(fetched)} small assets" in (ROOT / "README.md").read_text()
    sources = {ASSETS[n].source for n in DEFAULT_ASSETS}
    wheels = [s for s in sources if s.registry == "pypi"]
    (npm,) = [s for s in sources if s.registry == "npm"]
    assert len(wheels) + 1 == len(sources)  # no apt-get
    said = f"{NUMBER_WORDS[len(wheels)].capitalize()} small wheels from PyPI and one npm package (`{npm.package}`, "
    assert f"{said}{npm.size / 1e6:.1f} MB, through `npm pack`" in flat(ASSETS_DOC)


@pytest.mark.skipif(sys.version_info[:2] != (3, 11), reason="the doc lists Python 3.11's held-out modules")
def test_the_code_python_held_out_modules_are_the_ones_listed():
    held = code_heldout_modules()
    text = flat(ASSETS_DOC)
    assert f"On Python 3.11 that is {len(held)} of " in text
    assert f"modules: {', '.join(held)}. Their" in text


@pytest.mark.skipif(sys.version_info[:2] != (3, 11), reason="the doc counts Python 3.11's stdlib")
def test_the_code_python_row_and_held_out_counts_are_its_manifest():
    if not is_fetched("code-python"):
        pytest.skip("code-python is not fetched (encoderlab assets fetch code-python)")
    m = read_manifest("code-python")
    d = m["details"]
    _, _, docs, chars, size, _, _ = ASSET_TABLE["`code-python`"]
    assert (docs, chars, size) == (
        f"{m['documents']:,}",
        f"{m['chars'] / 1e6:.2f}M",
        f"{m['size_bytes'] / 1e6:.1f} MB",
    )
    text = flat(ASSETS_DOC)
    assert f"Their {d['heldout_documents']} files ({d['heldout_chars'] / 1e6:.2f}M chars)" in text
    assert f"{len(d['skipped_not_utf8'])} files that are deliberately not UTF-8" in text


LABEL_NAMES = {
    "vitaminc": "VitaminC",
    "boolq": "BoolQ",
    "bbc-news": "BBC",
    "pubmedqa": "PubMedQA",
    "tweets": "tweets",
}


def stated_labels(name: str) -> dict[str, int]:
    """{label: count} of `name` in assets.md's "Label distributions: ..." sentence."""
    line = flat(ASSETS_DOC).split("Label distributions: ")[1].split(". No set is split")[0]
    part = next(p for p in line.split("; ") if p.startswith(LABEL_NAMES[name] + " "))
    return {label: int(n.replace(",", "")) for label, n in re.findall(r"(\w+) ([\d,]+\d)", part)}


@pytest.mark.parametrize("name", list(LABEL_NAMES))
def test_the_stated_label_distribution_adds_up_to_the_asset_tables_documents(name):
    """Runs without the fetch (CI fetches none of these sets, so the manifest check below skips there): the
    sentence's counts and the asset table's documents column are two hand-copied figures of one set."""
    line = flat(ASSETS_DOC).split("Label distributions: ")[1].split(". No set is split")[0]
    assert [p.split(" ", 1)[0] for p in line.split("; ")] == list(LABEL_NAMES.values())
    documents = numbers(ASSET_TABLE[f"`{name}`"][2])[0]
    assert sum(stated_labels(name).values()) == documents, name


@pytest.mark.parametrize("name", list(LABEL_NAMES))
def test_a_fetched_sets_label_distribution_is_the_docs(name):
    if not is_fetched(name):
        pytest.skip(f"{name} is not fetched (encoderlab assets fetch {name})")
    stated = stated_labels(name)
    counts = Counter(str(r["meta"]["label"]).lower() for r in read_jsonl(asset_jsonl(name)))
    assert stated == dict(counts), name


def test_general_ens_parts_and_code_pythons_hold_out_rule_are_the_codes():
    text = flat(ASSETS_DOC)
    assert (
        f"the union of the {NUMBER_WORDS[len(GENERAL_EN_PARTS)]} above, in the order {', '.join(GENERAL_EN_PARTS)} |"
        in text
    )
    assert f"`sha256(name) % {HELDOUT_BUCKETS} == 0`" in text
    assert ASSETS["general-en"].deps == GENERAL_EN_PARTS
    parts = [ASSET_TABLE[f"`{n}`"] for n in GENERAL_EN_PARTS]
    whole = ASSET_TABLE["`general-en`"]
    assert numbers(whole[2])[0] == sum(numbers(row[2])[0] for row in parts)  # documents, exactly
    for col, half_unit in ((3, 0.005), (4, 0.05)):  # characters (M, 2 places) and size (MB, 1 place), rounded
        assert abs(numbers(whole[col])[0] - sum(numbers(row[col])[0] for row in parts)) <= half_unit * (
            len(parts) + 1
        ), col


def test_the_default_valued_options_the_doc_accepts_are_accepted(tmp_path):
    """data.md says an option given at its default value is the same source, not refused as one that
    does nothing; its three examples are described (kind, files) as the bare file is."""
    sentence = flat(DATA).split("An option given at its default value (")[1].split(") is that same source")[0]
    kinds = {"local file": "txt", ".txt file": "txt", "JSONL file": "jsonl"}
    examples = re.findall(r"`(#\w+=\w+)` on an? ([.\w ]+?file)", sentence)
    assert [kind for _, kind in examples] == list(kinds)
    for option, kind in examples:
        path = tmp_path / f"c.{kinds[kind]}"
        path.write_text('{"text": "a b"}\n' if path.suffix == ".jsonl" else "a b\n")
        assert describe(parse_source(f"{path}{option}")) == describe(parse_source(str(path))), option
