"""The assets a study reads (`Backend.required_assets`): those not fetched yet, found before the study's
start checks, and fetched only once they passed (`runner._run_locked`): a refused study fetches nothing.
What the assets fetched hold is checked then (`Backend.check_fetched`), and nothing else again."""

from __future__ import annotations

from encoderlab.errors import UserError
from encoderlab.words import noun


def missing_assets(names: list[str], fetch: bool) -> list[str]:
    """The assets of `names` not fetched yet; with `fetch` False, refused naming the command."""
    from encoderlab.data import assets

    missing = [n for n in dict.fromkeys(names) if not assets.is_fetched(n)]
    if missing and not fetch:
        raise UserError(
            f"this study needs {noun(len(missing), 'asset')} {', '.join(missing)} that {noun(len(missing), 'is', 'are')} not fetched; run: {_fetch_command(missing)}"
        )
    return missing


def fetch_assets(missing: list[str]) -> None:
    """Fetch the assets `missing_assets` found missing, or name the command in one line."""
    from encoderlab.data import assets
    from encoderlab.data.assets.cache import assets_root, check_cache

    check_cache(assets_root())  # its own fix: "when a registry is reachable, fetch" would meet it again
    try:
        assets.fetch(missing)
    except UserError as exc:
        raise UserError(
            f"this study needs {noun(len(missing), 'asset')} {', '.join(missing)} and fetching failed ({exc}); when a registry is reachable run: {_fetch_command(missing)}"
        ) from None


def _fetch_command(missing: list[str]) -> str:
    return f"encoderlab assets fetch {' '.join(missing)}"
