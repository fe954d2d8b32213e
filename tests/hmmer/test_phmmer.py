"""gpu-search phmmer against HMMER 3.4's own phmmer, line by line.

The oracle (tests/helpers/oracle/phmmer_oracle.c) is phmmer.c's serial code path
rebuilt from HMMER 3.4's library (the one inside the pyhmmer wheel): it builds each
query's model with p7_SingleBuilder and writes every report with HMMER's own C
functions.  Our side is the ``gpu-search phmmer`` command.  Both run in the same
folder with the same file names (each side's outputs moved aside before the other
runs), so the header's and the tables' file and folder lines are compared too.

What must be identical: the main report, the -A alignment, --tblout, --domtblout
and --pfamtblout, every line, except

* the timing lines ``# CPU time:`` and ``# Mc/sec:`` of the main report;
* the tables' ``# Date:`` line;
* the tables' ``# Option settings:`` line: HMMER writes a command line rebuilt
  from its option table (esl_opt_SpoofCmdline), gpu-search the command line as
  typed, which holds gpu-search's own options (--device, -q);
* the line each of our files adds after HMMER's version line, saying gpu-search
  computed it (checked to be there once, then left out), and the -A file's author
  line, which says so too (checked to be HMMER's with that added).
"""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, TEST_DATA

import gpu_search
from hmmer_outputs import assert_same
from oracle.build import build, missing

PROTEOME = TEST_DATA / "proteome.faa"
EXEMPT_REPORT = ("# CPU time:", "# Mc/sec:")
EXEMPT_TABLE = ("# Date:", "# Option settings:")
PROVENANCE = {"report": f"# computed by gpu-search {gpu_search.__version__}: HMMER 3.4's results",
              "table": f"# Computed by:     gpu-search {gpu_search.__version__}"}
OUTPUTS = {"o": "out.txt", "A": "ali.sto", "--tblout": "hits.tbl", "--domtblout": "hits.dom",
           "--pfamtblout": "hits.pfam"}


@pytest.fixture(scope="module")
def oracle() -> Path:
    try:
        exe = build("phmmer_oracle")
    except subprocess.CalledProcessError as exc:
        pytest.skip(f"cannot build tests/helpers/oracle/phmmer_oracle.c: {exc.stderr.decode(errors='replace')[-2000:]}")
    if exe is None:
        pytest.skip(f"cannot build the HMMER oracle: {missing()}")
    return exe


def fasta_records(path: Path) -> list[tuple[str, str]]:
    """(header line without '>', sequence) of each record."""
    records = []
    for block in path.read_text().split(">")[1:]:
        header, _, body = block.partition("\n")
        records.append((header, "".join(body.split())))
    return records


@pytest.fixture(scope="module")
def queries(tmp_path_factory) -> Path:
    """Five queries: the proteome's first three (a few homologs each), its longest (the
    alignments wrap in many blocks), and a random protein without a description (no hit:
    the reports' "no hits" lines, -A's "no alignment saved")."""
    records = fasta_records(PROTEOME)
    longest = max(records, key=lambda r: len(r[1]))
    rng = random.Random(7)
    decoy = ("random_decoy", "".join(rng.choice("ACDEFGHIKLMNPQRSTVWY") for _ in range(150)))
    path = tmp_path_factory.mktemp("phmmer") / "queries.faa"
    path.write_text("".join(f">{h}\n{s}\n" for h, s in records[:3] + [longest, decoy]))
    return path


def run_ours(args, cwd) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-m", "gpu_search", "phmmer", *map(str, args)], capture_output=True,
                          text=True, cwd=cwd, env=env)


def output_args() -> list[str]:
    return [a for flag, name in OUTPUTS.items() for a in ("-" + flag if flag in "oA" else flag, name)]


def run_both(oracle, tmp_path, args, device, query_file) -> tuple[Path, Path]:
    """The oracle's and our outputs of one search, in tmp_path/hmmer and tmp_path/ours."""
    sides = {}
    for who in ("hmmer", "ours"):
        if who == "hmmer":
            proc = subprocess.run([str(oracle), *output_args(), *args, str(query_file), str(PROTEOME)],
                                  capture_output=True, text=True, cwd=tmp_path)
        else:
            proc = run_ours([*output_args(), *args, "--device", device, "-q", query_file, PROTEOME], tmp_path)
        assert proc.returncode == 0, (who, proc.stdout, proc.stderr)
        folder = tmp_path / who
        folder.mkdir()
        for name in OUTPUTS.values():
            shutil.move(tmp_path / name, folder / name)
        sides[who] = folder
    return sides["hmmer"], sides["ours"]


def assert_alignment_same(hmmer: Path, ours: Path) -> None:
    theirs, mine = hmmer.read_text().splitlines(), ours.read_text().splitlines()
    author = "#=GF AU phmmer (HMMER 3.4)"
    assert len(theirs) == len(mine)
    for a, b in zip(theirs, mine):
        assert b == (f"#=GF AU phmmer (HMMER 3.4; computed by gpu-search {gpu_search.__version__})"
                     if a == author else a)


