"""SEG (gpu_search.blast.seg) against BLAST+ 2.12's own SEG: segmasker, and blastp's masking.

segmasker runs ``SeqBufferSeg`` (blast_seg.c) through CSegMasker, with SEG's defaults
window 12, locut 2.2, hicut 2.5 (``segmasker -help``; ``SegParametersNewAa``), and prints
each sequence's segments in the order SEG lists them, unmerged (CSegMasker leaves
``overlaps`` off), one "begin - end" line each, 0-based inclusive.

These are not the parameters of blastp's composition-based realignment: blast_kappa.c
masks each database sequence with BLASTP_MASK_INSTRUCTIONS "S 10 1.8 2.1" (window 10,
locut 1.8, hicut 2.1), through ``BlastSetUp_Filter``, which merges overlapping segments.
So segmasker runs here with both sets of parameters (and with an odd window and a long
one), and the merged masking is compared with blastp's masking of its queries with
``-seg "10 1.8 2.1"`` and ``-seg "12 2.2 2.5"``: the same ``BlastSetUp_Filter``, whose
segments blastp's archive format (-outfmt 11) lists under ``masks``.

Inputs: the test proteome, hand-made low-complexity cases (runs, repeats, proteins
shorter than the window, X B Z U J O and * among them), sequences where a trim sends a
left part back to SEG and it finds two segments there (BLAST keeps only the last) or
where a segment found later begins before an earlier one (BLAST merges both whole), and
generated sequences of low-complexity blocks.  All must come out identical.
"""

from __future__ import annotations

import re
import shutil
import struct
import subprocess
from pathlib import Path

import numpy as np
import pytest

from gpu_search.blast import seg
from gpu_search.blast.alphabet import X, encode

REPO = Path(__file__).resolve().parents[2]
SEGMASKER = shutil.which("segmasker")
BLASTP = shutil.which("blastp")

needs_segmasker = pytest.mark.skipif(SEGMASKER is None, reason="segmasker (BLAST+ 2.12, Debian ncbi-blast+) not on PATH")
needs_blastp = pytest.mark.skipif(BLASTP is None, reason="blastp (BLAST+ 2.12) not on PATH")

# (window, locut, hicut): SEG's defaults (segmasker's), blast_kappa.c's, an odd window, a long one.
PARAMETERS = [(12, 2.2, 2.5), (10, 1.8, 2.1), (11, 2.0, 2.4), (25, 3.0, 3.3)]

DIVERSE = "MKTAYIAKQRQISFVKSHFSRQDNPLEGWC"   # no low-complexity window of its own

# A trim cut off the trigger window, and SEG found two segments in the left part: BLAST
# 2.12 keeps only the last one.  Found among generated sequences, for windows 12, 10, 11, 25.
LEFT_PART_TWO_SEGMENTS = [
    "DGWWMVSYQQQQQQQQQQQQQYVYDRDYRDDYPCYLLLLLLLLLLLLLLLLLLLLLLLLLLLCPIYFHKK",
    "TRNCTAGCHAWAAAWAWWAAWWAWWAYRRYRVVVVFFWPPPPPIRMIMIIMMMIMMIIMMMMMIMIMMMLVFECRHM",
    "AEMGYYTTYYYTYTTTTYHHAHEHHAEAFEFFEEFEPEPFEPFFFFFFFFFFFFFFFFFFFFFFFFFFFFSI",
    "CEFDGQQDEWERLPSDDEEDEEAEDKKKKKKKKKKKWIIWIWIIWIIWKGGGGGGGGGGGGGGGGGGGGGGGRRFLFLRLLRLLRRLFF"
    "RFFRLFFLFLLMWPWM",
    "HHLEVTWPHAKFCQAGVGGGYYYVYMLKMMEMEMGMGMEGMRRWWRRWRWTSSSSSSSSSSSSSSSSSSSSSSSSSG",
    "WQCFWWWWWFWWFFFFFKYDIPVMRHVRLILLIILILILLIIKHHHHHHHHHHHHHHWKKWWWWWKWKWWWWWWKKWWKWKKKKQQQGGD"
    "QQQDQDGQGDQHLKVTVN",
]

