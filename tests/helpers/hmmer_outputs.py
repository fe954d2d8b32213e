"""Comparing our HMMER outputs with an oracle's (HMMER's own code), line by line."""

from __future__ import annotations

import difflib

import pytest


def assert_same(expected: str, ours: str, exempt: tuple[str, ...], what: str, provenance: str) -> None:
    """Line-by-line equality, exempt lines masked, our provenance line (once, after HMMER's
    version line) left out; a unified diff on failure."""
    lines = ours.splitlines()
    assert lines.count(provenance) == 1, (what, provenance)
    at = lines.index(provenance)
    assert lines[at - 1].startswith(("# HMMER 3.4 (", "# Version:         3.4 (")), (what, lines[at - 1])
    del lines[at]

    def masked(text_lines):
        return [line.split(":")[0] + ": <exempt>" if line.startswith(exempt) else line for line in text_lines]
    a, b = masked(expected.splitlines()), masked(lines)
    if a != b:
        diff = "\n".join(difflib.unified_diff(a, b, "HMMER 3.4 (oracle)", "gpu-search", lineterm="", n=2))
        pytest.fail(f"{what} differs from HMMER's:\n{diff[:20000]}")
