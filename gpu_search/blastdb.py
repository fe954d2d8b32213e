"""BLAST protein databases made by makeblastdb (BLAST+ formats 4 and 5), read as a SequenceDB.

A database is a prefix: ``PREFIX.pin`` (one volume) or ``PREFIX.pal`` (an alias file that
lists volumes or other alias files on its DBLIST line; makeblastdb writes one for a
database it splits into volumes PREFIX.00, PREFIX.01, ...).  A volume is three files:

    .pin  index: format version, type, title, date, sequence count, total residues,
          longest sequence, then two arrays of n+1 big-endian int32 offsets
          (headers into .phr, sequences into .psq)
    .psq  residues in NCBIstdaa codes, each sequence followed by a 0 byte
    .phr  per sequence, a Blast-def-line-set in ASN.1 BER (blastdb.asn): one or more
          deflines, each with a title and a list of Seq-ids

Format 5 adds a volume number and the name of its LMDB file to the .pin header; the
sequence and header files are the same.  The other files (.pdb, .pot, .pog, .psi, ...) are
indexes of accessions and taxids, not needed to read every sequence.

Names and headers are made so that gpu-search's subject columns come out as
BLAST+ 2.12 prints them:

* without -parse_seqids the only Seq-id is ``gnl|BL_ORD_ID|n`` and the title is the whole
  FASTA header line: BLAST+ shows the title's first word as the subject's id and the whole
  title as its title, so the name is that word and the header the title;
* with -parse_seqids the name is BLAST+'s sseqid (``gi|N|`` first when there is a gi, then
  the best other id in FASTA form, a local id without ``lcl|``) and the header is the name
  and the first defline's title.  BLAST+'s stitle is then the title alone (``N/A`` when
  empty), and the other deflines give sallseqid, salltitles and sallacc: each sequence's
  columns (:func:`defline_columns`) are kept with it (``SequenceDB.blast_columns``).

Alias features that select part of a database (GILIST, SEQIDLIST, OIDLIST, TAXIDLIST,
MEMB_BIT, OID ranges) are refused, not ignored.
"""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path

import numpy as np

from .errors import FormatError, InputFileError, printable
from .seqdb import AMINO_MAP, BLAST_COLUMNS, GAP_CODE, SequenceDB

PROTEIN = 1                      # .pin sequence type (0 is nucleotide)
NCBISTDAA = "-ABCDEFGHIKLMNPQRSTVWXYZU*OJ"
MAX_ALIAS_DEPTH = 50             # deeper nesting is taken as a loop


def _stdaa_to_easel() -> np.ndarray:
    """NCBIstdaa code -> the digital code a FASTA file with the same letter gives.
    Codes past J (27) are not NCBIstdaa: 255 marks them."""
    table = np.full(256, 255, dtype=np.uint8)
    for code, letter in enumerate(NCBISTDAA):
        table[code] = GAP_CODE if letter == "-" else AMINO_MAP[ord(letter)]
    return table


STDAA_TO_EASEL = _stdaa_to_easel()

# alias-file keys that choose a subset of the listed databases: not supported
_SUBSET_KEYS = {"GILIST", "TILIST", "SEQIDLIST", "OIDLIST", "TAXIDLIST", "MEMB_BIT",
                "FIRST_OID", "LAST_OID", "OID_RANGE", "MASKLIST"}


# --- finding a database ------------------------------------------------------------

