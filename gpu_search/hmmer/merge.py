"""Merging the hmmsearch results of database shards into the unsharded result.

A shard searched with ``Z`` = the number of sequences of the whole database
gives every hit the E-value it has in a full search.  What a shard cannot
know is ``domZ``, the number of sequences reported over the *whole*
database, which scales the domains' conditional E-values and decides which
domains are reported.  So shards save their complete hits (``--hits-out``, a
``.gshits`` file: pyhmmer's ``TopHits`` at full precision), and merging them
with pyhmmer's ``TopHits.merge`` re-sorts the hits, recounts ``domZ`` and
re-applies every threshold, giving exactly the output of one search of the
whole database (tested).

A ``.gshits`` file is a pickle read back by an unpickler that builds only the
records below (GSHITS_RECORDS): a crafted file cannot run code when merged.
"""

from __future__ import annotations

import os
from dataclasses import replace

from ..errors import OptionError
from ..output import load_pickle, save_pickle
from .search import PipelineStats, SearchResult

MAGIC = b"GSHITS\x00\x01"

# what a .gshits file may hold besides plain values: our records, pyhmmer's hits with their
# query model (its vectors and matrices, its alphabet; made through getattr, restricted to
# ``Alphabet.amino()`` and the like and ``_from_raw_bytes``: output._pyhmmer_getattr), the
# model's creation time, Python arrays
GSHITS_RECORDS = frozenset({
    ("gpu_search.hmmer.options", "SearchOptions"), ("gpu_search.hmmer.search", "PipelineStats"),
    ("pyhmmer.plan7", "TopHits"), ("pyhmmer.plan7", "HMM"), ("pyhmmer.easel", "Alphabet"),
    ("pyhmmer.easel", "VectorF"), ("pyhmmer.easel", "VectorU8"), ("pyhmmer.easel", "MatrixF"),
    ("pyhmmer.easel", "MatrixU8"), ("builtins", "getattr"), ("datetime", "datetime"),
    ("array", "array"), ("array", "_array_reconstructor"),
})


def save_results(path, results: list[SearchResult], *, hmmfile: str, seqfile: str, options,
                 first_index: int = 0) -> None:
    """Write one shard's results (every model, in order) to a .gshits file.

    ``first_index``: the shard's first sequence in the whole database, so that
    merging puts the shards back in database order whatever order they come in.
    """
    payload = {
        "hmmfile": hmmfile,
        "seqfile": seqfile,
        "first_index": first_index,
        "options": options,
        "results": [(r.hits, r.stats) for r in results],
    }
    save_pickle(path, MAGIC, payload)


def load_results(path) -> dict:
    return load_pickle(path, MAGIC, ".gshits", "gpu-search hmmsearch --hits-out", GSHITS_RECORDS)


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
        names = {r.hits.query.name for r in per_model}
        if len(names) != 1:
            raise OptionError(f"shard results are for different models: {', '.join(sorted(names))}")
        Zs = {r.hits.Z for r in per_model}
        if len(Zs) != 1:
            raise OptionError("shards were searched with different -Z; give each the whole database's -Z")
        hits = per_model[0].hits.merge(*[r.hits for r in per_model[1:]])
        merged.append(SearchResult(per_model[0].hmm, hits, _sum_stats([r.stats for r in per_model], hits)))
    return merged


def read_shards(paths) -> tuple[list[SearchResult], dict]:
    """Load .gshits files and merge them; also returns the first file's metadata."""
    if not paths:
        raise OptionError("no .gshits files to merge")
    loaded = sorted((load_results(p) for p in paths), key=lambda d: d.get("first_index", 0))
    shards = [[SearchResult(h.query, h, s) for h, s in d["results"]] for d in loaded]
    meta = loaded[0]
    meta["seqfile"] = ",".join(os.path.basename(d["seqfile"]) for d in loaded)
    return merge_results(shards), meta
