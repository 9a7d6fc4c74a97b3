"""Offline, a hub dataset the local hub cache holds nothing of, or a pinned revision (a task file's
`data.revision`) it lacks of a repo it holds at others: the line naming what it holds and the download
(`offline_uncached`),
and which variable took `datasets` offline (`offline_variable`). Apart from `hub.load_hub`, which asks it
when a load fails with neither a mirror nor a snapshot read, so that module keeps to reading.
"""

from __future__ import annotations

import os

from encoderlab.eval.tasks.hubsource import HubSource


def offline_uncached(datasets, source: HubSource) -> str | None:
    """Offline, a repo the local hub cache holds nothing of, or a pinned revision (`data.revision`) it lacks
    of a repo it holds at others: what it holds and the download. It was "Couldn't reach ... on the Hub
    (OfflineModeIsEnabled); check the name and your connection": of a repo never fetched, a study's task
    file read offline said nothing of the download or of the variable, and of a pinned revision it hid the
    repo on disk at another one, which a load never reads in its place (as a model's pinned id offline:
    `hubmodels._offline_refusal`). Reached only where `datasets` had no copy it prepared either."""
    from encoderlab.data.hub import HUB_DATA_ENV, hf_download
    from encoderlab.data.hubmodels import cache_storage, cached_revisions, held_text

    if not datasets.config.HF_HUB_OFFLINE:
        return None
    variable = offline_variable(datasets)
    offline = f"the hub is offline ({variable}=1)"
    download = f"download it with the hub online ({hf_download(source.repo, 'dataset', source.revision)})"
    storage, held = cache_storage(source.repo, "datasets"), cached_revisions(source.repo, "datasets")
    if not held:
        return (
            f"{offline} and the local hub cache holds nothing of {source.repo}; {download}, or unset "
            f"{variable} to fetch it, or set {HUB_DATA_ENV}=DIR to read a local mirror"
        )
    if (
        source.revision is None
        or (storage / "refs" / source.revision).is_file()
        or (storage / "snapshots" / source.revision).is_dir()
    ):
        return None  # the revision held: another problem
    return (
        f"{offline} and the local hub cache has no revision {source.revision!r} of {source.repo} (it holds "
        f"{held_text(held)}); {download}, or, in a task file, pin one it holds (data.revision: {held[0]})"
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
