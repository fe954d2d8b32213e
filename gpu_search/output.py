"""Writing outputs safely: a temporary file renamed into place only on success.

A search that fails half way (bad input found late, GPU error, Ctrl-C) must
never leave a half-written table behind that a pipeline would take for a
result.  Every output goes to a temporary file in the destination directory
and is renamed over the final name once the whole command has succeeded.
An output named through a symbolic link is written to the link's target (the
link stays a link).

Also here: the result files of database shards (``.gshits``, ``.gsblast``, for
``gpu-search merge``), a layout of plain data that cannot carry code, and the
checks that a set of them covers one database once.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import re
import stat
import sys
import tempfile
from pathlib import Path

from .errors import FormatError, InputFileError, OptionError, OutputError


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


def _final_path(path: Path) -> Path:
    """Where writing ``path`` lands: the target of a symbolic link (renaming a temporary file
    over the link's own path would replace the link with a file)."""
    return Path(os.path.realpath(path)) if path.is_symlink() else path


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
        final = _final_path(path)
        directory = final.parent if str(final.parent) else Path(".")
        if not directory.is_dir():
            raise OutputError(f"{path}: directory {directory} does not exist")


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike):
    """Yield a temporary path next to ``path``; rename it to ``path`` on success."""
    path = Path(path)
    if _is_special(path):
        yield str(path)
        return
    final = _final_path(path)
    directory = final.parent if str(final.parent) else Path(".")
    if not directory.is_dir():
        raise OutputError(f"{path}: directory {directory} does not exist")
    if path.is_dir():
        raise OutputError(f"{path}: is a directory, not a file to write")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{final.name}.", suffix=".part", dir=directory)
        os.close(fd)
        os.chmod(tmp, _umask_mode())
    except OSError as exc:
        raise OutputError(f"{path}: cannot write ({exc.strerror})") from None
    try:
        yield tmp
        os.replace(tmp, final)
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
        final = _final_path(path)
        directory = final.parent if str(final.parent) else Path(".")
        if not directory.is_dir():
            raise OutputError(f"{path}: directory {directory} does not exist")
        if path.is_dir():
            raise OutputError(f"{path}: is a directory")
        try:
            fd, tmp = tempfile.mkstemp(prefix=f".{final.name}.", suffix=".part", dir=directory)
            os.chmod(tmp, _umask_mode())
        except OSError as exc:
            raise OutputError(f"{path}: cannot write ({exc.strerror})") from None
        fh = os.fdopen(fd, "w", encoding="utf-8", newline="\n")
        self._files.append((fh, tmp, final))
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


# --- result files of database shards (.gshits, .gsblast) --------------------------------------
#
# A shard's results travel between jobs, shared storage and other people's workflow steps
# before ``gpu-search merge`` reads them, so they are plain data, checked field by field on
# reading, never a Python pickle (which runs whatever it names).  Layout (since version 2):
#
#     0   7 bytes   kind: b"GSHITS\0" (hmmsearch, phmmer) or b"GSBLAST" (blastp)
#     7   1 byte    format version (4; 1 was a Python pickle; 2 and 3 lacked fields now
#                     read: none of them is read)
#     8   8 bytes   H, the header's length (unsigned, little-endian)
#    16   H bytes   header: one JSON object (UTF-8): what was searched, how, and the results
#         8 bytes   D, the data's length
#         D bytes   data: binary parts the header points into as [offset, length]
#        32 bytes   SHA-256 of every byte before it (a damaged or cut file is refused)

RESULTS_VERSION = 5
_DIGEST = 32
INT64 = (-(1 << 63), (1 << 63) - 1)


def write_results(path, kind: bytes, header: dict, data: bytes = b"") -> None:
    """Write a result file (layout above) atomically."""
    blob = json.dumps(header, allow_nan=False, ensure_ascii=False, separators=(",", ":")).encode()
    digest = hashlib.sha256()
    with atomic_path(path) as tmp:
        with open(tmp, "wb") as fh:
            for part in (kind, bytes([RESULTS_VERSION]), len(blob).to_bytes(8, "little"), blob,
                         len(data).to_bytes(8, "little"), data):
                digest.update(part)
                fh.write(part)
            fh.write(digest.digest())


def _refuse_constant(name):
    raise ValueError(f"{name} is not a number")


