"""HMMER's hit records built from the GPU's domain definition, as pyhmmer's ``TopHits`` holds them.

What p7_Pipeline, rescore_isolated_domain and p7_alidisplay_Create store for a sequence with
hits (P7_HIT, its P7_DOMAINs and their P7_ALIDISPLAYs), written as p7_hit_Serialize writes
them (network byte order, C strings), so that pyhmmer's ``TopHits.__setstate__`` takes them
and everything downstream (thresholds, E-values, every output format) is HMMER's own code:

    p7_hit.c       p7_hit_Serialize             ->  encode_hit()
    p7_domain.c    p7_domain_Serialize          ->    _encode_domain()
    p7_alidisplay.c p7_alidisplay_Create/_Serialize ->  alidisplays()
    p7_pipeline.c  p7_pli_TargetReportable      ->  reportable()
    p7_tophits.c   p7_tophits_SortBySortkey     ->  gpu_tophits()

Five fields HMMER never sets in a protein search (a hit's window_length, seqidx and
subseq_start, a domain's iorf and jorf: heap garbage there) are written as 0; nothing
pyhmmer or our reports read depends on them.  The scores come from
:func:`gpu_search.hmmer.scores.hit_scores`.
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass

import numpy as np

# p7_hit_Serialize's base record: size, window_length, sortkey, score, pre_score, sum_score, lnP,
# pre_lnP, sum_lnP, nexpected, nregions, nclustered, noverlaps, nenvelopes, ndom, flags,
# nreported, nincluded, best_domain, seqidx, subseq_start, which of acc and desc follow
HIT_RECORD = struct.Struct(">Iid3f3dfiiiiiIiiiqqB")
# p7_domain_Serialize: size, ienv, jenv, iali, jali, iorf, jorf, envsc, domcorrection, dombias,
# oasc, bitscore, lnP, is_reported, is_included, scores per position (none)
DOMAIN_RECORD = struct.Struct(">I6q5fdiiI")
# p7_alidisplay_Serialize: size, N, hmmfrom, hmmto, M, sqfrom, sqto, L, which lines follow
ALIDISPLAY_RECORD = struct.Struct(">IiiiiqqqB")
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


def alidisplays(model: ModelText, st, k, i, pp, bounds: np.ndarray, seq_at: np.ndarray, residues: np.ndarray,
                L: np.ndarray, seq_texts: list) -> list:
    """p7_alidisplay_Create's displays of optimal accuracy traces, serialized, with each
    one's (iali, jali).  Trace d is st, k, i, pp [bounds[d], bounds[d+1]), in its sequence's
    coordinates (residue i at residues[seq_at[d] + i - 1], the sequence L[d] long, named by
    seq_texts[d]); its display runs from its first M to its last.  Each line is worked out for
    all traces at once (a domain at a time, numpy's calls cost more than the lines)."""
    st, k, i = np.asarray(st), np.asarray(k).astype(np.int64), np.asarray(i).astype(np.int64)
    bounds = np.asarray(bounds, dtype=np.int64)
    m_at = np.flatnonzero(st == T_M)
    first = m_at[np.searchsorted(m_at, bounds[:-1])]
    last = m_at[np.searchsorted(m_at, bounds[1:]) - 1]
    owner = np.repeat(np.arange(len(bounds) - 1), np.diff(bounds))
    m, ins = st == T_M, st == T_I
    node = np.maximum(k - 1, 0)
    x = np.where(i > 0, residues[np.maximum(np.asarray(seq_at, np.int64)[owner] + i - 1, 0)], 0).astype(np.int64)
    cons = model.consensus[node]
    model_line = np.where(ins, DOT, cons)
    positive = np.where(x == model.consensus_code[node], cons, np.where(model.odds[x, node] > 1.0, PLUS, SPACE))
    mline = np.where(m, positive, SPACE)
    aseq = np.where(m, SYMBOLS[x], np.where(ins, LOWER[x], DASH))
    post = np.asarray(pp, np.float32).astype(np.float64) + 0.05      # p7_alidisplay_EncodePostProb, in double
    pline = np.where(post >= 1.0, STAR, (post * 10.0).astype(np.int64) + ord("0"))
    pline = np.where(m | ins, pline, DOT)
    lines, presence = [], AD_PP | AD_ASEQ
    for flag, annotation in ((AD_RF, model.rf), (AD_CS, model.cs)):
        if annotation is not None:
            lines.append(np.where(ins, DOT, annotation[node]))
            presence |= flag
    grid = np.stack([a.astype(np.uint8) for a in lines + [model_line, mline, aseq, pline]])
    model_text = b"".join(s + b"\0" for s in (model.name, model.acc, model.desc))
    line_bytes = [row.tobytes() for row in grid]     # (a display's lines: slices of these)
    out = []
    for d, (f, t) in enumerate(zip(first.tolist(), last.tolist())):
        n = t - f + 1
        body = b"".join([line[f:t + 1] + b"\0" for line in line_bytes] + [model_text] +
                        [s + b"\0" for s in seq_texts[d]])
        head = ALIDISPLAY_RECORD.pack(ALIDISPLAY_RECORD.size + len(body), n, int(k[f]), int(k[t]), model.M,
                                      int(i[f]), int(i[t]), int(L[d]), presence)
        out.append((head + body, int(i[f]), int(i[t])))
    return out


def encode_domain(ienv: int, jenv: int, iali: int, jali: int, envsc, domcorrection, dombias, oasc, bitscore,
                  lnP: float, display: bytes) -> bytes:
    """A P7_DOMAIN as p7_domain_Serialize writes it, its display after it (flags unset:
    p7_tophits_Threshold sets them)."""
    return DOMAIN_RECORD.pack(DOMAIN_RECORD.size, ienv, jenv, iali, jali, 0, 0, envsc, domcorrection, dombias, oasc,
                              bitscore, lnP, 0, 0, 0) + display


def encode_hit(seq_text: tuple, sortkey: float, score, pre_score, sum_score, lnP: float, pre_lnP: float,
               sum_lnP: float, nexpected, nregions: int, nclustered: int, noverlaps: int, nenvelopes: int,
               best_domain: int, domains: list) -> bytes:
    """A P7_HIT as p7_hit_Serialize writes it: of a sequence (name, acc, desc; acc and desc
    stored only where not empty), its domain definition's counts, its domains' records after it."""
    name, acc, desc = seq_text
    tail, presence = name + b"\0", 0
    if acc:
        tail, presence = tail + acc + b"\0", presence | HIT_HAS_ACC
    if desc:
        tail, presence = tail + desc + b"\0", presence | HIT_HAS_DESC
    head = HIT_RECORD.pack(HIT_RECORD.size + len(tail), 0, sortkey, score, pre_score, sum_score, lnP, pre_lnP,
                           sum_lnP, nexpected, nregions, nclustered, noverlaps, nenvelopes, len(domains), 0, 0, 0,
                           best_domain, 0, 0, presence)
    return head + tail + b"".join(domains)


def reportable(pipeline: dict, score: float, lnP: float) -> bool:
    """p7_pli_TargetReportable: whether p7_Pipeline keeps the hit at all (Z as the search fixed it)."""
    if pipeline["by_E"]:
        return math.exp(lnP) * float(pipeline["Z"]) <= float(pipeline["E"])
    return float(score) >= float(pipeline["T"])


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
                    env.domcorrection[flat], env.i[flat], env.j[flat], prof.evparam[4], prof.evparam[5])
    return start, flat, sc