def blast_database_prefix(path) -> str | None:
    """The database prefix if ``path`` names a BLAST protein database as blastp's -db
    does, else None.

    * ``PREFIX`` with ``PREFIX.pal`` or ``PREFIX.pin`` next to it (the alias file first, as
      BLAST+ looks for it first) -- unless ``PREFIX`` is itself a file: a FASTA or .gsdb
      file the user named is read as that file, even with a database of the same name
      beside it (makeblastdb -in x.fa writes x.fa.pin by default);
    * ``PREFIX.pal`` or ``PREFIX.pin``: the database of that prefix;
    * a folder (nf-core's blastp passes makeblastdb's output folder) holding exactly one
      protein database: one .pal file, or else .pin files of one prefix (its volumes
      PREFIX.00, PREFIX.01 ... without their alias file count as a volume each, so they
      are ambiguous: None).
    """
    p = str(path)
    if p.endswith((".pin", ".pal")) and os.path.isfile(p):
        return p[:-4]
    if os.path.isdir(p):
        try:
            names = os.listdir(p)
        except OSError:
            return None
        pal = sorted(n[:-4] for n in names if n.endswith(".pal"))
        if len(pal) == 1:
            return os.path.join(p, pal[0])
        pin = sorted(n[:-4] for n in names if n.endswith(".pin"))
        if not pal and len(pin) == 1:
            return os.path.join(p, pin[0])
        return None
    if os.path.isfile(p):
        return None
    if os.path.isfile(p + ".pal") or os.path.isfile(p + ".pin"):
        return p
    return None


# --- alias files ----------------------------------------------------------------

class _Alias:
    """One .pal file: its DBLIST (prefixes, relative to the file's folder) and its sizes."""

    def __init__(self, path: Path):
        self.path = path
        self.values: dict[str, str] = {}
        text = _read(path).decode("latin-1")
        for line in text.splitlines():
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            key, _, value = line.partition(" ")
            self.values[key.upper()] = value.strip()
        for key in self.values:
            if key in _SUBSET_KEYS:
                raise FormatError(f"{path}: alias file uses {key}, which gpu-search does not support "
                                  "(it would search part of the database); list whole databases only")
        if "DBLIST" not in self.values:
            raise FormatError(f"{path}: alias file has no DBLIST line")
        try:
            self.dblist = shlex.split(self.values["DBLIST"])
        except ValueError:
            raise FormatError(f"{path}: unreadable DBLIST line (unbalanced quotes)") from None
        if not self.dblist:
            raise FormatError(f"{path}: alias file's DBLIST is empty")

    def count(self, key: str) -> int | None:
        if key not in self.values:
            return None
        try:
            value = int(self.values[key])
        except ValueError:
            value = -1
        if value < 0:
            raise FormatError(f"{self.path}: {key} is not a count ({printable(self.values[key], 40)})")
        return value


def _volumes(prefix: Path, seen: tuple, sizes: list) -> list[Path]:
    """Volume prefixes of ``prefix`` in BLAST's order (depth first through nested aliases);
    appends to ``sizes`` the node's (alias or volume, children) tree for the totals."""
    pal = prefix.parent / (prefix.name + ".pal")
    pin = prefix.parent / (prefix.name + ".pin")
    if pal.is_file():
        if pal.resolve() in seen or len(seen) > MAX_ALIAS_DEPTH:
            raise FormatError(f"{pal}: alias files list each other in a loop")
        alias = _Alias(pal)
        children: list = []
        vols: list[Path] = []
        for name in alias.dblist:
            child = Path(name) if os.path.isabs(name) else pal.parent / name
            vols += _volumes(child, seen + (pal.resolve(),), children)
        sizes.append((alias, children))
        return vols
    if pin.is_file():
        sizes.append((pin, None))
        return [prefix]
    where = f" (listed in {seen[-1]})" if seen else ""
    raise InputFileError(f"{prefix}: no BLAST protein database here: neither {pal.name} nor {pin.name}{where}")


def _total(node, volume_sizes: dict, key: str, index: int) -> int:
    """A tree node's size as CSeqDB's alias walkers count it: an alias file's own ``key``
    count, else the sum over its DBLIST; a volume's from its .pin, except for the STATS_
    keys, where a volume counts 0 (only alias files give them)."""
    what, children = node
    if children is None:
        return 0 if key.startswith("STATS_") else volume_sizes[what][index]
    value = what.count(key)
    if value is not None:
        return value
    return sum(_total(c, volume_sizes, key, index) for c in children)


# --- volumes --------------------------------------------------------------------

def _read(path: Path) -> bytes:
    try:
        with open(path, "rb") as fh:
            return fh.read()
    except FileNotFoundError:
        raise InputFileError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise InputFileError(f"{path}: is a directory, not a file") from None
    except OSError as exc:
        raise InputFileError(f"{path}: cannot read ({exc.strerror})") from None


