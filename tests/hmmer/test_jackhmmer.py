"""gpu-search jackhmmer against HMMER 3.4's own jackhmmer, line by line.

The oracle (tests/helpers/oracle/jackhmmer_oracle.c) is jackhmmer.c's serial code
path rebuilt from HMMER 3.4's library (the one inside the pyhmmer wheel): each round's
model (p7_SingleBuilder, then p7_Builder from the round before's alignment), search,
ranking against the round before, alignment and convergence test, every output
written with HMMER's own C functions.  Our side is the ``gpu-search jackhmmer``
command.  Both run in the same folder with the same file names (each side's outputs
moved aside before the other runs), so the header's and the tables' file and folder
lines are compared too.

What must be identical: the main report (every round of every query), the -A
alignment, --tblout, --domtblout, and every --chkhmm and --chkali file (the same
files on both sides), every line, except

* the timing lines ``# CPU time:`` and ``# Mc/sec:`` of the main report;
* the tables' ``# Date:`` line, and the models' ``DATE`` line (when each was built);
* the tables' ``# Option settings:`` line: HMMER writes a command line rebuilt
  from its option table (esl_opt_SpoofCmdline), gpu-search the command line as
  typed, which holds gpu-search's own options (--device, -q);
* the line each of our report and tables adds after HMMER's version line, saying
  gpu-search computed it (checked to be there once, then left out), and the
  alignments' author line, which says so too (checked to be HMMER's with that added).

The database is the test proteome (300 proteins of one genome), in which the first
three proteins find more homologs round after round; a random protein finds none.
"""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
import textwrap
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
AUTHOR = "#=GF AU jackhmmer (HMMER 3.4)"
OUR_AUTHOR = f"#=GF AU jackhmmer (HMMER 3.4; computed by gpu-search {gpu_search.__version__})"
OUTPUTS = {"-o": "out.txt", "-A": "ali.sto", "--tblout": "hits.tbl", "--domtblout": "hits.dom"}
CHECKPOINTS = ["--chkhmm", "ck", "--chkali", "ck"]      # ck-<round>.hmm, ck-<round>.sto


@pytest.fixture(scope="module")
def oracle() -> Path:
    try:
        exe = build("jackhmmer_oracle")
    except subprocess.CalledProcessError as exc:
        pytest.skip(f"cannot build tests/helpers/oracle/jackhmmer_oracle.c: {exc.stderr.decode(errors='replace')[-2000:]}")
    if exe is None:
        pytest.skip(f"cannot build the HMMER oracle: {missing()}")
    return exe


@pytest.fixture(scope="module")
def queries(tmp_path_factory) -> Path:
    """Four queries: the proteome's first three (they converge in 3 rounds, or go on
    finding new homologs), and a random protein without a description (no hit: it
    converges in round 1, its alignment the query alone)."""
    records = PROTEOME.read_text().split(">")[1:]
    rng = random.Random(7)
    decoy = ">random_decoy\n" + "".join(rng.choice("ACDEFGHIKLMNPQRSTVWY") for _ in range(150)) + "\n"
    path = tmp_path_factory.mktemp("jackhmmer") / "queries.faa"
    path.write_text("".join(">" + r for r in records[:3]) + decoy)
    return path


def run_ours(args, cwd) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-m", "gpu_search", "jackhmmer", *map(str, args)], capture_output=True,
                          text=True, cwd=cwd, env=env)


def output_args() -> list[str]:
    return [a for flag, name in OUTPUTS.items() for a in (flag, name)] + CHECKPOINTS


def run_both(oracle, tmp_path, args, query_file, device="cpu") -> tuple[Path, Path]:
    """The oracle's and our outputs of one search (ours on ``device``), in tmp_path/hmmer and
    tmp_path/ours."""
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
        for path in [tmp_path / name for name in OUTPUTS.values()] + sorted(tmp_path.glob("ck-*")):
            shutil.move(path, folder / path.name)
        sides[who] = folder
    return sides["hmmer"], sides["ours"]


