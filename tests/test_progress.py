"""The progress line on stderr: only on a terminal, never with --quiet; done/total, rate and time left."""

import io
from types import SimpleNamespace

from gpu_search.progress import Progress


class Terminal(io.StringIO):
    def isatty(self):
        return True


def test_progress_shows_rate_and_time_left_on_a_terminal(monkeypatch):
    out = Terminal()
    clock = iter([100.0, 104.0, 104.0])  # started at 100 s, updated at 104 s (then closed)
    monkeypatch.setattr("gpu_search.progress.time", SimpleNamespace(monotonic=lambda: next(clock)))
    p = Progress("hmmsearch", 20, "models", stream=out)
    p.update(5)
    assert "5/20 models" in out.getvalue()
    assert "1.25/s" in out.getvalue()
    assert "about 12 s left" in out.getvalue()
    p.close()
    assert out.getvalue().endswith("\r\033[K")


def test_progress_is_silent_off_a_terminal_and_with_quiet():
    for stream, quiet in ((io.StringIO(), False), (Terminal(), True)):
        p = Progress("hmmsearch", 20, "models", quiet=quiet, stream=stream)
        p.update(5)
        p.close()
        assert stream.getvalue() == ""
