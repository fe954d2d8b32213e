"""gpu-search's hmmsearch reports against HMMER 3.4's own, line by line.

The oracle (tests/helpers/oracle/hmmsearch_oracle.c) is hmmsearch's serial code path
rebuilt from HMMER 3.4's library (the one inside the pyhmmer wheel): it
writes every report with HMMER's own C functions.  Our side searches with
``gpu_search.hmmer.search.hmmsearch(device="cpu", cpus=2)`` and writes with
``gpu_search.hmmer.report`` (main report) and pyhmmer's ``TopHits.write``
(tables).  Both sides are given the very same file path strings.

What must be identical:

* the main report (``-o``), every line, except the two timing lines
  ``# CPU time: ...`` and ``# Mc/sec: ...`` (see EXEMPT_REPORT_PREFIXES);
  the banner, the path lines ("# query HMM file:", "# target sequence
  database:", "# output directed to file:", the table file lines) and the
  option echo are compared too, as both sides name the same paths;
* --tblout, --domtblout and --pfamtblout, every line (headers, data lines
  and the tail written by report.write_tabular_tail), except the tail's
  ``# Date:`` line (see EXEMPT_TABLE_PREFIXES).

Our files carry one line more than HMMER's, saying that gpu-search computed them
(PROVENANCE_LINES): checked to be there once, then left out of the comparison.
"""

from __future__ import annotations

import difflib
import io
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, pyhmmer_data

import gpu_search
from oracle.build import build, missing
from pyhmmer.easel import SequenceFile
from pyhmmer.plan7 import HMMFile

from gpu_search.hmmer import report
from gpu_search.hmmer.options import SearchOptions
from gpu_search.hmmer.search import hmmsearch
from gpu_search.seqdb import open_database

DATA = pyhmmer_data()
PROTEOME = DATA / "seqs" / "938293.PRJEB85.HG003687.faa"

EXEMPT_REPORT_PREFIXES = ("# CPU time:", "# Mc/sec:")
EXEMPT_TABLE_PREFIXES = ("# Date:",)
# the one line each of our files adds, after HMMER's version line
PROVENANCE_LINES = {"main report": f"# computed by gpu-search {gpu_search.__version__}: HMMER 3.4's results",
                    "table": f"# Computed by:     gpu-search {gpu_search.__version__}"}

# hmmsearch flags -> (SearchOptions field, type of the value; None for a switch;
# a string: the value a switch sets)
FLAGS = {
    "--acc": ("acc", None), "--noali": ("noali", None), "--notextw": ("notextw", None),
    "--textw": ("textw", int),
    "-E": ("E", float), "-T": ("T", float), "--domE": ("domE", float), "--domT": ("domT", float),
    "--incE": ("incE", float), "--incT": ("incT", float),
    "--incdomE": ("incdomE", float), "--incdomT": ("incdomT", float),
    "--cut_ga": ("bit_cutoffs", "gathering"), "--cut_nc": ("bit_cutoffs", "noise"),
    "--cut_tc": ("bit_cutoffs", "trusted"),
    "--max": ("max", None), "--F1": ("F1", float), "--F2": ("F2", float), "--F3": ("F3", float),
    "--nobias": ("nobias", None), "--nonull2": ("nonull2", None), "-Z": ("Z", float), "--domZ": ("domZ", float),
    "--seed": ("seed", int),
    "--tformat": (None, str),           # echoed only (given); fasta is the one format read
}

