"""The protein sequence database: FASTA (plain or gzip) or a pre-digitized .gsdb.

All sequences are held in a few flat arrays shared by every stage, CPU and
GPU alike (the layout of the early GPU hmmsearch papers: one residue stream plus offsets):

    residues   uint8   every residue, digitized with Easel's amino alphabet
                       (ACDEFGHIKLMNPQRSTVWY = 0..19, '-' 20, BJZOUX 21..26,
                       '*' 27, '~' 28: the codes HMMER's profiles index)
    offsets    int64   sequence i is residues[offsets[i]:offsets[i+1]]
    lengths    int32   offsets[i+1] - offsets[i]
    names, descriptions   packed bytes with offsets (decoded on demand)
    length_order  int32   sequence indices by decreasing length (for batching)

A ``.gsdb`` file is these arrays written once (``gpu-search makedb``), each
64-byte aligned after a small JSON header, and memory-mapped on load.  It
records its own sequence and residue counts and, for a shard, those of the
whole database, so a search of one shard can use the whole database's size
for its E-values.

FASTA is read the way Easel reads it (same letters accepted, same codes):
letters in either case, '*' and '~', '.' or '_' as gap; spaces, tabs and
carriage returns ignored; anything else is an error, as in HMMER.
"""

from __future__ import annotations

import contextlib
import gzip
import zlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .errors import (AlphabetError, EmptyInputError, FormatError, InputFileError,
                     SequenceError)
from .output import atomic_path

AMINO_SYMBOLS = "ACDEFGHIKLMNPQRSTVWY-BJZOUX*~"
K_AMINO = 20        # canonical residues
KP_AMINO = 29       # all codes
GAP_CODE = 20

IGNORED = 254       # byte maps: whitespace
ILLEGAL = 255       # byte maps: not allowed in a sequence

GSDB_MAGIC = b"GSDB\x00\x00\x00\x01"
GSDB_ALIGN = 64
HMMER_MAX_LENGTH = 100_000  # pyhmmer/HMMER 3.4 comparison pipeline limit


def _amino_map() -> np.ndarray:
    """Byte -> digital code table of Easel's amino alphabet for FASTA input."""
    table = np.full(256, ILLEGAL, dtype=np.uint8)
    for code, sym in enumerate(AMINO_SYMBOLS):
        if sym == "-":
            continue  # Easel's FASTA reader rejects '-' (it takes '.' and '_' as gaps)
        table[ord(sym)] = code
        table[ord(sym.lower())] = code
    table[ord(".")] = table[ord("_")] = GAP_CODE
    for ws in b" \t\r\n":
        table[ws] = IGNORED
    return table


AMINO_MAP = _amino_map()


def amino_degeneracy() -> np.ndarray:
    """Easel's amino degeneracy table (Kp, K): which canonical residues each code stands for.

    From esl_alphabet.c create_amino(): B=ND, J=IL, Z=QE, U=C, O=K, X=any.
    """
    deg = np.zeros((KP_AMINO, K_AMINO), dtype=bool)
    for x in range(K_AMINO):
        deg[x, x] = True
    for sym, means in {"B": "ND", "J": "IL", "Z": "QE", "U": "C", "O": "K"}.items():
        for y in means:
            deg[AMINO_SYMBOLS.index(sym), AMINO_SYMBOLS.index(y)] = True
    deg[AMINO_SYMBOLS.index("X"), :] = True
    return deg


