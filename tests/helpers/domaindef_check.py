"""Checks of HMMER's domain definition as the GPU runs it (``hmmer/gpu/domaindef.py``) and of
the scores p7_Pipeline gives its results (``hmmer/scores.hit_scores``), against pyhmmer's
hits of the same pairs: shared by the emulated and the GPU tests."""

from __future__ import annotations

import math

import numpy as np

from gpu_search.hmmer.hitrecords import scored_domains

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
        dom_start, flat, got = scored_domains(prof, pairs, env, sel, db.lengths)
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


def _name(record) -> bytes:
    record = bytes(record)
    return record[109:record.index(b"\0", 109)]


def masked(record: bytes) -> bytes:
    """A serialized hit with the fields HMMER leaves unset in a protein search zeroed (the hit's
    window_length, seqidx, subseq_start; each domain's iorf, jorf)."""
    import struct

    b = bytearray(record)
    b[4:8] = bytes(4)
    b[92:108] = bytes(16)
    at = struct.unpack_from(">I", b, 0)[0]
    for _ in range(struct.unpack_from(">i", b, 72)[0]):          # ndom
        b[at + 36:at + 52] = bytes(16)
        at += struct.unpack_from(">I", b, at)[0]                    # the domain record
        at += struct.unpack_from(">I", b, at)[0]                    # its alignment display
    assert at == len(b)
    return bytes(b)


def check_records(pairs, env, db, hmms, profs, want_hits: dict, options: dict) -> int:
    """Each model's hit records built from the GPU's results (hitrecords.model_records, then a
    TopHits as gpu_tophits makes it) byte for byte pyhmmer's records of the same sequences
    (unset fields masked), after pyhmmer's thresholds; want_hits[model name]: pyhmmer's
    TopHits of the search with ``options``.  The records of every model built at once
    (hitrecords.models_records, as a finishing call builds them; the models listed twice, in
    two orders) are each model's built alone.  Returns the records compared."""
    from pyhmmer.easel import DigitalSequenceBlock
    from pyhmmer.plan7 import Background, Pipeline

    from gpu_search.hmmer.hitrecords import ModelText, gpu_tophits, model_records, models_records
    from gpu_search.hmmer.search import SEQUENCE_COUNTERS

    compared = 0
    alone = []
    for m, (hmm, prof) in enumerate(zip(hmms, profs)):
        empty = Pipeline(hmm.alphabet, background=Background(hmm.alphabet), **options).search_hmm(
            hmm, DigitalSequenceBlock(hmm.alphabet))
        pipeline = empty.__getstate__()["pipeline"]
        pipeline.update(dict.fromkeys(SEQUENCE_COUNTERS, 0))
        sel = np.flatnonzero((pairs.model == m) & pairs.simple)
        records, keys, names, ialis = model_records(ModelText.from_profile(prof), prof, pairs, env, sel,
                                                    db.residues, db.offsets, db.lengths, db.easel_text, pipeline)
        alone.append((records, keys, names, ialis))
        ours = gpu_tophits(hmm, pipeline, records, keys, names, ialis)
        state = ours.__getstate__()
        theirs = {_name(r): bytes(r) for r in want_hits[hmm.name].__getstate__()["unsrt"]}
        assert len(state["unsrt"]) == len(records)
        for r in state["unsrt"]:
            r = bytes(r)
            assert masked(r) == masked(theirs[_name(r)]), f"{hmm.name} x {_name(r)}: records differ"
            compared += 1
    # (the thresholds are every model's: the last model's pipeline serves all)
    order = list(range(len(hmms))) + list(reversed(range(len(hmms))))
    texts = [ModelText.from_profile(profs[m]) for m in order]
    sels = [np.flatnonzero((pairs.model == m) & pairs.simple) for m in order]
    together = models_records(texts, [profs[m] for m in order], pairs, env, sels, db.residues, db.offsets,
                              db.lengths, db.easel_text, pipeline)
    assert together == [alone[m] for m in order]
    # and with part of each model's pairs, one model with none, thresholds that drop hits
    rng = np.random.default_rng(7)
    sels = [np.sort(rng.permutation(x)[:len(x) // 2]) for x in sels]
    sels[len(sels) // 2] = sels[len(sels) // 2][:0]
    kept = []
    for strict in ({}, dict(E=1e-4), dict(by_E=False, T=30.0), dict(E=1e-4, inc_by_E=False)):
        thresholds = dict(pipeline, **strict)
        together = models_records(texts, [profs[m] for m in order], pairs, env, sels, db.residues, db.offsets,
                                  db.lengths, db.easel_text, thresholds)
        each = [model_records(x, profs[m], pairs, env, sel, db.residues, db.offsets, db.lengths, db.easel_text,
                              thresholds) for x, m, sel in zip(texts, order, sels)]
        assert together == each
        kept.append(sum(len(r[0]) for r in each))
    assert all(0 < k < kept[0] for k in kept[1:]), kept        # (the thresholds dropped some hits, not all)
    return compared
