"""HMMER's domain definition on the GPU (p7_domaindef.c), for the sequences that pass F3.

For each (model, sequence) pair, as p7_Pipeline runs it after the Forward filter:

1. the Forward and Backward parsers over the whole sequence, keeping the special states'
   rows (``forward_parser``, ``backward_parser``), the model local multihit for the
   sequence's length;
2. the posteriors of p7_DomainDecoding and the regions of
   p7_domaindef_ByPosteriorHeuristics, each flagged where HMMER resolves it by stochastic
   traces (``domain_regions``);
3. for each region so flagged, region_trace_ensemble: p7_Forward over the region, the model
   multihit, 200 stochastic traces from it with their null2 (each residue's n2sc), and the
   clusters of their domains, HMMER's envelopes of the region (``forward_parser``,
   ``region_traces``, ``trace_clusters``);
4. for each envelope (a region HMMER takes as one domain, or a cluster's), rescored as
   rescore_isolated_domain does, the model unihit: p7_Forward and p7_Backward over the
   envelope (its score envsc), p7_Decoding's posteriors, p7_OptimalAccuracy (oasc) and
   p7_OATrace (the alignment), p7_Null2_ByExpectation (each residue's n2sc and the
   domain's correction; a cluster's correction the sum of the region's n2sc instead)
   (``posterior_decoding``, ``optimal_accuracy``, ``oa_trace``, ``null2_by_expectation``).

The kernels are fwdback.cu's, exact to HMMER's float operations.  A pair is left to the CPU
(``PairResults.simple`` False) where the GPU cannot give HMMER's answer: a score the kernels
leave unsure (a double log near a float boundary, NaN), a model longer than the kernels' rows
hold, an envelope whose trace would not fit its buffer, a region whose sampled domains
would not fit theirs.

The launches go through a ``kernels`` object (:class:`CupyKernels` on a GPU; the tests
give the same calls to the CPU emulator of the kernels), so that this module only lays out
the work: which pairs and envelopes, where each one's rows and matrices lie.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from ..profile import FilterProfile
from .packing import FWDBACK_QMAX, degenerate_bits, fwdback_params, job_table, pack_fwdback_profiles, striped_q

X_CELLS = 6                        # fwdback.cu's special states a row: E N J B C SCALE


# the kernels, and how many threads each gives a pair
THREADS_PER_PAIR = {"forward_parser": 4, "backward_parser": 4, "domain_regions": 1, "posterior_decoding": 4,
                    "optimal_accuracy": 4, "oa_trace": 1, "null2_by_expectation": 4, "sequence_null2_sum": 1,
                    "region_traces": 32, "trace_clusters": 32}    # (region_traces: fwdback.cu's TRACE_GROUP)

N_TRACES = 200                     # fwdback.cu's: HMMER's stochastic traces a region
SAMPLE_INTS = 5                    # a sampled domain: trace, i, j, k, m
CLUSTER_INTS = 7                   # trace_clusters' workspace per cluster


class CupyKernels:
    """fwdback.cu's kernels on one GPU (CuPy arrays in and out)."""

    def __init__(self, device_id: int = 0):
        from ...gpu import load_functions
        from .kernels import FWDBACK_FILE

        import cupy

        self.cp = cupy
        self.device_id = device_id
        names = tuple(THREADS_PER_PAIR)
        self.functions = dict(zip(names, load_functions(FWDBACK_FILE, (), names, device_id)))

    def matrix_floats(self) -> int:
        """Floats of whole matrices a batch of envelopes may take: a third of the free memory,
        the blocks CuPy's pool keeps for reuse counted as free (the driver counts them as used:
        a budget of the driver's free memory alone would shrink as the pool grows, splitting
        the envelopes into more batches, each launch as long as its longest chain of rows)."""
        cp = self.cp
        with cp.cuda.Device(self.device_id):
            free = cp.cuda.Device(self.device_id).mem_info[0] + cp.get_default_memory_pool().free_bytes()
        return int(free // 12)

    def to_device(self, a: np.ndarray):
        return self.cp.asarray(np.ascontiguousarray(a))

    def zeros(self, n: int, dtype):
        return self.cp.zeros(int(max(n, 1)), dtype=dtype)

    def to_host(self, a) -> np.ndarray:
        # the kernels before it waited for without the interpreter's lock (a region's traces can
        # run for a second, and the filter threads need the lock meanwhile), then the copy
        done = self.cp.cuda.get_current_stream().record()
        while not done.done:
            time.sleep(0.0005)
        return self.cp.asnumpy(a)

    def launch(self, name: str, n_jobs: int, most: int, args: tuple) -> None:
        """Kernel ``name`` over n_jobs jobs of at most ``most`` pairs (a row of 128-thread
        blocks a job)."""
        threads = THREADS_PER_PAIR[name] * most
        null = np.uint64(0)
        self.functions[name](((threads + 127) // 128, n_jobs), (128,),
                             tuple(null if a is None else a for a in args))


@dataclass
class PairResults:
    """What the GPU found for each pair (model j, sequence s) asked for, in the order asked.

    fwd: the Forward parser's score (nats; NaN where unsure); nexpected: HMMER's expected
    number of domains; nregions, nclustered, noverlaps, nenvelopes: P7_DOMAINDEF's counts
    (regions, those resolved by stochastic traces, envelopes starting within the one
    rescored before them in such a region, envelopes); simple: whether every region was
    resolved here (else the pair is left to the CPU); env_start: the pair's envelopes are
    env_start[p] .. env_start[p+1] of :class:`EnvelopeResults`; null2_sum: the Kahan sum
    of the whole sequence's n2sc (p7_Pipeline's seqbias before its log), for the simple
    pairs; passed: False where the pair failed the forward_test asked for (HMMER's Forward
    test: such a pair is not simple)."""

    model: np.ndarray
    seq: np.ndarray
    fwd: np.ndarray
    nexpected: np.ndarray
    nregions: np.ndarray
    simple: np.ndarray
    env_start: np.ndarray
    null2_sum: np.ndarray
    nclustered: np.ndarray
    noverlaps: np.ndarray
    nenvelopes: np.ndarray
    passed: np.ndarray | None = None


@dataclass
class EnvelopeResults:
    """Each envelope of the simple pairs, in pair order then left to right.

    i, j: the envelope in the sequence (1-based, inclusive); envsc: p7_Forward's score over
    it (nats); decoded: False where p7_Decoding overflowed (HMMER drops the domain);
    oasc: p7_OptimalAccuracy's score; domcorrection: the sum of its residues' n2sc;
    n2sc: each residue's, at n2sc_start[e] .. + (j - i + 1); the trace (p7_OATrace's, in
    the sequence's coordinates) at trace_start[e] .. trace_start[e+1]: state codes (P7_TRACE's),
    nodes, residues, posteriors."""

    i: np.ndarray
    j: np.ndarray
    envsc: np.ndarray
    decoded: np.ndarray
    oasc: np.ndarray
    domcorrection: np.ndarray
    n2sc: np.ndarray
    n2sc_start: np.ndarray
    trace_start: np.ndarray
    st: np.ndarray
    k: np.ndarray
    ti: np.ndarray
    pp: np.ndarray


def _layout(seq_lengths: np.ndarray, models: np.ndarray, n_models: int):
    """Pairs grouped by model (a job each), each job's longest first: the order of pairs in
    the launches (``perm``: position -> pair), each job's start and count."""
    perm = np.lexsort((-seq_lengths, models)).astype(np.int64)
    counts = np.bincount(models, minlength=n_models).astype(np.int64)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
    return perm, starts, counts


def _at(sizes: np.ndarray) -> np.ndarray:
    return np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64) if len(sizes) else np.zeros(0, np.int64)


def index_ranges(starts: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """The indices starts[r] .. starts[r] + sizes[r] - 1 of every range r, one after the other."""
    sizes = np.asarray(sizes, dtype=np.int64)
    return np.repeat(np.asarray(starts, dtype=np.int64) - _at(sizes), sizes) + np.arange(int(sizes.sum()))


def define_domains(kernels, profs: list[FilterProfile], residues: np.ndarray, offsets: np.ndarray,
                   models: np.ndarray, seqs: np.ndarray, degeneracy: np.ndarray,
                   max_matrix_floats: int | None = None, forward_test=None) -> tuple[PairResults, EnvelopeResults]:
    """Domain definition of the pairs (profs[models[p]], sequence seqs[p]) on the GPU.

    residues, offsets: the sequences (Easel's digital codes, sequence s at
    residues[offsets[s]:offsets[s+1]]); degeneracy: Easel's (Kp, K) table;
    max_matrix_floats: the envelopes rescored together hold at most this many floats of
    whole matrices (default: the kernels' ``matrix_floats()``); forward_test: None, or a
    function of the Forward parser's scores (every pair's, NaN where unsure or not asked)
    giving which pairs pass p7_Pipeline's Forward test: the others are defined no further."""
    models = np.asarray(models, dtype=np.int64)
    seqs = np.asarray(seqs, dtype=np.int64)
    lengths = np.diff(np.asarray(offsets, dtype=np.int64))
    n = len(models)
    fits = np.array([p.M <= 4 * FWDBACK_QMAX for p in profs], dtype=bool)
    asked = np.flatnonzero(fits[models]) if n else np.zeros(0, np.int64)
    fwd = np.full(n, np.nan, np.float32)
    nexpected = np.zeros(n, np.float32)
    nregions = np.zeros(n, np.int32)
    simple = np.zeros(n, bool)
    regions = np.zeros((0, 3), np.int32)            # every pair's regions (i, j, unsure), and whose
    region_pair = np.zeros(0, np.int64)
    model_at, profiles = pack_fwdback_profiles(profs)
    d_residues = kernels.to_device(residues)
    d_offsets = kernels.to_device(np.asarray(offsets, dtype=np.int64))
    d_model_at, d_profiles = kernels.to_device(model_at), kernels.to_device(profiles)

    # 1-2: both parsers over each whole sequence, then the regions
    if len(asked):
        perm, starts, counts = _layout(lengths[seqs[asked]], models[asked], len(profs))
        pairs = asked[perm]
        L = lengths[seqs[pairs]]
        rows_at = _at((L + 1) * X_CELLS)
        n_rows = int(((L + 1) * X_CELLS).sum())
        jobs = kernels.to_device(job_table(starts, counts, starts, [fwdback_params(p) for p in profs]))
        order = kernels.to_device(seqs[pairs].astype(np.int32))
        d_rows_at = kernels.to_device(rows_at)
        fwd_rows, bck_rows, post = (kernels.zeros(n_rows, np.float32) for _ in range(3))
        d_regions = kernels.zeros(n_rows, np.int32)
        f_out, b_out = kernels.zeros(len(pairs), np.float32), kernels.zeros(len(pairs), np.float32)
        own, n_reg = kernels.zeros(len(pairs), np.int32), kernels.zeros(len(pairs), np.int32)
        n_exp = kernels.zeros(len(pairs), np.float32)
        most = int(counts.max())
        common = (d_residues, d_offsets, order, jobs, d_model_at, d_profiles, None, d_rows_at)
        kernels.launch("forward_parser", len(profs), most, (*common, fwd_rows, None, None, f_out))
        kernels.launch("backward_parser", len(profs), most, (*common, fwd_rows, bck_rows, None, None, own, b_out))
        kernels.launch("domain_regions", len(profs), most, (jobs, d_offsets, order, d_rows_at, fwd_rows, bck_rows,
                                                            own, post, d_regions, n_reg, n_exp))
        k = len(pairs)
        f_out, b_out = kernels.to_host(f_out)[:k], kernels.to_host(b_out)[:k]
        n_reg = kernels.to_host(n_reg)[:k].astype(np.int64)
        regions = kernels.to_host(d_regions)[index_ranges(rows_at, 3 * n_reg)].reshape(-1, 3)
        region_q = np.repeat(np.arange(k), n_reg)
        region_pair = pairs[region_q]
        fwd[pairs] = f_out
        nexpected[pairs] = kernels.to_host(n_exp)[:k]
        nregions[pairs] = n_reg
        simple[pairs] = ~(np.isnan(f_out) | np.isnan(b_out))
    passed = np.ones(n, bool) if forward_test is None else np.asarray(forward_test(fwd), dtype=bool)
    simple &= passed

    Ms = np.array([p.M for p in profs], dtype=np.int64)
    Qs = np.array([striped_q(p.M) for p in profs], dtype=np.int64)
    budget = kernels.matrix_floats() if max_matrix_floats is None else max_matrix_floats
    degenerate = kernels.to_device(degenerate_bits(degeneracy))
    # 3: the regions HMMER resolves by stochastic traces, their clusters its envelopes
    multi = np.flatnonzero((regions[:, 2] != 0) & simple[region_pair])
    ens = _trace_ensembles(kernels, regions[multi], region_pair[multi], models, seqs, profs, Ms, Qs, budget,
                           d_residues, d_offsets, d_model_at, d_profiles, degenerate)
    simple[region_pair[multi[~ens.ok]]] = False
    in_multi = np.full(len(regions), -1, np.int64)
    in_multi[multi] = np.arange(len(multi))

    # 4: each simple pair's envelopes (in pair order, each pair's regions left to right, a
    # resolved region's clusters in HMMER's order), rescored in batches of bounded matrices
    kept = np.flatnonzero(simple[region_pair])
    kept = kept[np.argsort(region_pair[kept], kind="stable")]
    kept_multi = in_multi[kept]
    per_region = np.where(kept_multi >= 0, ens.count[np.maximum(kept_multi, 0)] if len(multi) else 0, 1)
    env_region = np.repeat(kept, per_region)             # (the region each envelope comes from)
    env_pair = region_pair[env_region]
    given = in_multi[env_region] >= 0                    # (a cluster's: its null2 from the traces)
    ei = regions[env_region, 0].astype(np.int64)
    ej = regions[env_region, 1].astype(np.int64)
    if given.any():
        first_env = _at(per_region)[kept_multi >= 0]
        cl = kept_multi[kept_multi >= 0]
        at = index_ranges(first_env, ens.count[cl])
        src = index_ranges(ens.first[cl], ens.count[cl])
        ei[at], ej[at] = ens.i[src], ens.j[src]
    env_start = np.concatenate([[0], np.cumsum(np.bincount(env_pair, minlength=n))]).astype(np.int64)
    n_env = len(env_region)
    Lr = ej - ei + 1
    cells = (Lr + 1) * Qs[models[env_pair]] * 12 if n_env else np.zeros(0, np.int64)
    out = EnvelopeResults(i=ei.astype(np.int32), j=ej.astype(np.int32), envsc=np.full(n_env, np.nan, np.float32),
                          decoded=np.zeros(n_env, bool), oasc=np.zeros(n_env, np.float32),
                          domcorrection=np.zeros(n_env, np.float32), n2sc=np.zeros(int(Lr.sum()), np.float32),
                          n2sc_start=_at(Lr), trace_start=np.zeros(n_env + 1, np.int64), st=None, k=None, ti=None,
                          pp=None)
    traces: list = []                   # each batch's traces (_rescore)
    unihit = [fwdback_params(p, multihit=False) for p in profs]
    # batches of envelopes of like sizes, largest first, their matrices within the budget: a
    # launch lasts as long as its longest chain of rows
    for idx in _batches(2 * cells, budget):           # (a Forward and a Backward matrix each)
        _rescore(kernels, out, traces, idx, env_pair, models, seqs, Lr, cells, Ms, len(profs),
                 unihit, d_residues, d_offsets, d_model_at, d_profiles, degenerate)

    # the traces in envelope order; a pair with an envelope the kernels left unsure goes to
    # the CPU whole
    trace_n = np.full(n_env, -1, np.int64)      # (-1: no trace: it did not fit its buffer)
    source = np.zeros(n_env, np.int64)
    base = 0
    for envs, trace_at, n_traced, st, _, _, _ in traces:
        trace_n[envs] = n_traced
        source[envs] = trace_at + base
        base += len(st)
    traced = trace_n >= 0
    simple[env_pair[np.isnan(out.envsc) | (out.decoded & ~traced)]] = False
    sizes = np.maximum(trace_n, 0)
    out.trace_start = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    take = index_ranges(source, sizes)
    out.st, out.k, ii, out.pp = (np.concatenate([t[c] for t in traces])[take] if traces else np.zeros(0, dt)
                                 for c, dt in zip(range(3, 7), (np.int32, np.int32, np.int32, np.float32)))
    shift = np.repeat(out.i.astype(np.int32) - 1, sizes)       # the traces in the sequences' coordinates
    out.ti = np.where(ii > 0, ii + shift, ii).astype(np.int32)
    # a cluster's n2sc is the region's, its correction their float sum in order (HMMER's null2
    # by traces in place of the envelope's own)
    g = np.flatnonzero(given)
    from_region = ens.n2sc_start[in_multi[env_region[g]]] + (ei[g] - regions[env_region[g], 0])
    out.n2sc[index_ranges(out.n2sc_start[g], Lr[g])] = ens.n2sc[index_ranges(from_region, Lr[g])]
    out.domcorrection[g] = _sums_in_order(out.n2sc, out.n2sc_start[g], Lr[g])

    # P7_DOMAINDEF's counts: envelopes, regions clustered, and within those an envelope starting
    # at or before the end of the last one of its region rescored (decoded) before it
    nenvelopes = np.bincount(env_pair, minlength=n).astype(np.int32)
    nclustered = np.bincount(region_pair[kept[kept_multi >= 0]], minlength=n).astype(np.int32)
    pos = np.arange(len(g))
    group_first = np.maximum.accumulate(np.where(np.r_[True, env_region[g][1:] != env_region[g][:-1]], pos, 0)) \
        if len(g) else pos
    last = np.r_[-1, np.maximum.accumulate(np.where(out.decoded[g], pos, -1))[:-1]] if len(g) else pos
    last_j = np.where(last >= group_first, ej[g][np.maximum(last, 0)] if len(g) else 0, 0)
    noverlaps = np.bincount(env_pair[g][ei[g] <= last_j], minlength=n).astype(np.int32)

    null2_sum = np.full(n, np.nan, np.float32)
    done = np.flatnonzero(simple)
    if len(done):       # the sequences' null2 sums: each region's n2sc (its envelope's, or its traces')
        sel = np.isin(region_pair[kept], done)
        seg_of, seg_multi = kept[sel], kept_multi[sel]
        seg_env = _at(per_region)[sel]                     # (a simple region's one envelope)
        n2sc_at = np.where(seg_multi >= 0, len(out.n2sc) + ens.n2sc_start[np.maximum(seg_multi, 0)]
                           if len(multi) else 0, out.n2sc_start[np.minimum(seg_env, max(n_env - 1, 0))]
                           if n_env else 0)
        local = np.concatenate([[0], np.cumsum(np.bincount(region_pair[seg_of], minlength=n)[done])]).astype(np.int64)
        sums = kernels.zeros(len(done), np.float32)
        kernels.launch("sequence_null2_sum", 1, len(done), (
            d_offsets, kernels.to_device(seqs[done].astype(np.int32)), np.int32(len(done)),
            kernels.to_device(local), kernels.to_device(regions[seg_of, 0].astype(np.int32)),
            kernels.to_device(regions[seg_of, 1].astype(np.int32)), kernels.to_device(n2sc_at.astype(np.int64)),
            kernels.to_device(np.concatenate([out.n2sc, ens.n2sc]).astype(np.float32)), sums))
        null2_sum[done] = kernels.to_host(sums)[:len(done)]
    pairs = PairResults(model=models, seq=seqs, fwd=fwd, nexpected=nexpected, nregions=nregions, simple=simple,
                        env_start=env_start, null2_sum=null2_sum, nclustered=nclustered, noverlaps=noverlaps,
                        nenvelopes=nenvelopes, passed=passed)
    return pairs, out


def _batches(sizes: np.ndarray, budget: int):
    """Index arrays (each sorted) of items of like sizes, largest first, each batch's sizes
    within the budget (one item at least): a launch lasts as long as its longest chain of rows."""
    by_size = np.argsort(-sizes, kind="stable")
    b0 = 0
    while b0 < len(sizes):
        b1, total = b0 + 1, sizes[by_size[b0]]
        while b1 < len(sizes) and total + sizes[by_size[b1]] <= budget:
            total += sizes[by_size[b1]]
            b1 += 1
        yield np.sort(by_size[b0:b1])
        b0 = b1


def _sums_in_order(values: np.ndarray, starts: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """float32 sums of values[starts[r]:starts[r]+sizes[r]], each added left to right as C's
    float loop adds (numpy's sum pairs terms): a cumulative sum along the rows of each size's
    block."""
    out = np.zeros(len(starts), np.float32)
    for size in np.unique(sizes):
        rows = np.flatnonzero(sizes == size)
        if size > 0:
            block = values[starts[rows][:, None] + np.arange(size)]
            out[rows] = np.cumsum(block, axis=1, dtype=np.float32)[:, -1]
    return out


@dataclass
class Ensembles:
    """region_trace_ensemble's results for some regions: ok (False where the GPU could not
    give HMMER's: the pair goes to the CPU); region r's envelopes (its clusters, in HMMER's
    order) are i[first[r]:first[r]+count[r]], j[...]; its residues' n2sc are
    n2sc[n2sc_start[r]:] (the region's length)."""

    ok: np.ndarray
    first: np.ndarray
    count: np.ndarray
    i: np.ndarray
    j: np.ndarray
    n2sc: np.ndarray
    n2sc_start: np.ndarray


def _trace_ensembles(kernels, reg: np.ndarray, reg_pair: np.ndarray, models, seqs, profs, Ms, Qs, budget: int,
                     d_residues, d_offsets, d_model_at, d_profiles, degenerate) -> Ensembles:
    """region_trace_ensemble for the regions reg ((i, j, flag) rows) of pairs reg_pair, in
    batches whose Forward matrices fit the budget: p7_Forward over each region (the model
    multihit for the whole sequence's length), ``region_traces`` and ``trace_clusters``."""
    n = len(reg)
    Lr = (reg[:, 1] - reg[:, 0] + 1).astype(np.int64) if n else np.zeros(0, np.int64)
    m = models[reg_pair]
    cells = (Lr + 1) * Qs[m] * 12
    # sampled domains a region may hold: 200 traces of up to 4 domains, more in longer regions
    cap = N_TRACES * np.maximum(4, (Lr + 24) // 25)
    ok = np.zeros(n, bool)
    count = np.zeros(n, np.int64)
    found: list = []                   # each batch's clusters: (its regions, their clusters end to end)
    found_at = np.zeros(n, np.int64)   # (where a region's clusters start in found's, all batches end to end)
    found_n = 0
    n2sc_start = _at(Lr)
    n2sc = np.zeros(int(Lr.sum()), np.float32)
    multihit = [fwdback_params(p) for p in profs]
    size = cells + SAMPLE_INTS * cap
    for idx in _batches(size, budget):
        perm, starts, counts = _layout(Lr[idx], m[idx], len(profs))
        rs = idx[perm]
        k = len(rs)
        rows_at = _at((Lr[rs] + 1) * X_CELLS)
        n_rows = int(((Lr[rs] + 1) * X_CELLS).sum())
        jobs = kernels.to_device(job_table(starts, counts, starts, multihit))
        order = kernels.to_device(seqs[reg_pair[rs]].astype(np.int32))
        d_seg = kernels.to_device(np.stack([reg[rs, 0], Lr[rs]], axis=1).astype(np.int32).reshape(-1))
        d_rows_at, d_matrix_at = kernels.to_device(rows_at), kernels.to_device(_at(cells[rs]))
        fwd_rows, fwd_mx = kernels.zeros(n_rows, np.float32), kernels.zeros(int(cells[rs].sum()), np.float32)
        most = int(counts.max())
        common = (d_residues, d_offsets, order, jobs, d_model_at, d_profiles, d_seg, d_rows_at)
        kernels.launch("forward_parser", len(profs), most, (*common, fwd_rows, d_matrix_at, fwd_mx,
                                                            kernels.zeros(k, np.float32)))
        samples_at = kernels.to_device(_at(cap[rs]))
        samples = kernels.zeros(SAMPLE_INTS * int(cap[rs].sum()), np.int32)
        n_samples, status = kernels.zeros(k, np.int32), kernels.zeros(k, np.int32)
        d_n2sc = kernels.zeros(n_rows // X_CELLS, np.float32)
        kernels.launch("region_traces", len(profs), most, (
            d_residues, d_offsets, order, jobs, d_model_at, d_profiles, d_seg, degenerate, d_rows_at, fwd_rows,
            d_matrix_at, fwd_mx, samples_at, kernels.to_device(cap[rs].astype(np.int32)), samples, n_samples,
            d_n2sc, status))
        ns = kernels.to_host(n_samples)[:k].astype(np.int64)
        # a significant cluster holds samples of 50 traces at least
        cluster_cap = ns // 50 + 1
        work = (3 + CLUSTER_INTS) * ns + np.maximum(Lr[rs], Ms[m[rs]]) + 1
        clusters_at = _at(cluster_cap)
        clusters, n_clusters = kernels.zeros(2 * int(cluster_cap.sum()), np.int32), kernels.zeros(k, np.int32)
        kernels.launch("trace_clusters", 1, k, (
            np.int32(k), samples_at, n_samples, samples, kernels.to_device(_at(work)),
            kernels.zeros(int(work.sum()), np.int32), kernels.to_device(clusters_at),
            kernels.to_device(cluster_cap.astype(np.int32)), clusters, n_clusters))
        nc = kernels.to_host(n_clusters)[:k].astype(np.int64)
        ok[rs] = (kernels.to_host(status)[:k] == 0) & (nc >= 0)
        count[rs] = np.maximum(nc, 0)
        cl = kernels.to_host(clusters).reshape(-1, 2)[index_ranges(clusters_at, count[rs])]
        found_at[rs] = found_n + _at(count[rs])
        found_n += len(cl)
        found.append(cl)
        n2sc[index_ranges(n2sc_start[rs], Lr[rs])] = kernels.to_host(d_n2sc)[index_ranges(rows_at // X_CELLS + 1,
                                                                                            Lr[rs])]
    count[~ok] = 0
    first = _at(count)
    every = np.concatenate(found + [np.zeros((0, 2), np.int32)]).astype(np.int64)[index_ranges(found_at, count)]
    return Ensembles(ok=ok, first=first, count=count, i=every[:, 0], j=every[:, 1], n2sc=n2sc, n2sc_start=n2sc_start)


def _rescore(kernels, out: EnvelopeResults, traces: list, idx: np.ndarray, env_pair, models, seqs, Lr, cells,
             Ms, n_models: int, unihit, d_residues, d_offsets, d_model_at, d_profiles, degenerate) -> None:
    """rescore_isolated_domain for the envelopes idx: one launch of each stage, the
    envelopes grouped by model (a job each), longest first."""
    m = models[env_pair[idx]]
    perm, starts, counts = _layout(Lr[idx], m, n_models)
    envs = idx[perm]
    seg = np.stack([out.i[envs], Lr[envs]], axis=1).astype(np.int32)
    lr = Lr[envs]
    rows_at = _at((lr + 1) * X_CELLS)
    n_rows = int(((lr + 1) * X_CELLS).sum())
    matrix_at = _at(cells[envs])
    n_cells = int(cells[envs].sum())
    cap = (lr + Ms[m[perm]] + 8).astype(np.int32)          # a trace's states: at most Lr + M + 7
    trace_at = _at(cap.astype(np.int64))
    jobs = kernels.to_device(job_table(starts, counts, starts, unihit))
    order = kernels.to_device(seqs[env_pair[envs]].astype(np.int32))
    d_seg, d_rows_at, d_matrix_at = (kernels.to_device(a) for a in (seg.reshape(-1), rows_at, matrix_at))
    fwd_rows, bck_rows = kernels.zeros(n_rows, np.float32), kernels.zeros(n_rows, np.float32)
    fwd_mx, bck_mx = kernels.zeros(n_cells, np.float32), kernels.zeros(n_cells, np.float32)
    k = len(envs)
    envsc, bsc, own, range_error, oasc, domcorr = (kernels.zeros(k, dt) for dt in (np.float32, np.float32, np.int32,
                                                                                   np.int32, np.float32, np.float32))
    n2sc = kernels.zeros(n_rows // X_CELLS, np.float32)
    st, kk, ii = (kernels.zeros(int(cap.sum()), np.int32) for _ in range(3))
    tpp, trace_n = kernels.zeros(int(cap.sum()), np.float32), kernels.zeros(k, np.int32)
    most = int(counts.max())
    common = (d_residues, d_offsets, order, jobs, d_model_at, d_profiles, d_seg, d_rows_at)
    kernels.launch("forward_parser", n_models, most, (*common, fwd_rows, d_matrix_at, fwd_mx, envsc))
    kernels.launch("backward_parser", n_models, most, (*common, fwd_rows, bck_rows, d_matrix_at, bck_mx, own, bsc))
    # the posteriors in place of the Backward's, the optimal accuracy in place of the Forward's
    kernels.launch("posterior_decoding", n_models, most, (jobs, d_offsets, order, d_seg, d_rows_at, fwd_rows,
                                                          bck_rows, d_matrix_at, fwd_mx, bck_mx, own, range_error))
    kernels.launch("optimal_accuracy", n_models, most, (jobs, d_offsets, order, d_seg, d_model_at, d_profiles,
                                                        d_rows_at, bck_rows, fwd_rows, d_matrix_at, bck_mx, fwd_mx,
                                                        oasc))
    kernels.launch("oa_trace", n_models, most, (jobs, d_offsets, order, d_seg, d_model_at, d_profiles, d_rows_at,
                                                bck_rows, fwd_rows, d_matrix_at, bck_mx, fwd_mx,
                                                kernels.to_device(trace_at), kernels.to_device(cap), st, kk, ii, tpp,
                                                trace_n))
    kernels.launch("null2_by_expectation", n_models, most, (d_residues, d_offsets, order, jobs, d_seg, d_model_at,
                                                            d_profiles, degenerate, d_rows_at, bck_rows, d_matrix_at,
                                                            bck_mx, None, n2sc, domcorr))
    envsc, range_error, oasc, domcorr = (kernels.to_host(a) for a in (envsc, range_error, oasc, domcorr))
    n2sc, trace_n = kernels.to_host(n2sc), kernels.to_host(trace_n)
    st, kk, ii, tpp = (kernels.to_host(a) for a in (st, kk, ii, tpp))
    out.envsc[envs] = envsc[:k]
    out.decoded[envs] = range_error[:k] == 0
    out.oasc[envs] = oasc[:k]
    out.domcorrection[envs] = domcorr[:k]
    out.n2sc[index_ranges(out.n2sc_start[envs], lr)] = n2sc[index_ranges(rows_at // X_CELLS + 1, lr)]
    # the traces as the kernel left them (in the envelopes' coordinates), for define_domains
    traces.append((envs, trace_at, trace_n[:k].astype(np.int64), st, kk, ii, tpp))
