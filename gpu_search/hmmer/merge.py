"""Merging the hmmsearch (or phmmer) results of database shards into the unsharded result.

A shard searched with ``Z`` = the number of sequences of the whole database
gives every hit the E-value it has in a full search.  What a shard cannot
know is ``domZ``, the number of sequences reported over the *whole*
database, which scales the domains' conditional E-values and decides which
domains are reported.  So shards save their complete hits (``--hits-out``, a
``.gshits`` file: pyhmmer's ``TopHits`` at full precision), and merging them
with pyhmmer's ``TopHits.merge`` re-sorts the hits, recounts ``domZ`` and
re-applies every threshold, giving exactly the output of one search of the
whole database (tested).

A ``.gshits`` file (layout: gpu_search.output, "result files") holds plain
data only.  Its header (JSON) says which database and shard was searched,
with which options, and per model the ``TopHits`` state and pipeline
statistics as numbers; its data holds the query models in HMMER's binary
format (read back by HMMER's own reader) and each hit as HMMER serializes it
(``p7_hit_Serialize``: the hit, its domains, their alignments; fixed fields in
network byte order, then NUL-terminated strings).  Those bytes go to HMMER's
C code (``TopHits.__setstate__``), which trusts their lengths, so every hit
is first walked here field by field (sizes, counts, string ends, index
ranges): a crafted file is refused, never read out of bounds.

phmmer's shards (program "phmmer") are the same search, of the models phmmer
built from the query sequences: their header also records phmmer's options
(--popen, --pextend, --mx) and per model the query sequence (name, length,
accession, description), which phmmer's reports print.  hmmsearch's files are
unchanged by this: the same fields, the same format version.
"""

from __future__ import annotations

import io
import math
import os
import struct
from dataclasses import fields, replace

import numpy as np

from ..errors import FormatError, OptionError
from ..output import (Fields, Parts, check_database_record, check_shard_set, database_record, read_results,
                      write_results)
from .options import CUTOFF_FLAGS, SCORE_MATRICES, PhmmerOptions, SearchOptions
from .phmmer import PhmmerResult, Query
from .search import (PIPELINE_BOOL, PIPELINE_COUNTERS, PIPELINE_FLOAT, PIPELINE_INT, PipelineStats, SearchResult,
                     tophits_from_state)

KIND = b"GSHITS\x00"
SUFFIX, WRITER = ".gshits", "gpu-search hmmsearch or phmmer --hits-out"

# SearchOptions that change hits or E-values: equal in every shard merged (the others
# only shape the report, taken from the first shard; ``given`` is what each job typed)
REPORT_ONLY = ("textw", "notextw", "noali", "acc", "given")
OPTION_FIELDS = tuple(f.name for f in fields(SearchOptions))
MATCHING = tuple(name for name in OPTION_FIELDS if name not in REPORT_ONLY)
# phmmer's: its scoring system too (it changes the query models, so the hits)
PHMMER_OPTION_FIELDS = tuple(f.name for f in fields(PhmmerOptions))
PHMMER_MATCHING = tuple(name for name in PHMMER_OPTION_FIELDS if name not in REPORT_ONLY)

# nhmmer's fields of P7_PIPELINE, which pyhmmer leaves unset (any bytes) in a protein search
# and nothing of one reads: saved as 0
_UNSET = {"strands": 0, "block_length": 0, "n_output": 0, "pos_output": 0}
_TOPHITS_FIELDS = ("N", "nreported", "nincluded", "is_sorted_by_sortkey", "is_sorted_by_seqidx", "_empty",
                   "pipeline")
MODEL_FIELDS = ("hits", "order", "tophits", "stats")
PHMMER_MODEL_FIELDS = MODEL_FIELDS + ("query",)
QUERY_FIELDS = ("name", "length", "accession", "description")
HEADER_FIELDS = ("program", "hmmfile", "seqfile", "database", "options", "hmms", "models")
INT32 = (-(1 << 31), (1 << 31) - 1)


# --- saving ----------------------------------------------------------------------------------


