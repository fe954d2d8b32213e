"""Deterministic edge-case protein sequences for the filter tests."""

from __future__ import annotations

import numpy as np

CANONICAL = "ACDEFGHIKLMNPQRSTVWY"


def edge_fasta(path, hmm_consensus: str, long_length: int = 20_000, seed: int = 1) -> None:
    """Write a FASTA of sequences that stress the filters' corner cases.

    Length 1 (every letter), runs of X, degenerate and unusual letters, '*',
    a sequence made of the model's consensus repeated (to overflow the
    8-bit MSV and 16-bit Viterbi ranges), a long random sequence.
    """
    rng = np.random.default_rng(seed)
    recs = []
    for c in CANONICAL + "BJZOUX":
        recs.append((f"len1_{c}", c))
    recs.append(("len2", "WW"))
    recs.append(("xrun_1000", "X" * 1000))
    recs.append(("xrun_mixed", "X" * 200 + hmm_consensus[:50] + "X" * 300))
    recs.append(("degenerate", "BJZOUX" * 40))
    recs.append(("stops", ("ACDE*" * 30) + "~" * 5))
    cons = hmm_consensus.upper().replace("-", "")
    recs.append(("consensus_x1", cons))
    recs.append(("consensus_x3", cons * 3))
    recs.append(("consensus_x12", cons * 12))
    recs.append(("random_long", "".join(rng.choice(list(CANONICAL), size=long_length))))
    recs.append(("random_short", "".join(rng.choice(list(CANONICAL), size=37))))
    with open(path, "w") as fh:
        for name, seq in recs:
            fh.write(f">{name} edge case\n")
            for i in range(0, len(seq), 60):
                fh.write(seq[i:i + 60] + "\n")


def short_overflow_fasta(path, hmm_consensus: str) -> None:
    """A database of short sequences only (so viterbi_filter16's floor sits high and the
    ceiling must hold at 32766): fragments of the model's consensus, some of which overflow
    HMMER's Viterbi filter, one 100-residue sequence, and sequences of '*' or '~' only, whose
    every row scores below the floor."""
    cons = hmm_consensus.upper().replace("-", "")
    seqs = [cons[a:a + n] for n in range(14, 60, 2) for a in range(0, len(cons) + 1 - n, 3)]
    seqs += ["A" * 100, "*", "~~~", "*" * 5]
    with open(path, "w") as fh:
        fh.write("".join(f">s{i}\n{seq}\n" for i, seq in enumerate(seqs)))


def long_deletion_model(M: int = 243, start: int = 40, stop: int = 200, seed: int = 5):
    """A random protein HMM whose best paths delete nodes start..stop-1 (M->D at node start-1,
    D->D along the way), and sequences that match the model on both sides of the deletion.

    The Viterbi filter's Lazy-F pass must carry these D->D chains across many lanes of a group
    (its max-plus scan): random models and real sequences seldom need more than a lane's worth.
    Returns (hmm, [(name, sequence), ...]).
    """
    from pyhmmer.easel import Alphabet, Randomness
    from pyhmmer.plan7 import HMM

    hmm = HMM.sample(Alphabet.amino(), M, Randomness(seed))
    hmm.name = f"deletion{start}_{stop}"
    t = np.asarray(hmm.transition_probabilities)          # MM MI MD IM II DM DD, a view
    t[start - 1, 0:3] = (0.05, 0.05, 0.90)
    t[start:stop, 5:7] = (0.02, 0.98)
    cons = hmm.consensus.upper()
    rng = np.random.default_rng(seed)
    seqs = []
    for k, (a, b) in enumerate([(0, M), (10, M - 10), (start - 30, stop + 30), (start - 15, stop + 60)]):
        left, right = cons[a:start - 1], cons[stop:b]
        seqs.append((f"del{k}", left + right))
        noisy = list(left + "".join(rng.choice(list(CANONICAL), size=k)) + right)
        for j in rng.choice(len(noisy), size=len(noisy) // 10, replace=False):
            noisy[j] = CANONICAL[rng.integers(20)]
        seqs.append((f"del{k}_noisy", "".join(noisy)))
    seqs.append(("full_consensus", cons))
    return hmm, seqs
