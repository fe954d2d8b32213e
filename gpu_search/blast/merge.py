"""Merging blastp results of database shards into the unsharded result.

Each shard is searched with ``-dbsize`` = residues of the whole database (a
``.gsdb`` shard does this by itself), so every HSP has the E-value of a full
search.  The shards save their rows with full-precision E-values and each
subject's position in the whole database (``--hits-out``, a ``.gsblast``
file); merging puts every query's subjects back in BLAST's order
(``s_EvalueCompareHSPLists``: best E-value, then best score, then later
database position first) and cuts again to ``-max_target_seqs``.  A shard's
preliminary hit list keeps its best subjects, so every subject the whole
search would keep is in some shard's results.

A ``.gsblast`` file is a Python pickle: merge only files your own runs wrote.
"""

from __future__ import annotations

import pickle
from pathlib import Path

from ..errors import FormatError, InputFileError, OptionError
from ..output import atomic_path
from .engine import EVALUE_EPSILON
from .output import write_footer, write_query

MAGIC = b"GSBLAST\x01"


def save_hits(path, per_query, *, options, db_name: str) -> None:
    """Write [(query title, [Hsp, ...]), ...] of one shard."""
    with atomic_path(path) as tmp:
        with open(tmp, "wb") as fh:
            fh.write(MAGIC)
            pickle.dump({"options": options, "db_name": db_name, "queries": per_query}, fh,
                        protocol=pickle.HIGHEST_PROTOCOL)


def is_blast_hits(path) -> bool:
    try:
        with open(path, "rb") as fh:
            return fh.read(len(MAGIC)) == MAGIC
    except OSError:
        return False


def load_hits(path) -> dict:
    path = Path(path)
    if not path.is_file():
        raise InputFileError(f"{path}: no such file")
    with open(path, "rb") as fh:
        if fh.read(len(MAGIC)) != MAGIC:
            raise FormatError(f"{path}: not a .gsblast file written by gpu-search blastp --hits-out")
        try:
            return pickle.load(fh)
        except Exception:
            raise FormatError(f"{path}: corrupt or truncated .gsblast file") from None


def _subject_key(rows):
    best = rows[0]
    e = 0.0 if best.evalue < EVALUE_EPSILON else best.evalue
    return (e, -best.score, -best.oid)


def merge_rows(shards_rows: list[list], max_target_seqs: int) -> list:
    """One query's rows from several shards, in BLAST's order, cut to max_target_seqs."""
    by_subject: dict[int, list] = {}
    for rows in shards_rows:
        for h in rows:
            by_subject.setdefault(h.oid, []).append(h)
    groups = sorted(by_subject.values(), key=_subject_key)[:max_target_seqs]
    return [h for g in groups for h in g]


def merge_files(paths, fh, *, fmt: int, columns: list[str]) -> None:
    """Merge .gsblast files (same queries, same options) and write the rows."""
    if not paths:
        raise OptionError("no .gsblast files to merge")
    loaded = [load_hits(p) for p in paths]
    first = loaded[0]
    n = len(first["queries"])
    if any(len(d["queries"]) != n for d in loaded):
        raise OptionError("the shard results hold different numbers of queries")
    dbsizes = {d["options"].dbsize for d in loaded}
    if len(dbsizes) != 1:
        raise OptionError("shards were searched with different -dbsize; use the whole database's size")
    limit = first["options"].max_target_seqs
    for q in range(n):
        title = first["queries"][q][0]
        rows = merge_rows([d["queries"][q][1] for d in loaded], limit)
        write_query(fh, fmt, columns, title, first["db_name"], rows)
    write_footer(fh, fmt, n)
