"""A CKA node's texts file on this machine, as a study keys it and as the node reads it.

A CKA node's key held the path of its texts (`CkaSpec.texts`): a file edited after the node finished kept the
key, so the old result was served as the CKA of the new texts; a file moved with the same content got a new key,
and the CKA ran again for nothing. Now a texts file on this machine keys its node by its content
(`texts_identity`, `CkaNode.texts_digest`), as a prepare node is keyed by its task files' test texts
(`needs.keyed_sets`) and a model folder evaluated as is by its files (`localmodels.py`); its path stays in the
node's config, which the node reads. An asset name keys by the name: a fetched asset is pinned by its digest.
The report node, which reads the CKA's result and never the file, leaves such a path out of its spec digest
(`graph.report_config`): a moved texts file, or a study folder moved with it, kept the CKA and re-keyed the report.

A study runs for hours: a file edited between the graph's build and its CKA node was read by the node all the
same and scored under the old key. So the node hashes the file again before it reads it and after
(`read_keyed_texts`), and refuses a mismatch in one line naming the file and the fix, as `localmodels.check_model`
refuses a model folder (its fix and its cleanup reused: `run_again`, `leaving_nothing`); the node writes nothing,
so no CKA of other texts lies under the old key. The hash after the read catches an edit during it.

Trade-offs: the key is of the file's bytes, not of the texts read from it, so a reformatted file (a JSONL record's
`meta` edited, its keys reordered) runs the CKA again; in exchange the graph parses nothing, and a file the start
checks refuse (`checks.check_cka_texts`) is refused by them, with their line, not by the build. The file is hashed
whole once per graph and twice per CKA node, with no stat memory as a model folder has: CKA texts are hundreds
of short texts, not a corpus.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from encoderlab.errors import UserError
from encoderlab.study.localmodels import leaving_nothing, run_again

if TYPE_CHECKING:
    from encoderlab.study.runner import NodeContext


def texts_identity(texts: str) -> str | None:
    """The sha256 of `texts` when it is a file on this machine (read before an asset of the same name, as
    `analysis.inputs.records_path` reads it); None for an asset name, or a path that is no readable file, which
    the start checks refuse before the node would run (`checks.check_cka_texts`)."""
    from encoderlab.data.filerecords import sha256_of

    path = Path(texts).expanduser()
    try:
        return sha256_of(path) if path.is_file() else None
    except OSError:  # unreadable: the start checks' line names it
        return None


def read_keyed_texts(ctx: NodeContext, texts: str, keyed: str | None) -> list[str]:
    """The texts of `texts` (`analysis.inputs.read_texts`) for the CKA node of `ctx`, whose key holds `keyed`
    (the file's digest as the graph read it; None: an asset, read as is), checked to be that file before and
    after the read; else refused in one line, the node's folder gone again (see the module docstring)."""
    from encoderlab.analysis import inputs

    if keyed is None:
        return inputs.read_texts(texts)
    with leaving_nothing(ctx):
        _check(ctx, texts, keyed)
        read = inputs.read_texts(texts)
        _check(ctx, texts, keyed)
    return read


def _check(ctx: NodeContext, texts: str, keyed: str) -> None:
    """Refuse unless the file `texts` still holds the bytes of digest `keyed`."""
    now = texts_identity(texts)
    if now == keyed:
        return
    again = run_again(ctx.study_dir)
    if now is None:
        raise UserError(
            f"CKA texts file {texts} is gone since the study's graph was built, which keyed this node by its "
            f"content; put it back and {again}"
        )
    raise UserError(
        f"CKA texts file {texts} changed since the study's graph was built, which keyed this node by its content "
        f"then; {again} (its graph is rebuilt, keyed by the file as it is now; finished nodes are kept), or "
        "restore the file"
    )