# (model file, hmmsearch options).  Options are listed in the order of
# hmmsearch's option table, so the tables' "# Option settings:" line (which
# HMMER writes in table order) can be rebuilt from them.
CASES = [
    ("Thioesterase", []),
    ("PF02826", []),
    ("RREFam", []),                                   # 13 models in one file
    ("LuxC", []),
    ("PF02826", ["-E", "1e3", "--F3", "1"]),
    ("RREFam", ["-E", "1e3", "--F3", "1"]),
    ("Thioesterase", ["-E", "1e3", "--F3", "1"]),
    ("PF02826", ["--noali"]),
    ("RREFam", ["--noali"]),
    ("RREFam", ["--acc"]),
    ("PF02826", ["--acc"]),
    ("PF02826", ["--cut_ga"]),                        # GA 25.10 25.10
    ("LuxC", ["--cut_ga"]),                           # GA -133.50: every Forward survivor
    ("PF02826", ["-Z", "1e6", "--domZ", "5"]),
    ("LuxC", ["--notextw"]),
    ("RREFam", ["--notextw", "-E", "1e3"]),
    ("PF02826", ["--textw", "160"]),
    ("Thioesterase", ["-E", "10", "--incE", "0.01"]),  # "10" is not the default's text "10.0": echoed;
    ("Thioesterase", ["--F2", "1e-3", "--seed", "42"]),  # "0.01", "1e-3", "42" are: not echoed
    ("PF02826", ["-T", "0", "--domT", "0", "--incT", "20", "--incdomT", "10"]),
    ("KR", ["--F1", "0.1", "--F2", "0.01", "--nobias", "--seed", "7"]),
    ("LuxC", ["--max"]),
    ("PF02826", ["--nonull2"]),
    ("RREFam", ["-E", "1e3", "--nobias", "--nonull2"]),
    ("PF02826", ["--seed", "7", "--tformat", "FASTA"]),  # the format as typed, after --seed
]


def parse_options(args: list[str]) -> SearchOptions:
    """SearchOptions from hmmsearch flags; ``given`` records each flag's text as typed."""
    kwargs, given = {}, {}
    it = iter(args)
    for flag in it:
        field, kind = FLAGS[flag]
        if field is None:
            given[flag.lstrip("-")] = next(it)
        elif kind is None:
            kwargs[field] = given[flag.lstrip("-")] = True
        elif isinstance(kind, str):
            kwargs[field] = kind
            given[flag.lstrip("-")] = True
        else:
            text = next(it)
            kwargs[field] = kind(text)
            given[flag.lstrip("-")] = text
    return SearchOptions(**kwargs, given=given)


@pytest.fixture(scope="module")
def oracle() -> Path:
    try:
        exe = build("hmmsearch_oracle")
    except subprocess.CalledProcessError as exc:
        pytest.skip(f"cannot build tests/helpers/oracle/hmmsearch_oracle.c: {exc.stderr.decode(errors='replace')[-2000:]}")
    if exe is None:
        pytest.skip(f"cannot build the HMMER oracle: {missing()}")
    return exe


def run_oracle(exe: Path, args: list[str], hmmfile: str, seqfile: str) -> None:
    proc = subprocess.run([str(exe), *args, hmmfile, seqfile], capture_output=True, text=True)
    assert proc.returncode == 0, f"oracle failed:\n{proc.stdout}\n{proc.stderr}"


def assert_same(expected: str, ours: str, exempt: tuple[str, ...], what: str) -> None:
    """Line-by-line equality, exempt lines masked, our provenance line (once, after HMMER's
    version line) left out; a unified diff on failure."""
    provenance = PROVENANCE_LINES["main report" if what == "main report" else "table"]
    lines = ours.splitlines()
    assert lines.count(provenance) == 1, (what, provenance)
    at = lines.index(provenance)
    assert lines[at - 1].startswith(("# HMMER 3.4 (", "# Version:         3.4 (")), (what, lines[at - 1])
    ours = "\n".join(lines[:at] + lines[at + 1:]) + "\n"

    def masked(text):
        return [line if not line.startswith(exempt) else line.split(":")[0] + ": <exempt>"
                for line in text.splitlines()]
    a, b = masked(expected), masked(ours)
    if a != b:
        diff = "\n".join(difflib.unified_diff(a, b, "HMMER 3.4 (oracle)", "gpu-search", lineterm="", n=2))
        pytest.fail(f"{what} differs from HMMER's:\n{diff[:20000]}")


def spoofed_cmdline(args: list[str], outputs: dict[str, str], hmmfile: str, seqfile: str) -> str:
    """esl_opt_SpoofCmdline(): program, options in table order, arguments, each + ' '."""
    words = ["hmmsearch"]
    for key in ("o", "tblout", "domtblout", "pfamtblout"):
        words += ["-o" if key == "o" else f"--{key}", outputs[key]]
    words += args + [hmmfile, seqfile]
    return "".join(w + " " for w in words)


