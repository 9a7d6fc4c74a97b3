"""Named hub corpora: the pretraining corpora of the papers' gpu scales, as typed table rows.

A study (or a user) names a corpus (`--source fineweb-edu-10bt`, `SourceConfig(location=
"fineweb-edu-10bt")`) instead of spelling its hub id, config, split and text column; the row
expands to that `hf:` source (`expand`), so preparing it streams the hub data through the same path
as any `hf:` source, and meta.json records the resolved identity (revision, files).

`declared_tokens` is what the dataset card states, in the card's own tokenizer (FineWeb-Edu counts
GPT-2 tokens), or, where the card is silent, what the dataset's own paper states (starcoderdata's
Python), so it is an estimate for planning, before anything is prepared; the exact count in the
tokenizer used is `unique_tokens` in the prepared folder's meta.json. None where neither gives a
count. The layouts were looked up on the cards (cited per row) and are reproduced by the test
fixtures in tests/data/hub_corpus_fixtures.py.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True, kw_only=True)
class HubCorpus:
    """One pretraining corpus on the Hugging Face hub, and how to read its text."""

    name: str
    hub_id: str
    config: str | None = None
    """The card's config name (None: the default config)."""
    split: str = "train"
    data_dir: str | None = None
    """A folder of the repo to read (for repos that split languages by folder, not by config)."""
    text_field: str = "text"
    id_field: str = "id"
    domain: str
    declared_tokens: float | None = None
    """Tokens the card (or the dataset's paper, cited in `card`) states for this config/split (None: not stated)."""
    token_unit: str | None = None
    """The tokenizer `declared_tokens` counts in."""
    declared_by: str = "the card"
    """Who states `declared_tokens` (plans say "the card's 10B gpt2 tokens")."""
    declared_rows: int | None = None
    """Rows the card's `dataset_info` states for this split (None: not stated)."""
    declared_bytes: int | None = None
    """`num_bytes` the card's `dataset_info` states for this split, over all its columns (None: not
    stated): the text holds fewer, so bytes / characters-per-token bounds its tokens from above."""
    tokens_per_doc: float | None = None
    """Mean tokens per document (in `token_unit`), where known: what a `max_docs` cap amounts to."""
    notes: str = ""
    """Access or licence conditions, and how the paper used it."""
    card: str = ""
    """Where the layout and the numbers come from."""

    def source(self, weight: float = 1.0):
        """The `SourceConfig` this corpus stands for."""
        from encoderlab.data.sources import SourceConfig

        return SourceConfig(
            location=f"hf:{self.hub_id}",
            text_field=self.text_field,
            id_field=self.id_field,
            weight=weight,
            hf_config=self.config,
            hf_split=self.split,
            hf_data_dir=self.data_dir,
        )


_FINEWEB_EDU_CARD = (
    "https://huggingface.co/datasets/HuggingFaceFW/fineweb-edu (README v1.4.0: configs sample-10BT, "
    "sample-100BT, sample-350BT 'randomly sampled ... of around N B gpt2 tokens'; columns text, id, dump, url, "
    "date, file_path, language, language_score, token_count, score, int_score)"
)

_FINEWEB_EDU_TOKENS_PER_DOC = 1_000
"""FineWeb-Edu's documents hold about 1,000 GPT-2 tokens each (the 10BT sample: ~10B tokens in ~10M rows)."""

_STARCODER_PYTHON_TOKENS = 17.5e9
"""Tokens of starcoderdata's `python` folder, in StarCoder's tokenizer: the StarCoder paper (arXiv
2305.06161) trains StarCoder on "another 35B Python tokens (roughly 2 epochs)", and BigCode states
that this is "the same Python dataset" StarCoderBase was pretrained on, read for two more epochs
(https://huggingface.co/bigcode/starcoder/discussions/52): so about 35B / 2. The dataset card gives
no per-language count or `dataset_info` (the repo is gated), so this is the best declared size. It is an
estimate ("roughly"), in StarCoder's 49,152-id code BPE; another tokenizer (ModernBERT's 50,368 ids,
trained with code) counts differently, exactly only once prepared (`unique_tokens` in meta.json)."""

