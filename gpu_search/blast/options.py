"""blastp's options, with BLAST+ 2.12's defaults and checks."""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import OptionError


@dataclass
class BlastOptions:
    """What ``gpu-search blastp`` takes (BLAST+ option names in the CLI)."""

    evalue: float = 10.0
    max_target_seqs: int = 500
    max_hsps: int | None = None
    dbsize: int | None = None          # effective database length in residues (-dbsize)
    matrix: str = "BLOSUM62"
    gapopen: int | None = None         # matrix default when None
    gapextend: int | None = None
    word_size: int = 3
    threshold: float | None = None     # 11 for BLOSUM62 (BLAST's matrix-dependent default)
    window_size: int | None = None     # matrix default when None (40 for BLOSUM62)
    comp_based_stats: int = 0
    num_threads: int = 1
    # the threads of the BLAST+ run whose rows are reproduced (its -num_threads, default 1, at
    # most the CPUs, as BLAST+ reduces it): with composition-based statistics BLAST+'s rows
    # depend on it (kappa.redo_selection)
    blast_threads: int = 1

    def __post_init__(self):
        if self.evalue <= 0:
            raise OptionError("-evalue must be > 0")
        if self.max_target_seqs < 1:
            raise OptionError("-max_target_seqs must be >= 1")
        if self.max_hsps is not None and self.max_hsps < 1:
            raise OptionError("-max_hsps must be >= 1")
        if self.dbsize is not None and self.dbsize < 1:
            raise OptionError("-dbsize must be >= 1")
        if self.word_size not in (2, 3, 4):
            raise OptionError("-word_size must be 2, 3 or 4 (BLAST's compressed-alphabet lookup for "
                              "word sizes 5 to 7, as in blastp-fast, is not implemented)")
        if self.window_size is not None and self.window_size < 0:
            raise OptionError("-window_size must be >= 0")
        if self.comp_based_stats not in (0, 1, 2, 3):
            raise OptionError(f"-comp_based_stats {self.comp_based_stats}: expected 0, 1, 2 or 3")
        if self.num_threads < 1 or self.blast_threads < 1:
            raise OptionError("-num_threads must be >= 1")