def save_results(path, results: list[SearchResult], *, hmmfile: str, seqfile: str, options,
                 database=None, first_index: int | None = None) -> None:
    """Write one shard's results (every model, in order) to a .gshits file.

    ``database``: the ``SequenceDB`` searched; without it, a ``.gsdb``
    ``seqfile`` is opened again (memory-mapped), and of any other input (a
    FASTA file, a pipe, which cannot be read twice) the file records its name
    and the sizes the searches counted.  ``first_index``: the shard's first
    sequence in the whole database (default: the database's own), so that
    merging puts the shards back in database order whatever order they come in.
    phmmer's results (``PhmmerOptions``) are saved with their query sequences.
    """
    phmmer = isinstance(options, PhmmerOptions)
    record = database_record(database if database is not None else _searched_database(seqfile, results))
    if first_index is not None:
        record["first_index"] = int(first_index)
    parts = Parts()
    hmm_blob = io.BytesIO()
    models = []
    for r in results:
        hmm = r.hmm
        if phmmer:
            # a model phmmer built records its job's command line and time, which differ
            # from shard to shard; nothing of phmmer's outputs shows them
            hmm = hmm.copy()
            hmm.command_line = hmm.creation_time = None
        hmm.write(hmm_blob, binary=True)
        state = r.hits.__getstate__()
        hits = b"".join(bytes(s) for s in state["unsrt"])
        order = np.asarray(state["hit"], dtype="<u4").tobytes()
        tophits = {key: state[key] for key in _TOPHITS_FIELDS}
        tophits["pipeline"] = dict(state["pipeline"], **_UNSET)
        model = {"hits": parts.add(hits), "order": parts.add(order), "tophits": tophits,
                 "stats": _stats_fields(r.stats)}
        if phmmer:
            q = r.query
            model["query"] = {"name": q.name, "length": int(q.length), "accession": q.accession,
                              "description": q.description}
        models.append(model)
    header = {
        "program": "phmmer" if phmmer else "hmmsearch",
        "hmmfile": str(hmmfile),
        "seqfile": str(seqfile),
        "database": record,
        "options": _option_fields(options),
        "hmms": parts.add(hmm_blob.getvalue()),
        "models": models,
    }
    write_results(path, KIND, header, parts.data())


def _searched_database(seqfile, results: list[SearchResult]):
    """The database searched, from its path: a .gsdb read again, or what the searches counted."""
    from types import SimpleNamespace

    from ..seqdb import GSDB_MAGIC, read_gsdb

    is_gsdb = False
    if os.path.isfile(seqfile):             # (a pipe is never opened again)
        try:
            with open(seqfile, "rb") as fh:
                is_gsdb = fh.read(len(GSDB_MAGIC)) == GSDB_MAGIC
        except OSError:
            pass
    if is_gsdb:
        return read_gsdb(seqfile)
    stats = results[0].stats if results else None
    n_seqs, n_residues = (stats.nseqs, stats.nres) if stats else (0, 0)
    return SimpleNamespace(source=str(seqfile), total_seqs=n_seqs, total_residues=n_residues, shard=None,
                           first_index=0, n_seqs=n_seqs, n_residues=n_residues)


def _option_fields(options: SearchOptions) -> dict:
    out = {}
    for name in PHMMER_OPTION_FIELDS if isinstance(options, PhmmerOptions) else OPTION_FIELDS:
        value = getattr(options, name)
        if isinstance(value, bool) or value is None or name in ("bit_cutoffs", "given", "mx"):
            out[name] = value
        elif name in ("seed", "textw"):
            out[name] = int(value)
        else:
            out[name] = float(value)
    out["given"] = {str(k): v if isinstance(v, (str, bool, int, float)) else str(v)
                    for k, v in options.given.items()}
    return out


def _stats_fields(stats: PipelineStats) -> dict:
    return {f.name: getattr(stats, f.name) for f in fields(PipelineStats)}


# --- reading ---------------------------------------------------------------------------------