@dataclass
class SequenceDB:
    """A packed protein database (see the module docstring for the arrays)."""

    residues: np.ndarray
    offsets: np.ndarray
    name_blob: bytes | np.ndarray
    name_offsets: np.ndarray
    desc_blob: bytes | np.ndarray
    desc_offsets: np.ndarray
    source: str = ""
    total_seqs: int | None = None       # of the whole database, when this is a shard
    total_residues: int | None = None
    shard: tuple[int, int] | None = None  # (i, n): shard i of n, 1-based
    first_index: int = 0                  # index of this file's first sequence in the whole database
    lengths: np.ndarray = field(init=False)
    _order: np.ndarray | None = field(default=None, repr=False)

    def __post_init__(self):
        self.lengths = np.diff(self.offsets).astype(np.int32)
        if self.total_seqs is None:
            self.total_seqs = self.n_seqs
        if self.total_residues is None:
            self.total_residues = self.n_residues

    # --- sizes ---------------------------------------------------------------
    @property
    def n_seqs(self) -> int:
        return len(self.offsets) - 1

    @property
    def n_residues(self) -> int:
        return int(self.offsets[-1])

    def __len__(self) -> int:
        return self.n_seqs

    @property
    def length_order(self) -> np.ndarray:
        """Sequence indices by decreasing length (stable)."""
        if self._order is None:
            self._order = np.argsort(-self.lengths, kind="stable").astype(np.int32)
        return self._order

    # --- per-sequence access -------------------------------------------------------
    def name(self, i: int) -> str:
        a, b = int(self.name_offsets[i]), int(self.name_offsets[i + 1])
        return bytes(self.name_blob[a:b]).decode("utf-8", "replace")

    def description(self, i: int) -> str:
        a, b = int(self.desc_offsets[i]), int(self.desc_offsets[i + 1])
        return bytes(self.desc_blob[a:b]).decode("utf-8", "replace")

    def sequence(self, i: int) -> np.ndarray:
        return self.residues[self.offsets[i] : self.offsets[i + 1]]

    def text(self, i: int) -> str:
        return "".join(AMINO_SYMBOLS[c] for c in self.sequence(i))

    def subset(self, idx) -> "SequenceDB":
        """A new database of sequences ``idx`` (in that order); totals are kept."""
        idx = np.asarray(idx, dtype=np.int64)
        lens = self.lengths[idx].astype(np.int64)
        offsets = np.zeros(len(idx) + 1, dtype=np.int64)
        np.cumsum(lens, out=offsets[1:])
        residues = _gather(self.residues, self.offsets[idx], lens)
        nb, no = _gather_blob(self.name_blob, self.name_offsets, idx)
        db_, do = _gather_blob(self.desc_blob, self.desc_offsets, idx)
        return SequenceDB(residues, offsets, nb, no, db_, do, source=self.source,
                          total_seqs=self.total_seqs, total_residues=self.total_residues)

    def digital_block(self, idx=None, alphabet=None):
        """A pyhmmer ``DigitalSequenceBlock`` of sequences ``idx`` (all by default)."""
        from pyhmmer.easel import Alphabet, DigitalSequence, DigitalSequenceBlock

        abc = alphabet or Alphabet.amino()
        idx = range(self.n_seqs) if idx is None else idx
        block = DigitalSequenceBlock(abc)
        nb, no, db_, do = self.name_blob, self.name_offsets, self.desc_blob, self.desc_offsets
        res, off = self.residues, self.offsets
        for i in idx:
            i = int(i)
            block.append(DigitalSequence(
                abc,
                name=bytes(nb[no[i]:no[i + 1]]).decode("utf-8", "replace"),
                description=bytes(db_[do[i]:do[i + 1]]).decode("utf-8", "replace"),
                sequence=res[off[i]:off[i + 1]],
            ))
        return block

    # --- checks ----------------------------------------------------------------
    def check_for_hmmsearch(self, skip_long: bool = False) -> np.ndarray | None:
        """Refuse sequences over HMMER's 100,000-residue limit (or list them to skip).

        Returns the indices of sequences to skip when ``skip_long``, else None.
        """
        long = np.nonzero(self.lengths > HMMER_MAX_LENGTH)[0]
        if len(long) == 0:
            return None
        if skip_long:
            return long
        i = int(long[0])
        raise SequenceError(
            f"sequence '{self.name(i)}' in {self.source} has {int(self.lengths[i]):,} residues, "
            f"over HMMER's limit of {HMMER_MAX_LENGTH:,} for hmmsearch "
            f"({len(long)} such sequence(s)); split it, or pass --skip-long to leave them out"
        )


