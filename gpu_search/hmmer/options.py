"""hmmsearch's and phmmer's reporting, inclusion, filter and search-space options.

One object carries what the user set on the command line, with HMMER 3.4's
defaults, and turns it into pyhmmer ``Pipeline`` keyword arguments; phmmer's
(:class:`PhmmerOptions`) adds the scoring system its query models are built with,
jackhmmer's (:class:`JackhmmerOptions`) its number of rounds and stricter inclusion.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from ..errors import OptionError

CUTOFF_FLAGS = {"gathering": "--cut_ga", "noise": "--cut_nc", "trusted": "--cut_tc"}


@dataclass
class SearchOptions:
    """HMMER's hmmsearch options (defaults as in p7_pipeline_Create)."""

    E: float = 10.0
    T: float | None = None
    domE: float = 10.0
    domT: float | None = None
    incE: float = 0.01
    incT: float | None = None
    incdomE: float = 0.01
    incdomT: float | None = None
    bit_cutoffs: str | None = None      # "gathering", "noise" or "trusted"
    Z: float | None = None
    domZ: float | None = None
    F1: float = 0.02
    F2: float = 1e-3
    F3: float = 1e-5
    max: bool = False
    nobias: bool = False
    nonull2: bool = False               # no null2 (biased composition) score corrections
    seed: int = 42
    textw: int = 120
    notextw: bool = False
    noali: bool = False
    acc: bool = False
    # which options the user actually gave, in command-line order, for the report header
    given: dict = field(default_factory=dict)

    def __post_init__(self):
        for name in ("E", "domE", "incE", "incdomE"):
            if getattr(self, name) <= 0:
                raise OptionError(f"-{name if name == 'E' else '-' + name} must be > 0")
        for name in ("F1", "F2", "F3"):
            if not 0 < getattr(self, name) <= 1 and not self.max:
                raise OptionError(f"--{name} must be in (0, 1]")
        if self.Z is not None and self.Z <= 0:
            raise OptionError("-Z must be > 0")
        if self.domZ is not None and self.domZ <= 0:
            raise OptionError("--domZ must be > 0")
        if self.bit_cutoffs not in (None, *CUTOFF_FLAGS):
            raise OptionError(f"unknown bit cutoffs {self.bit_cutoffs!r}")
        if self.max:
            # p7_pipeline_Create: --max turns every filter off
            self.F1 = self.F2 = self.F3 = 1.0
            self.nobias = True

    @property
    def bias_filter(self) -> bool:
        return not self.nobias

    def pipeline_kwargs(self, Z: float | None) -> dict:
        """Keyword arguments of ``pyhmmer.plan7.Pipeline`` / ``pyhmmer.hmmsearch``."""
        kw = dict(
            E=self.E, T=self.T, domE=self.domE, domT=self.domT,
            incE=self.incE, incT=self.incT, incdomE=self.incdomE, incdomT=self.incdomT,
            F1=self.F1, F2=self.F2, F3=self.F3,
            bias_filter=self.bias_filter, null2=not self.nonull2, seed=self.seed,
            Z=Z, domZ=self.domZ,
        )
        if self.bit_cutoffs:
            kw["bit_cutoffs"] = self.bit_cutoffs
        return kw


# the score matrices HMMER's p7_builder_LoadScoreSystem knows by name (esl_scorematrix.c's
# built-in protein matrices; --mx takes one of these, spelled as here)
SCORE_MATRICES = ("PAM30", "PAM70", "PAM120", "PAM240", "BLOSUM45", "BLOSUM50", "BLOSUM62", "BLOSUM80", "BLOSUM90")


@dataclass
class PhmmerOptions(SearchOptions):
    """phmmer's options: hmmsearch's, and the scoring system each query's model is built
    with (phmmer.c's defaults and ranges)."""

    popen: float = 0.02                 # gap open probability
    pextend: float = 0.4                # gap extend probability
    mx: str = "BLOSUM62"                # substitution score matrix

    def __post_init__(self):
        super().__post_init__()
        if not 0 <= self.popen < 0.5:
            raise OptionError("--popen must be in [0, 0.5)")
        if not 0 <= self.pextend < 1:
            raise OptionError("--pextend must be in [0, 1)")
        if self.mx not in SCORE_MATRICES:
            raise OptionError(f"--mx {self.mx}: not one of HMMER's matrices ({', '.join(SCORE_MATRICES)})")

    @property
    def builder_seed(self) -> int:
        """The seed of the model builder's random numbers: phmmer.c reseeds its builder only
        for --seed > 0, so --seed 0 (a one-time arbitrary seed for the pipeline) leaves the
        builder's own 42."""
        return self.seed if self.seed > 0 else 42


@dataclass
class JackhmmerOptions(PhmmerOptions):
    """jackhmmer's options: phmmer's (the scoring system builds the first round's model), the
    number of rounds, and jackhmmer.c's inclusion defaults, 0.001 rather than 0.01: what is
    included is what the next round's model is built from."""

    incE: float = 0.001
    incdomE: float = 0.001
    N: int = 5                          # the most rounds (-N)

    # jackhmmer.c's option table's default texts where they differ from hmmsearch's: a given
    # option whose text is its default text is not echoed in the report's header
    DEFAULT_TEXT: ClassVar[dict] = {"incE": "0.001", "incdomE": "0.001", "N": "5"}

    def __post_init__(self):
        super().__post_init__()
        if self.N < 1:
            raise OptionError("-N must be > 0")
