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