class _Index:
    """The .pin header and its two offset arrays, checked against the file sizes."""

    def __init__(self, path: Path, phr_size: int, psq_size: int):
        self.path = path
        data = _read(path)
        self.pos = 0

        def int32() -> int:
            if self.pos + 4 > len(data):
                raise FormatError(f"{path}: truncated BLAST index file")
            value = int.from_bytes(data[self.pos:self.pos + 4], "big")
            self.pos += 4
            return value

        def string() -> str:
            n = int32()
            if self.pos + n > len(data):
                raise FormatError(f"{path}: truncated BLAST index file")
            text = data[self.pos:self.pos + n].rstrip(b"\0").decode("utf-8", "replace")
            self.pos += n
            return text

        self.version = int32()
        if self.version not in (4, 5):
            raise FormatError(f"{path}: not a BLAST database index of format 4 or 5 "
                              f"(format number {self.version})")
        if int32() != PROTEIN:
            raise FormatError(f"{path}: not a protein database")
        if self.version == 5:
            int32()                              # volume number
        self.title = string()
        if self.version == 5:
            string()                             # LMDB file name
        string()                                 # date
        n = int32()
        if self.pos + 12 > len(data):
            raise FormatError(f"{path}: truncated BLAST index file")
        self.total_residues = int.from_bytes(data[self.pos:self.pos + 8], "little")
        self.pos += 8
        self.longest = int32()
        end = self.pos + 8 * (n + 1)
        if n >= 1 << 31 or end > len(data):
            raise FormatError(f"{path}: truncated BLAST index file ({n:,} sequences declared)")
        arrays = np.frombuffer(data, dtype=">u4", count=2 * (n + 1), offset=self.pos).astype(np.int64)
        self.n = n
        self.hdr = arrays[:n + 1]
        self.seq = arrays[n + 1:]
        # offsets must rise through each file and stay inside it; each sequence ends with a 0
        if np.any(np.diff(self.hdr) <= 0) or self.hdr[0] != 0 or self.hdr[-1] > phr_size:
            raise FormatError(f"{path}: header offsets out of order or past the end of the .phr file")
        if np.any(np.diff(self.seq) <= 0) or self.seq[0] < 1 or self.seq[-1] > psq_size:
            raise FormatError(f"{path}: sequence offsets out of order or past the end of the .psq file")


def _read_volume(prefix: Path, columns: list | None = None):
    """(residues, lengths, names, headers, BLAST_COLUMNS texts, index) of one volume (a
    sequence's columns text is empty without -parse_seqids); with ``columns``, each
    sequence's :func:`defline_columns` appended to it."""
    phr_path = prefix.parent / (prefix.name + ".phr")
    psq_path = prefix.parent / (prefix.name + ".psq")
    phr = _read(phr_path)
    psq = np.frombuffer(_read(psq_path), dtype=np.uint8)
    index = _Index(prefix.parent / (prefix.name + ".pin"), len(phr), len(psq))
    ends = index.seq[1:] - 1                      # each sequence's 0 byte
    if index.n and np.any(psq[ends] != 0):
        raise FormatError(f"{psq_path}: a sequence does not end where {prefix.name}.pin says (corrupt file)")
    lengths = index.seq[1:] - index.seq[:-1] - 1
    keep = np.ones(len(psq), dtype=bool)
    keep[: index.seq[0]] = False
    keep[ends] = False
    keep[index.seq[-1]:] = False
    codes = STDAA_TO_EASEL[psq[keep]]
    if len(codes) != index.total_residues or (index.n and int(lengths.max()) != index.longest):
        raise FormatError(f"{index.path}: its residue count or longest sequence disagrees with "
                          f"{psq_path.name} (corrupt file)")
    if np.any(codes == 255):
        raise FormatError(f"{psq_path}: a byte that is no NCBIstdaa residue code (corrupt file)")
    names, headers, texts = [], [], []
    hdr = index.hdr.tolist()
    for i in range(index.n):
        a, b = hdr[i], hdr[i + 1]
        if columns is None:
            title = _ord_id_title(phr, a, b)
            if title is not None:
                names.append(_first_word(title))
                headers.append(title)
                texts.append(b"")
                continue
        try:
            deflines = parse_defline_set(phr, a, b)
        except _BerError as exc:
            raise FormatError(f"{phr_path}: sequence {i + 1}'s header is not a valid Blast-def-line-set "
                              f"({exc})") from None
        found = defline_columns(deflines)
        if columns is not None:
            columns.append(found)
        title, ids = deflines[0]
        names.append(found["sseqid"].encode("utf-8", "surrogateescape"))
        if _is_ord_id(ids):
            headers.append(title.encode("utf-8", "surrogateescape"))
            texts.append(b"")
        else:
            headers.append(f"{found['sseqid']} {title}".encode("utf-8", "surrogateescape"))
            texts.append("\t".join(found[c] for c in BLAST_COLUMNS).encode("utf-8", "surrogateescape"))
    return codes, lengths, names, headers, texts, index


