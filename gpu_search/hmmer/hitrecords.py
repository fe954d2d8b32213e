"""HMMER's hit records built from the GPU's domain definition, as pyhmmer's ``TopHits`` holds them.

What p7_Pipeline, rescore_isolated_domain and p7_alidisplay_Create store for a sequence with
hits (P7_HIT, its P7_DOMAINs and their P7_ALIDISPLAYs), written as p7_hit_Serialize writes
them (network byte order, C strings), so that pyhmmer's ``TopHits.__setstate__`` takes them
and everything downstream (thresholds, E-values, every output format) is HMMER's own code:

    p7_hit.c       p7_hit_Serialize             ->  HIT_RECORD, model_records()
    p7_domain.c    p7_domain_Serialize          ->  DOMAIN_RECORD
    p7_alidisplay.c p7_alidisplay_Create/_Serialize ->  alidisplay_lines(), ALIDISPLAY_RECORD
    p7_pipeline.c  p7_pli_TargetReportable      ->  reportable()
    p7_tophits.c   p7_tophits_SortBySortkey     ->  gpu_tophits()

Five fields HMMER never sets in a protein search (a hit's window_length, seqidx and
subseq_start, a domain's iorf and jorf: heap garbage there) are written as 0; nothing
pyhmmer or our reports read depends on them.  The scores come from
:func:`gpu_search.hmmer.scores.hit_scores`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

# p7_hit_Serialize's base record (network byte order, no padding: 109 bytes)
HIT_RECORD = np.dtype([
    ("size", ">u4"), ("window_length", ">i4"), ("sortkey", ">f8"), ("score", ">f4"), ("pre_score", ">f4"),
    ("sum_score", ">f4"), ("lnP", ">f8"), ("pre_lnP", ">f8"), ("sum_lnP", ">f8"), ("nexpected", ">f4"),
    ("nregions", ">i4"), ("nclustered", ">i4"), ("noverlaps", ">i4"), ("nenvelopes", ">i4"), ("ndom", ">i4"),
    ("flags", ">u4"), ("nreported", ">i4"), ("nincluded", ">i4"), ("best_domain", ">i4"), ("seqidx", ">i8"),
    ("subseq_start", ">i8"), ("presence", "u1")])      # which of acc and desc follow the name
# p7_domain_Serialize (92 bytes; no scores per position follow)
DOMAIN_RECORD = np.dtype([
    ("size", ">u4"), ("ienv", ">i8"), ("jenv", ">i8"), ("iali", ">i8"), ("jali", ">i8"), ("iorf", ">i8"),
    ("jorf", ">i8"), ("envsc", ">f4"), ("domcorrection", ">f4"), ("dombias", ">f4"), ("oasc", ">f4"),
    ("bitscore", ">f4"), ("lnP", ">f8"), ("is_reported", ">i4"), ("is_included", ">i4"), ("n_scores", ">u4")])
# p7_alidisplay_Serialize's head (45 bytes), its lines and texts after it
ALIDISPLAY_RECORD = np.dtype([
    ("size", ">u4"), ("N", ">i4"), ("hmmfrom", ">i4"), ("hmmto", ">i4"), ("M", ">i4"), ("sqfrom", ">i8"),
    ("sqto", ">i8"), ("L", ">i8"), ("presence", "u1")])   # which lines follow
HIT_HAS_ACC, HIT_HAS_DESC = 1, 2
AD_RF, AD_CS, AD_PP, AD_ASEQ = 1, 4, 8, 16

T_M, T_D, T_I = 1, 2, 3                              # P7_TRACE's state codes
SYMBOLS = np.frombuffer(b"ACDEFGHIKLMNPQRSTVWY-BJZOUX*~", dtype=np.uint8)   # Easel's amino alphabet
LOWER = np.frombuffer(SYMBOLS.tobytes().lower(), dtype=np.uint8)
DOT, SPACE, PLUS, DASH, STAR = ord("."), ord(" "), ord("+"), ord("-"), ord("*")


@dataclass
class ModelText:
    """What an alignment display takes from the model (P7_OPROFILE's name, accession,
    description, consensus and annotation lines) and its match odds ratios (om->rfv, by which
    p7_alidisplay_Create marks a positive match '+')."""

    name: bytes
    acc: bytes
    desc: bytes
    M: int
    consensus: np.ndarray            # uint8 [M], case kept
    consensus_code: np.ndarray       # int [M]: the digital code of each consensus residue
    rf: np.ndarray | None            # uint8 [M] or None
    cs: np.ndarray | None
    odds: np.ndarray                 # float32 [Kp, M]

    @classmethod
    def from_profile(cls, prof) -> "ModelText":
        """From a :class:`gpu_search.hmmer.profile.FilterProfile` (its annotation kept)."""
        cons = np.frombuffer(prof.consensus.encode(), dtype=np.uint8)
        lookup = np.full(256, 26, dtype=np.int64)      # esl_abc_DigitizeSymbol, either case (X if unknown)
        lookup[SYMBOLS] = np.arange(len(SYMBOLS))
        lookup[LOWER] = np.arange(len(SYMBOLS))
        code = lookup[cons]

        def line(text):
            return np.frombuffer(text.encode(), dtype=np.uint8) if text else None

        return cls(name=prof.name.encode(), acc=(prof.accession or "").encode(),
                   desc=(prof.description or "").encode(), M=prof.M, consensus=cons, consensus_code=code,
                   rf=line(prof.reference), cs=line(prof.consensus_structure), odds=prof.fwd_emit)


@dataclass
class ModelTexts:
    """Several models' :class:`ModelText` end to end, all with or all without each annotation
    line: node k of model m at offset[m] + k - 1 of consensus, consensus_code, rf, cs and the
    columns of odds; text[m] the model's name, accession and description, each ended by a
    zero byte (as p7_alidisplay_Serialize writes them)."""

    M: np.ndarray                    # int64 [models]
    offset: np.ndarray               # int64 [models]
    consensus: np.ndarray
    consensus_code: np.ndarray
    rf: np.ndarray | None
    cs: np.ndarray | None
    odds: np.ndarray                 # float32 [Kp, sum of M]
    text: list

    @classmethod
    def of(cls, models: list) -> "ModelTexts":
        Ms = np.array([m.M for m in models], dtype=np.int64)

        def joined(lines):
            return None if lines[0] is None else np.concatenate(lines)

        return cls(M=Ms, offset=np.concatenate([[0], np.cumsum(Ms)[:-1]]).astype(np.int64),
                   consensus=np.concatenate([m.consensus for m in models]),
                   consensus_code=np.concatenate([m.consensus_code for m in models]),
                   rf=joined([m.rf for m in models]), cs=joined([m.cs for m in models]),
                   odds=np.concatenate([m.odds for m in models], axis=1),
                   text=[b"".join(x + b"\0" for x in (m.name, m.acc, m.desc)) for m in models])


def alidisplay_lines(models: ModelTexts, trace_model: np.ndarray, st, k, i, pp, bounds: np.ndarray,
                     seq_at: np.ndarray, residues: np.ndarray) -> tuple:
    """The lines of p7_alidisplay_Create's displays of optimal accuracy traces, worked out for
    all traces at once: (lines, first, last, presence).  Trace d is st, k, i, pp [bounds[d],
    bounds[d+1]), of model trace_model[d] of ``models``, in its sequence's coordinates (residue
    i at residues[seq_at[d] + i - 1]); its display runs from its first M (position first[d] of
    the traces end to end) to its last (last[d]), and line r of it is lines[r, first[d]:last[d]
    + 1].  The lines are those ``presence`` announces, in p7_alidisplay_Serialize's order
    (reference and structure annotation where the models have them, model, match, target,
    posterior probabilities)."""
    st, k, i = np.asarray(st), np.asarray(k).astype(np.int64), np.asarray(i).astype(np.int64)
    bounds = np.asarray(bounds, dtype=np.int64)
    m_at = np.flatnonzero(st == T_M)
    first = m_at[np.searchsorted(m_at, bounds[:-1])]
    last = m_at[np.searchsorted(m_at, bounds[1:]) - 1]
    owner = np.repeat(np.arange(len(bounds) - 1), np.diff(bounds))
    m, ins = st == T_M, st == T_I
    node = models.offset[np.asarray(trace_model, np.int64)[owner]] + np.maximum(k - 1, 0)
    x = np.where(i > 0, residues[np.maximum(np.asarray(seq_at, np.int64)[owner] + i - 1, 0)], 0).astype(np.int64)
    cons = models.consensus[node]
    model_line = np.where(ins, DOT, cons)
    positive = np.where(x == models.consensus_code[node], cons, np.where(models.odds[x, node] > 1.0, PLUS, SPACE))
    mline = np.where(m, positive, SPACE)
    aseq = np.where(m, SYMBOLS[x], np.where(ins, LOWER[x], DASH))
    post = np.asarray(pp, np.float32).astype(np.float64) + 0.05      # p7_alidisplay_EncodePostProb, in double
    pline = np.where(post >= 1.0, STAR, (post * 10.0).astype(np.int64) + ord("0"))
    pline = np.where(m | ins, pline, DOT)
    lines, presence = [], AD_PP | AD_ASEQ
    for flag, annotation in ((AD_RF, models.rf), (AD_CS, models.cs)):
        if annotation is not None:
            lines.append(np.where(ins, DOT, annotation[node]))
            presence |= flag
    grid = np.stack([a.astype(np.uint8) for a in lines + [model_line, mline, aseq, pline]])
    return grid, first, last, presence


def reportable(pipeline: dict, score: float, lnP: float) -> bool:
    """p7_pli_TargetReportable: whether p7_Pipeline keeps the hit at all (Z as the search fixed it)."""
    if pipeline["by_E"]:
        return math.exp(lnP) * float(pipeline["Z"]) <= float(pipeline["E"])
    return float(score) >= float(pipeline["T"])


def reportable_each(pipeline: dict, score: np.ndarray, lnP: np.ndarray) -> np.ndarray:
    """:func:`reportable` of many hits at once.  By E-value, HMMER takes exp() of the C
    library, which numpy's may differ from in the last bit: where that could change a verdict
    (within a millionth of a millionth of E), the hit is decided by math.exp, as reportable()."""
    if not pipeline["by_E"]:
        return np.asarray(score, dtype=np.float32).astype(np.float64) >= float(pipeline["T"])
    Z, E = float(pipeline["Z"]), float(pipeline["E"])
    lnP = np.asarray(lnP, dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        value = np.exp(lnP) * Z
        kept = value <= E
        near = np.flatnonzero(np.abs(value - E) <= 1e-12 * abs(E))
    for q in near.tolist():
        kept[q] = reportable(pipeline, 0.0, float(lnP[q]))
    return kept


def gpu_tophits(query, pipeline: dict, records: list, sortkeys: list, names: list, ialis: list,
                thresholded: bool = True):
    """A pyhmmer ``TopHits`` of ``query`` holding these hit records, sorted as
    p7_tophits_SortBySortkey sorts (sortkey down, then name, then the first domain's start)
    and thresholded by pyhmmer (``TopHits.merge``, as it thresholds merged searches); not
    thresholded where ``thresholded`` is False (for a merge with other hits of the model,
    which thresholds them all).

    pipeline: the P7_PIPELINE fields of a pyhmmer search configured as the others of this
    model (its thresholds, Z and domZ), with the counters this TopHits adds to a merge."""
    from pyhmmer.easel import VectorU8
    from pyhmmer.plan7 import TopHits

    order = sorted(range(len(records)), key=lambda j: (-sortkeys[j], names[j], ialis[j]))
    hits = TopHits(query)
    hits.__setstate__({"_empty": False, "unsrt": [VectorU8(bytearray(r)) for r in records], "hit": order,
                       "Nalloc": max(1, len(records)), "N": len(records), "nreported": 0, "nincluded": 0,
                       "is_sorted_by_sortkey": True, "is_sorted_by_seqidx": False, "pipeline": dict(pipeline)})
    return hits.merge() if thresholded else hits


def scored_domains(prof, pairs, env, sel: np.ndarray, lengths: np.ndarray) -> tuple:
    """The domains of one model's simple pairs ``sel`` of
    :func:`gpu_search.hmmer.gpu.domaindef.define_domains` (each pair's envelopes that
    decoded, in order) and p7_Pipeline's scores of the pairs and the domains
    (:func:`gpu_search.hmmer.scores.hit_scores`; lengths: of the sequences pairs.seq
    indexes).  Returns (dom_start: pair q's domains are dom_start[q] .. dom_start[q+1]-1 of
    flat, flat: their envelopes, HitScores)."""
    return _scored_domains(pairs, env, sel, lengths, prof.evparam[4], prof.evparam[5])


def _scored_domains(pairs, env, sel: np.ndarray, lengths: np.ndarray, tau, lam) -> tuple:
    """:func:`scored_domains` of pairs of one model (tau, lambda its Forward tail's) or of
    several (each pair's model's)."""
    from .gpu.domaindef import index_ranges
    from .scores import hit_scores

    sel = np.asarray(sel, dtype=np.int64)
    counts = pairs.env_start[sel + 1] - pairs.env_start[sel]
    every = index_ranges(pairs.env_start[sel], counts)         # (each pair's envelopes, in order)
    decoded = env.decoded[every]
    flat = every[decoded]
    per_pair = np.bincount(np.repeat(np.arange(len(sel)), counts)[decoded], minlength=len(sel))
    start = np.concatenate([[0], np.cumsum(per_pair)]).astype(np.int64)
    sc = hit_scores(pairs.fwd[sel], lengths[pairs.seq[sel]], pairs.null2_sum[sel], start, env.envsc[flat],
                    env.domcorrection[flat], env.i[flat], env.j[flat], tau, lam)
    return start, flat, sc


def model_records(model: ModelText, prof, pairs, env, sel: np.ndarray, residues: np.ndarray, offsets: np.ndarray,
                  lengths: np.ndarray, seq_text, pipeline: dict):
    """The hit records of one model's pairs ``sel`` (simple pairs of
    :func:`gpu_search.hmmer.gpu.domaindef.define_domains`, whose sequences are residues /
    offsets / lengths; seq_text(s): a sequence's (name, acc, desc) bytes), those p7_Pipeline
    keeps (a domain at least, reportable): (records, sortkeys, names, first domains' starts)."""
    return models_records([model], [prof], pairs, env, [sel], residues, offsets, lengths, seq_text, pipeline)[0]


def models_records(models: list, profs: list, pairs, env, sels: list, residues: np.ndarray, offsets: np.ndarray,
                   lengths: np.ndarray, seq_text, pipeline: dict) -> list:
    """:func:`model_records` of several models' pairs of one domain definition at once (model
    m: models[m], its ModelText, profs[m], its pairs sels[m]; the thresholds of ``pipeline``
    apply to all): one list per model.  The models are taken together by the annotation lines
    their displays carry (reference, structure), so that a few array operations serve every
    model of a finishing call where one model's took as many."""
    out = [([], [], [], []) for _ in models]
    groups: dict = {}
    for m, model in enumerate(models):
        if len(sels[m]):
            groups.setdefault((model.rf is None, model.cs is None), []).append(m)
    for members in groups.values():
        made = _records(ModelTexts.of([models[m] for m in members]),
                        np.array([profs[m].evparam[4] for m in members], dtype=np.float32),
                        np.array([profs[m].evparam[5] for m in members], dtype=np.float32),
                        pairs, env, [sels[m] for m in members], residues, offsets, lengths, seq_text, pipeline)
        for m, records in zip(members, made):
            out[m] = records
    return out


def _records(models: ModelTexts, tau: np.ndarray, lam: np.ndarray, pairs, env, sels: list, residues: np.ndarray,
             offsets: np.ndarray, lengths: np.ndarray, seq_text, pipeline: dict) -> list:
    """:func:`models_records` of models that carry the same annotation lines.

    Every record is made of ranges of one buffer (the fixed-size heads, each written for all
    hits or domains at once, the display lines, the texts, the terminating zero bytes), put
    end to end by one gather: no Python work per domain."""
    from .gpu.domaindef import index_ranges

    n_models = len(sels)
    sel = np.concatenate([np.asarray(x, dtype=np.int64) for x in sels])
    pair_model = np.repeat(np.arange(n_models), [len(x) for x in sels])
    start, flat, sc = _scored_domains(pairs, env, sel, lengths, tau[pair_model], lam[pair_model])
    by_E = bool(pipeline["inc_by_E"])
    # the pairs kept: a domain at least (a region, an envelope decoded), reportable
    kept = np.flatnonzero(start[:-1] < start[1:])
    kept = kept[reportable_each(pipeline, sc.score[kept], sc.lnP[kept])]
    if not len(kept):
        return [([], [], [], []) for _ in range(n_models)]
    kept_pairs = sel[kept]
    kept_seqs = pairs.seq[kept_pairs]
    kept_model = pair_model[kept]
    texts = [seq_text(j) for j in kept_seqs.tolist()]
    n_doms = start[kept + 1] - start[kept]
    dom_b = index_ranges(start[kept], n_doms)          # each kept domain among the scored ones
    envs = flat[dom_b]
    owner = np.repeat(np.arange(len(kept)), n_doms)    # each kept domain's hit
    dom_model = kept_model[owner]
    t0, t1 = env.trace_start[envs], env.trace_start[envs + 1]
    bounds = np.concatenate([[0], np.cumsum(t1 - t0)]).astype(np.int64)
    gather = index_ranges(t0, t1 - t0)                # the traces, end to end
    dom_seq = kept_seqs[owner]
    k, ti = env.k[gather].astype(np.int64), env.ti[gather].astype(np.int64)
    grid, first, last, presence = alidisplay_lines(models, dom_model, env.st[gather], k, ti, env.pp[gather],
                                                   bounds, offsets[dom_seq], residues)
    iali, jali = ti[first], ti[last]

    # the texts: each hit's name, accession and description, end to end
    name_len, acc_len, desc_len = (np.array([len(t[f]) for t in texts], dtype=np.int64) for f in range(3))
    name_at = np.concatenate([[0], np.cumsum(name_len + acc_len + desc_len)[:-1]]).astype(np.int64)
    acc_at, desc_at = name_at + name_len, name_at + name_len + acc_len
    # each model's name, accession and description (zero bytes included), end to end
    model_len = np.array([len(t) for t in models.text], dtype=np.int64)
    model_text_at = np.concatenate([[0], np.cumsum(model_len)[:-1]]).astype(np.int64)

    # the heads, as p7_hit_Serialize, p7_domain_Serialize and p7_alidisplay_Serialize write them
    has_acc, has_desc = acc_len > 0, desc_len > 0
    hits = np.zeros(len(kept), HIT_RECORD)
    hits["size"] = HIT_RECORD.itemsize + name_len + 1 + has_acc * (acc_len + 1) + has_desc * (desc_len + 1)
    lnP = sc.lnP[kept].astype(np.float64)
    hits["sortkey"] = -lnP if by_E else sc.score[kept].astype(np.float64)
    for field in ("score", "pre_score", "sum_score"):
        hits[field] = getattr(sc, field)[kept]
    hits["lnP"], hits["pre_lnP"], hits["sum_lnP"] = lnP, sc.pre_lnP[kept], sc.sum_lnP[kept]
    for field in ("nexpected", "nregions", "nclustered", "noverlaps", "nenvelopes"):
        hits[field] = getattr(pairs, field)[kept_pairs]
    hits["ndom"] = n_doms
    hits["best_domain"] = sc.best_domain[kept]
    hits["presence"] = has_acc * HIT_HAS_ACC | has_desc * HIT_HAS_DESC
    domains = np.zeros(len(envs), DOMAIN_RECORD)      # (flags unset: p7_tophits_Threshold sets them)
    domains["size"] = DOMAIN_RECORD.itemsize
    domains["ienv"], domains["jenv"], domains["iali"], domains["jali"] = env.i[envs], env.j[envs], iali, jali
    domains["envsc"], domains["domcorrection"], domains["oasc"] = env.envsc[envs], env.domcorrection[envs], \
        env.oasc[envs]
    domains["dombias"], domains["bitscore"], domains["lnP"] = sc.dom_bias[dom_b], sc.dom_bitscore[dom_b], \
        sc.dom_lnP[dom_b]
    n_lines, n = len(grid), last - first + 1
    displays = np.zeros(len(envs), ALIDISPLAY_RECORD)
    displays["size"] = (ALIDISPLAY_RECORD.itemsize + n_lines * (n + 1) + model_len[dom_model]
                        + (name_len + acc_len + desc_len + 3)[owner])
    displays["N"], displays["hmmfrom"], displays["hmmto"], displays["M"] = n, k[first], k[last], models.M[dom_model]
    displays["sqfrom"], displays["sqto"], displays["L"], displays["presence"] = iali, jali, lengths[dom_seq], presence

    # one buffer holding every piece, and each record's pieces (start, size) in order
    parts = [b"\0", b"".join(models.text), b"".join(b"".join(t) for t in texts), grid.tobytes(), hits.tobytes(),
             domains.tobytes(), displays.tobytes()]
    zero_at, model_at, text_at, lines_at, hits_at, domains_at, displays_at = \
        np.concatenate([[0], np.cumsum([len(x) for x in parts])[:-1]])
    source = np.frombuffer(b"".join(parts), dtype=np.uint8)
    width = grid.shape[1]

    def zero(present):                                # a terminating zero byte, where present
        return np.full(len(present), zero_at), present.astype(np.int64)

    # a hit: its head, name, accession and description where not empty
    per_hit = [(hits_at + np.arange(len(kept)) * HIT_RECORD.itemsize, np.full(len(kept), HIT_RECORD.itemsize)),
               (text_at + name_at, name_len), zero(np.ones(len(kept), bool)),
               (text_at + acc_at, acc_len), zero(has_acc), (text_at + desc_at, desc_len), zero(has_desc)]
    # a domain: its head, its display's head, lines, the model's texts, the sequence's texts
    d = np.arange(len(envs))
    per_domain = [(domains_at + d * DOMAIN_RECORD.itemsize, np.full(len(d), DOMAIN_RECORD.itemsize)),
                  (displays_at + d * ALIDISPLAY_RECORD.itemsize, np.full(len(d), ALIDISPLAY_RECORD.itemsize))]
    every = np.ones(len(d), bool)
    for r in range(n_lines):
        per_domain += [(lines_at + r * width + first, n), zero(every)]
    per_domain += [(model_at + model_text_at[dom_model], model_len[dom_model]),
                   (text_at + name_at[owner], name_len[owner]), zero(every),
                   (text_at + acc_at[owner], acc_len[owner]), zero(every),
                   (text_at + desc_at[owner], desc_len[owner]), zero(every)]
    hit_starts, hit_sizes = (np.stack([p[j] for p in per_hit], axis=1) for j in (0, 1))
    dom_starts, dom_sizes = (np.stack([p[j] for p in per_domain], axis=1) for j in (0, 1))
    # pieces in record order: a hit's pieces, then its domains' one domain after another
    n_hit, n_dom = hit_starts.shape[1], dom_starts.shape[1]
    first_piece = np.concatenate([[0], np.cumsum(n_hit + n_dom * n_doms)[:-1]]).astype(np.int64)
    dom_first = first_piece[owner] + n_hit + (d - (np.cumsum(n_doms) - n_doms)[owner]) * n_dom
    starts = np.empty(int(first_piece[-1] + n_hit + n_dom * n_doms[-1]), np.int64)
    sizes = np.empty_like(starts)
    for first_of, count, piece_starts, piece_sizes in ((first_piece, n_hit, hit_starts, hit_sizes),
                                                      (dom_first, n_dom, dom_starts, dom_sizes)):
        where = first_of[:, None] + np.arange(count)
        starts[where], sizes[where] = piece_starts, piece_sizes
    joined = source[index_ranges(starts, sizes)].tobytes()
    ends = np.cumsum(np.add.reduceat(sizes, first_piece)).tolist()
    records = [joined[a:b] for a, b in zip([0] + ends[:-1], ends)]
    sortkeys = hits["sortkey"].astype(np.float64).tolist()
    names = [t[0] for t in texts]
    ialis = iali[np.cumsum(n_doms) - n_doms].tolist()
    # each model's hits, in the order of its pairs (kept is in model order)
    cut = np.concatenate([[0], np.cumsum(np.bincount(kept_model, minlength=n_models))]).tolist()
    return [(records[a:b], sortkeys[a:b], names[a:b], ialis[a:b]) for a, b in zip(cut[:-1], cut[1:])]