def assert_lines_same(theirs: str, mine: str, what: str) -> None:
    """Alignments and models: equal but for the author line (ours says gpu-search computed
    it) and a model's DATE line."""
    a, b = theirs.splitlines(), mine.splitlines()
    assert len(a) == len(b), (what, len(a), len(b))
    for x, y in zip(a, b):
        if x == AUTHOR:
            assert y == OUR_AUTHOR, (what, y)
        elif x.startswith("DATE  "):
            assert y.startswith("DATE  "), (what, y)
        else:
            assert y == x, (what, x, y)


def check_all_outputs(hmmer: Path, ours: Path) -> str:
    """Every output of both sides compared; HMMER's main report returned."""
    report = (hmmer / OUTPUTS["-o"]).read_text()
    assert_same(report, (ours / OUTPUTS["-o"]).read_text(), EXEMPT_REPORT, "main report", PROVENANCE["report"])
    for flag in ("--tblout", "--domtblout"):
        assert_same((hmmer / OUTPUTS[flag]).read_text(), (ours / OUTPUTS[flag]).read_text(), EXEMPT_TABLE, flag,
                    PROVENANCE["table"])
    assert_lines_same((hmmer / OUTPUTS["-A"]).read_text(), (ours / OUTPUTS["-A"]).read_text(), "-A")
    checkpoints = sorted(p.name for p in hmmer.glob("ck-*"))
    assert checkpoints and checkpoints == sorted(p.name for p in ours.glob("ck-*"))
    for name in checkpoints:
        assert_lines_same((hmmer / name).read_text(), (ours / name).read_text(), name)
    return report


# jackhmmer options of each case, in jackhmmer's option-table order
CASES = [
    [],                                                 # -N 5: every query converges first
    ["-N", "1"],
    ["-N", "2", "--noali"],
    ["-N", "3", "--notextw"],                           # -A and --chkali in Pfam's one-block format
    ["-N", "3", "--acc", "--textw", "150", "--popen", "0.05", "--pextend", "0.5", "--mx", "BLOSUM45"],
    # "5" and "0.001" are jackhmmer's default texts: not echoed; "10" is not "10.0": echoed
    ["-N", "5", "-E", "10", "--incE", "0.001", "--incdomE", "1e-3"],
    ["-N", "3", "-E", "1", "--domE", "0.1", "--incE", "1e-20", "--incdomE", "1e-10"],
    ["-N", "2", "-T", "20", "--domT", "10", "--incT", "40", "--incdomT", "30"],
    ["-N", "2", "--max", "--nonull2"],
    ["-N", "2", "--F1", "0.1", "--F2", "0.01", "--nobias", "-Z", "1e6", "--domZ", "5", "--seed", "7", "--cpu", "1"],
    ["-N", "3", "--cpu", "12"],                         # more threads than queries
    ["-N", "1", "--qformat", "fasta", "--tformat", "Fasta"],
]


@pytest.mark.parametrize("args", CASES, ids=["".join(a) or "defaults" for a in CASES])
def test_outputs_identical_to_hmmer(oracle, queries, tmp_path, args):
    """Four queries, every output (report with or without alignments, -A, two tables,
    each round's model and alignment)."""
    hmmer, ours = run_both(oracle, tmp_path, args, queries)
    report = check_all_outputs(hmmer, ours)
    # the cases are worth comparing: each query reported, the random one converged at once
    assert report.count("\nQuery:       ") == 4 and "Query:       random_decoy  [L=150]\n" in report
    if not args:
        assert report.count("@@ CONVERGED (in 1 rounds). \n") == 1         # the random protein
        assert report.count("@@ CONVERGED (in 3 rounds). \n") == 2
        assert "@@ Round:                  5\n" in report               # one goes on to the end
        assert "\n+ " in report and "@@ New targets included:   0\n" in report
        assert "# Alignment of 1 hits satisfying inclusion thresholds saved to: ali.sto" in report
    if args[:2] == ["-N", "1"]:
        assert "@@ Round:" not in report and "@@ Continuing to next round." not in report
        assert sorted(p.name for p in ours.glob("ck-*")) == ["ck-1.hmm", "ck-1.sto"]


