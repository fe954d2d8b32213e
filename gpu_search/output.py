"""Writing outputs safely: a temporary file renamed into place only on success.

A search that fails half way (bad input found late, GPU error, Ctrl-C) must
never leave a half-written table behind that a pipeline would take for a
result.  Every output goes to a temporary file in the destination directory
and is renamed over the final name once the whole command has succeeded.
"""

from __future__ import annotations

import contextlib
import os
import stat
import sys
import tempfile
from pathlib import Path

from .errors import OutputError


def _is_special(path: Path) -> bool:
    """A device, FIFO or socket (/dev/null, /dev/stdout, a named pipe): write it directly.

    Renaming a temporary file over such a path would replace the device itself.
    """
    try:
        return not stat.S_ISREG(os.stat(path).st_mode) and not stat.S_ISDIR(os.stat(path).st_mode)
    except OSError:
        return False


def _umask_mode() -> int:
    """The mode a plain open() would give a new file (mkstemp makes 0600)."""
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


def check_outputs(*paths) -> None:
    """Refuse, before any work, an output path that cannot be written as a file: an existing
    directory, or one in a folder that does not exist (the search would run to its end first)."""
    for p in paths:
        if p is None or str(p) == "-":
            continue
        path = Path(p)
        if _is_special(path):
            continue
        if path.is_dir():
            raise OutputError(f"{path}: is a directory, not a file to write")
        directory = path.parent if str(path.parent) else Path(".")
        if not directory.is_dir():
            raise OutputError(f"{path}: directory {directory} does not exist")


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike):
    """Yield a temporary path next to ``path``; rename it to ``path`` on success."""
    path = Path(path)
    if _is_special(path):
        yield str(path)
        return
    directory = path.parent if str(path.parent) else Path(".")
    if not directory.is_dir():
        raise OutputError(f"{path}: directory {directory} does not exist")
    if path.is_dir():
        raise OutputError(f"{path}: is a directory, not a file to write")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".part", dir=directory)
        os.close(fd)
        os.chmod(tmp, _umask_mode())
    except OSError as exc:
        raise OutputError(f"{path}: cannot write ({exc.strerror})") from None
    try:
        yield tmp
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


class OutputSet:
    """Several output files opened together and committed together.

    ``open(path)`` returns a text handle on a temporary file (or stdout for
    ``-``); ``commit()`` renames them all; leaving the ``with`` block on an
    exception removes them all.
    """

    def __init__(self):
        self._files: list[tuple[object, str, Path]] = []
        self._stack = contextlib.ExitStack()

    def __enter__(self):
        return self

    def open(self, path: str | os.PathLike | None):
        if path is None:
            return None
        if str(path) == "-":
            return sys.stdout
        path = Path(path)
        if _is_special(path):           # e.g. -o /dev/null: write it directly
            try:
                fh = open(path, "w", encoding="utf-8", newline="\n")
            except OSError as exc:
                raise OutputError(f"{path}: cannot write ({exc.strerror})") from None
            self._files.append((fh, None, path))
            return fh
        directory = path.parent if str(path.parent) else Path(".")
        if not directory.is_dir():
            raise OutputError(f"{path}: directory {directory} does not exist")
        if path.is_dir():
            raise OutputError(f"{path}: is a directory")
        try:
            fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".part", dir=directory)
            os.chmod(tmp, _umask_mode())
        except OSError as exc:
            raise OutputError(f"{path}: cannot write ({exc.strerror})") from None
        fh = os.fdopen(fd, "w", encoding="utf-8", newline="\n")
        self._files.append((fh, tmp, path))
        return fh

    def commit(self) -> None:
        for fh, tmp, path in self._files:
            fh.close()
            if tmp is not None:
                os.replace(tmp, path)
        self._files.clear()

    def __exit__(self, exc_type, exc, tb):
        for fh, tmp, _ in self._files:
            with contextlib.suppress(OSError):
                fh.close()
                if tmp is not None:
                    os.unlink(tmp)
        self._files.clear()
        return False


def save_pickle(path, magic: bytes, payload) -> None:
    """Saved results for ``gpu-search merge``: ``magic`` then a pickle, written atomically."""
    import pickle

    with atomic_path(path) as tmp:
        with open(tmp, "wb") as fh:
            fh.write(magic)
            pickle.dump(payload, fh, protocol=pickle.HIGHEST_PROTOCOL)


def load_pickle(path, magic: bytes, suffix: str, writer: str, allowed: frozenset):
    """Read what ``save_pickle`` wrote; ``suffix`` and ``writer`` name the file in
    errors (".gsblast", "gpu-search blastp --hits-out").

    The file is unpickled by :class:`RecordsUnpickler`, which builds only the classes
    ``allowed`` names (module, name): result files pass through shared storage and
    other people's workflow steps, and a plain pickle runs whatever its file names.
    """
    import pickle

    from .errors import FormatError, InputFileError

    path = Path(path)
    if not path.is_file():
        raise InputFileError(f"{path}: no such file")
    with open(path, "rb") as fh:
        if fh.read(len(magic)) != magic:
            raise FormatError(f"{path}: not a {suffix} file written by {writer}")
        try:
            return RecordsUnpickler(fh, allowed).load()
        except ForbiddenRecord as exc:
            raise FormatError(f"{path}: not a {suffix} file written by {writer} (it names {exc})") from None
        except (Exception, pickle.UnpicklingError):
            raise FormatError(f"{path}: corrupt or truncated {suffix} file") from None


class ForbiddenRecord(Exception):
    """A result file names a class or function outside what it may hold."""


def _pyhmmer_getattr(obj, name: str):
    """``getattr`` as pyhmmer's pickles use it, and nothing else: an alphabet's constructor
    (``Alphabet.amino()``), a vector's or matrix's ``_from_raw_bytes``."""
    from pyhmmer import easel

    if obj is easel.Alphabet and name in ("amino", "dna", "rna"):
        return getattr(obj, name)
    if isinstance(obj, type) and obj.__module__ == "pyhmmer.easel" and name == "_from_raw_bytes" \
            and (obj.__name__.startswith("Vector") or obj.__name__.startswith("Matrix")):
        return getattr(obj, name)
    raise ForbiddenRecord(f"getattr of {name!r}")


def _unpickler_base():
    import pickle

    return pickle.Unpickler


class RecordsUnpickler(_unpickler_base()):
    """An unpickler that builds only the (module, name) classes it is given."""

    def __init__(self, fh, allowed: frozenset):
        super().__init__(fh)
        self.allowed = allowed

    def find_class(self, module, name):
        if (module, name) == ("builtins", "getattr") and ("builtins", "getattr") in self.allowed:
            return _pyhmmer_getattr
        if (module, name) not in self.allowed:
            raise ForbiddenRecord(f"{module}.{name}")
        return super().find_class(module, name)
