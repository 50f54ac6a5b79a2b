"""No tracked text refers to how the work on the repository was organised.

Names and prose say what a thing is, never when or in what order it was made: no numbered work
items or rounds, no "promotion" of one variant over another. Raw results (``*.csv``, ``*.jsonl``)
are data and are left out; so is this file, which has to spell the words out.
"""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BOOKKEEPING = re.compile(
    r"\bstops? \d+|\bissues? #?\d+|\bsessions? \d+|\brounds? \d+|\bpromot(?:ion|ions|ed|e)\b", re.IGNORECASE)
RAW_DATA = (".csv", ".jsonl")


def tracked_files() -> list[Path]:
    """The files git tracks in this checkout (the test skips without git or a repository)."""
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("needs git and the repository's .git")
    listing = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True)
    if listing.returncode != 0:
        pytest.skip(f"git ls-files failed: {listing.stderr.decode(errors='replace').strip()}")
    return [ROOT / name for name in listing.stdout.decode("utf-8").split("\0") if name]


def bookkeeping_hits(paths: list[Path]) -> list[str]:
    """``file:line: text`` of every line of a text file among ``paths`` that matches the words."""
    hits = []
    for path in paths:
        if path.suffix in RAW_DATA or path.resolve() == Path(__file__).resolve() or not path.is_file():
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):  # a binary file
            continue
        for number, line in enumerate(text.splitlines(), start=1):
            match = BOOKKEEPING.search(line)
            if match:
                hits.append(f"{path.relative_to(ROOT)}:{number}: {match.group(0)!r} in {line.strip()[:160]}")
    return hits


def test_the_pattern_finds_the_words_and_only_them():
    # the first three spelled in pieces, so that a search of the repository's own text does not stop here
    lines = ["since stop " + "15", "Issue #" + "3 says", "session " + "2", "Round 4", "promoted", "a promotion",
             "early stopping, patience 3", "the issues", "stop-loss", "a round trip"]
    assert [bool(BOOKKEEPING.search(line)) for line in lines] == [True] * 6 + [False] * 4


def test_no_tracked_text_refers_to_how_the_work_was_organised():
    hits = bookkeeping_hits(tracked_files())
    assert not hits, ("tracked text refers to how the work was organised; say what the thing is "
                      "instead:\n" + "\n".join(hits))