# the cases also run on hmmsearch's engine (the GPU path's, with the exact numpy filters): the
# defaults (every round), one-block alignments, every filter off, and one thread with the
# filters' thresholds, -Z and --domZ given
ENGINE_CASES = [CASES[0], CASES[3], CASES[8], CASES[9]]


@pytest.mark.parametrize("args", ENGINE_CASES, ids=["".join(a) or "defaults" for a in ENGINE_CASES])
def test_engine_outputs_identical_to_hmmer(oracle, queries, tmp_path, args):
    """--device reference: each round through hmmsearch's filter cascade and finishing
    stage (the GPU path's code, with the numpy filters), every output HMMER's."""
    hmmer, ours = run_both(oracle, tmp_path, args, queries, device="reference")
    report = check_all_outputs(hmmer, ours)
    assert report.count("\nQuery:       ") == 4
    if not args:
        assert "@@ Round:                  5\n" in report


def running_z_case(tmp_path) -> tuple[Path, Path, list]:
    """(queries, database, options) where serial jackhmmer keeps a hit it does not report: the
    proteome's first protein against the proteome with one of its weak hits moved first under
    a long name, -E 1e-13.  Serial HMMER creates a hit when P x (targets seen so far) <= E, so
    in round 1 this one is kept though its E-value against all 300 targets is over 1e-13, and
    the report's and the tables' name columns are as wide as its name (the engine's path fixes
    Z from the start and adds that hit, unreported: search.with_running_z_hit)."""
    records = PROTEOME.read_text().split(">")[1:]
    weak = next(r for r in records if r.startswith("938293.PRJEB85.HG003691_58 "))
    moved = weak.replace("938293.PRJEB85.HG003691_58", "a_weak_hit_kept_by_serial_jackhmmer_under_a_long_name", 1)
    db = tmp_path / "db.faa"
    db.write_text(">" + moved + "".join(">" + r for r in records if r is not weak))
    query = tmp_path / "q.faa"
    query.write_text(">" + records[0])
    return query, db, ["-N", "2", "-E", "1e-13", "--cpu", "8"]


def compare_running_z(oracle, tmp_path, device):
    query, db, args = running_z_case(tmp_path)
    outs = {}
    for who in ("hmmer", "ours"):          # in one folder (the tables name it), outputs moved aside
        files = ["-o", "out.txt", "--tblout", "t.tbl", "--domtblout", "d.tbl"]
        if who == "hmmer":
            proc = subprocess.run([str(oracle), *files, *args, str(query), str(db)], capture_output=True, text=True,
                                  cwd=tmp_path)
        else:
            proc = run_ours([*files, *args, "--device", device, "-q", query, db], tmp_path)
        assert proc.returncode == 0, (who, proc.stderr)
        outs[who] = tmp_path / who
        outs[who].mkdir()
        for name in ("out.txt", "t.tbl", "d.tbl"):
            shutil.move(tmp_path / name, outs[who] / name)
    report = (outs["hmmer"] / "out.txt").read_text()
    assert_same(report, (outs["ours"] / "out.txt").read_text(), EXEMPT_REPORT, "main report", PROVENANCE["report"])
    for name in ("t.tbl", "d.tbl"):
        assert_same((outs["hmmer"] / name).read_text(), (outs["ours"] / name).read_text(), EXEMPT_TABLE, name,
                    PROVENANCE["table"])


def test_cpu_path_keeps_serial_jackhmmers_running_z(oracle, tmp_path):
    """The CPU path searches each round serially with Z unset, as jackhmmer.c: the hit serial
    HMMER keeps and never reports widens our name columns too (on 8 threads)."""
    compare_running_z(oracle, tmp_path, "cpu")


