"""CHANGELOG.md's shape, which every change edits by hand: `## Unreleased` first, then the releases;
under each, areas as `###` headings, each area once per release (a new entry goes under the area's
existing heading, never a second one), and entries as `- ` items with their continuation lines
indented."""

from __future__ import annotations

from pathlib import Path

CHANGELOG = Path(__file__).resolve().parents[1] / "CHANGELOG.md"


def shape_problems(text: str) -> list[str]:
    """What breaks the shape in `text`, one line each (`line N: ...`)."""
    found, releases, areas, release = [], [], set(), None
    for number, line in enumerate(text.splitlines(), 1):
        if number == 1:
            if line != "# Changelog":
                found.append("line 1: the title is not '# Changelog'")
        elif line.startswith("## "):
            release, areas = line[3:], set()
            if release in releases:
                found.append(f"line {number}: release '{release}' twice")
            releases.append(release)
        elif line.startswith("#"):
            if not line.startswith("### ") or line.startswith("####"):
                found.append(f"line {number}: a heading that is neither a release (##) nor an area (###)")
            elif release is None:
                found.append(f"line {number}: area '{line[4:]}' before any release")
            elif line[4:] in areas:
                found.append(f"line {number}: area '{line[4:]}' twice under '{release}'")
            areas.add(line[4:])
        elif line.strip() and not (areas and (line.startswith("- ") or line.startswith("  "))):
            found.append(f"line {number}: text outside an entry ('- ' under an area, continuations indented)")
    if releases[:1] != ["Unreleased"]:
        found.append("the first release is not '## Unreleased'")
    return found


def test_the_changelog_keeps_its_shape():
    assert not shape_problems(CHANGELOG.read_text(encoding="utf-8"))


def test_a_broken_shape_is_seen():
    text = (
        "# Changelog\n\n## 0.2.0\n\n### Data\n- a\n  more\n### Data\n- b\n#### Deep\nloose text\n"
        "## 0.2.0\n- no area yet\n"
    )
    assert shape_problems(text) == [
        "line 8: area 'Data' twice under '0.2.0'",
        "line 10: a heading that is neither a release (##) nor an area (###)",
        "line 11: text outside an entry ('- ' under an area, continuations indented)",
        "line 12: release '0.2.0' twice",
        "line 13: text outside an entry ('- ' under an area, continuations indented)",
        "the first release is not '## Unreleased'",
    ]
