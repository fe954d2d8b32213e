"""HMMER's domain definition as the GPU runs it (``hmmer/gpu/domaindef.py`` with fwdback.cu's
kernels, here on the CPU through tests/helpers/warp_emulator.cpp), and the scores p7_Pipeline
then gives each sequence and domain (``hmmer/scores.hit_scores``), against HMMER itself:
pyhmmer's hmmsearch with every filter open (each sequence goes through domain definition),
its hits' envelopes, envelope scores, null2 corrections, alignments' ends and scores, bit
for bit, for every pair the GPU takes (regions HMMER clusters from stochastic traces included).
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import profile_of
from domaindef_check import EVERY_SEQUENCE, check_against_hmmer, check_records
from emulated_fwdback import EmulatedKernels

import emulator_build
from gpu_search.hmmer.gpu.domaindef import define_domains
from gpu_search.hmmer.models import read_hmms
from gpu_search.seqdb import amino_degeneracy, open_database

pytestmark = pytest.mark.skipif(emulator_build.CXX is None, reason="no C++ compiler")



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


def _define_and_check(hmms, targets, tmp_path, max_matrix_floats: int):
    """Every model against every target: pyhmmer's hmmsearch with every filter open, and the
    GPU's domain definition on the kernels' emulator (its batches of matrices within
    max_matrix_floats); every pair the GPU takes checked against pyhmmer's hit, the records
    HMMER keeps (alignment displays included) byte for byte.  (pairs, kernels, checked,
    domains)."""
    import pyhmmer
    from pyhmmer.easel import SequenceFile

    fasta = tmp_path / "targets.faa"
    fasta.write_text("".join(f">{n}\n{s}\n" for n, s in targets))
    db = open_database(fasta)
    profs = [profile_of(h) for h in hmms]
    with SequenceFile(str(fasta), digital=True, alphabet=hmms[0].alphabet) as sf:
        block = sf.read_block()
    searched = dict(zip([h.name for h in hmms], pyhmmer.hmmsearch(hmms, block, cpus=1, **EVERY_SEQUENCE)))
    want = {name: {hit.name: hit for hit in hits} for name, hits in searched.items()}
    models = np.repeat(np.arange(len(hmms)), db.n_seqs)
    seqs = np.tile(np.arange(db.n_seqs), len(hmms))
    kernels = EmulatedKernels(tmp_path)
    pairs, env = define_domains(kernels, profs, db.residues, db.offsets, models, seqs, amino_degeneracy(),
                                max_matrix_floats=max_matrix_floats)
    checked, domains = check_against_hmmer(pairs, env, db, hmms, profs, want)
    assert check_records(pairs, env, db, hmms, profs, searched, EVERY_SEQUENCE) == checked
    return pairs, kernels, checked, domains


def test_domain_definition_and_scores_equal_hmmer(data_dir, proteome, tmp_path):
    hmms = [read_hmms(data_dir / "hmms" / "txt" / f"{name}.hmm")[0] for name in ("Thioesterase", "RREFam")]
    pairs, kernels, checked, domains = _define_and_check(hmms, _targets(hmms, proteome, 40), tmp_path,
                                                         1 << 20)     # (several batches of envelopes)
    assert "null2_by_expectation" in kernels.launched and kernels.launched.count("oa_trace") > 1
    assert checked >= 40 and domains >= 50, (checked, domains)
    assert pairs.simple.mean() > 0.8
    # regions HMMER resolves by stochastic traces among them (the two copies of each consensus),
    # some split into several envelopes, some of those overlapping
    clustered = pairs.simple & (pairs.nclustered > 0)
    assert clustered.sum() >= 10 and (pairs.nenvelopes[clustered] > pairs.nregions[clustered]).any() and \
        pairs.noverlaps[clustered].any(), (clustered.sum(), pairs.nenvelopes[clustered], pairs.noverlaps[clustered])


def test_regions_resolved_by_stochastic_traces_equal_hmmer(data_dir, tmp_path):
    """Repeats of each model's consensus, as HMMER's domain definition meets them in real
    proteins: tandem copies with linkers of 0 to 30 residues, mutated copies, a truncated copy
    before a whole one, a copy inside another's flanks.  Nearly every pair has a region HMMER
    resolves by 200 stochastic traces and clustering; each pair's envelopes, scores, counts and
    the records HMMER keeps equal pyhmmer's, bit for bit."""
    hmms = [read_hmms(data_dir / "hmms" / "txt" / f"{name}.hmm")[0]
            for name in ("Thioesterase", "RREFam", "KR", "LuxC", "PF02826")]
    rng = np.random.default_rng(7)
    letters = np.array(list("ACDEFGHIKLMNPQRSTVWY"))

    def mutate(text: str, rate: float) -> str:
        return "".join(rng.choice(letters) if rng.random() < rate else c for c in text)

    def filler(n: int) -> str:
        return "".join(rng.choice(letters, n))

    targets = []
    for j, hmm in enumerate(hmms):
        cons = hmm.consensus.upper()
        half = cons[:len(cons) // 2]
        for gap in (0, 2, 5, 10, 30):
            targets.append((f"tandem{j}_{gap}", filler(12) + cons + filler(gap) + mutate(cons, 0.1) + filler(12)))
        targets += [(f"three{j}", cons + "GSGSG" + mutate(cons, 0.15) + "GSGSG" + mutate(cons, 0.3)),
                    (f"mutated{j}", filler(20) + mutate(cons, 0.25) + filler(8) + mutate(cons, 0.25)),
                    (f"truncated{j}", half + filler(5) + cons),
                    (f"nested{j}", cons[:30] + mutate(cons, 0.2) + cons[-30:] + filler(15) + cons)]
    pairs, _, checked, domains = _define_and_check(hmms, targets, tmp_path, 1 << 21)   # (several batches of regions)
    clustered = pairs.simple & (pairs.nclustered > 0)
    assert pairs.simple.all() and clustered.sum() >= 30 and (pairs.nenvelopes > pairs.nregions).sum() >= 15, \
        (pairs.simple.sum(), clustered.sum(), (pairs.nenvelopes > pairs.nregions).sum())
    assert checked >= 40 and domains >= 100, (checked, domains)


def test_records_of_models_with_and_without_annotation_lines_equal_hmmer(data_dir, proteome, tmp_path):
    """Models whose alignment displays carry a reference line, a structure line, both or none,
    in one domain definition: each model's records pyhmmer's, and the records of all built at
    once (as a finishing call builds them, the models taken together by their lines) each
    model's built alone (check_records)."""
    hmms = [read_hmms(data_dir / "hmms" / "txt" / f"{name}.hmm")[0] for name in ("Thioesterase", "RREFam", "KR",
                                                                                   "PF02826")]
    rng = np.random.default_rng(1)
    for j in (0, 2, 3):
        hmms[j].reference = "".join(rng.choice(list("xX.abc"), hmms[j].M))
    hmms[2].consensus_structure = "".join(rng.choice(list("HE-<>"), hmms[2].M))
    assert [(h.reference is not None, h.consensus_structure is not None) for h in hmms] == \
        [(True, False), (False, False), (True, True), (True, True)]
    _, _, checked, domains = _define_and_check(hmms, _targets(hmms, proteome, 20), tmp_path, 1 << 20)
    assert checked >= 20 and domains >= 30, (checked, domains)


def test_gpu_finishing_merged_with_the_cpus_equals_hmmer(data_dir, proteome, tmp_path):
    """GpuFinishing (the GPU's part of HMMER's finishing, here on the kernels' CPU emulator)
    merged with pyhmmer's finishing of the sequences it leaves, as the search merges them:
    every hit record, flag and count equal to pyhmmer's search of all the sequences, with
    HMMER's default thresholds (few reported: most of the hits unreported), with E large, and
    with a Forward threshold the filter cascade left untested (the GPU's finishing tests it:
    a pair failing it is dropped, as HMMER drops it)."""
    from conftest import records
    from pyhmmer.easel import DigitalSequenceBlock
    from pyhmmer.plan7 import Background, Pipeline

    from gpu_search.hmmer.cascade import run_cascade_batch
    from gpu_search.hmmer.gpufinish import GpuFinishing
    from gpu_search.hmmer.reference import ReferenceBackend
    from gpu_search.hmmer.search import SEQUENCE_COUNTERS, SearchResult

    # (PF02826: its alignment displays carry a structure annotation line)
    hmms = [read_hmms(data_dir / "hmms" / "txt" / f"{name}.hmm")[0] for name in ("Thioesterase", "RREFam", "PF02826")]
    fasta = tmp_path / "targets.faa"
    fasta.write_text("".join(f">{n} some description\n{s}\n" for n, s in _targets(hmms, proteome, 30)))
    db = open_database(fasta)
    profs = [profile_of(h) for h in hmms]
    block = db.digital_block(None, hmms[0].alphabet)
    bg = Background(hmms[0].alphabet)
    failed = 0
    for options, least in ((dict(F1=1.0, F2=1.0, F3=1.0, Z=1000.0), 8),
                           (dict(F1=1.0, F2=1.0, F3=1.0, Z=1000.0, E=1e9), 50),
                           (dict(F1=1.0, F2=1.0, F3=1e-3, Z=1000.0, E=1e9), 10)):
        cpu = Pipeline(hmms[0].alphabet, background=bg, **options)
        template = cpu.search_hmm(hmms[0], DigitalSequenceBlock(hmms[0].alphabet)).__getstate__()["pipeline"]
        template.update(dict.fromkeys(SEQUENCE_COUNTERS, 0))
        finishing = GpuFinishing(db, None, template, kernels=EmulatedKernels(tmp_path))   # (F3: the template's)
        finishing.MAX_GPU_CELLS = 40_000             # (the longer pairs left to pyhmmer, to be merged)
        # the filters, every sequence through them (a backend with no Forward stage: every
        # survivor's Forward test left, with its bias filter score, to the finishing)
        cascades = run_cascade_batch(profs, db, ReferenceBackend(db), F1=1.0, F2=1.0, F3=options["F3"],
                                     bias_filter=True, degeneracy=amino_degeneracy(),
                                     bg_freq=np.asarray(bg.residue_frequencies, dtype=np.float32))
        everything = [c.survivors for c in cascades]
        assert all(len(s) == db.n_seqs for s in everything)
        untested = [None if c.untested is None else (c.untested, c.untested_filt) for c in cascades]
        assert (untested[0] is None) == (options["F3"] >= 1.0)
        got, want = [], []
        for hmm, (make, left) in zip(hmms, finishing.finish(hmms, profs, everything, untested)):
            assert len(left) < db.n_seqs and (make is not None or options["F3"] < 1.0)
            cpu_hits = cpu.search_hmm(hmm, db.digital_block(left, hmm.alphabet))
            cpu.clear()
            got.append(SearchResult(hmm, make().merge(cpu_hits) if make else cpu_hits, None))
            want.append(SearchResult(hmm, cpu.search_hmm(hmm, block), None))
            cpu.clear()
            assert got[-1].hits.__getstate__()["pipeline"]["n_past_fwd"] == \
                want[-1].hits.__getstate__()["pipeline"]["n_past_fwd"]
        assert records(got) == records(want) and sum(len(r) for r in records(want)) >= least
        counts = [{k: r.hits.__getstate__()[k] for k in ("N", "nreported", "nincluded")} for r in got]
        assert counts == [{k: r.hits.__getstate__()[k] for k in ("N", "nreported", "nincluded")} for r in want]
        failed += finishing.pairs_failed
        assert finishing.pairs_on_gpu > (finishing.pairs_left if options["F3"] >= 1.0 else 0) and finishing.pairs_left
    assert failed > 20               # (pairs dropped by the Forward test on the GPU's side)