CORPORA: dict[str, HubCorpus] = {
    c.name: c
    for c in (
        HubCorpus(
            name="fineweb-edu-10bt",
            hub_id="HuggingFaceFW/fineweb-edu",
            config="sample-10BT",
            domain="general English (educational web pages)",
            declared_tokens=10e9,
            token_unit="gpt2",
            tokens_per_doc=_FINEWEB_EDU_TOKENS_PER_DOC,
            notes="Paper 1's pretraining corpus is FineWeb-Edu; this is its 10B-token random sample.",
            card=_FINEWEB_EDU_CARD,
        ),
        HubCorpus(
            name="fineweb-edu-100bt",
            hub_id="HuggingFaceFW/fineweb-edu",
            config="sample-100BT",
            domain="general English (educational web pages)",
            declared_tokens=100e9,
            token_unit="gpt2",
            tokens_per_doc=_FINEWEB_EDU_TOKENS_PER_DOC,
            notes="About paper 1's budget of unique tokens; prepare it sharded (--shard) on several machines.",
            card=_FINEWEB_EDU_CARD,
        ),
        HubCorpus(
            name="fineweb-edu-350bt",
            hub_id="HuggingFaceFW/fineweb-edu",
            config="sample-350BT",
            domain="general English (educational web pages)",
            declared_tokens=350e9,
            token_unit="gpt2",
            tokens_per_doc=_FINEWEB_EDU_TOKENS_PER_DOC,
            notes=(
                "Paper 1's 42k steps read 99B tokens, more than sample-100BT holds in Llama-3 tokens (fewer than "
                "GPT-2's), so its gpu-scale studies read the first documents of this sample, capped."
            ),
            card=_FINEWEB_EDU_CARD,
        ),
        HubCorpus(
            name="biomed-enriched",
            hub_id="almanach/Biomed-Enriched",
            split="commercial",
            domain="biomedical (PubMed Central Open Access paragraphs)",
            declared_rows=98_595_508,
            declared_bytes=126_945_006_652,
            notes=(
                "Paper 2's English corpus (60% of its 50B tokens, there filtered to educational_score >= 3, "
                "which encoderlab does not filter). Split 'noncommercial' (47,449,067 rows) is published "
                "without its paragraph text: the `biomed-enriched` PyPI package fills it in from a PMC XML "
                "dump (its 421 bytes per row, against 1,288 here, are the metadata columns alone)."
            ),
            card=(
                "https://huggingface.co/datasets/almanach/Biomed-Enriched README: config default, splits "
                "commercial (data/commercial-*) and noncommercial (data/noncommercial-*), 15 columns with "
                "text and id; dataset_info: commercial num_bytes 126945006652, num_examples 98595508; "
                "paper 2's use from Rian-T/thesis chapter 5"
            ),
        ),
        HubCorpus(
            name="starcoderdata-python",
            hub_id="bigcode/starcoderdata",
            data_dir="python",
            text_field="content",
            domain="code (Python files from The Stack, deduplicated and decontaminated)",
            declared_tokens=_STARCODER_PYTHON_TOKENS,
            token_unit="starcoder",
            declared_by="the StarCoder paper",
            notes=(
                "Gated: accept the terms on the dataset page and log in (hf auth login). The card states about "
                "250B tokens for all 86 languages together (783 GB of code), none per language; the size here is "
                "the StarCoder paper's (see `_STARCODER_PYTHON_TOKENS`). Decontaminated against HumanEval, MBPP "
                "and the like, not against encoderlab's code-retrieval (CPython's standard library)."
            ),
            card=(
                "https://huggingface.co/datasets/bigcode/starcoderdata README: one folder per language "
                "(load_dataset(..., data_dir='python')), columns max_stars_repo_path, max_stars_repo_name, "
                "max_stars_count, id, content; no dataset_info (gated). Size: arXiv 2305.06161 and "
                "https://huggingface.co/bigcode/starcoder/discussions/52"
            ),
        ),
    )
}


def larger_general_corpus(names: Iterable[str], tokens: float) -> str | None:
    """The smallest named general-English corpus declaring at least `tokens` (what a run reads), to name in a
    refusal of a corpus too small for one pass: for corpora of named general-English samples or of local
    files (general English is the papers' pretraining domain, and all a size says of a user's files). None
    when `names` holds a named corpus of another domain (biomedical, code: a general corpus would be another
    study, not a fix), or none is large enough. Declared tokens are the cards' (gpt2's for FineWeb-Edu),
    near enough to the run's tokenizer for an example."""
    general = CORPORA["fineweb-edu-10bt"].domain
    if any(n in CORPORA and CORPORA[n].domain != general for n in names):
        return None
    fits = [c for c in CORPORA.values() if c.domain == general and (c.declared_tokens or 0) >= tokens]
    return min(fits, key=lambda c: c.declared_tokens or 0).name if fits else None
