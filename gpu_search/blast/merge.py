"""Merging blastp results of database shards into the unsharded result.

Each shard is searched with ``-dbsize`` = residues of the whole database (a
``.gsdb`` shard does this by itself), so every HSP has the E-value of a full
search.  Each shard saves (``--hits-out``, a ``.gsblast`` file) every subject
of its preliminary hit list with its rows, its position in the whole database
and the two keys BLAST orders subjects by.  Merging takes the best of the
union as the whole search's preliminary hit list (a subject in the global
list is in its shard's list), then BLAST's output order
(``s_EvalueCompareHSPLists``) and ``-max_target_seqs``: exactly the unsharded
result, even when those lists are full.

A ``.gsblast`` file is a pickle read back by an unpickler that builds only our
records (GSBLAST_RECORDS): a crafted file cannot run code when merged.
"""

from __future__ import annotations

from ..errors import OptionError
from ..output import load_pickle, save_pickle
from .hitlist import select
from .output import write_footer, write_query

MAGIC = b"GSBLAST\x01"

# what a .gsblast file may hold besides plain values: our records
GSBLAST_RECORDS = frozenset({
    ("gpu_search.blast.hitlist", "SubjectResult"), ("gpu_search.blast.options", "BlastOptions"),
    ("gpu_search.blast.output", "Hsp"),
})


def save_hits(path, per_query, *, options, db_name: str) -> None:
    """Write [(query title, [SubjectResult, ...]), ...] of one shard."""
    save_pickle(path, MAGIC, {"options": options, "db_name": db_name, "queries": per_query})


def is_blast_hits(path) -> bool:
    try:
        with open(path, "rb") as fh:
            return fh.read(len(MAGIC)) == MAGIC
    except OSError:
        return False


def load_hits(path) -> dict:
    return load_pickle(path, MAGIC, ".gsblast", "gpu-search blastp --hits-out", GSBLAST_RECORDS)


def merge_results(shard_results: list[list], max_target_seqs: int) -> list:
    """One query's rows from several shards, exactly as one search of the whole database.

    Each shard saved every subject of its own preliminary hit list; the whole
    database's preliminary hit list is the best of their union (a subject in
    the global list is in its shard's list), then BLAST's output order and cut.
    """
    union = [r for results in shard_results for r in results]
    return [h for r in select(union, max_target_seqs) for h in r.rows]


def merge_files(paths, fh, *, fmt: int, columns: list[str]) -> None:
    """Merge .gsblast files (same queries, same options) and write the rows."""
    if not paths:
        raise OptionError("no .gsblast files to merge")
    loaded = [load_hits(p) for p in paths]      # order-independent: subjects carry their database position
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
        rows = merge_results([d["queries"][q][1] for d in loaded], limit)
        write_query(fh, fmt, columns, title, first["db_name"], rows)
    write_footer(fh, fmt, n)