def model_records(model: ModelText, prof, pairs, env, sel: np.ndarray, residues: np.ndarray, offsets: np.ndarray,
                  lengths: np.ndarray, seq_text, pipeline: dict):
    """The hit records of one model's pairs ``sel`` (simple pairs of
    :func:`gpu_search.hmmer.gpu.domaindef.define_domains`, whose sequences are residues /
    offsets / lengths; seq_text(s): a sequence's (name, acc, desc) bytes), those p7_Pipeline
    keeps (a domain at least, reportable): (records, sortkeys, names, first domains' starts)."""
    from .gpu.domaindef import index_ranges

    sel = np.asarray(sel, dtype=np.int64)
    start, flat, sc = scored_domains(prof, pairs, env, sel, lengths)
    by_E = bool(pipeline["inc_by_E"])
    # the pairs kept: a domain at least (a region, an envelope decoded), reportable
    kept = np.array([q for q in np.flatnonzero(start[:-1] < start[1:]).tolist()
                     if reportable(pipeline, sc.score[q], float(sc.lnP[q]))], dtype=np.int64)
    kept_seqs = pairs.seq[sel[kept]]
    texts = [seq_text(j) for j in kept_seqs.tolist()]
    n_doms = start[kept + 1] - start[kept]
    envs = flat[index_ranges(start[kept], n_doms)]
    t0, t1 = env.trace_start[envs], env.trace_start[envs + 1]
    bounds = np.concatenate([[0], np.cumsum(t1 - t0)]).astype(np.int64)
    gather = index_ranges(t0, t1 - t0)                # the traces, end to end
    dom_seq = np.repeat(kept_seqs, n_doms)
    displays = alidisplays(model, env.st[gather], env.k[gather], env.ti[gather], env.pp[gather], bounds,
                           offsets[dom_seq], residues, lengths[dom_seq],
                           [t for t, n in zip(texts, n_doms.tolist()) for _ in range(n)])
    records, sortkeys, names, ialis = [], [], [], []
    d = 0
    for q, text in zip(kept.tolist(), texts):
        p = int(sel[q])
        lnP = float(sc.lnP[q])
        domains = []
        for b in range(start[q], start[q + 1]):
            e = int(flat[b])
            display, iali, jali = displays[d]
            d += 1
            domains.append(encode_domain(int(env.i[e]), int(env.j[e]), iali, jali, env.envsc[e],
                                         env.domcorrection[e], sc.dom_bias[b], env.oasc[e], sc.dom_bitscore[b],
                                         float(sc.dom_lnP[b]), display))
        sortkey = -lnP if by_E else float(sc.score[q])
        records.append(encode_hit(text, sortkey, sc.score[q], sc.pre_score[q], sc.sum_score[q], lnP,
                                  float(sc.pre_lnP[q]), float(sc.sum_lnP[q]), pairs.nexpected[p],
                                  int(pairs.nregions[p]), int(pairs.nclustered[p]), int(pairs.noverlaps[p]),
                                  int(pairs.nenvelopes[p]), int(sc.best_domain[q]), domains))
        sortkeys.append(sortkey)
        names.append(text[0])
        ialis.append(displays[d - len(domains)][1])
    return records, sortkeys, names, ialis