# A segment found later begins before one found earlier and overlaps it: BLAST 2.12 merges
# the two whole (a merge that kept the first one's begin would leave residues unmasked).
# Found among generated sequences, for windows 12 and 10.
LATER_SEGMENT_BEGINS_FIRST = [
    "BBQQBDVBVVMMVVZBZVZQMQQZMQMZZZZQMMBZZVMVMVBZZZDBMVQQQDBQDQBVQQQBDZBZFARAERCQECTGAGHQSSWELQMMV"
    "QKSSTCWPMMMZMDVBQZBVQQBMMQVQDZDRRRQBDQZDBBZMDQ",
    "LRSAZSSARBZSZARVRBVVAVABZZARRRVVVBZZBZRVRVAAASVSVRRVZSSZAFLFTNVCMWVTWQYEQAFFEERQWVPPLLIPKKCLG"
    "TAPHYYFEWPQNIEBRSSSASBASBARSBARASVBARABSRABZASV",
    "DHHDADXZAAHZHZADHAZXDADXDZCAZCHDZDDDCZHCC",
    "KFKFKFLKKNKFKKNKNNNFNFLKNFFLKNFNKFFKLFNNLRNNQRNTWHYKPGSTFAQTTLQAMCTIQPREDFYGNFLFKLNFFFNKLNFFRF"
    "NFKNNNNKRKRNKRLLRNNKRKKLLLEFWPLFNFFFFRRNNRNLLFLFFKLKKFRFFRNRRLLFLFRKLNFRLKRKRNRLFKRRKFKRKRKK",
]


def _hand_made() -> list[str]:
    cases = []
    for n in (1, 5, 9, 10, 11, 12, 13, 25, 60, 130):           # runs, alone and inside a protein
        cases += ["Q" * n, DIVERSE + "Q" * n + DIVERSE]
    for unit, times in (("PG", 30), ("SR", 25), ("GGS", 20), ("EEKK", 15), ("APAPAPKA", 8), ("QQQH", 12)):
        cases += [unit * times, DIVERSE[:12] + unit * times + DIVERSE[12:]]
    cases += [DIVERSE[:n] for n in range(1, 14)]                 # shorter than the windows, and just longer
    cases += ["A" * n for n in range(1, 14)]
    for letter in "XBZUJO*":                                      # SEG counts none of these
        cases += [letter * 20, "Q" * 8 + letter * 3 + "Q" * 8, DIVERSE + letter * 12 + DIVERSE]
        cases += [("QQQQ" + letter) * 10, ("SG" + letter) * 12, "K" * 30 + letter + "K" * 30]
    for every in range(2, 7):                                     # runs interrupted by X
        cases.append(DIVERSE + "".join("X" if k % every == 0 else "E" for k in range(60)) + DIVERSE)
    rng = np.random.default_rng(12)
    cases.append("".join(rng.choice(list("ST"), 400)))            # far longer than the trim's 50
    cases.append(DIVERSE + "".join(rng.choice(list("PEK"), 300)) + DIVERSE)
    return cases


def _generated(count: int, seed: int) -> list[str]:
    """Blocks of 1 to 3 letters (sometimes X B Z U J O *) with random residues between."""
    rng = np.random.default_rng(seed)
    standard = list("ACDEFGHIKLMNPQRSTVWY")
    odd = list("XBZUJO*")
    cases = []
    for _ in range(count):
        parts = ["".join(rng.choice(standard, int(rng.integers(0, 20))))]
        for _ in range(int(rng.integers(1, 7))):
            letters = rng.choice(standard + odd if rng.random() < 0.3 else standard, int(rng.integers(1, 4)),
                                 replace=False)
            parts.append("".join(rng.choice(letters, int(rng.integers(4, 40)))))
            if rng.random() < 0.5:
                parts.append("".join(rng.choice(standard, int(rng.integers(1, 12)))))
        cases.append("".join(parts))
    return cases


def _proteome() -> list[str]:
    text = (REPO / "test-data" / "proteome.faa").read_text()
    return ["".join(record.split("\n")[1:]) for record in text.split(">")[1:]]


@pytest.fixture(scope="module")
def cases(tmp_path_factory):
    sequences = (_proteome() + _hand_made() + LEFT_PART_TWO_SEGMENTS + LATER_SEGMENT_BEGINS_FIRST
                 + _generated(700, 2026))
    fasta = tmp_path_factory.mktemp("seg") / "cases.faa"
    fasta.write_text("".join(f">case{k}\n{s}\n" for k, s in enumerate(sequences)))
    return sequences, fasta


def _segmasker(fasta: Path, *options: str) -> list[list[tuple[int, int]]]:
    """segmasker -outfmt interval: each sequence's segments, in the order printed."""
    out = subprocess.run([SEGMASKER, "-in", str(fasta), "-outfmt", "interval", *options],
                         capture_output=True, text=True, check=True).stdout
    segments: list[list[tuple[int, int]]] = []
    for line in out.splitlines():
        if line.startswith(">"):
            segments.append([])
        elif line.strip():
            begin, end = line.split(" - ")
            segments[-1].append((int(begin), int(end)))
    return segments