def our_reports(hmmfile: str, seqfile: str, db, args: list[str], outputs: dict[str, str], device: str = "cpu",
                cpus: int = 2):
    """Our main report and three tables for one case."""
    options = parse_options(args)
    with HMMFile(hmmfile) as f:
        hmms = list(f)
    main = io.StringIO()
    tables = {"tblout": io.BytesIO(), "domtblout": io.BytesIO(), "pfamtblout": io.BytesIO()}
    report.write_header(main, hmmfile, seqfile, options, outputs)
    for n, result in enumerate(hmmsearch(hmms, db, options, device=device, cpus=cpus)):
        report.write_query(main, result, options)
        result.hits.write(tables["tblout"], format="targets", header=(n == 0))
        result.hits.write(tables["domtblout"], format="domains", header=(n == 0))
        result.hits.write(tables["pfamtblout"], format="pfam")
    report.write_footer(main)

    texts = {}
    options_line = spoofed_cmdline(args, outputs, hmmfile, seqfile)
    for key, buf in tables.items():
        tail = io.StringIO()
        report.write_tabular_tail(tail, hmmfile, seqfile, options_line)
        texts[key] = buf.getvalue().decode() + tail.getvalue()
    return main.getvalue(), texts


def check_case(oracle, tmp_path, db, hmmfile: str, seqfile: str, args: list[str], device: str = "cpu",
               cpus: int = 2) -> None:
    outputs = {key: str(tmp_path / f"hmmer.{key}") for key in ("o", "tblout", "domtblout", "pfamtblout")}
    flags = ["-o", outputs["o"], "--tblout", outputs["tblout"],
             "--domtblout", outputs["domtblout"], "--pfamtblout", outputs["pfamtblout"]]
    run_oracle(oracle, flags + args, hmmfile, seqfile)
    main, tables = our_reports(hmmfile, seqfile, db, args, outputs, device, cpus)

    assert_same(Path(outputs["o"]).read_text(), main, EXEMPT_REPORT_PREFIXES, "main report")
    for key, ours in tables.items():
        assert_same(Path(outputs[key]).read_text(), ours, EXEMPT_TABLE_PREFIXES, f"--{key}")


@pytest.mark.parametrize("model,args", CASES, ids=[f"{m}{''.join(a) or '-defaults'}" for m, a in CASES])
def test_reports_identical_to_hmmer(oracle, proteome, tmp_path, model, args):
    hmmfile = str(DATA / "hmms" / "txt" / f"{model}.hmm")
    check_case(oracle, tmp_path, proteome, hmmfile, str(PROTEOME), args)


def test_reference_line_identical_to_hmmer(oracle, proteome, tmp_path):
    """A model with an RF line (and PF02826's CS line): both shown above each alignment block."""
    with HMMFile(DATA / "hmms" / "txt" / "PF02826.hmm") as f:
        hmm = next(iter(f))
    hmm.reference = "".join("x" if k % 3 else "." for k in range(hmm.M))
    hmmfile = tmp_path / "PF02826-rf.hmm"
    with open(hmmfile, "wb") as f:
        hmm.write(f)
    check_case(oracle, tmp_path, proteome, str(hmmfile), str(PROTEOME), ["--textw", "140"])


def test_cases_cover_models_with_cutoffs():
    """--cut_ga cases only use models that have GA lines (else hmmsearch refuses)."""
    for model, args in CASES:
        if "--cut_ga" in args:
            assert all(hmm.cutoffs.gathering_available() for hmm in HMMFile(DATA / "hmms" / "txt" / f"{model}.hmm"))


