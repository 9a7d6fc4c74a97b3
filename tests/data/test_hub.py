"""Hub sources through a simulated hub (`ENCODERLAB_HUB_DATA`, `ENCODERLAB_HUB_MODELS`,
tests/data/hub_corpus_fixtures.py): the same
`datasets.load_dataset(..., streaming=True)` and `AutoTokenizer.from_pretrained` calls as for a hub
id, checked against reading the parquet files and running the tokenizer directly."""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pyarrow.parquet as pq
import pytest
from corpus_fixtures import corpus_records
from hub_corpus_fixtures import EUROBERT, FINEWEB_EDU, make_eurobert_tokenizer, make_fineweb_edu
from tokenizers import Tokenizer

from encoderlab.data.hub import HUB_DATA_ENV, HUB_MODELS_ENV, dataset_location, resolve_dataset
from encoderlab.data.hubmodels import model_location
from encoderlab.data.prepare import PrepareConfig, prepare, read_meta, split_dir
from encoderlab.data.shard import Shard
from encoderlab.data.sources import SourceConfig, SourceStats, iter_documents
from encoderlab.data.tokenizer import load_tokenizer, spec_fields
from encoderlab.errors import UserError

SAMPLE_10BT = SourceConfig(location=f"hf:{FINEWEB_EDU}", hf_config="sample-10BT")


@pytest.fixture(scope="session")
def hub_root(tmp_path_factory):
    """A simulated hub holding FineWeb-Edu and EuroBERT's tokenizer layout."""
    root = tmp_path_factory.mktemp("hub")
    make_fineweb_edu(root / "datasets")
    make_eurobert_tokenizer(root / "models", [r["text"] for r in corpus_records(200)])
    return root


@pytest.fixture
def hub(hub_root, monkeypatch):
    monkeypatch.setenv(HUB_DATA_ENV, str(hub_root / "datasets"))
    monkeypatch.setenv(HUB_MODELS_ENV, str(hub_root / "models"))
    return hub_root


def _parquet_rows(hub_root, folder: str) -> list[dict]:
    files = sorted((hub_root / "datasets" / FINEWEB_EDU / folder).glob("*.parquet"))
    return [row for f in files for row in pq.read_table(f).to_pylist()]


def test_hub_ids_resolve_to_the_mirror_or_one_line(hub, tmp_path, monkeypatch):
    assert dataset_location(FINEWEB_EDU) == str(hub / "datasets" / FINEWEB_EDU)
    assert model_location(EUROBERT) == str(hub / "models" / EUROBERT)
    with pytest.raises(
        UserError, match=r"has no mirror of org/missing; .*hf download --repo-type dataset org/missing"
    ):
        dataset_location("org/missing")
    with pytest.raises(UserError, match="not a dataset id of the form OWNER/NAME"):
        dataset_location("../../etc")
    (tmp_path / "file").write_text("x")
    monkeypatch.setenv(HUB_DATA_ENV, str(tmp_path / "file"))
    with pytest.raises(UserError, match="is a file, not a folder"):
        dataset_location(FINEWEB_EDU)
    monkeypatch.delenv(HUB_DATA_ENV)
    assert dataset_location(FINEWEB_EDU) == FINEWEB_EDU  # no mirror: the hub id itself


def test_fineweb_edu_streams_every_row_in_file_order_with_its_identity(hub):
    rows = _parquet_rows(hub, "sample/10BT")
    stats = SourceStats(SAMPLE_10BT.location)
    docs = list(iter_documents(SAMPLE_10BT, stats))
    assert [d.text for d in docs] == [r["text"] for r in rows]
    assert [d.id for d in docs] == [f"{FINEWEB_EDU}#{r['id']}" for r in rows]
    files = [f"sample/10BT/{k:03d}_00000.parquet" for k in range(4)]
    assert stats.identity == {
        "kind": "hf",
        "hub_id": FINEWEB_EDU,
        "config": "sample-10BT",
        "split": "train",
        "data_dir": None,
        "revision": "local",
        "mirror": str(hub / "datasets" / FINEWEB_EDU),
        "files": files,
    }
    mirror = hub / "datasets" / FINEWEB_EDU  # a mirror's files are recorded as local files are
    assert stats.files == [{"path": f, "docs": 40, "complete": True, **_recorded(mirror / f)} for f in files]
    # another config of the same repo reads its own files
    assert (
        len(list(iter_documents(SourceConfig(location=f"hf:{FINEWEB_EDU}", hf_config="sample-100BT")))) == 80
    )


