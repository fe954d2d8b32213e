"""HMMER's domain definition as the GPU runs it (``hmmer/gpu/domaindef.py`` with fwdback.cu's
kernels, here on the CPU through tests/helpers/warp_emulator.cpp), and the scores p7_Pipeline
then gives each sequence and domain (``hmmer/scores.hit_scores``), against HMMER itself:
pyhmmer's hmmsearch with every filter open (each sequence goes through domain definition),
its hits' envelopes, envelope scores, null2 corrections, alignments' ends and scores, bit
for bit, for every pair the GPU takes (no region HMMER clusters from stochastic traces).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from conftest import profile_of
from emulated_fwdback import EmulatedKernels

import emulator_build
from gpu_search.hmmer.gpu.domaindef import define_domains
from gpu_search.hmmer.models import read_hmms
from gpu_search.hmmer.scores import hit_scores
from gpu_search.seqdb import amino_degeneracy, open_database

pytestmark = pytest.mark.skipif(emulator_build.CXX is None, reason="no C++ compiler")

T_M, T_D, T_I = 1, 2, 3       # P7_TRACE's state codes
LOG2R = 1.44269504088896341   # eslCONST_LOG2R


def _targets(hmms, proteome, n_proteome: int) -> list[tuple[str, str]]:
    """Proteome sequences of every length up to 400, then per model its consensus, two copies
    with linkers, a mutated copy and one with degenerate codes."""
    rng = np.random.default_rng(31)
    short = np.flatnonzero(proteome.lengths <= 400)
    picked = short[np.linspace(0, len(short) - 1, n_proteome).astype(int)]
    out = [(proteome.name(i), proteome.text(i)) for i in picked]
    letters = np.array(list("ACDEFGHIKLMNPQRSTVWY"))
    for j, hmm in enumerate(hmms):
        cons = hmm.consensus.upper()
        mutated = "".join(rng.choice(letters) if rng.random() < 0.3 else c for c in cons)
        out += [(f"cons{j}", cons), (f"twice{j}", "".join(rng.choice(letters, 25)) + cons + "GSGSGSGSGS" + cons),
                (f"mutated{j}", mutated),
                (f"degenerate{j}", "".join("BJZOUX"[k % 6] if k % 7 == 3 else c for k, c in enumerate(cons)))]
    return out


def test_domain_definition_and_scores_equal_hmmer(data_dir, proteome, tmp_path):
    import pyhmmer
    from pyhmmer.easel import SequenceFile

    hmms = [read_hmms(data_dir / "hmms" / "txt" / f"{name}.hmm")[0] for name in ("Thioesterase", "RREFam")]
    targets = _targets(hmms, proteome, 40)
    fasta = tmp_path / "targets.faa"
    fasta.write_text("".join(f">{n}\n{s}\n" for n, s in targets))
    db = open_database(fasta)
    profs = [profile_of(h) for h in hmms]
    with SequenceFile(str(fasta), digital=True, alphabet=hmms[0].alphabet) as sf:
        block = sf.read_block()
    everything = dict(bias_filter=False, F1=1.0, F2=1.0, F3=1.0, E=1e30, domE=1e30, Z=1.0, domZ=1.0)
    want = {h.name: {hit.name: hit for hit in hits} for h, hits in
            zip(hmms, pyhmmer.hmmsearch(hmms, block, cpus=1, **everything))}
    models = np.repeat(np.arange(len(hmms)), db.n_seqs)
    seqs = np.tile(np.arange(db.n_seqs), len(hmms))
    kernels = EmulatedKernels(tmp_path)
    pairs, env = define_domains(kernels, profs, db.residues, db.offsets, models, seqs, amino_degeneracy(),
                                max_matrix_floats=1 << 20)      # (several batches of envelopes)
    assert "null2_by_expectation" in kernels.launched and kernels.launched.count("oa_trace") > 1
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
    assert checked >= 40 and domains >= 50, (checked, domains)
    assert pairs.simple.mean() > 0.8
