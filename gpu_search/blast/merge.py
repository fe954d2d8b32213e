"""Merging blastp results of database shards into the unsharded result.

Each shard is searched with ``-dbsize`` = residues of the whole database (a
``.gsdb`` shard does this by itself), so every HSP has the E-value of a full
search.  Each shard saves (``--hits-out``, a ``.gsblast`` file) every subject
of its preliminary hit list with its rows, its position in the whole database
and the two keys BLAST orders subjects by.  Merging takes the best of the
union as the whole search's preliminary hit list (a subject in the global
list is in its shard's list), then BLAST's output order
(``s_EvalueCompareHSPLists``) and ``-max_target_seqs``: exactly the unsharded
result, even when those lists are full.  One exception, said on stderr: a query
that BLAST+ splits (:mod:`.split`) has its hit list cut after each chunk, so
where its chunks together hit more subjects than the list holds, a shard can
keep a subject's later hits that the whole search dropped with the subject.

A ``.gsblast`` file (layout: gpu_search.output, "result files") holds plain
data only: a JSON header with the database and shard searched, the options,
and per query its title, its length (which queries BLAST+ reads together) and
its subjects, each row's fields in the order of ``Hsp``.
Every field is checked on reading.
"""

from __future__ import annotations

import sys
from dataclasses import fields

from ..errors import OptionError, printable
from ..output import (Fields, check_database_record, check_shard_set, database_record, read_results,
                      write_results)
from .hitlist import SubjectResult, output_batches, select_batch
from .options import BlastOptions
from .output import Hsp, write_footer, write_query
from .split import split_queries

KIND = b"GSBLAST"
SUFFIX, WRITER = ".gsblast", "gpu-search blastp --hits-out"

HEADER_FIELDS = ("program", "db_name", "database", "options", "queries")
QUERY_FIELDS = ("title", "length", "subjects")
SUBJECT_FIELDS = ("oid", "prelim_key", "final_key", "heap_record", "rows")
OPTION_FIELDS = tuple(f.name for f in fields(BlastOptions))
# BlastOptions that change rows or E-values: equal in every shard merged
MATCHING = tuple(name for name in OPTION_FIELDS if name != "num_threads")
_OPTION_FLOAT = ("evalue", "threshold")
HSP_FIELDS = tuple(f.name for f in fields(Hsp))
_HSP_TEXT = ("query_id", "query_title", "subject_id", "subject_title", "qseq", "sseq", "subject_columns")
_HSP_FLOAT = ("bit_score", "evalue")
INT32 = (-(1 << 31), (1 << 31) - 1)


def save_hits(path, per_query, *, options, db_name: str, database=None) -> None:
    """Write [(query title, query length, [SubjectResult, ...]), ...] of one shard.

    ``database``: the ``SequenceDB`` searched, whose place in a set of shards
    ``merge`` checks (without it the file says only ``db_name``).
    """
    queries = []
    for title, length, results in per_query:
        subjects = [{"oid": int(r.oid), "prelim_key": _key_fields(r.prelim_key),
                     "final_key": _key_fields(r.final_key),
                     "heap_record": None if r.heap_record is None else _key_fields(r.heap_record),
                     "rows": [_hsp_fields(h) for h in r.rows]}
                    for r in results]
        queries.append({"title": str(title), "length": int(length), "subjects": subjects})
    header = {
        "program": "blastp",
        "db_name": str(db_name),
        "database": database_record(database) if database is not None else None,
        "options": {name: _plain(getattr(options, name), name in _OPTION_FLOAT)
                    for name in OPTION_FIELDS},
        "queries": queries,
    }
    write_results(path, KIND, header)


def _plain(value, is_float: bool):
    if value is None or isinstance(value, (str, bool)):
        return value
    return float(value) if is_float else int(value)


def _key_fields(key) -> list:
    """hitlist.list_order_key: (E-value, -score, -oid); or a heap record (E-value, scaled score, oid)."""
    return [float(key[0]), int(key[1]), int(key[2])]


