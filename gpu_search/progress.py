"""Progress on stderr for long runs: only on a terminal, never with --quiet."""

from __future__ import annotations

import sys
import time


class Progress:
    """A one-line counter redrawn in place, e.g. ``hmmsearch: 12/20 models (3 s, 4.1/s, about 2 s left)``,
    or without a total, ``makedb: 120,000 sequences, 41,210,003 residues (3 s, 40,000/s)``."""

    def __init__(self, label: str, total: int | None, unit: str, quiet: bool = False, stream=None):
        self.stream = stream or sys.stderr
        self.enabled = not quiet and self.stream.isatty()
        self.label, self.total, self.unit = label, total, unit
        self.start = time.monotonic()
        self._last = 0.0

    def update(self, done: int, detail: str = "") -> None:
        """``done`` of the total so far; ``detail``, more counts, said after them."""
        if not self.enabled:
            return
        now = time.monotonic()
        if now - self._last < 0.2 and done != self.total:
            return
        self._last = now
        elapsed = now - self.start
        of = f"/{self.total:,}" if self.total else ""
        pace = ""
        if done and elapsed > 0:
            rate = done / elapsed
            pace = (f", {rate:,.0f}/s" if rate >= 100 else f", {rate:.3g}/s" if rate >= 1
                    else f", {elapsed / done:.3g} s each")
            if self.total and done < self.total:
                pace += f", about {(self.total - done) / rate:.0f} s left"
        detail = f", {detail}" if detail else ""
        self.stream.write(f"\r{self.label}: {done:,}{of} {self.unit}{detail} ({elapsed:.0f} s{pace})\033[K")
        self.stream.flush()

    def close(self) -> None:
        if self.enabled:
            self.stream.write("\r\033[K")
            self.stream.flush()