def test_engine_keeps_serial_jackhmmers_running_z(oracle, tmp_path):
    """The engine (the GPU path's, on the CPU reference) fixes Z and adds the hit serial HMMER
    keeps and never reports: the same name columns."""
    compare_running_z(oracle, tmp_path, "reference")


@pytest.mark.gpu
def test_gpu_outputs_identical_to_hmmer(oracle, queries, tmp_path):
    """The same on the GPU (marked gpu: run where one is)."""
    from gpu_search.device import gpu_status

    if not gpu_status()[0]:
        pytest.skip(f"no usable GPU: {gpu_status()[1]}")
    for args in (CASES[0], CASES[9]):
        folder = tmp_path / ("".join(args) or "defaults")
        folder.mkdir()
        hmmer, ours = run_both(oracle, folder, args, queries, device="gpu")
        check_all_outputs(hmmer, ours)


def test_device_auto_takes_the_cpu_for_small_work_and_says_so(queries, tmp_path, monkeypatch, capsys):
    """--device auto where a GPU is usable (made to look so here): four queries against 300
    proteins are too little work to repay the GPU's start; one line says so, even with -q."""
    from gpu_search import cli, device

    monkeypatch.setattr(device, "gpu_status", lambda: (True, "1 GPU(s)", ["a GPU"]))
    monkeypatch.setattr(device, "wait_cuda", lambda: None)
    monkeypatch.setattr(device, "start_cuda", lambda *a, **k: None)
    cli.main(["jackhmmer", "-q", "-N", "1", "-o", str(tmp_path / "o.txt"), str(queries), str(PROTEOME)])
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith("gpu-search: --device auto: searching on the CPU: 4 models x "), err
    assert "too little work to repay the GPU's start" in err[0]
    assert (tmp_path / "o.txt").read_text().count("\nQuery:       ") == 4


def test_device_gpu_without_one_refused(queries, tmp_path):
    """--device gpu where no GPU is usable: the device error's one line and exit code, no output."""
    from gpu_search.device import gpu_status
    from gpu_search.errors import DeviceError

    if gpu_status()[0]:
        pytest.skip("a GPU is usable here")
    proc = run_ours(["-o", "o.txt", "--device", "gpu", queries, PROTEOME], tmp_path)
    assert proc.returncode == DeviceError.exit_code, proc.stderr
    assert proc.stderr.count("\n") == 1 and "--device gpu: no usable GPU" in proc.stderr, proc.stderr
    assert not (tmp_path / "o.txt").exists()


def test_help_says_what_is_not_offered():
    r = run_ours(["--help"], ROOT)
    text = " ".join(r.stdout.split())
    assert r.returncode == 0 and "Usage: gpu-search jackhmmer [OPTIONS] SEQFILE SEQDB" in text
    assert "Not offered: the options of the later rounds' model construction" in text
    assert "--eent" in text and "--wpb" in text and "the database kept on the GPU for every round" in text
    assert "--pfamtblout" not in text and "--chkhmm PREFIX" in text and "[default: 0.001]" in text
    assert "Exit codes:" in text


# --- bad input ---------------------------------------------------------------------