def _recorded(path) -> dict:
    st = path.stat()
    return {
        "bytes": st.st_size,
        "sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
        "mtime_ns": st.st_mtime_ns,
    }


def test_a_shard_reads_its_slice_of_the_files_and_the_slices_partition_the_stream(hub):
    whole = [d.id for d in iter_documents(SAMPLE_10BT)]
    parts = []
    for i in range(3):
        stats = SourceStats(SAMPLE_10BT.location)
        parts.append([d.id for d in iter_documents(SAMPLE_10BT, stats, shard=Shard(i, 3))])
        assert [f["path"] for f in stats.files] == [
            f"sample/10BT/{k:03d}_00000.parquet" for k in Shard(i, 3).select(4)
        ]
    assert sum(parts, []) == whole and len(set(whole)) == len(whole)


def test_hub_sources_that_share_a_file_are_refused(hub):
    """`default` (data/*/*) holds the per-dump config's file; a file span overlapping the whole split."""
    from encoderlab.data.mixing import mix_documents

    dump = SourceConfig(location=f"hf:{FINEWEB_EDU}", hf_config="CC-MAIN-2024-10")
    default = SourceConfig(location=f"hf:{FINEWEB_EDU}", hf_config="default")
    with pytest.raises(
        UserError, match=r"both read hf:HuggingFaceFW/fineweb-edu/data/CC-MAIN-2024-10/train-0"
    ):
        next(mix_documents([default, dump]))
    span = SourceConfig(location=f"hf:{FINEWEB_EDU}", hf_config="sample-10BT", hf_files="3:4")
    with pytest.raises(UserError, match=r"both read hf:HuggingFaceFW/fineweb-edu/sample/10BT/003_00000"):
        next(mix_documents([SAMPLE_10BT, span]))
    first = SourceConfig(location=f"hf:{FINEWEB_EDU}", hf_config="sample-10BT", hf_files="0:3")
    assert len({d.source for d in mix_documents([first, span, dump])}) == 3  # disjoint files mix


def test_an_out_inside_a_hub_mirror_is_refused_before_anything_is_written(hub, tmp_path, monkeypatch):
    """The `default` config reads `data/*/*`: an --out there was read back as the corpus, which ended
    in "streams as 2 shards but lists 1 files" after the temporary folder had been written. The check
    then opened the mirror through `datasets` first, which left a lock file in its cache under HF_HOME."""
    from tests.reliability.treestate import assert_unchanged, world_state

    repo = hub / "datasets" / FINEWEB_EDU
    monkeypatch.chdir(tmp_path)
    before = world_state(tmp_path, hub)  # the mirror, the working folder and the Hugging Face caches
    cfg = PrepareConfig(
        sources=(SourceConfig(location=f"hf:{FINEWEB_EDU}", hf_config="default"),),
        tokenizer=EUROBERT,
        decontaminate=(),
    )
    with pytest.raises(
        UserError, match=r"^--out .*data/p is, contains or lies inside the source .*fineweb-edu;"
    ):
        prepare(cfg, repo / "data" / "p", workers=1, progress=False)
    assert_unchanged(before)


def test_bad_hub_configs_splits_and_fields_are_one_line(hub, monkeypatch):
    with pytest.raises(UserError, match=r"BuilderConfig 'sample-1BT' not found.*sample-10BT.*fix #hf_config"):
        resolve_dataset(FINEWEB_EDU, "sample-1BT")
    with pytest.raises(UserError, match="has no split 'test'; valid: train; fix #hf_split"):
        resolve_dataset(FINEWEB_EDU, "sample-10BT", "test")
    with pytest.raises(UserError, match="has no column 'body'.*text, id, dump.*fix #text_field"):
        list(
            iter_documents(
                SourceConfig(location=f"hf:{FINEWEB_EDU}", hf_config="sample-10BT", text_field="body")
            )
        )
    monkeypatch.delenv(HUB_DATA_ENV)
    with pytest.raises(
        UserError, match=f"HF_HUB_OFFLINE=1; unset it, or mirror the dataset and set {HUB_DATA_ENV}"
    ):
        resolve_dataset(FINEWEB_EDU, "sample-10BT")