def read_results(path, kind: bytes, suffix: str, writer: str) -> tuple[dict, bytes, str]:
    """Read a file :func:`write_results` wrote: (header, data, SHA-256 in hex).

    ``suffix`` and ``writer`` name the file in errors (".gsblast",
    "gpu-search blastp --hits-out").  Only the layout is checked here; the
    header's fields are the caller's to check.
    """
    path = Path(path)
    if not path.is_file():
        raise InputFileError(f"{path}: no such file")
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise InputFileError(f"{path}: cannot read ({exc.strerror})") from None
    if raw[:len(kind)] != kind:
        if raw and kind.startswith(raw):
            raise FormatError(f"{path}: truncated {suffix} file")
        raise FormatError(f"{path}: not a {suffix} file written by {writer}")
    if len(raw) < 8:
        raise FormatError(f"{path}: truncated {suffix} file")
    version = raw[7]
    if 1 <= version < RESULTS_VERSION:
        raise FormatError(f"{path}: a {suffix} file of an earlier gpu-search (format {version}), no longer "
                          f"read: search the shard again with this version")
    if version != RESULTS_VERSION:
        raise FormatError(f"{path}: {suffix} format version {version}; this gpu-search reads version "
                          f"{RESULTS_VERSION}")
    if len(raw) < 16 + 8 + _DIGEST:
        raise FormatError(f"{path}: truncated {suffix} file")
    size, digest = len(raw) - _DIGEST, raw[-_DIGEST:]
    if hashlib.sha256(memoryview(raw)[:size]).digest() != digest:
        raise FormatError(f"{path}: damaged or truncated {suffix} file (its checksum does not match)")
    h = int.from_bytes(raw[8:16], "little")
    if 16 + h + 8 > size:
        raise FormatError(f"{path}: corrupt {suffix} file (header length)")
    d = int.from_bytes(raw[16 + h:24 + h], "little")
    if 24 + h + d != size:
        raise FormatError(f"{path}: corrupt {suffix} file (data length)")
    try:
        header = json.loads(raw[16:16 + h].decode("utf-8"), parse_constant=_refuse_constant)
    except (ValueError, RecursionError):
        raise FormatError(f"{path}: corrupt {suffix} file (header)") from None
    if not isinstance(header, dict):
        raise FormatError(f"{path}: corrupt {suffix} file (header)")
    return header, raw[24 + h:size], digest.hex()


class Fields:
    """Checks a result file's header: each field of the expected type and range, no field
    missing, none unknown.  A failed check raises FormatError naming the file and the field."""

    def __init__(self, path, suffix: str):
        self.where = f"{path}: corrupt {suffix} file"

    def fail(self, what: str):
        raise FormatError(f"{self.where} ({what})")

    def record(self, obj, names, what: str) -> dict:
        """A JSON object with exactly the keys ``names``."""
        if not isinstance(obj, dict):
            self.fail(f"{what} is not a record")
        if set(obj) != set(names):
            odd = sorted(set(obj) ^ set(names))
            self.fail(f"{what}: unexpected or missing fields {', '.join(map(str, odd[:5]))}")
        return obj

    def items(self, obj, what: str, length: int | None = None) -> list:
        if not isinstance(obj, list) or (length is not None and len(obj) != length):
            self.fail(f"{what} is not a list" + ("" if length is None else f" of {length}"))
        return obj

    def integer(self, obj, what: str, lo: int = INT64[0], hi: int = INT64[1]) -> int:
        if type(obj) is not int or not lo <= obj <= hi:
            self.fail(f"{what} is not an integer in [{lo}, {hi}]")
        return obj

    def number(self, obj, what: str, lo: float = -math.inf, hi: float = math.inf) -> float:
        if type(obj) is not float or not lo <= obj <= hi:
            self.fail(f"{what} is not a number in [{lo}, {hi}]")
        return obj

    def flag(self, obj, what: str) -> bool:
        if type(obj) is not bool:
            self.fail(f"{what} is not true or false")
        return obj

    def text(self, obj, what: str, line: bool = True) -> str:
        """A string; ``line``: one that output lines are made of (no line break, no NUL)."""
        if type(obj) is not str or (line and any(c in obj for c in "\n\r\0")):
            self.fail(f"{what} is not a string" + (" of one line" if line else ""))
        return obj

    def optional(self, check, obj, what: str, *args):
        return None if obj is None else check(obj, what, *args)

    def part(self, obj, data: bytes, what: str) -> bytes:
        """A [offset, length] reference into the file's data."""
        ref = self.items(obj, what, 2)
        start = self.integer(ref[0], f"{what} offset", 0, len(data))
        length = self.integer(ref[1], f"{what} length", 0, len(data) - start)
        return data[start:start + length]


class Parts:
    """The data of a result file being written: binary parts appended, each referred to by
    [offset, length] in the header."""

    def __init__(self):
        self.chunks: list[bytes] = []
        self.size = 0

    def add(self, blob: bytes) -> list[int]:
        ref = [self.size, len(blob)]
        self.chunks.append(blob)
        self.size += len(blob)
        return ref

    def data(self) -> bytes:
        return b"".join(self.chunks)