def check_all_outputs(hmmer: Path, ours: Path) -> str:
    """Every output of both sides compared; HMMER's main report returned."""
    report = (hmmer / OUTPUTS["o"]).read_text()
    assert_same(report, (ours / OUTPUTS["o"]).read_text(), EXEMPT_REPORT, "main report", PROVENANCE["report"])
    for flag in ("--tblout", "--domtblout", "--pfamtblout"):
        assert_same((hmmer / OUTPUTS[flag]).read_text(), (ours / OUTPUTS[flag]).read_text(), EXEMPT_TABLE, flag,
                    PROVENANCE["table"])
    assert_alignment_same(hmmer / OUTPUTS["A"], ours / OUTPUTS["A"])
    return report


# phmmer options of each case, in phmmer's option-table order
CASES = [
    [],
    ["--noali"],
    ["--notextw"],                                     # -A in Pfam's one-block format
    ["--acc", "--textw", "160"],
    ["--popen", "0.05", "--pextend", "0.5", "--mx", "BLOSUM45"],
    ["--mx", "PAM30", "--seed", "7"],                  # another builder seed: other calibrations
    # "0.02" and "1e-3" are phmmer's default texts: not echoed; "10" is not "10.0": echoed
    ["--popen", "0.02", "-E", "10", "--F2", "1e-3"],
    ["-E", "1e3", "--F3", "1"],                        # weak hits, wider name columns
    ["-T", "20", "--domT", "10", "--incT", "40", "--incdomT", "30"],
    ["--incE", "1e-20", "--incdomE", "1e-20", "--max", "--nonull2"],
    ["--F1", "0.1", "--F2", "0.01", "--nobias", "-Z", "1e6", "--domZ", "5", "--cpu", "1"],
    ["--seed", "7", "--qformat", "fasta", "--tformat", "FASTA"],   # echoed as typed
]


@pytest.mark.parametrize("device", ["cpu", "reference"])
@pytest.mark.parametrize("args", CASES, ids=["".join(a) or "defaults" for a in CASES])
def test_outputs_identical_to_hmmer(oracle, queries, tmp_path, args, device):
    """Five queries, every output (report with or without alignments, -A, three tables)."""
    hmmer, ours = run_both(oracle, tmp_path, args, device, queries)
    report = check_all_outputs(hmmer, ours)
    # the cases are worth comparing: each query reported; with the defaults, the decoy without a hit
    assert report.count("\nQuery:       ") == 5 and "Query:       random_decoy  [L=150]\n" in report
    if not args:
        assert "   [No hits detected that satisfy reporting thresholds]" in report
        assert "# No hits satisfy inclusion thresholds; no alignment saved" in report
        assert report.count("# Alignment of ") == 4


@pytest.mark.gpu
def test_gpu_outputs_identical_to_hmmer(oracle, queries, tmp_path):
    """The same on the GPU (marked gpu: run where one is)."""
    from gpu_search.device import gpu_status

    if not gpu_status()[0]:
        pytest.skip(f"no usable GPU: {gpu_status()[1]}")
    for args in (CASES[0], CASES[4]):
        folder = tmp_path / ("".join(args) or "defaults")
        folder.mkdir()
        check_all_outputs(*run_both(oracle, folder, args, "gpu", queries))


def test_engine_equals_pyhmmers_phmmer(queries):
    """The library path (models built, then hmmsearch's engine) gives pyhmmer's own phmmer's
    hits: names, scores and E-values of every hit and domain."""
    import pyhmmer

    from gpu_search.hmmer.options import PhmmerOptions
    from gpu_search.hmmer.phmmer import phmmer, read_queries
    from gpu_search.seqdb import open_database

    qdb, db = read_queries(queries), open_database(PROTEOME)
    ours = list(phmmer(qdb, db, PhmmerOptions(), device="cpu", cpus=2))
    abc = pyhmmer.easel.Alphabet.amino()
    theirs = list(pyhmmer.hmmer.phmmer(list(qdb.digital_block(None, abc)), db.digital_block(None, abc), cpus=2))
    assert len(ours) == len(theirs) == 5

    def rows(hits):
        return [(h.name, h.score, h.evalue, h.reported, h.included,
                 [(d.score, d.i_evalue, d.env_from, d.env_to) for d in h.domains]) for h in hits]
    for a, b in zip(ours, theirs):
        assert a.query.name == b.query.name
        assert rows(a.hits) == rows(b)
    assert sum(1 for r in ours if len(r.hits)) == 4       # (the decoy finds nothing)


