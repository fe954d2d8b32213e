"""Checks of HMMER's domain definition as the GPU runs it (``hmmer/gpu/domaindef.py``) and of
the scores p7_Pipeline gives its results (``hmmer/scores.hit_scores``), against pyhmmer's
hits of the same pairs: shared by the emulated and the GPU tests."""

from __future__ import annotations

import math

import numpy as np

from gpu_search.hmmer.scores import hit_scores

T_M, T_D, T_I = 1, 2, 3       # P7_TRACE's state codes
LOG2R = 1.44269504088896341   # eslCONST_LOG2R

# pyhmmer's hmmsearch with every filter open: each sequence goes through domain definition
EVERY_SEQUENCE = dict(bias_filter=False, F1=1.0, F2=1.0, F3=1.0, E=1e30, domE=1e30, Z=1.0, domZ=1.0)


def check_against_hmmer(pairs, env, db, hmms, profs, want: dict) -> tuple[int, int]:
    """Every simple pair's domains (envelopes, envsc, null2 correction, bias, score, P-value,
    the alignment's ends) and its sequence's scores equal to HMMER's hit, and no hit where the
    GPU found no domain; want[model name][sequence name] is pyhmmer's Hit.  Returns (hits,
    domains) compared."""
    checked = domains = 0
    for m, (hmm, prof) in enumerate(zip(hmms, profs)):
        sel = np.flatnonzero((pairs.model == m) & pairs.simple)
        envs = [np.arange(pairs.env_start[p], pairs.env_start[p + 1]) for p in sel]
        doms = [e[env.decoded[e]] for e in envs]
        dom_start = np.concatenate([[0], np.cumsum([len(d) for d in doms])]).astype(np.int64)
        flat = np.concatenate(doms) if doms else np.zeros(0, np.int64)
        got = hit_scores(pairs.fwd[sel], db.lengths[pairs.seq[sel]], pairs.null2_sum[sel], dom_start,
                         env.envsc[flat], env.domcorrection[flat], env.i[flat], env.j[flat],
                         prof.evparam[4], prof.evparam[5])
        for q, p in enumerate(sel):
            name = db.name(int(pairs.seq[p]))
            hit = want[hmm.name].get(name)
            ds = flat[dom_start[q]:dom_start[q + 1]]
            what = f"{hmm.name} x {name}"
            if pairs.nregions[p] == 0 or len(ds) == 0:
                assert hit is None, f"{what}: HMMER has a hit, the GPU no domain"
                continue
            assert hit is not None, f"{what}: the GPU has domains, HMMER no hit"
            hd = list(hit.domains)
            assert [(d.env_from, d.env_to) for d in hd] == [(int(env.i[e]), int(env.j[e])) for e in ds], what
            for h, e, b in zip(hd, ds, range(dom_start[q], dom_start[q + 1])):
                # (pyhmmer gives the nats times eslCONST_LOG2R, in double)
                assert h.envelope_score == float(env.envsc[e]) * LOG2R, f"{what}: envsc"
                assert h.correction == float(env.domcorrection[e]) * LOG2R, f"{what}: domcorrection"
                assert h.bias == float(got.dom_bias[b]) * LOG2R, f"{what}: dombias"
                assert np.float32(h.score) == got.dom_bitscore[b], f"{what}: domain score"
                assert h.pvalue == math.exp(got.dom_lnP[b]), f"{what}: domain P-value"
                t = slice(env.trace_start[e], env.trace_start[e + 1])
                st, k, i = env.st[t], env.k[t], env.ti[t]
                emit, node = (st == T_M) | (st == T_I), (st == T_M) | (st == T_D)
                ali = h.alignment
                assert (ali.target_from, ali.target_to) == (int(i[emit][0]), int(i[emit][-1])), f"{what}: ali"
                assert (ali.hmm_from, ali.hmm_to) == (int(k[node][0]), int(k[node][-1])), f"{what}: hmm"
                domains += 1
            assert np.float32(hit.score) == got.score[q], f"{what}: score {hit.score} against {got.score[q]}"
            assert np.float32(hit.pre_score) == got.pre_score[q], f"{what}: pre_score"
            assert np.float32(hit.sum_score) == got.sum_score[q], f"{what}: sum_score"
            assert hit.pvalue == math.exp(got.lnP[q]), f"{what}: P-value"
            assert hit.best_domain is hd[int(got.best_domain[q])] or \
                hit.best_domain.env_from == hd[int(got.best_domain[q])].env_from, f"{what}: best domain"
            checked += 1
    return checked, domains