def test_header_echo_from_values_without_given():
    """Without ``given``, options whose value differs from the default are echoed."""
    args = ["--acc", "--noali", "-E", "1e3", "--domE", "5", "--incT", "20",
            "--F1", "0.1", "--nobias", "-Z", "1e6", "--seed", "0"]
    with_given = parse_options(args)
    without = parse_options(args)
    without.given = {}
    a, b = io.StringIO(), io.StringIO()
    report.write_header(a, "q.hmm", "t.fa", with_given, {"tblout": "t.tbl"})
    report.write_header(b, "q.hmm", "t.fa", without, {"tblout": "t.tbl"})
    assert a.getvalue() == b.getvalue()
    assert "# random number seed:              one-time arbitrary\n" in a.getvalue()
    # --max sets F1..F3 and --nobias itself: only the --max line is echoed
    c = io.StringIO()
    report.write_header(c, "q.hmm", "t.fa", SearchOptions(max=True), {})
    assert "# Max sensitivity mode:            on [all heuristic filters off]\n" in c.getvalue()
    assert "filter P threshold" not in c.getvalue() and "biased composition" not in c.getvalue()


# (device, threads): one serial search per model, pieces of the database on two threads, and
# the filter cascade's survivors finished apart (the GPU path's engine, on the CPU reference)
RUNNING_Z_PATHS = [("cpu", 1), ("cpu", 2), ("reference", 2)]
# a weak hit of PF02826 (E ~ 20 against the whole proteome), given a long name
WEAK = "938293.PRJEB85.HG003686_858"


def weak_hit_at(tmp_path, place: int) -> Path:
    """The proteome with WEAK moved to ``place`` (0-based) under a long name."""
    seqs = [s for s in SequenceFile(str(PROTEOME)).read_block()]
    weak = next(s for s in seqs if s.name == WEAK)
    seqs = [s for s in seqs if s is not weak]
    seqs.insert(place, weak)
    fasta = tmp_path / f"weak_at_{place}.faa"
    with open(fasta, "w") as f:
        for s in seqs:
            name = "A_VERY_LONG_NAME_FOR_A_WEAK_HIT_" + s.name if s is weak else s.name
            f.write(f">{name} {s.description}\n{s.sequence}\n")
    return fasta


@pytest.mark.parametrize("device,cpus", RUNNING_Z_PATHS, ids=[f"{d}-{n}" for d, n in RUNNING_Z_PATHS])
@pytest.mark.parametrize("place", [0, 1500], ids=["first", "late"])
def test_running_Z_kept_hits(oracle, tmp_path, device, cpus, place):
    """Serial HMMER keeps a hit when its P-value x the targets read so far is within E
    (p7_pli_NewSeq sets Z = nseqs so far) and reports against the final Z; the name columns are
    as wide as the longest name of all kept hits.  First in the database, the weak hit is kept
    (the long name widens the columns); 1,500th, it is not, though a piece of the database
    searched with its own count of targets would keep it.  Our searches fix Z and add the hit
    (search.with_running_z_hit), or search pieces with Z unset and drop it (search.serial_hits)."""
    fasta = weak_hit_at(tmp_path, place)
    hmmfile = str(DATA / "hmms" / "txt" / "PF02826.hmm")
    check_case(oracle, tmp_path, open_database(fasta), hmmfile, str(fasta), ["--F3", "1"], device=device, cpus=cpus)


@pytest.mark.parametrize("place", [0, 1500], ids=["first", "late"])
def test_running_Z_candidates_searched_together_first(tmp_path, place):
    """search.with_running_z_hit given the sequences' names searches the candidates together once
    (Z the smallest place), then again only those kept there, each with its own place: the same
    hits as each candidate searched alone, in far fewer searches."""
    import numpy as np
    from pyhmmer.plan7 import Background

    from gpu_search.hmmer import search

    import pyhmmer

    with HMMFile(DATA / "hmms" / "txt" / "PF02826.hmm") as f:
        hmm = next(iter(f))
    with SequenceFile(str(PROTEOME), digital=True) as f:
        near = {h.name for h in next(pyhmmer.hmmsearch([hmm], f.read_block(), E=1e3, F1=1.0, F2=1.0, F3=1.0))}
    # every tenth other sequence, none of them near a hit, named longer still: candidates
    # searched before the weak hit
    fasta = tmp_path / "decoys.faa"
    with open(weak_hit_at(tmp_path, place)) as src, open(fasta, "w") as out:
        n = 0
        for line in src:
            if line.startswith(">") and not line.startswith(">A_VERY_LONG") and line[1:].split()[0] not in near:
                n += 1
                if n % 10 == 0:
                    line = ">A_DECOY_NAMED_LONGER_THAN_THE_WEAK_HIT_ITSELF_" + line[1:]
            out.write(line)
    db = open_database(fasta)
    options = SearchOptions(F3=1.0)
    finish = search.Finisher(db, hmm.alphabet, Background(hmm.alphabet), options.pipeline_kwargs(float(db.n_seqs)))
    every = np.arange(db.n_seqs)
    hits, _ = finish(hmm, every)
    name_len = search.name_bytes(db)
    results, calls = [], []
    for name_of in (None, db.name):
        sizes = []

        def search_one(idx, Z, E, sizes=sizes):
            sizes.append(len(idx))
            return finish.alone(hmm)(idx, Z, E)

        got = search.with_running_z_hit(hits, every, every, name_len, search_one, name_of)
        results.append([(h.name, h.score, h.evalue, h.reported, h.included) for h in got])
        calls.append(sizes)
    assert results[0] == results[1]
    weak = "A_VERY_LONG_NAME_FOR_A_WEAK_HIT_" + WEAK
    assert (weak in [r[0] for r in results[0]]) == (place == 0)
    alone, together = calls
    assert len(alone) > 50 and set(alone) == {1}
    assert together[0] > 50 and set(together[1:]) <= {1} and len(together) < len(alone) / 10