def load_results(path) -> dict:
    """Read and check a .gshits file: its header's fields, its models, every hit.

    Returns a dict: program ("hmmsearch" or "phmmer"), hmmfile, seqfile, database,
    options (SearchOptions; PhmmerOptions of phmmer), results [(TopHits,
    PipelineStats, Query or None)], digest (SHA-256 of the file).
    """
    header, data, digest = read_results(path, KIND, SUFFIX, WRITER)
    f = Fields(path, SUFFIX)
    f.record(header, HEADER_FIELDS, "header")
    program = header["program"]
    if program not in ("hmmsearch", "phmmer"):
        f.fail("program")
    phmmer = program == "phmmer"
    database = check_database_record(f, header["database"])
    options = _read_options(f, header["options"], phmmer)
    hmms = _read_hmms(f, f.part(header["hmms"], data, "models"), path)
    models = f.items(header["models"], "models", len(hmms))
    results = []
    for i, (hmm, model) in enumerate(zip(hmms, models)):
        what = f"model {i + 1}"
        f.record(model, PHMMER_MODEL_FIELDS if phmmer else MODEL_FIELDS, what)
        query = _read_query(f, model["query"], hmm, what) if phmmer else None
        hits = _read_tophits(f, hmm, model, data, what)
        results.append((hits, _read_stats(f, model["stats"], what), query))
    return {"program": program, "hmmfile": f.text(header["hmmfile"], "hmmfile", line=False),
            "seqfile": f.text(header["seqfile"], "seqfile", line=False),
            "database": database, "options": options, "results": results, "digest": digest,
            "path": str(path)}


def _read_options(f: Fields, obj, phmmer: bool = False) -> SearchOptions:
    names = PHMMER_OPTION_FIELDS if phmmer else OPTION_FIELDS
    f.record(obj, names, "options")
    values = {}
    for name in names:
        value, what = obj[name], f"option {name}"
        if name == "mx":
            if value not in SCORE_MATRICES:
                f.fail(what)
            values[name] = value
        elif name in ("max", "nobias", "nonull2", "notextw", "noali", "acc"):
            values[name] = f.flag(value, what)
        elif name in ("seed", "textw"):
            values[name] = f.integer(value, what, 0, INT32[1])
        elif name == "bit_cutoffs":
            if value is not None and value not in CUTOFF_FLAGS:
                f.fail(what)
            values[name] = value
        elif name == "given":
            if not isinstance(value, dict) or any(type(v) not in (str, bool, int, float) for v in value.values()):
                f.fail(what)
            values[name] = value
        elif name in ("T", "domT", "incT", "incdomT", "Z", "domZ"):
            values[name] = f.optional(f.number, value, what)
        else:
            values[name] = f.number(value, what, 0.0, math.inf)
    given = values.pop("given")
    try:
        options = (PhmmerOptions if phmmer else SearchOptions)(**values)
    except OptionError as exc:
        f.fail(f"options: {exc}")
    options.given = given
    return options


def _read_query(f: Fields, obj, hmm, what: str) -> Query:
    """phmmer's query sequence of a model: one-line strings (the reports print them), and the
    model phmmer built from it (p7_SingleBuilder: named as the query, one node a residue)."""
    f.record(obj, QUERY_FIELDS, f"{what} query")
    query = Query(name=f.text(obj["name"], f"{what} query name"),
                  length=f.integer(obj["length"], f"{what} query length", 1, INT32[1]),
                  accession=f.text(obj["accession"], f"{what} query accession"),
                  description=f.text(obj["description"], f"{what} query description"))
    name = hmm.name.decode() if isinstance(hmm.name, bytes) else hmm.name
    if query.name != name or query.length != hmm.M:
        f.fail(f"{what} query is not the sequence its model was built from")
    return query


def _read_stats(f: Fields, obj, what: str) -> PipelineStats:
    names = [x.name for x in fields(PipelineStats)]
    f.record(obj, names, f"{what} statistics")
    values = {}
    for name in names:
        value, where = obj[name], f"{what} statistics {name}"
        if name in ("Z_from_option", "domZ_from_option", "bias_filter", "do_max"):
            values[name] = f.flag(value, where)
        elif name in ("Z", "domZ", "F1", "F2", "F3"):
            values[name] = f.number(value, where, 0.0)
        else:
            values[name] = f.integer(value, where, 0)
    return PipelineStats(**values)


def _read_hmms(f: Fields, blob: bytes, path) -> list:
    """The query models, read by HMMER's reader (it checks its own format)."""
    from pyhmmer.plan7 import HMMFile

    try:
        with HMMFile(io.BytesIO(blob)) as models:
            hmms = list(models)
    except Exception:           # HMMER's errors on a damaged model: the file's fault
        raise FormatError(f"{path}: corrupt {SUFFIX} file (a query model cannot be read)") from None
    for hmm in hmms:
        if not hmm.alphabet.is_amino():
            f.fail("a query model is not a protein model")
    return hmms


