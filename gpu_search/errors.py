"""Errors that reach the user as one line on stderr and a documented exit code.

Every problem with the user's input or environment is raised as a subclass of
:class:`GpuSearchError`; the command-line interface prints its message on one
line (``gpu-search: error: ...``) and exits with the class's ``exit_code``.
Anything else is a bug and still ends in one line, with exit code 1.
"""

from __future__ import annotations

import unicodedata


class GpuSearchError(Exception):
    """Base class: a clear, one-line, user-facing error."""

    exit_code = 1
    kind = "error"


class InputFileError(GpuSearchError):
    """An input file is missing, unreadable or a directory."""

    exit_code = 3


class EmptyInputError(GpuSearchError):
    """An input file holds nothing (no sequence, no model)."""

    exit_code = 4


class FormatError(GpuSearchError):
    """An input file is not in the expected format (FASTA, HMM, .gsdb), or is truncated."""

    exit_code = 5


class AlphabetError(GpuSearchError):
    """Nucleotide input where protein is expected (or the reverse)."""

    exit_code = 6


class SequenceError(GpuSearchError):
    """A sequence is unusable: invalid residue letters, zero length, too long."""

    exit_code = 7


class DeviceError(GpuSearchError):
    """A GPU was required (--device gpu) but none is usable."""

    exit_code = 8


class GpuMemoryError(GpuSearchError):
    """The GPU ran out of memory even at the smallest batch size."""

    exit_code = 9


class OutputError(GpuSearchError):
    """An output file cannot be written."""

    exit_code = 10


class OptionError(GpuSearchError):
    """A combination of options is invalid or unsupported."""

    exit_code = 2


def printable(text, limit: int = 200) -> str:
    """``text`` (str, bytes or a path) made fit for a one-line message: invalid UTF-8 and
    control characters written as escapes (\\x1b), runs of whitespace as one space, at most
    ``limit`` characters.  Messages quote bytes of a damaged file, or of Easel's error buffer."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "backslashreplace")
    text = " ".join(str(text).split())
    shown = []
    for ch in text:
        if ch == "\ufffd":                 # a byte pyhmmer could not decode
            shown.append("?")
        elif unicodedata.category(ch) in ("Cc", "Cf", "Cs", "Co", "Cn"):
            shown.append(ch.encode("unicode_escape", "backslashreplace").decode("ascii"))
        else:
            shown.append(ch)
    text = "".join(shown)
    return text if len(text) <= limit else text[:limit - 3] + "..."


EXIT_CODES = [
    (0, "success"),
    (1, "internal error (a bug: please report it)"),
    (2, "invalid command line or option value"),
    (InputFileError.exit_code, "input file missing, unreadable or a directory"),
    (EmptyInputError.exit_code, "input file empty (no sequence or no model)"),
    (FormatError.exit_code, "input not in the expected format (FASTA, HMM, .gsdb) or truncated"),
    (AlphabetError.exit_code, "nucleotide input where protein is expected (or the reverse)"),
    (SequenceError.exit_code, "invalid sequence: bad residue letter, empty or too long"),
    (DeviceError.exit_code, "--device gpu asked for but no usable GPU"),
    (GpuMemoryError.exit_code, "GPU out of memory even in the smallest batches"),
    (OutputError.exit_code, "an output file cannot be written, or no writable folder for compiled code"),
    (129, "stopped by SIGHUP (a closed terminal or session); no output file is left"),
    (130, "interrupted (Ctrl-C, SIGINT); no output file is left, finished or not"),
    (143, "terminated (SIGTERM, as Slurm, Galaxy and Nextflow stop jobs); no output file is left"),
]


def exit_code_help() -> str:
    """The exit-code table, for ``--help`` texts."""
    return "\b\nExit codes:\n" + "\n".join(f"  {code:>2}  {text}" for code, text in EXIT_CODES)