# -A through the command line: (model file, options); RREFam has models without an included
# domain ("no alignment saved"), --notextw writes Pfam's one-block Stockholm
ALIGNMENT_CASES = [("RREFam", []), ("PF02826", ["--notextw"]), ("Thioesterase", ["--incE", "1e3", "--incdomE", "1e3"]),
                   ("PF02826", ["--incE", "1e-300"])]


@pytest.mark.parametrize("model,args", ALIGNMENT_CASES, ids=[f"{m}{''.join(a)}" for m, a in ALIGNMENT_CASES])
def test_alignment_identical_to_hmmer(oracle, tmp_path, model, args):
    """hmmsearch -A: the Stockholm file of the included domains, and the report's lines about it,
    as HMMER writes them (the file's author line says gpu-search computed it)."""
    hmmfile = str(DATA / "hmms" / "txt" / f"{model}.hmm")
    for who in ("hmmer", "ours"):
        (tmp_path / who).mkdir()
    proc = subprocess.run([str(oracle), "-o", "out.txt", "-A", "ali.sto", *args, hmmfile, str(PROTEOME)],
                          capture_output=True, text=True, cwd=tmp_path / "hmmer")
    assert proc.returncode == 0, proc.stderr
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, "-m", "gpu_search", "hmmsearch", "-o", "out.txt", "-A", "ali.sto", *args,
                           "--device", "cpu", "-q", hmmfile, str(PROTEOME)], capture_output=True, text=True,
                          cwd=tmp_path / "ours", env=env)
    assert proc.returncode == 0, proc.stderr
    hmmer_out, ours_out = ((tmp_path / who / "out.txt").read_text() for who in ("hmmer", "ours"))
    assert_same(hmmer_out, ours_out, EXEMPT_REPORT_PREFIXES, "main report")
    theirs = (tmp_path / "hmmer" / "ali.sto").read_text().splitlines()
    ours = (tmp_path / "ours" / "ali.sto").read_text().splitlines()
    author = f"#=GF AU hmmsearch (HMMER 3.4; computed by gpu-search {gpu_search.__version__})"
    assert len(theirs) == len(ours)
    for a, b in zip(theirs, ours):
        assert b == (author if a == "#=GF AU hmmsearch (HMMER 3.4)" else a)
    saved = [line for line in hmmer_out.splitlines() if line.startswith("# Alignment of ")]
    if "1e-300" in args:
        assert theirs == [] and not saved and "# No hits satisfy inclusion thresholds; no alignment saved" in hmmer_out
    else:
        assert saved and theirs.count("# STOCKHOLM 1.0") == len(saved)
        rows = [line.split()[0] for line in theirs if line and not line.startswith(("#", "//"))]
        # Pfam's format: one block, each row once; Stockholm's: wrapped at 120 columns
        if "--notextw" in args:
            assert len(rows) == len(set(rows))
        if model == "Thioesterase":
            assert len(rows) > len(set(rows))