def _gather(residues, starts, lens) -> np.ndarray:
    """The pieces residues[starts[i]:starts[i] + lens[i]] packed one after the other.

    Pieces that follow each other in ``residues`` are copied as one run: a whole database
    in order is one copy (an index array per residue took 2.6 s for 273 M residues).
    """
    arr = np.asarray(residues)
    starts = np.asarray(starts, dtype=np.int64)
    lens = np.asarray(lens, dtype=np.int64)
    if int(lens.sum()) == 0:
        return np.zeros(0, dtype=arr.dtype)
    first = np.concatenate(([0], np.flatnonzero(starts[1:] != starts[:-1] + lens[:-1]) + 1))
    run_lens = np.add.reduceat(lens, first)
    return np.concatenate([arr[a:a + n] for a, n in zip(starts[first].tolist(), run_lens.tolist())])


def _gather_blob(blob, offs, idx):
    arr = np.frombuffer(blob, dtype=np.uint8) if isinstance(blob, (bytes, bytearray)) else blob
    lens = (offs[idx + 1] - offs[idx]).astype(np.int64)
    new_offs = np.zeros(len(idx) + 1, dtype=np.int64)
    np.cumsum(lens, out=new_offs[1:])
    return _gather(arr, offs[idx], lens).tobytes(), new_offs


# --- reading ------------------------------------------------------------------------


def open_database(path: str | os.PathLike) -> SequenceDB:
    """Load a protein database from FASTA (plain or .gz) or a .gsdb file."""
    path = Path(path)
    check_readable(path)
    with open(path, "rb") as fh:
        head = fh.read(len(GSDB_MAGIC))
    if head == GSDB_MAGIC:
        return read_gsdb(path)
    return read_fasta(path)


def check_readable(path: Path) -> None:
    """Raise InputFileError unless ``path`` is a readable file."""
    if not path.exists():
        raise InputFileError(f"{path}: no such file")
    if path.is_dir():
        raise InputFileError(f"{path}: is a directory, not a file")
    if not os.access(path, os.R_OK):
        raise InputFileError(f"{path}: permission denied")


def read_bytes(path: Path) -> bytes:
    """The file's bytes, gunzipped if it is gzip-compressed."""
    with open(path, "rb") as fh:
        data = fh.read()
    if data[:2] == b"\x1f\x8b":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, gzip.BadGzipFile, zlib.error) as exc:
            raise FormatError(f"{path}: corrupt or truncated gzip file ({exc})") from None
    return data


def read_fasta(path: str | os.PathLike) -> SequenceDB:
    """Parse a protein FASTA file (vectorized: a few passes of numpy over the bytes)."""
    path = Path(path)
    check_readable(path)
    data = read_bytes(path)
    return parse_fasta(data, source=str(path))


def parse_fasta(data: bytes, source: str = "<fasta>") -> SequenceDB:
    """Parse FASTA bytes into a :class:`SequenceDB` (see module docstring for the rules)."""
    from ._fasta import scan, split_headers

    buf = np.frombuffer(data, dtype=np.uint8)
    stripped = data.lstrip()
    if not stripped:
        raise EmptyInputError(f"{source}: file is empty")
    if stripped[:1] != b">":
        what = "an HMM file" if stripped.startswith(b"HMMER") else "not FASTA"
        raise FormatError(f"{source}: {what} (a FASTA file starts with '>' header lines)")

    max_headers = int(np.count_nonzero(buf == ord(">")))
    residues, n_res, hstart, hend, lengths, k, bad = scan(buf, AMINO_MAP, max_headers)
    if bad >= 0:
        line = data.count(b"\n", 0, bad) + 1
        ch = chr(buf[bad]) if 32 < buf[bad] < 127 else f"\\x{buf[bad]:02x}"
        if k == 0:
            raise FormatError(f"{source}: not FASTA (a FASTA file starts with '>' header lines)")
        name = data[hstart[k - 1] + 1 : hend[k - 1]].split(maxsplit=1)
        name = name[0].decode("utf-8", "replace") if name else "?"
        raise SequenceError(
            f"{source}: invalid residue '{ch}' in sequence '{name}' (line {line}); "
            f"a protein sequence holds only letters, '*', '~', '.' or '_'"
        )
    name_blob, name_offs, desc_blob, desc_offs = split_headers(buf, hstart, hend, k)
    unnamed = np.flatnonzero(np.diff(name_offs) == 0)
    if len(unnamed):
        line = data.count(b"\n", 0, int(hstart[unnamed[0]])) + 1
        raise FormatError(f"{source}: FASTA header without a sequence name (line {line})")
    offsets = np.zeros(k + 1, dtype=np.int64)
    np.cumsum(lengths[:k], out=offsets[1:])
    db = SequenceDB(residues[:n_res], offsets, name_blob.tobytes(), name_offs,
                    desc_blob.tobytes(), desc_offs, source=source)
    _validate(db)
    return db