# --- the database a shard's results came from ----------------------------------------------

DATABASE_FIELDS = ("name", "total_seqs", "total_residues", "shard", "first_index", "n_seqs", "n_residues")


def database_record(db) -> dict:
    """What a result file says of the database searched (a ``seqdb.SequenceDB``): its name
    (a shard's file name without ``.shardKofN``: that of the set), the whole database's
    size as the shard reports it, the shard's place ``[k, n]`` (or None: not a shard),
    and the sequences it holds (``first_index`` in the whole database, counts)."""
    name = re.sub(r"\.shard\d+of\d+(?=\.gsdb$)", "", os.path.basename(str(db.source)))
    return {
        "name": name,
        "total_seqs": int(db.total_seqs), "total_residues": int(db.total_residues),
        "shard": [int(db.shard[0]), int(db.shard[1])] if db.shard else None,
        "first_index": int(db.first_index), "n_seqs": int(db.n_seqs), "n_residues": int(db.n_residues),
    }


def check_database_record(fields: Fields, obj) -> dict:
    rec = fields.record(obj, DATABASE_FIELDS, "database")
    fields.text(rec["name"], "database name", line=False)     # a file's name: any characters
    for key in ("total_seqs", "total_residues", "first_index", "n_seqs", "n_residues"):
        fields.integer(rec[key], f"database {key}", 0)
    if rec["shard"] is not None:
        k, n = fields.items(rec["shard"], "database shard", 2)
        fields.integer(n, "database shard count", 1)
        fields.integer(k, "database shard number", 1, n)
    if rec["first_index"] + rec["n_seqs"] > rec["total_seqs"]:
        fields.fail("database: the shard's sequences lie outside the whole database")
    return rec


def check_shard_set(files: list[tuple[str, str, dict | None]], suffix: str) -> None:
    """Refuse result files that do not cover one database once: (path, SHA-256, database record).

    The same file twice, or two of the same shard; shards of different databases or sets;
    shards whose sequence ranges overlap; a shard beside a whole database.  Files of plain
    databases (FASTA, a .gsdb that is no shard) are pieces cut by the user, searched with the
    whole database's -Z or -dbsize: they have no place in a whole to check, only the same
    database twice is refused.  A record of None: not known (the file says nothing)."""
    seen: dict[str, str] = {}
    for path, digest, _ in files:
        if digest in seen:
            raise OptionError(f"{seen[digest]} and {path} are the same results given twice")
        seen[digest] = path
    known = [(path, db) for path, _, db in files if db is not None]
    shards = [(path, db) for path, db in known if db["shard"] is not None]
    if shards and len(shards) != len(known):
        whole = next(path for path, db in known if db["shard"] is None)
        raise OptionError(f"{shards[0][0]} is a shard's results, {whole} those of a whole database: "
                          f"merge the {suffix} files of one set of shards")
    if shards:
        path0, db0 = shards[0]
        same = ("name", "total_seqs", "total_residues")
        for path, db in shards[1:]:
            if any(db[key] != db0[key] for key in same) or db["shard"][1] != db0["shard"][1]:
                raise OptionError(
                    f"{path0} and {path} are shards of different databases ({_described(db0)}; "
                    f"{_described(db)})")
        by_number: dict[int, str] = {}
        for path, db in shards:
            k = db["shard"][0]
            if k in by_number:
                raise OptionError(f"{by_number[k]} and {path} are both the results of shard {k} of "
                                  f"{db['shard'][1]}: each shard once")
            by_number[k] = path
        ranges = sorted((db["first_index"], db["first_index"] + db["n_seqs"], path) for path, db in shards)
        for (a0, a1, pa), (b0, b1, pb) in zip(ranges, ranges[1:]):
            if b0 < a1:
                raise OptionError(f"{pa} and {pb} cover overlapping sequences ({a0 + 1}-{a1} and "
                                  f"{b0 + 1}-{b1}): each sequence once")
        return
    by_database: dict[tuple, str] = {}
    for path, db in known:
        key = (db["name"], db["n_seqs"], db["n_residues"])
        if key in by_database:
            raise OptionError(f"{by_database[key]} and {path} are both results of {_shown(db['name'])}: "
                              f"each database once")
        by_database[key] = path


def _shown(name: str) -> str:
    """A name in a one-line message (a file name may hold a line break)."""
    return name.replace("\r", "\\r").replace("\n", "\\n")


def _described(db: dict) -> str:
    k, n = db["shard"]
    return (f"{_shown(db['name'])} shard {k} of {n}, {db['total_seqs']:,} sequences, "
            f"{db['total_residues']:,} residues")
