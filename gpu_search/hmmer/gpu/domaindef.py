"""HMMER's domain definition on the GPU (p7_domaindef.c), for the sequences that pass F3.

For each (model, sequence) pair, as p7_Pipeline runs it after the Forward filter:

1. the Forward and Backward parsers over the whole sequence, keeping the special states'
   rows (``forward_parser``, ``backward_parser``), the model local multihit for the
   sequence's length;
2. the posteriors of p7_DomainDecoding and the regions of
   p7_domaindef_ByPosteriorHeuristics, each flagged where HMMER would resolve it by
   stochastic traces (``domain_regions``);
3. for each region HMMER takes as one domain, its envelope rescored as
   rescore_isolated_domain does, the model unihit: p7_Forward and p7_Backward over the
   envelope (its score envsc), p7_Decoding's posteriors, p7_OptimalAccuracy (oasc) and
   p7_OATrace (the alignment), p7_Null2_ByExpectation (each residue's n2sc and the
   domain's correction) (``posterior_decoding``, ``optimal_accuracy``, ``oa_trace``,
   ``null2_by_expectation``).

The kernels are fwdback.cu's, exact to HMMER's float operations.  A pair is left to the CPU
(``PairResults.simple`` False) where the GPU cannot give HMMER's answer: a region HMMER
clusters from stochastic traces (not on the GPU yet), a score the kernels leave unsure (a
double log near a float boundary, NaN), a model longer than the kernels' rows hold, an
envelope whose trace would not fit its buffer.

The launches go through a ``kernels`` object (:class:`CupyKernels` on a GPU; the tests
give the same calls to the CPU emulator of the kernels), so that this module only lays out
the work: which pairs and envelopes, where each one's rows and matrices lie.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..profile import FilterProfile
from .packing import FWDBACK_QMAX, degenerate_bits, fwdback_params, job_table, pack_fwdback_profiles, striped_q

X_CELLS = 6                        # fwdback.cu's special states a row: E N J B C SCALE


# the kernels, and how many threads each gives a pair
THREADS_PER_PAIR = {"forward_parser": 4, "backward_parser": 4, "domain_regions": 1, "posterior_decoding": 4,
                    "optimal_accuracy": 4, "oa_trace": 1, "null2_by_expectation": 4, "sequence_null2_sum": 1}


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
        """Floats of whole matrices a batch of envelopes may take: a third of the free memory."""
        return int(self.cp.cuda.Device(self.device_id).mem_info[0] // 12)

    def to_device(self, a: np.ndarray):
        return self.cp.asarray(np.ascontiguousarray(a))

    def zeros(self, n: int, dtype):
        return self.cp.zeros(int(max(n, 1)), dtype=dtype)

    def to_host(self, a) -> np.ndarray:
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
    number of domains; simple: whether every region was rescored here (else the pair is
    left to the CPU); env_start: the pair's envelopes are env_start[p] .. env_start[p+1]
    of :class:`EnvelopeResults`; null2_sum: the Kahan sum of the whole sequence's n2sc
    (p7_Pipeline's seqbias before its log), for the simple pairs."""

    model: np.ndarray
    seq: np.ndarray
    fwd: np.ndarray
    nexpected: np.ndarray
    nregions: np.ndarray
    simple: np.ndarray
    env_start: np.ndarray
    null2_sum: np.ndarray


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
                   max_matrix_floats: int | None = None) -> tuple[PairResults, EnvelopeResults]:
    """Domain definition of the pairs (profs[models[p]], sequence seqs[p]) on the GPU.

    residues, offsets: the sequences (Easel's digital codes, sequence s at
    residues[offsets[s]:offsets[s+1]]); degeneracy: Easel's (Kp, K) table;
    max_matrix_floats: the envelopes rescored together hold at most this many floats of
    whole matrices (default: the kernels' ``matrix_floats()``)."""
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
        unsure = np.bincount(region_q, weights=regions[:, 2] != 0, minlength=k) > 0
        simple[pairs] = ~(np.isnan(f_out) | np.isnan(b_out) | unsure)

    # 3: each simple pair's regions as envelopes (in pair order, each pair's left to right),
    # rescored in batches of bounded matrices
    kept = np.flatnonzero(simple[region_pair])
    kept = kept[np.argsort(region_pair[kept], kind="stable")]
    env, env_pair = regions[kept], region_pair[kept]
    env_start = np.concatenate([[0], np.cumsum(np.bincount(env_pair, minlength=n))]).astype(np.int64)
    n_env = len(env)
    ei, ej = env[:, 0].astype(np.int64), env[:, 1].astype(np.int64)
    Lr = ej - ei + 1
    Ms = np.array([p.M for p in profs], dtype=np.int64)
    Qs = np.array([striped_q(p.M) for p in profs], dtype=np.int64)
    cells = (Lr + 1) * Qs[models[env_pair]] * 12 if n_env else np.zeros(0, np.int64)
    out = EnvelopeResults(i=ei.astype(np.int32), j=ej.astype(np.int32), envsc=np.full(n_env, np.nan, np.float32),
                          decoded=np.zeros(n_env, bool), oasc=np.zeros(n_env, np.float32),
                          domcorrection=np.zeros(n_env, np.float32), n2sc=np.zeros(int(Lr.sum()), np.float32),
                          n2sc_start=_at(Lr), trace_start=np.zeros(n_env + 1, np.int64), st=None, k=None, ti=None,
                          pp=None)
    traces: list = []                   # each batch's traces (_rescore)
    degenerate = kernels.to_device(degenerate_bits(degeneracy))
    unihit = [fwdback_params(p, multihit=False) for p in profs]
    # batches of envelopes of like sizes, largest first, their matrices within the budget: a
    # launch lasts as long as its longest chain of rows
    budget = kernels.matrix_floats() if max_matrix_floats is None else max_matrix_floats
    by_size = np.argsort(-cells, kind="stable")
    b0 = 0
    while b0 < n_env:
        b1 = b0 + 1                      # (at least one envelope)
        total = 2 * cells[by_size[b0]]
        while b1 < n_env and total + 2 * cells[by_size[b1]] <= budget:
            total += 2 * cells[by_size[b1]]
            b1 += 1
        _rescore(kernels, out, traces, np.sort(by_size[b0:b1]), env_pair, models, seqs, Lr, cells, Ms, len(profs),
                 unihit, d_residues, d_offsets, d_model_at, d_profiles, degenerate)
        b0 = b1

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
    null2_sum = np.full(n, np.nan, np.float32)
    done = np.flatnonzero(simple)
    if len(done):       # the sequences' null2 sums, over the envelopes' n2sc
        firsts = env_start[done]
        envs = index_ranges(firsts, env_start[done + 1] - firsts)
        local = np.concatenate([[0], np.cumsum(env_start[done + 1] - firsts)]).astype(np.int64)
        sums = kernels.zeros(len(done), np.float32)
        kernels.launch("sequence_null2_sum", 1, len(done), (
            d_offsets, kernels.to_device(seqs[done].astype(np.int32)), np.int32(len(done)),
            kernels.to_device(local), kernels.to_device(out.i[envs]), kernels.to_device(out.j[envs]),
            kernels.to_device(out.n2sc_start[envs]), kernels.to_device(out.n2sc), sums))
        null2_sum[done] = kernels.to_host(sums)[:len(done)]
    pairs = PairResults(model=models, seq=seqs, fwd=fwd, nexpected=nexpected, nregions=nregions, simple=simple,
                        env_start=env_start, null2_sum=null2_sum)
    return pairs, out


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