def _read_tophits(f: Fields, hmm, model: dict, data: bytes, what: str):
    """A TopHits rebuilt through ``__setstate__`` from fields checked first."""
    from pyhmmer.easel import VectorU8

    top = f.record(model["tophits"], _TOPHITS_FIELDS, f"{what} hits")
    n = f.integer(top["N"], f"{what} number of hits", 0, INT32[1])
    f.integer(top["nreported"], f"{what} hits reported", 0, n)
    f.integer(top["nincluded"], f"{what} hits included", 0, n)
    for key in ("is_sorted_by_sortkey", "is_sorted_by_seqidx", "_empty"):
        f.flag(top[key], f"{what} {key}")
    pipeline = _read_pipeline(f, top["pipeline"], what)

    order_blob = f.part(model["order"], data, f"{what} hit order")
    if len(order_blob) != 4 * n:
        f.fail(f"{what} hit order: {len(order_blob)} bytes for {n} hits")
    order = np.frombuffer(order_blob, dtype="<u4")
    if not np.array_equal(np.sort(order), np.arange(n, dtype=order.dtype)):
        f.fail(f"{what} hit order is not an order of its hits")

    blob = f.part(model["hits"], data, f"{what} hits")
    states, pos = [], 0
    for i in range(n):
        end = _check_hit(f, blob, pos, hmm.M, f"{what} hit {i + 1}")
        states.append(VectorU8(bytearray(blob[pos:end])))
        pos = end
    if pos != len(blob):
        f.fail(f"{what}: {len(blob) - pos} bytes after its {n} hits")
    return tophits_from_state(hmm, {"unsrt": states, "hit": [int(x) for x in order], "Nalloc": n, "N": n,
                                    "nreported": top["nreported"], "nincluded": top["nincluded"],
                                    "is_sorted_by_sortkey": top["is_sorted_by_sortkey"],
                                    "is_sorted_by_seqidx": top["is_sorted_by_seqidx"], "_empty": top["_empty"],
                                    "pipeline": pipeline})


def _read_pipeline(f: Fields, obj, what: str) -> dict:
    f.record(obj, PIPELINE_BOOL + PIPELINE_FLOAT + PIPELINE_INT, f"{what} pipeline")
    for name in PIPELINE_BOOL:
        f.flag(obj[name], f"{what} pipeline {name}")
    for name in PIPELINE_FLOAT:
        f.number(obj[name], f"{what} pipeline {name}")      # finite: JSON holds no other
    for name in PIPELINE_INT:
        # counters are 64-bit in HMMER, settings and enums C ints
        lo, hi = (0, (1 << 63) - 1) if name in PIPELINE_COUNTERS else INT32
        f.integer(obj[name], f"{what} pipeline {name}", lo, hi)
    if obj["mode"] != 0 or obj["long_targets"] or any(obj[name] != value for name, value in _UNSET.items()):
        f.fail(f"{what} pipeline: not hmmsearch's")
    return obj


# HMMER 3.4's serialized P7_HIT, P7_DOMAIN, P7_ALIDISPLAY: fixed fields in network order
_HIT = struct.Struct(">IidfffdddfiiiiiIiiiqqB")
#   size, window_length, sortkey, score, pre_score, sum_score, lnP, pre_lnP, sum_lnP, nexpected,
#   nregions, nclustered, noverlaps, nenvelopes, ndom, flags, nreported, nincluded, best_domain,
#   seqidx, subseq_start, presence of acc (1) and desc (2); then name, [acc], [desc]
_DOMAIN = struct.Struct(">I6q5fdiii")
#   size, ienv, jenv, iali, jali, iorf, jorf, envsc, domcorrection, dombias, oasc, bitscore, lnP,
#   is_reported, is_included, length of scores_per_pos; then that many floats
_ALI = struct.Struct(">IiiiiqqqB")
#   size, N, hmmfrom, hmmto, M, sqfrom, sqto, L, presence of rfline (1), mmline (2), csline (4),
#   ppline (8), aseq (16), ntseq (32); then those lines (model and mline always), six names
_HIT_FLAGS = 0x1F              # reported, included, new, dropped, duplicate
_ALI_LINES = ((1, "rfline"), (2, "mmline"), (4, "csline"), (0, "model"), (0, "mline"), (16, "aseq"),
              (32, "ntseq"), (8, "ppline"))