def bad_inputs(tmp: Path):
    """(name, query file, database, extra args, exit code, words in the message)."""
    def write(name, content):
        p = tmp / name
        p.write_text(content)
        return p

    faa = write("q.faa", ">q\nMKTAYIAKQRQISFVKSHFSRQLEERLGLIEVQAPILSRVGDGTQDNLSGAEKAVQ\n")
    return [
        ("missing query file", tmp / "nope.faa", PROTEOME, [], 3, "no such file"),
        ("missing database", faa, tmp / "nope.faa", [], 3, "no such file"),
        ("empty query file", write("e.faa", ""), PROTEOME, [], 4, "empty"),
        ("HMM file as query", write("m.hmm", "HMMER3/f [3.4 | Aug 2023]\nNAME  x\n"), PROTEOME, [], 5,
         "jackhmmer searches with sequences"),
        ("nucleotide queries", write("n.faa", ">a\n" + "ACGTTGCAACGTGGCATTAGC" * 5 + "\n"), PROTEOME, [], 6,
         "nucleotide"),
        ("query without residues", write("z.faa", ">a\nACDEFGH\n>b\n"), PROTEOME, [], 7, "'b' is empty"),
        ("--incE 0", faa, PROTEOME, ["--incE", "0"], 2, "--incE must be > 0"),
        ("--chkhmm into a missing folder", faa, PROTEOME, ["--chkhmm", tmp / "nowhere" / "ck"], 10,
         "does not exist"),
    ]


N_BAD = 8