def _hsp_fields(h: Hsp) -> list:
    return [_plain(getattr(h, name), name in _HSP_FLOAT) for name in HSP_FIELDS]


def is_blast_hits(path) -> bool:
    try:
        with open(path, "rb") as fh:
            return fh.read(len(KIND)) == KIND
    except OSError:
        return False


def load_hits(path) -> dict:
    """Read and check a .gsblast file: a dict with db_name, database, options (BlastOptions),
    queries [(title, length, [SubjectResult, ...])], digest (SHA-256 of the file), path."""
    header, data, digest = read_results(path, KIND, SUFFIX, WRITER)
    f = Fields(path, SUFFIX)
    f.record(header, HEADER_FIELDS, "header")
    if header["program"] != "blastp" or data:
        f.fail("program")
    database = None if header["database"] is None else check_database_record(f, header["database"])
    queries = []
    for i, query in enumerate(f.items(header["queries"], "queries")):
        what = f"query {i + 1}"
        f.record(query, QUERY_FIELDS, what)
        subjects = [_read_subject(f, s, f"{what} subject {j + 1}")
                    for j, s in enumerate(f.items(query["subjects"], f"{what} subjects"))]
        queries.append((f.text(query["title"], f"{what} title"), f.integer(query["length"], f"{what} length", 0),
                        subjects))
    return {"db_name": f.text(header["db_name"], "db_name", line=False), "database": database,
            "options": _read_options(f, header["options"]), "queries": queries, "digest": digest,
            "path": str(path)}


def _read_options(f: Fields, obj) -> BlastOptions:
    f.record(obj, OPTION_FIELDS, "options")
    values = {}
    for name in OPTION_FIELDS:
        value, what = obj[name], f"option {name}"
        if name == "matrix":
            values[name] = f.text(value, what)
        elif name in _OPTION_FLOAT:
            values[name] = f.optional(f.number, value, what) if name == "threshold" else f.number(value, what)
        elif name == "dbsize":
            values[name] = f.optional(f.integer, value, what, 1)
        else:
            values[name] = f.optional(f.integer, value, what, *INT32)
    if values["max_target_seqs"] is None or values["num_threads"] is None:
        f.fail("options")
    try:
        return BlastOptions(**values)
    except OptionError as exc:
        f.fail(f"options: {exc}")


def _read_key(f: Fields, obj, what: str) -> tuple:
    e, score, oid = f.items(obj, what, 3)
    return (f.number(e, what, 0.0), f.integer(score, what), f.integer(oid, what))


def _read_subject(f: Fields, obj, what: str) -> SubjectResult:
    f.record(obj, SUBJECT_FIELDS, what)
    oid = f.integer(obj["oid"], f"{what} oid", 0)
    prelim, final = _read_key(f, obj["prelim_key"], what), _read_key(f, obj["final_key"], what)
    if prelim[2] != -oid or final[2] != -oid:
        f.fail(f"{what}: its keys are not its own")
    heap = None if obj["heap_record"] is None else _read_key(f, obj["heap_record"], what)
    if heap is not None and heap[2] != oid:
        f.fail(f"{what}: its keys are not its own")
    rows = []
    for k, row in enumerate(f.items(obj["rows"], f"{what} rows")):
        where = f"{what} row {k + 1}"
        values = dict(zip(HSP_FIELDS, f.items(row, where, len(HSP_FIELDS))))
        for name, value in values.items():
            if name in _HSP_TEXT:
                f.text(value, f"{where} {name}")
            elif name in _HSP_FLOAT:
                f.number(value, f"{where} {name}", 0.0)
            else:
                f.integer(value, f"{where} {name}", 0)
        if len(values["qseq"]) != len(values["sseq"]) or values["oid"] != oid:
            f.fail(f"{where}: its alignment or subject does not match")
        rows.append(Hsp(**values))
    return SubjectResult(oid, prelim, final, rows, heap_record=heap)