def _cstring(f: Fields, buf: bytes, pos: int, end: int, what: str) -> int:
    """The end (past its NUL) of a NUL-terminated UTF-8 string at ``pos``, before ``end``."""
    nul = buf.find(b"\x00", pos, end)
    if nul < 0:
        f.fail(f"{what}: a string runs past its record")
    try:
        buf[pos:nul].decode("utf-8")
    except UnicodeDecodeError:
        f.fail(f"{what}: a string is not UTF-8")
    return nul + 1


def _no_nan(f: Fields, values, what: str) -> None:
    if any(v != v for v in values):
        f.fail(f"{what}: a score is not a number")


def _check_hit(f: Fields, buf: bytes, pos: int, M: int, what: str) -> int:
    """Walk one serialized hit at ``pos`` as p7_hit_Deserialize will; return its end."""
    if pos + _HIT.size > len(buf):
        f.fail(f"{what}: cut short")
    (size, _, sortkey, score, pre_score, sum_score, lnP, pre_lnP, sum_lnP, nexpected, nregions, nclustered,
     noverlaps, nenvelopes, ndom, flags, nreported, nincluded, best_domain, _, _, presence) = \
        _HIT.unpack_from(buf, pos)
    _no_nan(f, (sortkey, score, pre_score, sum_score, lnP, pre_lnP, sum_lnP, nexpected), what)
    if min(nregions, nclustered, noverlaps, nenvelopes) < 0 or flags & ~_HIT_FLAGS or presence & ~3:
        f.fail(f"{what}: a count or flag out of range")
    if not 1 <= ndom <= (len(buf) - pos) // (_DOMAIN.size + _ALI.size) or not 0 <= best_domain < ndom \
            or not 0 <= nreported <= ndom or not 0 <= nincluded <= ndom:
        f.fail(f"{what}: its number of domains or best domain out of range")
    end = pos + size
    if size < _HIT.size or end > len(buf):
        f.fail(f"{what}: its size out of range")
    p = _cstring(f, buf, pos + _HIT.size, end, what)             # name
    for bit in (1, 2):                                           # acc, desc
        if presence & bit:
            p = _cstring(f, buf, p, end, what)
    if p != end:
        f.fail(f"{what}: its size does not match its fields")
    for d in range(ndom):
        p = _check_domain(f, buf, p, M, f"{what} domain {d + 1}")
    return p


def _check_domain(f: Fields, buf: bytes, pos: int, M: int, what: str) -> int:
    if pos + _DOMAIN.size > len(buf):
        f.fail(f"{what}: cut short")
    (size, ienv, jenv, iali, jali, _, _, *scores, is_reported, is_included, n_scores) = \
        _DOMAIN.unpack_from(buf, pos)
    _no_nan(f, scores, what)
    if not (1 <= ienv <= jenv and 1 <= iali <= jali) or is_reported not in (0, 1) or is_included not in (0, 1):
        f.fail(f"{what}: coordinates or flags out of range")
    if n_scores < 0 or size != _DOMAIN.size + 4 * n_scores or pos + size > len(buf):
        f.fail(f"{what}: its size out of range")
    _no_nan(f, struct.unpack_from(f">{n_scores}f", buf, pos + _DOMAIN.size), what)
    end, N = _check_alignment(f, buf, pos + size, M, f"{what} alignment")
    if n_scores not in (0, N):
        f.fail(f"{what}: {n_scores} scores per position for {N} columns")
    return end


def _check_alignment(f: Fields, buf: bytes, pos: int, M: int, what: str) -> tuple[int, int]:
    if pos + _ALI.size > len(buf):
        f.fail(f"{what}: cut short")
    size, N, hmmfrom, hmmto, ali_M, sqfrom, sqto, L, presence = _ALI.unpack_from(buf, pos)
    if not (1 <= hmmfrom <= hmmto <= ali_M == M and 1 <= sqfrom <= sqto <= L and N >= 1):
        f.fail(f"{what}: coordinates out of range")
    # a protein alignment: model, match line and target always, no translated sequence
    if presence & ~(1 | 2 | 4 | 8 | 16) or not presence & 16:
        f.fail(f"{what}: its lines out of range")
    end = pos + size
    if size < _ALI.size or end > len(buf):
        f.fail(f"{what}: its size out of range")
    p = pos + _ALI.size
    for bit, _ in _ALI_LINES:
        if bit == 0 or presence & bit:
            # a line of exactly N characters (the printers index it by N), then its NUL
            if p + N >= end or buf[p + N] != 0 or buf.find(b"\x00", p, p + N) >= 0:
                f.fail(f"{what}: a line is not {N} characters long")
            p += N + 1
    for _ in range(6):          # hmmname, hmmacc, hmmdesc, sqname, sqacc, sqdesc
        p = _cstring(f, buf, p, end, what)
    if p != end:
        f.fail(f"{what}: its size does not match its fields")
    return end, N