@pytest.mark.parametrize("case", range(N_BAD))
def test_bad_input_one_line_exit_code_no_output(case, tmp_path):
    cases = bad_inputs(tmp_path)
    assert len(cases) == N_BAD
    name, seqfile, seqdb, extra, code, words = cases[case]
    out = tmp_path / "out"
    out.mkdir()
    r = run_ours([*extra, "--tblout", out / "t.tbl", "--domtblout", out / "d.tbl", "-o", out / "main.txt",
                  "-A", out / "a.sto", "--chkali", out / "ck", seqfile, seqdb], tmp_path)
    assert r.returncode == code, (name, r.returncode, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("gpu-search: error:"), (name, r.stderr)
    assert words in lines[0], (name, lines[0])
    assert "Traceback" not in r.stderr
    assert list(out.iterdir()) == [], f"{name}: output left behind"


@pytest.mark.parametrize("extra, words", [(["-N", "0"], "Invalid value for '-N'"),
                                          (["--pfamtblout", "p.tbl"], "No such option '--pfamtblout'")])
def test_usage_errors_exit_2_no_output(extra, words, tmp_path):
    """Options out of range or not offered: click's usage error, exit code 2, nothing written."""
    (tmp_path / "q.faa").write_text(">q\nMKTAYIAKQRQISFVKSHFSRQLEERLGLIEVQAPILSRVGDGTQDNLSGAEKAVQ\n")
    r = run_ours([*extra, "-o", "o.txt", "q.faa", PROTEOME], tmp_path)
    assert r.returncode == 2 and words in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["q.faa"]


def test_shard_refused(tmp_path):
    """A .gsdb shard is refused: each round's model comes from the whole database's hits."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    r = subprocess.run([sys.executable, "-m", "gpu_search", "makedb", str(PROTEOME), "-o", str(tmp_path / "db.gsdb"),
                        "--shards", "2", "-q"], capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    (tmp_path / "q.faa").write_text(">q\nMKTAYIAKQRQISFVKSHFSRQLEERLGLIEVQAPILSRVGDGTQDNLSGAEKAVQ\n")
    r = run_ours(["-o", "o.txt", "q.faa", "db.shard1of2.gsdb"], tmp_path)
    assert r.returncode == 2 and "jackhmmer needs the whole database" in r.stderr, r.stderr
    assert not (tmp_path / "o.txt").exists()


def test_library_rounds_as_reported(queries):
    """The library path: rounds, counts and convergence as the report shows them."""
    from gpu_search.hmmer.jackhmmer import jackhmmer, read_queries
    from gpu_search.hmmer.options import JackhmmerOptions
    from gpu_search.seqdb import open_database

    results = list(jackhmmer(read_queries(queries), open_database(PROTEOME), JackhmmerOptions(N=3), cpus=2))
    assert [r.query.name for r in results][-1] == "random_decoy"
    for result in results:
        rounds = result.rounds
        assert [r.iteration for r in rounds] == list(range(1, len(rounds) + 1)) and len(rounds) <= 3
        assert rounds[0].prv_msa_nseq == 1 and rounds[0].prv_ntargets == 0
        for before, now in zip(rounds, rounds[1:]):
            assert now.prv_msa_nseq == len(before.msa.sequences)
            assert now.hmm.name == f"{result.query.name}-i{before.iteration}"
        assert all(not r.converged for r in rounds[:-1])
    assert len(results[-1].rounds) == 1 and results[-1].rounds[0].converged
    assert len(results[-1].rounds[0].msa.sequences) == 1


def test_cpu_path_stopped_starts_no_other_round(tmp_path, monkeypatch):
    """The CPU path's kill switch: a search stopped early (its results abandoned, as after
    Ctrl-C) starts no other round, so a query under way on another thread ends with its round
    instead of running all of its rounds first.  Two copies of a protein that runs all 5 rounds
    (the proteome's third), one made slow (each round's search 1.5 s longer)."""
    import time

    from gpu_search.hmmer import jackhmmer as J
    from gpu_search.hmmer.options import JackhmmerOptions
    from gpu_search.seqdb import open_database

    sequence = PROTEOME.read_text().split(">")[3].split("\n", 1)[1]
    (tmp_path / "q.faa").write_text(f">fast\n{sequence}>slow\n{sequence}")
    real = J.serial_search
    searched = []

    def serial_search(targets, options):
        search = real(targets, options)

        def slowed(hmm):
            name = hmm.name.decode() if isinstance(hmm.name, bytes) else hmm.name
            searched.append(name)
            if name.startswith("slow"):
                time.sleep(1.5)
            return search(hmm)

        return slowed

    monkeypatch.setattr(J, "serial_search", serial_search)
    results = J.jackhmmer(J.read_queries(tmp_path / "q.faa"), open_database(PROTEOME), JackhmmerOptions(N=5),
                          cpus=2)
    first = next(results)
    assert first.query.name == "fast" and len(first.rounds) == 5 and not first.rounds[-1].converged
    results.close()                 # waits for the slow query's round under way, no more
    assert 1 <= sum(name.startswith("slow") for name in searched) <= 3


def test_cpu_path_stopped_command_ends_with_the_round(tmp_path):
    """The command stopped (SIGTERM, as a scheduler stops a job) while a query is under way on
    another thread: it ends with that query's round (exit 143, no output file), not after all
    of its rounds.  The same two queries as above, the slow one 2.5 s longer a round: stopped
    in its first or second round, it ends within one round, where the rest of its five
    rounds would take 7.5 s or more."""
    import signal
    import time

    sequence = PROTEOME.read_text().split(">")[3].split("\n", 1)[1]
    (tmp_path / "q.faa").write_text(f">fast\n{sequence}>slow\n{sequence}")
    slowed = textwrap.dedent("""
        import sys, time
        from gpu_search.hmmer import jackhmmer as J
        real = J.serial_search
        def serial_search(targets, options):
            search = real(targets, options)
            def slowed(hmm):
                name = hmm.name.decode() if isinstance(hmm.name, bytes) else hmm.name
                if name.startswith("slow"):
                    time.sleep(2.5)
                else:
                    print("fast round", flush=True)
                return search(hmm)
            return slowed
        J.serial_search = serial_search
        from gpu_search.cli import main
        sys.argv = ["gpu-search", "jackhmmer", "--cpu", "2", "-N", "5", "-o", "out.txt", "q.faa", sys.argv[1]]
        main()
    """)
    proc = subprocess.Popen([sys.executable, "-c", slowed, str(PROTEOME)], cwd=tmp_path, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=dict(os.environ, PYTHONPATH=str(ROOT)))
    try:
        for _ in range(5):                   # the fast query's five rounds
            assert proc.stdout.readline() == "fast round\n"
        time.sleep(0.5)                      # its last round's search, taken and written
        stopped = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 143 and "terminated" in err, err
    assert time.monotonic() - stopped < 5.5     # the slow query's round under way (2.5 s), not its rest
    assert not (tmp_path / "out.txt").exists()