def read_blast_database(prefix) -> SequenceDB:
    """Every sequence of the BLAST protein database ``prefix`` (all volumes, in BLAST's
    order), with the sequence and residue counts BLAST+ uses for its statistics: the
    alias files' STATS_NSEQ / STATS_TOTLEN where there are any, else their NSEQ / LENGTH,
    else the volumes' counts from their .pin files."""
    prefix = Path(prefix)
    tree: list = []
    vols = _volumes(prefix, (), tree)
    parts, volume_sizes, versions = [], {}, set()
    for vol in vols:
        codes, lengths, names, headers, texts, index = _read_volume(vol)
        parts.append((codes, lengths, names, headers, texts))
        volume_sizes[vol.parent / (vol.name + ".pin")] = (index.n, index.total_residues)
        versions.add(index.version)
    if len(versions) > 1:
        raise FormatError(f"{prefix}: lists databases of both format 4 and format 5, as BLAST+ refuses too")
    lengths = np.concatenate([p[1] for p in parts])
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    residues = np.concatenate([p[0] for p in parts]) if parts else np.zeros(0, np.uint8)
    names = [n for p in parts for n in p[2]]
    headers = [d for p in parts for d in p[3]]
    texts = [t for p in parts for t in p[4]]
    # BLAST's statistics take the STATS_ counts where alias files give them (a branch
    # without them adds nothing), else NSEQ / LENGTH, else the volumes' counts
    total_seqs = (_total(tree[0], volume_sizes, "STATS_NSEQ", 0)
                  or _total(tree[0], volume_sizes, "NSEQ", 0))
    total_residues = (_total(tree[0], volume_sizes, "STATS_TOTLEN", 1)
                      or _total(tree[0], volume_sizes, "LENGTH", 1))
    name_blob, name_offsets = _pack(names)
    header_blob, header_offsets = _pack(headers)
    columns_blob, columns_offsets = _pack(texts) if any(texts) else (b"", None)
    return SequenceDB(residues, offsets, name_blob, name_offsets, header_blob, header_offsets,
                      columns_blob=columns_blob, columns_offsets=columns_offsets, source=str(prefix),
                      total_seqs=total_seqs, total_residues=total_residues)


def subject_columns(prefix) -> list[dict[str, str]]:
    """BLAST+ 2.12's sseqid, sallseqid, stitle and salltitles of every sequence of the
    database ``prefix``, in database order (what a BLAST+ table shows for each subject)."""
    columns: list = []
    for vol in _volumes(Path(prefix), (), []):
        _read_volume(vol, columns)
    return columns


def _pack(items: list[bytes]):
    offsets = np.zeros(len(items) + 1, dtype=np.int64)
    np.cumsum([len(x) for x in items], out=offsets[1:])
    return b"".join(items), offsets


# --- Blast-def-line-set: a small, strict BER reader ---------------------------------

class _BerError(Exception):
    pass


