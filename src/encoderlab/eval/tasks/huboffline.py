"""Offline, a hub dataset's pinned revision (a task file's `data.revision`) that the local hub cache lacks of a
repo it holds at others: the line naming what it holds and the download of the one pinned (`offline_revision`),
and which variable took `datasets` offline (`offline_variable`). Apart from `hub.load_hub`, which asks it
when a load fails with neither a mirror nor a snapshot read, so that module keeps to reading.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # `hub` imports this module to load; the type only
    from encoderlab.eval.tasks.hub import HubSource


def offline_revision(datasets, source: HubSource) -> str | None:
    """Offline, a pinned revision (`data.revision`) that the local hub cache lacks of a repo it holds at
    others: what it holds and the download of this one. It was "Couldn't reach ... on the Hub
    (OfflineModeIsEnabled); check the name and your connection", the repo on disk at another revision,
    which a load never reads in its place (as a model's pinned id offline: `hubmodels._offline_refusal`)."""
    from encoderlab.data.hub import hf_download
    from encoderlab.data.hubmodels import cache_storage, cached_revisions, held_text

    if source.revision is None or not datasets.config.HF_HUB_OFFLINE:
        return None
    storage, held = cache_storage(source.repo, "datasets"), cached_revisions(source.repo, "datasets")
    if (
        not held
        or (storage / "refs" / source.revision).is_file()
        or (storage / "snapshots" / source.revision).is_dir()
    ):
        return None  # none of the repo (the line as before), or the revision held: another problem
    return (
        f"the hub is offline ({offline_variable(datasets)}=1) and the local hub cache has no revision "
        f"{source.revision!r} of {source.repo} (it holds {held_text(held)}); download it with the hub online "
        f"({hf_download(source.repo, 'dataset', source.revision)}), or, in a task file, pin one it holds "
        f"(data.revision: {held[0]})"
    )


def offline_variable(datasets) -> str:
    """The variable that took `datasets` offline: it reads HF_DATASETS_OFFLINE, where set, before
    HF_HUB_OFFLINE (`datasets.config.HF_HUB_OFFLINE`); a line naming HF_HUB_OFFLINE alone named a variable
    the user who set only HF_DATASETS_OFFLINE had not set."""
    value = os.environ.get("HF_DATASETS_OFFLINE")
    return (
        "HF_DATASETS_OFFLINE"
        if value is not None and value.upper() in datasets.config.ENV_VARS_TRUE_VALUES
        else "HF_HUB_OFFLINE"
    )