def test_header_echoes_scoring_options_as_phmmer():
    """phmmer's own header lines, the scoring options between --textw's and -E's (values
    from the options alone, without ``given``: echoed where not phmmer's defaults)."""
    import io

    from gpu_search.hmmer import report
    from gpu_search.hmmer.options import PhmmerOptions

    fh = io.StringIO()
    report.write_header(fh, "q.faa", "t.faa", PhmmerOptions(textw=130, popen=0.1, mx="PAM70", E=5.0),
                        {"A": "a.sto"}, program=report.PHMMER)
    lines = fh.getvalue().splitlines()
    assert lines[0] == "# phmmer :: search a protein sequence against a protein database"
    at = lines.index("# query sequence file:             q.faa")
    assert lines[at:at + 8] == [
        "# query sequence file:             q.faa",
        "# target sequence database:        t.faa",
        "# MSA of hits saved to file:       a.sto",
        "# max ASCII text line length:      130",
        "# gap open probability:            0.100000",
        "# subst score matrix (built-in):   PAM70",
        "# sequence reporting threshold:    E-value <= 5",
        "# - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - -"]


def test_one_cpu_with_gpu_batches_reports_every_query(queries):
    """--cpu 1 on the GPU's batching (the reference filters, batched by the GPU's kernel
    geometry of each query's length): every query still has its result."""
    from gpu_search.hmmer.gpu.geometry import msv_geometry
    from gpu_search.hmmer.phmmer import phmmer, read_queries
    from gpu_search.hmmer.search import make_backend
    from gpu_search.seqdb import open_database

    qdb, db = read_queries(queries), open_database(PROTEOME)
    backend = make_backend("reference", db)
    backend.batch_key = lambda M: msv_geometry(M).G
    results = list(phmmer(qdb, db, device="reference", backend=backend, cpus=1))
    assert [r.query.name for r in results] == [qdb.name(i) for i in range(qdb.n_seqs)]


@pytest.mark.parametrize("device", ["cpu", "reference"])
def test_sharded_then_merged_equals_unsharded(queries, tmp_path, device):
    """phmmer on each of 3 shards with --hits-out, then `gpu-search merge`: every output (report
    with phmmer's header and Query lines, -A, three tables) is that of one phmmer search of the
    whole database, apart from the lines naming the database, the times and the command line."""
    args = ["-E", "100", "--mx", "BLOSUM45", "--popen", "0.03"]     # weak hits; phmmer's own options
    r = subprocess.run([sys.executable, "-m", "gpu_search", "makedb", str(PROTEOME), "-o",
                        str(tmp_path / "db.gsdb"), "--shards", "3", "-q"], capture_output=True, text=True,
                       env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert r.returncode == 0, r.stderr
    hits = []
    for k in (1, 2, 3):
        proc = run_ours([*args, "--device", device, "-q", "-o", os.devnull, "--hits-out", f"s{k}.gshits",
                         queries, tmp_path / f"db.shard{k}of3.gsdb"], tmp_path)
        assert proc.returncode == 0, proc.stderr
        hits.append(f"s{k}.gshits")
    for folder in ("merged", "whole"):
        (tmp_path / folder).mkdir()
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-m", "gpu_search", "merge", *output_args(),
                           *[str(tmp_path / h) for h in hits[::-1]]],
                          capture_output=True, text=True, cwd=tmp_path / "merged", env=env)
    assert proc.returncode == 0, proc.stderr
    proc = run_ours([*output_args(), *args, "--device", device, "-q", queries, PROTEOME], tmp_path / "whole")
    assert proc.returncode == 0, proc.stderr
    differ = ("# target sequence database:", "# CPU time:", "# Mc/sec:", "# Target file:", "# Option settings:",
              "# Current dir:", "# Date:")
    for name in OUTPUTS.values():
        merged, whole = ((tmp_path / f / name).read_text().splitlines() for f in ("merged", "whole"))
        assert len(merged) == len(whole), name
        assert [l for l in merged if not l.startswith(differ)] == [l for l in whole if not l.startswith(differ)], name
    report = (tmp_path / "whole" / OUTPUTS["o"]).read_text()
    assert report.startswith("# phmmer :: search a protein sequence against a protein database")
    assert report.count("\nQuery:       ") == 5 and "Query:       random_decoy  [L=150]\n" in report
    assert "# subst score matrix (built-in):   BLOSUM45" in report
    assert "# Program:         phmmer" in (tmp_path / "merged" / OUTPUTS["--tblout"]).read_text()
    assert (tmp_path / "whole" / OUTPUTS["A"]).read_text().count("# STOCKHOLM 1.0") >= 4
    # the test can fail: one shard's merge is not the whole database's
    proc = subprocess.run([sys.executable, "-m", "gpu_search", "merge", "--tblout", "one.tbl", str(tmp_path / hits[0])],
                          capture_output=True, text=True, cwd=tmp_path / "merged", env=env)
    assert proc.returncode == 0, proc.stderr
    one = [l for l in (tmp_path / "merged" / "one.tbl").read_text().splitlines() if not l.startswith("#")]
    assert one != [l for l in (tmp_path / "whole" / OUTPUTS["--tblout"]).read_text().splitlines()
                   if not l.startswith("#")]