def _pack(items: list[bytes]):
    offs = np.zeros(len(items) + 1, dtype=np.int64)
    np.cumsum([len(x) for x in items], out=offs[1:])
    return b"".join(items), offs


def _validate(db: SequenceDB) -> None:
    """Reject empty sequences and nucleotide databases."""
    if db.n_seqs == 0:
        raise EmptyInputError(f"{db.source}: no sequences")
    empty = np.flatnonzero(db.lengths == 0)
    if len(empty):
        raise SequenceError(
            f"{db.source}: sequence '{db.name(int(empty[0]))}' is empty "
            f"({len(empty)} empty sequence(s)); remove them first"
        )
    # DNA or RNA read as protein: almost only A, C, G, T/U, N
    sample = db.residues[: 1 << 22]
    nuc = np.isin(sample, [AMINO_SYMBOLS.index(c) for c in "ACGTUN"]).sum()
    if len(sample) >= 20 and nuc >= 0.9 * len(sample):
        raise AlphabetError(
            f"{db.source}: looks like nucleotide sequence ({100 * nuc / len(sample):.0f}% "
            f"A/C/G/T/U/N); gpu-search needs protein sequences"
        )


# --- .gsdb -------------------------------------------------------------------------------

_SECTIONS = ("residues", "offsets", "name_blob", "name_offsets", "desc_blob", "desc_offsets", "length_order")