# The header makeblastdb writes without -parse_seqids: one defline, its title, the id
# gnl|BL_ORD_ID|n and an optional taxid, all but the title's of indefinite length.  Matched
# whole (title length checked too) it is read without the general parser, 5x faster.
_ORD_ID_HEAD = b"0\x800\x80\xa0\x80\x1a"
_INT = rb"(?:\x01.|\x02..|\x03...|\x04....|\x05.....|\x06......|\x07.......|\x08........)"
_ORD_ID_TAIL = re.compile(
    rb"\x00\x00\xa1\x800\x80\xaa\x800\x80\xa0\x80\x1a\x09BL_ORD_ID\x00\x00\xa1\x80\xa0\x80\x02" + _INT
    + rb"(?:\x00\x00){6}(?:\xa2\x80\x02" + _INT + rb"\x00\x00)?\x00\x00\x00\x00", re.S)


def _ord_id_title(buf: bytes, start: int, end: int) -> bytes | None:
    """The title of a header in makeblastdb's layout without -parse_seqids, else None."""
    pos = start + len(_ORD_ID_HEAD)
    if buf[start:pos] != _ORD_ID_HEAD or pos >= end:
        return None
    n = buf[pos]
    if n < 0x80:
        pos += 1
    elif 0x81 <= n <= 0x83:
        k = n & 0x7F
        n = int.from_bytes(buf[pos + 1:pos + 1 + k], "big")
        pos += 1 + k
    else:
        return None
    if pos + n > end or not _ORD_ID_TAIL.fullmatch(buf, pos + n, end):
        return None
    return buf[pos:pos + n]


def _tlv(buf: bytes, pos: int, end: int):
    """(tag byte, content start, content end or -1 if indefinite, position after the length)."""
    if pos + 2 > end:
        raise _BerError("cut short")
    tag = buf[pos]
    if tag & 0x1F == 0x1F:
        raise _BerError("multi-byte tag")
    n = buf[pos + 1]
    pos += 2
    if n < 0x80:
        length = n
    elif n == 0x80:
        if not tag & 0x20:
            raise _BerError("indefinite length on a primitive value")
        return tag, pos, -1
    else:
        k = n & 0x7F
        if k > 4 or pos + k > end:
            raise _BerError("bad length")
        length = int.from_bytes(buf[pos:pos + k], "big")
        pos += k
    if pos + length > end:
        raise _BerError("value runs past its end")
    return tag, pos, pos + length


MAX_BER_DEPTH = 16               # a Blast-def-line-set nests 8 deep at most (a patent id)


def _node(buf: bytes, pos: int, end: int, depth: int = 0):
    """(tag, value, next position): value is bytes for a primitive, a list of (tag, value)
    for a constructed value."""
    if depth > MAX_BER_DEPTH:
        raise _BerError("nested too deep")
    tag, start, stop = _tlv(buf, pos, end)
    if not tag & 0x20:
        return tag, buf[start:stop], stop
    children = []
    pos = start
    limit = end if stop < 0 else stop
    while True:
        if stop < 0:
            if pos + 2 > end:
                raise _BerError("cut short")
            if buf[pos] == 0 and buf[pos + 1] == 0:
                return tag, children, pos + 2
        elif pos == stop:
            return tag, children, pos
        ctag, value, pos = _node(buf, pos, limit, depth + 1)
        children.append((ctag, value))


def _one(value, tag: int):
    """The single child of an explicitly tagged field, which must have tag ``tag``."""
    if not isinstance(value, list) or len(value) != 1 or value[0][0] != tag:
        raise _BerError("unexpected field")
    return value[0][1]


def _text(value) -> str:
    return _one(value, 0x1A).decode("utf-8", "surrogateescape")   # any byte kept as it is


def _integer(value) -> int:
    raw = _one(value, 0x02)
    if not raw:
        raise _BerError("empty integer")
    return int.from_bytes(raw, "big", signed=True)