def merge_results(shard_batch: list[list[list]], options: BlastOptions) -> list[list]:
    """The rows of one batch of queries (``hitlist.query_batches``) from several shards
    (per query, each shard's subjects), exactly as one search of the whole database.

    Each shard saved every subject of its own preliminary hit list; the whole
    database's preliminary hit list is the best of their union (a subject in
    the global list is in its shard's list), then (with composition-based
    statistics) the subjects the redo keeps, BLAST's output order and cut.
    """
    unions = [[r for results in per_shard for r in results] for per_shard in shard_batch]
    chosen = select_batch(unions, options.max_target_seqs, options.comp_based_stats, options.blast_threads)
    return [[h for r in kept for h in r.rows] for kept in chosen]


def _check_shards(loaded: list[dict]) -> None:
    """One search (same queries, same options) of one database, each sequence once."""
    check_shard_set([(d["path"], d["digest"], d["database"]) for d in loaded], SUFFIX)
    first = loaded[0]
    for d in loaded[1:]:
        if [q[:2] for q in d["queries"]] != [q[:2] for q in first["queries"]]:
            raise OptionError(f"{first['path']} and {d['path']} hold the results of different queries: "
                              f"search every shard with the same query file")
        for name in MATCHING:
            a, b = getattr(first["options"], name), getattr(d["options"], name)
            if a != b:
                if name == "dbsize":
                    raise OptionError("shards were searched with different -dbsize; use the whole "
                                      "database's size")
                raise OptionError(f"{first['path']} and {d['path']} were searched with different options "
                                  f"(-{name}: {a} and {b}): merge shards searched alike")
    # a subject (its place in the whole database) found by two files: their sequences overlap.
    # (Pieces of a plain database number their sequences from 1 each: not comparable.)
    placed = [d for d in loaded if d["database"] is None or d["database"]["shard"] is not None]
    for q in range(len(first["queries"])):
        owner: dict[int, str] = {}
        for d in placed:
            for r in d["queries"][q][2]:
                if owner.setdefault(r.oid, d["path"]) != d["path"]:
                    raise OptionError(f"{owner[r.oid]} and {d['path']} both hold database sequence "
                                      f"{r.oid + 1}: each sequence once")


def merge_files(paths, fh, *, fmt: int, columns: list[str]) -> None:
    """Merge .gsblast files (same queries, same options) and write the rows."""
    if not paths:
        raise OptionError("no .gsblast files to merge")
    if fmt == 5:
        raise OptionError("-outfmt 5: merge writes the tabular formats (6, 7, 10); BLAST XML of merged "
                          "shards is not implemented")
    if fmt == 0:
        raise OptionError("-outfmt 0: merge writes the tabular formats (6, 7, 10); the pairwise report of "
                          "merged shards is not implemented")
    loaded = [load_hits(p) for p in paths]      # order-independent: subjects carry their database position
    _check_shards(loaded)
    first = loaded[0]
    options = first["options"]
    # with composition-based statistics a query's rows depend on the other queries of its batch
    lengths = [length for _, length, _ in first["queries"]]
    for q in split_queries(lengths):
        print(f"gpu-search: warning: query '{printable(first['queries'][q][0], 60)}' is one BLAST+ "
              f"searches in chunks (its batch of queries holds 19,800 residues or more); its merged rows are "
              f"those of one search only while its chunks together hit fewer subjects than the preliminary "
              f"hit list holds", file=sys.stderr, flush=True)
    for batch in output_batches(lengths, options.comp_based_stats):
        rows = merge_results([[d["queries"][q][2] for d in loaded] for q in batch], options)
        for q, query_rows in zip(batch, rows):
            write_query(fh, fmt, columns, first["queries"][q][0], first["db_name"], query_rows)
    write_footer(fh, fmt, len(first["queries"]))