def write_gsdb(db: SequenceDB, path: str | os.PathLike, *, total_seqs=None, total_residues=None,
               shard=None, first_index: int = 0) -> None:
    """Write ``db`` as a .gsdb file (atomically: temp file, then rename)."""
    arrays = {
        "residues": np.ascontiguousarray(db.residues, dtype=np.uint8),
        "offsets": np.ascontiguousarray(db.offsets, dtype=np.int64),
        "name_blob": np.frombuffer(bytes(db.name_blob), dtype=np.uint8),
        "name_offsets": np.ascontiguousarray(db.name_offsets, dtype=np.int64),
        "desc_blob": np.frombuffer(bytes(db.desc_blob), dtype=np.uint8),
        "desc_offsets": np.ascontiguousarray(db.desc_offsets, dtype=np.int64),
        "length_order": np.ascontiguousarray(db.length_order, dtype=np.int32),
    }
    header = {
        "format": "gsdb",
        "version": 1,
        "alphabet": "amino",
        "n_seqs": db.n_seqs,
        "n_residues": db.n_residues,
        "total_seqs": int(total_seqs if total_seqs is not None else db.total_seqs),
        "total_residues": int(total_residues if total_residues is not None else db.total_residues),
        "shard": list(shard) if shard else None,
        "first_index": int(first_index),
        "source": os.path.basename(db.source),
        "sections": {},
    }
    # lay the sections out after a header of fixed reserved size
    pos = 4096
    for name in _SECTIONS:
        a = arrays[name]
        header["sections"][name] = {"offset": pos, "dtype": a.dtype.str, "count": int(a.size)}
        pos += -(-a.nbytes // GSDB_ALIGN) * GSDB_ALIGN
    blob = json.dumps(header).encode()
    if len(blob) + 12 > 4096:
        raise FormatError("internal: .gsdb header too large")
    with atomic_path(path) as tmp:
        with open(tmp, "wb") as fh:
            fh.write(GSDB_MAGIC)
            fh.write(len(blob).to_bytes(4, "little"))
            fh.write(blob)
            for name in _SECTIONS:
                fh.seek(header["sections"][name]["offset"])
                fh.write(arrays[name].tobytes())
            fh.truncate(pos)


def read_gsdb(path: str | os.PathLike) -> SequenceDB:
    """Memory-map a .gsdb file written by :func:`write_gsdb`."""
    path = Path(path)
    size = path.stat().st_size
    with open(path, "rb") as fh:
        fh.read(len(GSDB_MAGIC))
        try:
            n = int.from_bytes(fh.read(4), "little")
            header = json.loads(fh.read(n))
        except (ValueError, UnicodeDecodeError):
            raise FormatError(f"{path}: corrupt .gsdb header") from None
    if header.get("format") != "gsdb" or header.get("version") != 1:
        raise FormatError(f"{path}: unsupported .gsdb version; rebuild it with gpu-search makedb")
    mm = np.memmap(path, dtype=np.uint8, mode="r")
    arrays = {}
    for name in _SECTIONS:
        sec = header["sections"][name]
        dt = np.dtype(sec["dtype"])
        end = sec["offset"] + sec["count"] * dt.itemsize
        if end > size:
            raise FormatError(f"{path}: truncated .gsdb file; rebuild it with gpu-search makedb")
        arrays[name] = mm[sec["offset"] : end].view(dt)
    db = SequenceDB(
        arrays["residues"], arrays["offsets"],
        arrays["name_blob"], arrays["name_offsets"],
        arrays["desc_blob"], arrays["desc_offsets"],
        source=str(path),
        total_seqs=header["total_seqs"], total_residues=header["total_residues"],
        shard=tuple(header["shard"]) if header.get("shard") else None,
        first_index=int(header.get("first_index", 0)),
    )
    if db.n_seqs != header["n_seqs"] or db.n_residues != header["n_residues"]:
        raise FormatError(f"{path}: .gsdb counts do not match its contents; rebuild it")
    db._order = arrays["length_order"]
    return db


def shard_bounds(lengths: np.ndarray, n_shards: int) -> list[tuple[int, int]]:
    """Cut a database into ``n_shards`` contiguous runs of about equal residue counts.

    Contiguous shards keep the database order, so merged results tie-break
    exactly as an unsharded search does.
    """
    n = len(lengths)
    n_shards = max(1, min(n_shards, n))
    cum = np.cumsum(lengths.astype(np.int64))
    total = int(cum[-1])
    cuts = [0]
    for s in range(1, n_shards):
        cut = int(np.searchsorted(cum, total * s / n_shards, side="left")) + 1
        cut = min(max(cut, cuts[-1] + 1), n - (n_shards - s))
        cuts.append(cut)
    cuts.append(n)
    return list(zip(cuts[:-1], cuts[1:]))


def makedb(fasta: str | os.PathLike, out: str | os.PathLike, shards: int = 1) -> list[Path]:
    """``gpu-search makedb``: write a .gsdb (and/or N shards of it). Returns the paths written.

    With ``shards > 1`` the shards are written as ``OUT-STEM.shardIofN.gsdb``
    next to ``out``; each records the whole database's sequence and residue
    counts so that searches of a shard report E-values of the whole.
    """
    db = open_database(fasta)
    out = Path(out)
    if shards <= 1:
        write_gsdb(db, out)
        return [out]
    stem = out.name[:-5] if out.name.endswith(".gsdb") else out.name
    written = []
    bounds = shard_bounds(db.lengths, shards)
    try:
        for i, (a, b) in enumerate(bounds, start=1):
            part = db.subset(np.arange(a, b))
            p = out.with_name(f"{stem}.shard{i}of{len(bounds)}.gsdb")
            write_gsdb(part, p, total_seqs=db.n_seqs, total_residues=db.n_residues, shard=(i, len(bounds)),
                       first_index=a)
            written.append(p)
    except BaseException:
        # a set of shards is whole or not there: shards 1-5 of 8 would look like a database
        for p in written:
            with contextlib.suppress(OSError):
                p.unlink()
        raise
    return written