@needs_segmasker
@pytest.mark.parametrize("window,locut,hicut", PARAMETERS)
def test_segments_as_segmasker(cases, window, locut, hicut):
    sequences, fasta = cases
    expected = _segmasker(fasta, "-window", str(window), "-locut", str(locut), "-hicut", str(hicut))
    assert len(expected) == len(sequences)
    differ = [(k, want) for k, (s, want) in enumerate(zip(sequences, expected))
              if seg.seg_intervals(encode(s), window, locut, hicut, merge=False) != want]
    assert not differ, f"{len(differ)} sequences differ from segmasker, first: case{differ[0][0]}"
    assert sum(map(len, expected)) > len(sequences) // 2         # the cases have segments to find


@needs_segmasker
def test_segmasker_defaults_are_SEG_constants(cases):
    sequences, fasta = cases
    expected = _segmasker(fasta)                                  # no parameters: segmasker's defaults
    assert (seg.SEG_WINDOW, seg.SEG_LOCUT, seg.SEG_HICUT) == (12, 2.2, 2.5)
    got = [seg.seg_intervals(encode(s), seg.SEG_WINDOW, seg.SEG_LOCUT, seg.SEG_HICUT, merge=False)
           for s in sequences]
    assert got == expected


def _blastp_query_masks(fasta: Path, sequences: list[str], parameters: str, tmp_path: Path) -> list[np.ndarray]:
    """The residues blastp -seg masks in each query, from the masks of its archive format."""
    subject = tmp_path / "subject.faa"
    subject.write_text(f">subject\n{DIVERSE}\n")
    out = subprocess.run([BLASTP, "-query", str(fasta), "-subject", str(subject), "-seg", parameters,
                          "-outfmt", "11"], capture_output=True, text=True, check=True).stdout
    masked = [np.zeros(len(s), dtype=bool) for s in sequences]
    for begin, end, query in re.findall(r'from (\d+),\s*to (\d+),\s*id local str "Query_(\d+)"',
                                        out[out.index("masks {"):]):
        masked[int(query) - 1][int(begin):int(end) + 1] = True
    return masked


@needs_blastp
@pytest.mark.parametrize("window,locut,hicut", [(10, 1.8, 2.1), (12, 2.2, 2.5)])
def test_mask_as_blastp(cases, tmp_path, window, locut, hicut):
    """seg_mask's X against blastp's own masking, the merged segments blast_kappa.c masks with.

    Each query ends in a diverse peptide: BLAST leaves a query masked whole out of the
    archive's masks, and no query here can be.
    """
    sequences = [s + DIVERSE for s in cases[0][:1000]]
    fasta = tmp_path / "queries.faa"
    fasta.write_text("".join(f">q{k}\n{s}\n" for k, s in enumerate(sequences)))
    expected = _blastp_query_masks(fasta, sequences, f"{window} {locut} {hicut}", tmp_path)
    differ = []
    for k, (s, want) in enumerate(zip(sequences, expected)):
        codes = encode(s)
        if not np.array_equal(seg.seg_mask(codes, window, locut, hicut), np.where(want, X, codes)):
            differ.append(k)
    assert not differ, f"{len(differ)} queries differ from blastp's masking, first: q{differ[0]}"
    assert sum(int(m.sum()) for m in expected) > 10_000


@needs_segmasker
def test_lnfact_is_blasts_table():
    """The ln-factorial table equals the 10,001 doubles of blast_seg.c's lnfact in libblast."""
    ldd = subprocess.run(["ldd", SEGMASKER], capture_output=True, text=True).stdout
    found = re.search(r"libblast\.so\S*\s*=>\s*(\S+)", ldd)
    if not found:
        pytest.skip("segmasker is not linked to a shared libblast")
    data = Path(found.group(1)).read_bytes()
    start = data.find(struct.pack("<4d", 0.0, 0.0, 0.693147, 1.791759))   # lnfact's first entries
    assert start >= 0 and data.find(struct.pack("<4d", 0.0, 0.0, 0.693147, 1.791759), start + 1) < 0
    table = np.frombuffer(data, dtype="<f8", count=10001, offset=start)
    assert table[-1] == 82108.927837                                        # its last entry, ln(10000!)
    assert np.array_equal(seg._LNFACT, table)


def test_seg_mask_copies():
    codes = encode("MKT" + "Q" * 30 + "WYV")
    before = codes.copy()
    masked = seg.seg_mask(codes)
    assert np.array_equal(codes, before)
    assert masked.dtype == np.uint8 and masked is not codes
    assert seg.seg_mask(np.zeros(0, dtype=np.uint8)).shape == (0,)
    assert seg.seg_intervals(encode("Q" * 9)) == []                         # shorter than the window