# --- merging ---------------------------------------------------------------------------------


def _sum_stats(stats: list[PipelineStats], hits) -> PipelineStats:
    first = stats[0]
    return replace(
        first,
        nseqs=sum(s.nseqs for s in stats),
        nres=sum(s.nres for s in stats),
        n_past_msv=sum(s.n_past_msv for s in stats),
        n_past_bias=sum(s.n_past_bias for s in stats),
        n_past_vit=sum(s.n_past_vit for s in stats),
        n_past_fwd=sum(s.n_past_fwd for s in stats),
        Z=float(hits.Z),
        domZ=float(hits.domZ),
    )


def merge_results(shards: list[list[SearchResult]]) -> list[SearchResult]:
    """Merge per-model results of several shards (same models, same order)."""
    n_models = {len(s) for s in shards}
    if len(n_models) != 1:
        raise OptionError("the shard results hold different numbers of models")
    merged = []
    for per_model in zip(*shards):
        query = getattr(per_model[0], "query", None)
        if any(getattr(r, "query", None) != query for r in per_model[1:]):
            raise OptionError(f"shard results are for different query sequences named {query.name}: "
                              f"search every shard with the same query file")
        names = {r.hits.query.name for r in per_model}
        if len(names) != 1:
            raise OptionError(f"shard results are for different models: {', '.join(sorted(names))}")
        if any(r.hits.query != per_model[0].hits.query for r in per_model[1:]):
            raise OptionError(f"shard results are for different models named {per_model[0].hits.query.name}: "
                              f"search every shard with the same query file")
        Zs = {r.hits.Z for r in per_model}
        if len(Zs) != 1:
            raise OptionError("shards were searched with different -Z; give each the whole database's -Z")
        try:
            hits = per_model[0].hits.merge(*[r.hits for r in per_model[1:]])
        except ValueError:      # pyhmmer: the pipelines' thresholds differ
            raise OptionError("shards were searched with different thresholds: merge shards searched "
                              "alike") from None
        stats = _sum_stats([r.stats for r in per_model], hits)
        merged.append(SearchResult(per_model[0].hmm, hits, stats) if query is None else
                      PhmmerResult(per_model[0].hmm, hits, stats, query=query))
    return merged


def _check_same_options(loaded: list[dict]) -> None:
    first = loaded[0]
    for d in loaded[1:]:
        if d["program"] != first["program"]:
            raise OptionError(f"{first['path']} holds {first['program']}'s results, {d['path']} "
                              f"{d['program']}'s: merge the shards of one search")
    for d in loaded[1:]:
        for name in PHMMER_MATCHING if first["program"] == "phmmer" else MATCHING:
            a, b = getattr(first["options"], name), getattr(d["options"], name)
            if a != b:
                raise OptionError(f"{first['path']} and {d['path']} were searched with different options "
                                  f"({name}: {a} and {b}): merge shards searched alike")


def read_shards(paths) -> tuple[list[SearchResult], dict]:
    """Load .gshits files, check that they are one search of one database, and merge them;
    also returns the first shard's metadata (program, hmmfile, seqfile: the shards' files,
    options)."""
    if not paths:
        raise OptionError("no .gshits files to merge")
    loaded = [load_results(p) for p in paths]
    check_shard_set([(d["path"], d["digest"], d["database"]) for d in loaded], SUFFIX)
    _check_same_options(loaded)
    loaded.sort(key=lambda d: d["database"]["first_index"])
    shards = [[SearchResult(h.query, h, s) if q is None else PhmmerResult(h.query, h, s, query=q)
               for h, s, q in d["results"]] for d in loaded]
    meta = dict(loaded[0])
    meta["seqfile"] = ",".join(os.path.basename(d["seqfile"]) for d in loaded)
    return merge_results(shards), meta