def parse_defline_set(buf: bytes, start: int, end: int) -> list[tuple[str, list[tuple]]]:
    """The deflines of one header, each as (title, [Seq-id, ...]); a Seq-id as
    (FASTA type, fields) -- see :func:`_seq_id`."""
    tag, value, pos = _node(buf, start, end)
    if tag != 0x30 or not isinstance(value, list) or not value:
        raise _BerError("not a SEQUENCE OF Blast-def-line")
    deflines = []
    for dtag, fields in value:
        if dtag != 0x30:
            raise _BerError("not a Blast-def-line")
        title, ids = "", []
        for ftag, fvalue in fields:
            if ftag == 0xA0:                     # title
                title = _text(fvalue)
            elif ftag == 0xA1:                   # seqid: SEQUENCE OF Seq-id
                for itag, ivalue in _one(fvalue, 0x30):
                    ids.append(_seq_id(itag, ivalue))
            elif not 0xA2 <= ftag <= 0xA5:       # taxid, memberships, links, other-info
                raise _BerError("unknown Blast-def-line field")
        if not ids:
            raise _BerError("a defline without Seq-id")
        deflines.append((title, ids))
    return deflines


_TEXTSEQ = {4: "gb", 5: "emb", 6: "pir", 7: "sp", 9: "ref", 12: "dbj", 13: "prf", 15: "tpg",
            16: "tpe", 17: "tpd", 18: "gpp", 19: "nat"}


def _object_id(value) -> str:
    tag, inner = value[0] if isinstance(value, list) and len(value) == 1 else (None, None)
    if tag == 0xA0:
        return str(_integer(inner))
    if tag == 0xA1:
        return _text(inner)
    raise _BerError("bad Object-id")


def _seq_id(tag: int, value) -> tuple:
    """A Seq-id (seqloc.asn's CHOICE) as (type, FASTA string, score for the best-id choice,
    content label, accession): the label and accession as blastp's saccver and sacc show
    them (the accession is the label without a text id's version).  The score is CSeq_id::Score's of BLAST+ (lower is better): 20 gi, 15
    general, 10 local or patent, 8 RefSeq, 5 other text ids, x10, plus 4 / 3 / 2 for a text
    id without version / accession / name."""
    choice = tag - 0xA0
    if not 0 <= choice <= 19:
        raise _BerError("unknown Seq-id type")
    if choice == 0:                              # local Object-id
        label = _object_id(value)
        return "lcl", f"lcl|{label}", 100, label, label
    if choice in (1, 2, 11):                     # gibbsq, gibbmt, gi INTEGER
        number = _integer(value)
        kind = {1: "bbs", 2: "bbm", 11: "gi"}[choice]
        return kind, f"{kind}|{number}", 200 if choice == 11 else 150, str(number), str(number)
    if choice == 3:                              # giim Giimport-id: id INTEGER, db, release
        fields = dict(_one(value, 0x30))
        if 0xA0 not in fields:
            raise _BerError("Giimport-id without id")
        number = _integer(fields[0xA0])
        return "gim", f"gim|{number}", 200, str(number), str(number)
    if choice == 10:                             # general Dbtag: db, tag
        fields = dict(_one(value, 0x30))
        if 0xA0 not in fields or 0xA1 not in fields:
            raise _BerError("Dbtag without db or tag")
        db, label = _text(fields[0xA0]), _object_id(fields[0xA1])
        return "gnl", f"gnl|{db}|{label}", 150, f"{db}:{label}", f"{db}:{label}"
    if choice == 8:                              # patent: seqid INTEGER, cit Id-pat
        fields = dict(_one(value, 0x30))
        if 0xA0 not in fields or 0xA1 not in fields:
            raise _BerError("Patent-seq-id without seqid or cit")
        number = _integer(fields[0xA0])
        cit = dict(_one(fields[0xA1], 0x30))
        if 0xA0 not in cit or 0xA1 not in cit:
            raise _BerError("Id-pat without country or id")
        country = _text(cit[0xA0])
        pat = cit[0xA1]                          # CHOICE of number or app-number
        if not isinstance(pat, list) or len(pat) != 1 or pat[0][0] not in (0xA0, 0xA1):
            raise _BerError("bad Id-pat id")
        fasta = f"{country}|{_text(pat[0][1])}|{number}"
        label = f"{country}{_text(pat[0][1])}_{number}"
        return "pat", f"pat|{fasta}", 100, label, label
    if choice == 14:                             # pdb: mol, chain, rel, chain-id
        fields = dict(_one(value, 0x30))
        if 0xA0 not in fields:
            raise _BerError("PDB-seq-id without mol")
        mol = _text(fields[0xA0])
        if 0xA3 in fields:
            chain = _text(fields[0xA3])
        else:
            chain = chr(_integer(fields[0xA1])) if 0xA1 in fields else " "
        return "pdb", f"pdb|{mol}|{chain}", 50, f"{mol}_{chain}", f"{mol}_{chain}"
    fields = dict(_one(value, 0x30))              # Textseq-id: name, accession, release, version
    name = _text(fields[0xA0]) if 0xA0 in fields else ""
    acc = _text(fields[0xA1]) if 0xA1 in fields else ""
    version = _integer(fields[0xA3]) if 0xA3 in fields else None
    score = (80 if choice == 9 else 50) + (4 if version is None else 0) + (3 if not acc else 0) + (2 if not name else 0)
    accver = acc + (f".{version}" if version is not None and acc else "")
    kind = _TEXTSEQ[choice]
    if choice == 7 and 0xA2 in fields and _text(fields[0xA2]) == "unreviewed":
        kind = "tr"                              # TrEMBL: a SWISS-PROT id released "unreviewed"
    return kind, f"{kind}|{accver}|{name}", score, accver or name, acc or name