def test_eurobert_layout_loads_through_the_hub_id(hub):
    tok = load_tokenizer(EUROBERT)
    spec = spec_fields(tok)
    assert (
        spec["vocab_size"],
        spec["bos_id"],
        spec["eos_id"],
        spec["pad_id"],
        spec["mask_id"],
        spec["unk_id"],
    ) == (
        128_256,
        128_000,
        128_001,
        128_001,
        128_002,
        None,
    )


def test_prepare_streams_fineweb_edu_through_eurobert_into_uint32(hub, tmp_path):
    cfg = PrepareConfig(sources=(SAMPLE_10BT,), tokenizer=EUROBERT, decontaminate=(), val_fraction=0.05)
    out = prepare(cfg, tmp_path / "fw", workers=1, progress=False)
    meta = read_meta(out)
    assert meta["dtype"] == "uint32" and meta["encoder"] == "tiktoken"
    # the reference: the Rust tokenizer on every row's text, wrapped in bos ... eos, in file order
    ref = Tokenizer.from_file(str(hub / "models" / EUROBERT / "tokenizer.json"))
    docs = [
        [128_000, *ref.encode(r["text"], add_special_tokens=False).ids, 128_001]
        for r in _parquet_rows(hub, "sample/10BT")
    ]
    got = []
    for split in ("train", "val"):
        tokens = np.fromfile(split_dir(out, split) / "tokens.bin", dtype=np.uint32)
        offsets = np.load(split_dir(out, split) / "doc_offsets.npy")
        got.append([tokens[a:b].tolist() for a, b in zip(offsets[:-1], offsets[1:])])
    assert sorted(got[0] + got[1]) == sorted(docs) and len(got[1]) == round(0.05 * len(docs))
    assert meta["max_token_id"] == max(max(d) for d in docs) == 128_001
    total = {s: meta["splits"][s]["tokens"] for s in ("train", "val")}
    assert (
        meta["unique_tokens"] == total == meta["sources"][0]["unique_tokens"] == meta["sources"][0]["tokens"]
    )
    identity = meta["sources"][0]["identity"]
    assert (identity["hub_id"], identity["config"], identity["revision"]) == (
        FINEWEB_EDU,
        "sample-10BT",
        "local",
    )
    assert json.loads(json.dumps(meta)) == meta  # plain JSON


def test_a_prepare_refused_on_a_streamed_hub_records_field_leaves_nothing_in_hf_home(
    hub, tmp_path, monkeypatch
):
    """The stream `datasets` opens (`hubread.stream_files`) made a builder, which took a lock file in its cache
    (HF_HOME/datasets) and left it there behind the refusal of a text field the records lack."""
    from tests.reliability.treestate import assert_unchanged, world_state

    monkeypatch.chdir(tmp_path)
    before = world_state(tmp_path, hub)
    source = SourceConfig(location=f"hf:{FINEWEB_EDU}", hf_config="sample-10BT", text_field="body")
    cfg = PrepareConfig(sources=(source,), tokenizer=EUROBERT, decontaminate=())
    with pytest.raises(UserError, match=r"has no column 'body' .*fix #text_field"):
        prepare(cfg, tmp_path / "p", workers=1, progress=False)
    assert_unchanged(before)


def test_a_study_out_inside_a_hub_mirror_it_reads_is_refused_before_anything_is_written(
    hub, tmp_path, monkeypatch
):
    """`study run` checked its --out against its sources' locations, and `hf:OWNER/NAME` is no path: a study
    folder inside the mirror it reads was made, and refused only when its prepare node ran."""
    import dataclasses

    from tests.reliability.treestate import assert_unchanged, world_state
    from tests.study.fake_study import backend, small_spec

    from encoderlab.study.runner import run_study

    spec = small_spec()
    data = dataclasses.replace(spec.data[0], corpus=(f"hf:{FINEWEB_EDU}#hf_config=default",))
    repo = hub / "datasets" / FINEWEB_EDU
    monkeypatch.chdir(tmp_path)
    before = world_state(tmp_path, hub)
    with pytest.raises(
        UserError, match=r"^--out .*data/s is, contains or lies inside the source .*fineweb-edu;"
    ):
        run_study(dataclasses.replace(spec, data=(data,)), repo / "data" / "s", backend(), progress=False)
    assert_unchanged(before)