def _id_string(ids: list[tuple]) -> str:
    """BLAST+'s subject id for one defline (CShowBlastDefline::GetSeqIdListString with gi
    shown): ``gi|N`` if there is a gi, then ``|`` and the best other id in FASTA form (a
    local id by its content alone)."""
    text = ""
    gi = next((i for i in ids if i[0] == "gi"), None)
    if gi is not None:
        text = gi[1]
    best = min(ids, key=lambda i: i[2])          # first of the lowest score
    if best[0] != "gi":
        if text:
            text += "|"
        text += best[3] if best[0] == "lcl" else best[1]
    return text


def _is_ord_id(ids: list[tuple]) -> bool:
    """The only Seq-id is makeblastdb's gnl|BL_ORD_ID|n: made without -parse_seqids."""
    return len(ids) == 1 and ids[0][0] == "gnl" and ids[0][1].startswith("gnl|BL_ORD_ID|")


def defline_columns(deflines) -> dict[str, str]:
    """BLAST+ 2.12's tabular subject columns sseqid, sallseqid, stitle, salltitles, sacc,
    saccver, sallacc (and sallaccver, see seqdb.BLAST_COLUMNS) for one header's deflines.
    The id columns are the first defline's, or the first defline's with a gi where a later
    one has one (as blastp shows them: its title stays the first defline's)."""
    title, ids = deflines[0]
    if _is_ord_id(ids):
        word = _first_word(title)
        return {"sseqid": word, "sallseqid": word, "stitle": title, "salltitles": title,
                "sacc": word, "saccver": word, "sallacc": word, "sallaccver": word}
    ids = next((i for _, i in deflines if any(x[0] == "gi" for x in i)), ids)
    best = min(ids, key=lambda i: i[2])
    return {"sseqid": _id_string(ids),
            "sallseqid": ";".join(_id_string(i) for _, i in deflines),
            "sacc": best[4], "saccver": best[3],
            "sallacc": ";".join(min(i, key=lambda x: x[2])[4] for _, i in deflines),
            "sallaccver": ";".join(min(i, key=lambda x: x[2])[3] for _, i in deflines),
            "stitle": title or "N/A",
            "salltitles": "<>".join(t or "N/A" for t, _ in deflines)}


def _first_word(title):
    """The subject id BLAST+ shows for a title without -parse_seqids: its first word (a
    title may begin with spaces, from a header '> name ...')."""
    words = title.split(maxsplit=1)
    return words[0] if words else title[:0]

