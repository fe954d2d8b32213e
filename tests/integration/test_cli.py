"""The gpu-search command line as a user meets it: outputs, bad input, exit codes."""

from __future__ import annotations

import gzip
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, TEST_DATA

# lines that carry paths, dates and timings: the only ones allowed to differ
# the options test-data/make.sh gave HMMER (those Galaxy's tool passes)
GALAXY_OPTIONS = ["--cpu", "1", "-E", "10.0", "--domE", "10.0", "--incE", "0.01", "--incdomE", "0.01",
                  "--F1", "0.02", "--F2", "0.001", "--F3", "1e-05", "--seed", "42"]
VARYING = ("# query HMM file", "# target sequence database", "# output directed", "# per-seq hits",
           "# per-dom hits", "# pfam-style", "# CPU time", "# Mc/sec", "# Option settings",
           "# Current dir", "# Date", "# Query file", "# Target file",
           "# MSA of all hits saved to file", "# Alignment of ")     # (these name the -A file)
# the line each of our files adds to HMMER's (tests/hmmer/test_report.py checks its place)
PROVENANCE = ("# Computed by:     gpu-search ", "# computed by gpu-search ")


def run(*args, cwd=None, env=None):
    e = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    e.update(env or {})
    return subprocess.run([sys.executable, "-m", "gpu_search", *map(str, args)], capture_output=True,
                          text=True, cwd=cwd, env=e)


def stable(path) -> list[str]:
    return [l for l in Path(path).read_text().splitlines() if not l.startswith(VARYING + PROVENANCE)]


def alignment_lines(path) -> list[str]:
    """An -A file's lines, the author line (which names the program that wrote it) masked."""
    return ["#=GF AU" if l.startswith("#=GF AU ") else l for l in Path(path).read_text().splitlines()]


@pytest.mark.parametrize("device", ["cpu", "reference"])
def test_readme_example_equals_hmmer(device, tmp_path):
    """The README's example with -A as the Galaxy tool's first test runs it; every output
    identical to HMMER 3.4's (test-data/make.sh)."""
    r = run("hmmsearch", "--device", device, "--tblout", tmp_path / "t", "--domtblout", tmp_path / "d",
            "--pfamtblout", tmp_path / "p", "-o", tmp_path / "o", "-A", tmp_path / "a", "--quiet", *GALAXY_OPTIONS,
            TEST_DATA / "four-models.hmm", TEST_DATA / "proteome.faa")
    assert r.returncode == 0, r.stderr
    for ours, theirs in (("t", "tblout"), ("d", "domtblout"), ("p", "pfamtblout"), ("o", "out")):
        assert stable(tmp_path / ours) == stable(TEST_DATA / f"four-models.{theirs}"), theirs
    assert alignment_lines(tmp_path / "a") == alignment_lines(TEST_DATA / "four-models.sto")


def test_cpu_path_in_database_pieces_equals_hmmer(tmp_path):
    """The CPU path with more threads than models cuts the database into pieces, each model's
    pieces searched at once and merged: every output still HMMER 3.4's (four models on 8
    threads: 2 pieces each; one model on 5 threads: 5 pieces)."""
    threads = [o if o != "1" else "8" for o in GALAXY_OPTIONS[:2]] + GALAXY_OPTIONS[2:]
    r = run("hmmsearch", "--device", "cpu", "--tblout", tmp_path / "t", "--domtblout", tmp_path / "d",
            "--pfamtblout", tmp_path / "p", "-o", tmp_path / "o", "-A", tmp_path / "a", "--quiet", *threads,
            TEST_DATA / "four-models.hmm", TEST_DATA / "proteome.faa")
    assert r.returncode == 0, r.stderr
    for ours, theirs in (("t", "tblout"), ("d", "domtblout"), ("p", "pfamtblout")):
        assert stable(tmp_path / ours) == stable(TEST_DATA / f"four-models.{theirs}"), theirs
    report = [line.replace("threads:        8", "threads:        1") for line in stable(tmp_path / "o")]
    assert report == stable(TEST_DATA / "four-models.out")
    assert alignment_lines(tmp_path / "a") == alignment_lines(TEST_DATA / "four-models.sto")
    r = run("hmmsearch", "--device", "cpu", "--cpu", "5", "--cut_ga", "-o", os.devnull, "--tblout", tmp_path / "g",
            "--quiet", TEST_DATA / "PF02826.hmm", TEST_DATA / "proteome.faa")
    assert r.returncode == 0, r.stderr
    assert stable(tmp_path / "g") == stable(TEST_DATA / "PF02826.cut_ga.tblout")


def test_stdout_report_and_gzip_inputs(tmp_path):
    hmm_gz = tmp_path / "m.hmm.gz"
    hmm_gz.write_bytes(gzip.compress((TEST_DATA / "four-models.hmm").read_bytes()))
    faa_gz = tmp_path / "p.faa.gz"
    faa_gz.write_bytes(gzip.compress((TEST_DATA / "proteome.faa").read_bytes()))
    r = run("hmmsearch", "--device", "cpu", "-A", tmp_path / "a.sto", *GALAXY_OPTIONS, hmm_gz, faa_gz)
    assert r.returncode == 0, r.stderr
    body = [l for l in r.stdout.splitlines() if not l.startswith(VARYING + PROVENANCE)]
    expected = [l for l in stable(TEST_DATA / "four-models.out")]
    assert body == expected


def test_makedb_shards_and_merge_equal_unsharded(tmp_path):
    r = run("makedb", TEST_DATA / "proteome.faa", "-o", tmp_path / "db.gsdb", "--shards", "3", "--quiet")
    assert r.returncode == 0, r.stderr
    shards = sorted(tmp_path.glob("db.shard*of3.gsdb"))
    assert len(shards) == 3
    hits = []
    for s in shards:
        out = tmp_path / f"{s.stem}.gshits"
        r = run("hmmsearch", "--device", "cpu", "--quiet", "--hits-out", out, "-o", os.devnull,
                TEST_DATA / "four-models.hmm", s)
        assert r.returncode == 0, r.stderr
        hits.append(out)
    r = run("merge", *hits, "--tblout", tmp_path / "m.tbl", "--domtblout", tmp_path / "m.dom",
            "-o", tmp_path / "m.out")
    assert r.returncode == 0, r.stderr
    assert stable(tmp_path / "m.tbl") == stable(TEST_DATA / "four-models.tblout")
    assert stable(tmp_path / "m.dom") == stable(TEST_DATA / "four-models.domtblout")


class _Runs:
    """A pickled object that, unpickled by a plain pickle, runs a command (writes a file)."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


@pytest.mark.parametrize("kind", ["gshits", "gsblast"])
def test_merge_runs_nothing_from_a_crafted_file(kind, tmp_path):
    """A pickle that names a command, behind the header of a result file (this format's, or
    the earlier format's, which was a pickle), is refused with one line and exit 5, the
    command never run, no output left; the file the search wrote merges."""
    import pickle

    if kind == "gshits":
        from gpu_search.hmmer.merge import KIND
        r = run("hmmsearch", "--device", "cpu", "--quiet", "-o", os.devnull, "--hits-out", tmp_path / "a.gshits",
                TEST_DATA / "four-models.hmm", TEST_DATA / "proteome.faa")
        merge_args = ["--tblout", tmp_path / "out.tbl"]
    else:
        from gpu_search.blast.merge import KIND
        r = run("blastp", "-query", TEST_DATA / "blastp-queries.faa", "-db", TEST_DATA / "proteome.faa", "-out",
                os.devnull, "--hits-out", tmp_path / "a.gsblast")
        merge_args = ["-outfmt", "6"]
    assert r.returncode == 0, r.stderr
    valid = tmp_path / f"a.{kind}"
    marker = tmp_path / "ran"
    for version in (b"\x01", b"\x02"):
        bad = tmp_path / f"bad.{kind}"
        bad.write_bytes(KIND + version + pickle.dumps(_Runs(marker)))
        out = tmp_path / "out.txt"
        r = run("merge", bad, "-o", out, *merge_args)
        assert r.returncode == 5 and len(r.stderr.strip().splitlines()) == 1, r.stderr
        assert not marker.exists() and not out.exists() and not (tmp_path / "out.tbl").exists()
    r = run("merge", valid, "-o", tmp_path / "out.txt", *merge_args)
    assert r.returncode == 0 and (tmp_path / "out.txt").stat().st_size > 0, r.stderr


@pytest.mark.parametrize("signame, code, line", [("SIGTERM", 143, "gpu-search: terminated"),
                                                  ("SIGHUP", 129, "gpu-search: stopped by SIGHUP")])
def test_stop_signal_leaves_no_output(signame, code, line, tmp_path):
    """SIGTERM (how Slurm, Galaxy and Nextflow stop a job) or SIGHUP (a closed terminal) while
    the outputs are being written: one line, exit 128 + the signal, no output file and no
    temporary file left."""
    import signal
    import time

    e = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    p = subprocess.Popen([sys.executable, "-m", "gpu_search", "hmmsearch", "--device", "reference", "--cpu", "1",
                          "--tblout", str(tmp_path / "t.tbl"), "-o", str(tmp_path / "o.txt"),
                          str(TEST_DATA / "four-models.hmm"), str(TEST_DATA / "proteome.faa")],
                         stderr=subprocess.PIPE, text=True, env=e)
    start = time.monotonic()
    while not list(tmp_path.glob(".*.part")) and p.poll() is None and time.monotonic() - start < 60:
        time.sleep(0.02)
    assert p.poll() is None, "the search ended before it could be stopped"
    p.send_signal(getattr(signal, signame))
    err = p.communicate(timeout=120)[1]
    assert p.returncode == code and err.strip().splitlines() == [line], err
    assert list(tmp_path.iterdir()) == []


def test_ctrl_c_during_start_up_is_one_line(tmp_path):
    """Ctrl-C at any moment of the start (our imports, CUDA's start, reading the inputs):
    never a traceback, exit 130 (or the signal's own death before Python set up its handler,
    which the shell also reports as 130)."""
    import signal
    import time

    e = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    cmd = [sys.executable, "-m", "gpu_search", "hmmsearch", "--cpu", "1", "-o", str(tmp_path / "o.txt"),
           str(TEST_DATA / "four-models.hmm"), str(TEST_DATA / "proteome.faa")]
    for delay in (0.05, 0.1, 0.15, 0.2, 0.3, 0.45, 0.6, 0.8):
        # (SIGINT at its default in the child: a background job of a script starts with it ignored)
        p = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True, env=e,
                             preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        time.sleep(delay)
        p.send_signal(signal.SIGINT)
        err = p.communicate(timeout=120)[1]
        if p.returncode == 0:
            (tmp_path / "o.txt").unlink()        # (it had finished)
            continue
        if "Traceback" in err and f"{os.sep}gpu_search{os.sep}" not in err:
            continue                             # the interpreter's own start (site, runpy): before our code
        assert p.returncode in (130, -signal.SIGINT), (delay, p.returncode, err)
        assert "Traceback" not in err, (delay, err)
        assert p.returncode != 130 or err.strip().splitlines()[-1:] == ["gpu-search: interrupted"], (delay, err)
        assert list(tmp_path.iterdir()) == [], (delay, list(tmp_path.iterdir()))


def test_debug_option_shows_the_traceback(tmp_path, monkeypatch):
    """An internal error is one line that says how to see more; ``gpu-search --debug`` shows
    Python's traceback (read from the command line, not from the environment)."""
    from gpu_search import cli
    from gpu_search.hmmer import models

    def broken(*args, **kwargs):
        raise ZeroDivisionError("a bug")

    monkeypatch.setattr(models, "open_hmms", broken)
    args = ["hmmsearch", "--device", "cpu", "-o", str(tmp_path / "o"), str(TEST_DATA / "four-models.hmm"),
            str(TEST_DATA / "proteome.faa")]
    with pytest.raises(SystemExit) as stop:
        cli.main(args)
    assert stop.value.code == 1
    with pytest.raises(ZeroDivisionError):
        cli.main(["--debug", *args])
    assert not list(tmp_path.iterdir())


def test_cpu_fallback_is_said_even_quiet(tmp_path):
    """--quiet silences progress, not the line saying that a GPU asked for (--device auto)
    is not used: Galaxy and Nextflow pass --quiet."""
    from gpu_search.device import gpu_status

    if gpu_status()[0]:
        pytest.skip("a usable GPU is here")
    r = run("hmmsearch", "--quiet", "--device", "auto", "-o", tmp_path / "o", TEST_DATA / "four-models.hmm",
            TEST_DATA / "proteome.faa")
    assert r.returncode == 0 and r.stderr.startswith("gpu-search: no usable GPU ("), r.stderr
    assert "searching on the CPU, same results" in r.stderr


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full")
@pytest.mark.parametrize("tool", ["hmmsearch", "blastp"])
def test_full_disk_is_an_output_error(tool, tmp_path):
    """A full disk (/dev/full) is the documented output error (exit 10), one line, not an
    internal error; an option value that is not a finite number, or out of BLAST+'s 32-bit
    range, is an option error (exit 2)."""
    if tool == "hmmsearch":
        args = ["hmmsearch", "--device", "cpu", "-o", "/dev/full", "--tblout", tmp_path / "t.tbl",
                TEST_DATA / "four-models.hmm", TEST_DATA / "proteome.faa"]
        bad = [["-E", "nan"], ["-Z", "inf"], ["--domZ", "-inf"], ["-T", "nan"], ["--seed", "-1"]]
    else:
        args = ["blastp", "-query", TEST_DATA / "blastp-queries.faa", "-db", TEST_DATA / "proteome.faa",
                "-out", "/dev/full"]
        bad = [["-evalue", "inf"], ["-threshold", "nan"], ["-window_size", "2147483648"]]
    r = run(*args, cwd=tmp_path)
    err = [l for l in r.stderr.splitlines() if "searching on the CPU" not in l]
    assert r.returncode == 10 and err == ["gpu-search: error: cannot write the output (No space left on device)"], \
        r.stderr
    assert list(tmp_path.iterdir()) == []
    for extra in bad:
        r = run(*args[:1], *extra, *args[1:], cwd=tmp_path)
        assert r.returncode == 2 and "Invalid value" in r.stderr, (extra, r.stderr)


def test_makedb_shards_whole_or_not_at_all(tmp_path, monkeypatch):
    """A makedb --shards that fails on its third shard leaves none of the first two (a partial
    set looks like a whole database)."""
    from gpu_search import errors, seqdb

    real = seqdb.write_gsdb

    def failing(db, path, **kwargs):
        if kwargs.get("shard", (0,))[0] == 3:
            raise errors.OutputError(f"{path}: cannot write (No space left on device)")
        return real(db, path, **kwargs)

    monkeypatch.setattr(seqdb, "write_gsdb", failing)
    with pytest.raises(errors.OutputError):
        seqdb.makedb(TEST_DATA / "proteome.faa", tmp_path / "db.gsdb", shards=4)
    assert list(tmp_path.iterdir()) == []
    monkeypatch.setattr(seqdb, "write_gsdb", real)
    assert len(seqdb.makedb(TEST_DATA / "proteome.faa", tmp_path / "db.gsdb", shards=4)) == 4
    # a directory as the output: the output error, before any work
    (tmp_path / "d.gsdb").mkdir()
    r = run("makedb", TEST_DATA / "proteome.faa", "-o", tmp_path / "d.gsdb")
    assert r.returncode == 10 and r.stderr.strip().endswith("is a directory, not a file to write"), r.stderr


def test_gsdb_search_equals_fasta_search(tmp_path):
    assert run("makedb", TEST_DATA / "proteome.faa", "-o", tmp_path / "p.gsdb", "-q").returncode == 0
    r = run("hmmsearch", "--device", "cpu", "-q", "--tblout", tmp_path / "t", "-o", os.devnull,
            TEST_DATA / "four-models.hmm", tmp_path / "p.gsdb")
    assert r.returncode == 0, r.stderr
    assert stable(tmp_path / "t") == stable(TEST_DATA / "four-models.tblout")


def bad_inputs(tmp: Path):
    """(name, hmmfile, seqfile, extra args, exit code, words in the message)."""
    hmm, faa = TEST_DATA / "Thioesterase.hmm", TEST_DATA / "proteome.faa"
    text = hmm.read_text()

    def write(name, content, mode="w"):
        p = tmp / name
        (p.write_bytes if mode == "wb" else p.write_text)(content)
        return p

    dna_hmm = Path(__import__("pyhmmer").__file__).parent / "tests" / "data" / "hmms" / "txt" / "RF00001.hmm"
    return [
        ("missing hmm", tmp / "nope.hmm", faa, [], 3, "no such file"),
        ("missing db", hmm, tmp / "nope.faa", [], 3, "no such file"),
        ("hmm is a directory", tmp, faa, [], 3, "directory"),
        ("empty hmm", write("e.hmm", ""), faa, [], 4, "empty"),
        ("empty db", hmm, write("e.faa", ""), [], 4, "empty"),
        # (Easel reads this as SELEX, HMMER's hmmsearch too: here only with --tformat selex)
        ("db not fasta", hmm, write("x.faa", "hello world\n"), [], 5,
         "not FASTA (a FASTA file starts with '>' header lines); for another of HMMER's formats give --tformat"),
        ("hmm not hmm", write("x.hmm", "hello\nworld\n"), faa, [], 5, "not a valid HMMER profile"),
        ("fasta given as hmm", faa, faa, [], 5, "FASTA file, not a profile"),
        ("truncated hmm", write("t.hmm", text[: len(text) // 2]), faa, [], 5, "HMM"),
        ("corrupt hmm", write("c.hmm", text.replace("COMPO", "COMPX", 1).replace("LENG  243", "LENG  24x")), faa, [], 5, "HMM"),
        ("nucleotide hmm", dna_hmm, faa, [], 6, "nucleotide"),
        ("dna db", hmm, write("d.faa", ">a\n" + "ACGTTGCAACGTGGCATTAGC" * 5 + "\n"), [], 6, "nucleotide"),
        ("invalid residue", hmm, write("i.faa", ">a\nACDEF9GH\n"), [], 7, "invalid residue '9'"),
        ("empty sequence", hmm, write("z.faa", ">a\nACDEFGH\n>b\n>c\nWW\n"), [], 7, "'b' is empty"),
        ("too long", hmm, write("l.faa", ">a\n" + "ACDEFGHIKLMNPQRSTVWY" * 5001 + "\n"), [], 7, "over HMMER's limit"),
        ("bad option value", hmm, faa, ["-E", "-1"], 2, "-E must be > 0"),
        ("cutoffs missing", hmm, faa, ["--cut_ga"], 2, "no GA cutoff"),
        ("gpu asked, none", hmm, faa, ["--device", "gpu"], 8, "no usable GPU"),
        ("bad gzip", hmm, write("b.faa.gz", gzip.compress(b">a\nACDEFGHIKL\n" * 1000)[:50], "wb"), [], 5, "gzip"),
        ("corrupt gzip", hmm, write("c.faa.gz", corrupt_gzip(), "wb"), [], 5, "corrupt or truncated gzip"),
        ("directory as --hits-out", hmm, faa, ["--hits-out", tmp], 10, "is a directory"),
    ]


def corrupt_gzip() -> bytes:
    """A gzip file whose deflate stream is damaged in the middle (zlib: 'invalid ...')."""
    import random

    data = bytearray(gzip.compress(bytes(random.Random(1).choices(b"ACDEFGHIKLMNPQRSTVWY\n", k=20000)), 9))
    for i in range(40, 60):
        data[i] ^= 0xFF
    return bytes(data)


@pytest.mark.parametrize("case", range(21))
def test_bad_input_one_line_exit_code_no_output(case, tmp_path):
    name, hmmfile, seqfile, extra, code, words = bad_inputs(tmp_path)[case]
    if name == "gpu asked, none":
        from gpu_search.device import gpu_status

        if gpu_status()[0]:
            pytest.skip("a GPU is usable here")
    out = tmp_path / "out"
    out.mkdir()
    r = run("hmmsearch", *extra, "--tblout", out / "t.tbl", "-o", out / "main.txt", hmmfile, seqfile)
    assert r.returncode == code, (name, r.returncode, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("gpu-search: error:"), (name, r.stderr)
    assert words in lines[0], (name, lines[0])
    assert "Traceback" not in r.stderr
    assert list(out.iterdir()) == [], f"{name}: output left behind"


def test_skip_long_sequences(tmp_path):
    faa = tmp_path / "l.faa"
    faa.write_text((TEST_DATA / "proteome.faa").read_text() + ">huge\n" + "ACDEFGHIKLMNPQRSTVWY" * 5001 + "\n")
    r = run("hmmsearch", "--device", "cpu", "-q", "--skip-long", "--tblout", tmp_path / "t", "-Z", "300",
            "-o", os.devnull, TEST_DATA / "four-models.hmm", faa)
    assert r.returncode == 0, r.stderr
    assert stable(tmp_path / "t") == stable(TEST_DATA / "four-models.tblout")


# --- phmmer ---------------------------------------------------------------------------------

# phmmer's lines that name the query file (the rest of VARYING is hmmsearch's and phmmer's)
PHMMER_VARYING = VARYING + ("# query sequence file", "# MSA of hits saved to file")


def phmmer_oracle():
    """HMMER 3.4's phmmer (tests/helpers/oracle/phmmer_oracle.c); the test skips where it
    cannot be built."""
    from oracle.build import build, missing

    exe = build("phmmer_oracle")
    if exe is None:
        pytest.skip(f"cannot build the HMMER oracle: {missing()}")
    return exe


def phmmer_stable(text: str) -> list[str]:
    return [l for l in text.splitlines() if not l.startswith(PHMMER_VARYING + PROVENANCE)]


@pytest.mark.parametrize("device", ["cpu", "reference"])
def test_phmmer_readme_example_equals_hmmer(device, tmp_path):
    """The README's phmmer example, with every output: each equal to HMMER 3.4's phmmer's
    (the oracle), and the README's numbers (3 hits, each query itself)."""
    outputs = ["--tblout", "t", "--domtblout", "d", "--pfamtblout", "p", "-o", "o", "-A", "a"]
    queries, db = TEST_DATA / "blastp-queries.faa", TEST_DATA / "proteome.faa"
    (tmp_path / "hmmer").mkdir()
    (tmp_path / "ours").mkdir()
    proc = subprocess.run([str(phmmer_oracle()), *outputs, str(queries), str(db)], capture_output=True, text=True,
                          cwd=tmp_path / "hmmer")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    r = run("phmmer", "--device", device, "--quiet", *outputs, queries, db, cwd=tmp_path / "ours")
    assert r.returncode == 0, r.stderr
    for name in ("t", "d", "p", "o"):
        assert phmmer_stable((tmp_path / "ours" / name).read_text()) == \
            phmmer_stable((tmp_path / "hmmer" / name).read_text()), name
    assert alignment_lines(tmp_path / "ours" / "a") == [
        "#=GF AU" if l.startswith("#=GF AU ") else l for l in (tmp_path / "hmmer" / "a").read_text().splitlines()]
    rows = [l.split() for l in (tmp_path / "ours" / "t").read_text().splitlines() if not l.startswith("#")]
    assert [(row[0] == row[2], row[4]) for row in rows] == [(True, "1.2e-82"), (True, "0"), (True, "0")]


def test_phmmer_stdout_report_and_gzip_inputs(tmp_path):
    """Queries and database gzipped, the report on stdout: HMMER's report of the plain files."""
    queries_gz = tmp_path / "q.faa.gz"
    queries_gz.write_bytes(gzip.compress((TEST_DATA / "blastp-queries.faa").read_bytes()))
    db_gz = tmp_path / "p.faa.gz"
    db_gz.write_bytes(gzip.compress((TEST_DATA / "proteome.faa").read_bytes()))
    proc = subprocess.run([str(phmmer_oracle()), "--noali", str(TEST_DATA / "blastp-queries.faa"),
                           str(TEST_DATA / "proteome.faa")], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    r = run("phmmer", "--device", "cpu", "--noali", queries_gz, db_gz)
    assert r.returncode == 0, r.stderr
    assert phmmer_stable(r.stdout) == phmmer_stable(proc.stdout)
    assert r.stdout.count("Query:       ") == 3


def test_phmmer_help_offers_hits_out_for_merge():
    r = run("phmmer", "--help")
    assert r.returncode == 0, r.stderr
    text = " ".join(r.stdout.split())
    assert "--hits-out FILE Also save the complete hits (.gshits) for `gpu-search merge` of database shards." in text
    assert "hmmsearch's shards only" not in text and "--hits-out (merge" not in text
    r = run("merge", "--help")
    assert "hmmsearch, phmmer: save per-sequence hits in a table." in " ".join(r.stdout.split())


def phmmer_bad_inputs(tmp: Path):
    """(name, query file, database, extra args, exit code, words in the message)."""
    faa = TEST_DATA / "proteome.faa"

    def write(name, content):
        p = tmp / name
        p.write_text(content)
        return p

    return [
        ("missing query file", tmp / "nope.faa", faa, [], 3, "no such file"),
        ("query file a directory", tmp, faa, [], 3, "directory"),
        ("empty query file", write("e.faa", ""), faa, [], 4, "empty"),
        ("query file not FASTA", write("x.faa", "hello world\n"), faa, [], 5, "not FASTA"),
        ("HMM file as queries", TEST_DATA / "Thioesterase.hmm", faa, [], 5,
         "is a profile HMM file, not protein FASTA (phmmer searches with sequences; search with HMMs by hmmsearch)"),
        ("nucleotide queries", write("n.faa", ">a\n" + "ACGTTGCAACGTGGCATTAGC" * 5 + "\n"), faa, [], 6, "nucleotide"),
        ("query without residues", write("z.faa", ">a\nACDEFGH\n>b\n"), faa, [], 7, "'b' is empty"),
        ("empty database", TEST_DATA / "blastp-queries.faa", write("ed.faa", ""), [], 4, "empty"),
        ("gap open out of range", TEST_DATA / "blastp-queries.faa", faa, ["--popen", "0.5"], 2,
         "--popen must be in [0, 0.5)"),
        ("gap extend out of range", TEST_DATA / "blastp-queries.faa", faa, ["--pextend", "-0.1"], 2,
         "--pextend must be in [0, 1)"),
        ("gpu asked, none", TEST_DATA / "blastp-queries.faa", faa, ["--device", "gpu"], 8, "no usable GPU"),
        ("directory as --hits-out", TEST_DATA / "blastp-queries.faa", faa, ["--hits-out", tmp], 10, "is a directory"),
        ("--hits-out in no folder", TEST_DATA / "blastp-queries.faa", faa, ["--hits-out", tmp / "no" / "s.gshits"],
         10, "does not exist"),
        ("query without residues, --hits-out", write("z2.faa", ">a\nACDEFGH\n>b\n"), faa,
         ["--hits-out", tmp / "out" / "s.gshits"], 7, "'b' is empty"),
    ]


@pytest.mark.parametrize("case", range(14))
def test_phmmer_bad_input_one_line_exit_code_no_output(case, tmp_path):
    name, seqfile, seqdb, extra, code, words = phmmer_bad_inputs(tmp_path)[case]
    if name == "gpu asked, none":
        from gpu_search.device import gpu_status

        if gpu_status()[0]:
            pytest.skip("a GPU is usable here")
    out = tmp_path / "out"
    out.mkdir()
    r = run("phmmer", *extra, "--tblout", out / "t.tbl", "-A", out / "a.sto", "-o", out / "main.txt", seqfile, seqdb)
    assert r.returncode == code, (name, r.returncode, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("gpu-search: error:"), (name, r.stderr)
    assert words in lines[0], (name, lines[0])
    assert "Traceback" not in r.stderr
    assert list(out.iterdir()) == [], f"{name}: output left behind"


def test_phmmer_unknown_matrix_is_an_option_error(tmp_path):
    """--mx takes HMMER's built-in matrices only (click's usage error, exit 2, naming them)."""
    r = run("phmmer", "--mx", "BLOSUM100", "-o", tmp_path / "o", TEST_DATA / "blastp-queries.faa",
            TEST_DATA / "proteome.faa")
    assert r.returncode == 2 and "Invalid value for '--mx'" in r.stderr and "BLOSUM62" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr and list(tmp_path.iterdir()) == []


def test_help_lists_exit_codes_and_info_runs():
    r = run("hmmsearch", "--help")
    assert r.returncode == 0 and "Exit codes" in r.stdout and "--domtblout" in r.stdout
    r = run("phmmer", "--help")
    assert r.returncode == 0 and "Exit codes" in r.stdout and "--popen" in r.stdout and "--cut_ga" not in r.stdout
    r = run("info")
    assert r.returncode == 0 and "HMMER        3.4" in r.stdout and "GPU" in r.stdout


def test_bin_launcher(tmp_path):
    launcher = ROOT / "bin" / "gpu-search"
    r = subprocess.run([str(launcher), "--version"], capture_output=True, text=True)
    assert r.returncode == 0 and "gpu-search" in r.stdout


def test_dev_null_and_fifo_outputs_stay_special(tmp_path):
    """-o /dev/null must write to the device, never rename a file over it; outputs get umask modes."""
    import stat as st

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    reader = subprocess.Popen(["cat", str(fifo)], stdout=subprocess.PIPE, text=True)
    r = run("hmmsearch", "--device", "cpu", "-q", "-o", "/dev/null", "--tblout", fifo, "--domtblout",
            tmp_path / "d.tbl", TEST_DATA / "Thioesterase.hmm", TEST_DATA / "proteome.faa")
    out, _ = reader.communicate(timeout=60)
    assert r.returncode == 0, r.stderr
    assert st.S_ISCHR(os.stat("/dev/null").st_mode)
    assert st.S_ISFIFO(os.stat(fifo).st_mode) and "Thioesterase" in out
    mask = os.umask(0)
    os.umask(mask)
    assert st.S_IMODE(os.stat(tmp_path / "d.tbl").st_mode) == 0o666 & ~mask


@pytest.mark.parametrize("args, says", [
    (["-task", "blastp-fast"], "-task blastp-fast: only blastp is implemented"),
    (["-seg", "yes"], "-seg yes: SEG masking is not implemented"),
    (["-subject", "x.faa"], "-subject: BLAST+'s two-sequences mode is not offered"),
    (["-word_siz", "3"], "-word_siz: not a BLAST+ blastp option"),   # click alone would say '-w'
])
def test_blastp_options_left_out_are_named(args, says, tmp_path):
    out = tmp_path / "rows.tsv"
    r = run("blastp", "-query", TEST_DATA / "blastp-queries.faa", "-db", TEST_DATA / "proteome.faa", "-out", out, *args)
    assert r.returncode == 2 and says in r.stderr, r.stderr
    assert "Traceback" not in r.stderr and not out.exists()


def test_blastp_accepts_blast_defaults_spelled_out(tmp_path):
    """-task blastp, -seg no and -comp_based_stats 2 are BLAST+ blastp's defaults: accepted, its
    default rows; -comp_based_stats F and 0 turn the statistics off, T and D are 2, and a value
    BLAST+ does not know turns them off with a warning (BLAST+ 2.12 says nothing)."""
    out = tmp_path / "rows.tsv"
    r = run("blastp", "-task", "blastp", "-seg", "no", "-comp_based_stats", "2", "-query",
            TEST_DATA / "blastp-queries.faa", "-db", TEST_DATA / "proteome.faa", "-out", out, "-outfmt", "6 std",
            "-evalue", "10", "-q")
    assert r.returncode == 0, r.stderr
    assert out.read_text() == (TEST_DATA / "blastp-queries.cbs2.std.tsv").read_text()
    for value, expected, warned in (("T", "cbs2.std", False), ("D", "cbs2.std", False), ("F", "std", False),
                                    ("0", "std", False), ("x", "std", True)):
        r = run("blastp", "-comp_based_stats", value, "-query", TEST_DATA / "blastp-queries.faa",
                "-db", TEST_DATA / "proteome.faa", "-out", out, "-outfmt", "6 std", "-q")
        assert r.returncode == 0, r.stderr
        assert out.read_text() == (TEST_DATA / f"blastp-queries.{expected}.tsv").read_text(), value
        assert ("warning: -comp_based_stats 'x'" in r.stderr) == warned, r.stderr


def test_numba_goes_without_scipy_and_scipy_stays_importable():
    """Our numba (gpu_search._numba) runs numba's BLAS check with scipy's BLAS module marked
    absent, then takes the mark back: numba finds no BLAS, and the module is importable
    again afterwards (where scipy is installed)."""
    code = ("import sys\n"
            "from gpu_search._numba import numba\n"
            "import numba.np.arraymath as arraymath\n"
            "assert 'scipy.linalg.cython_blas' not in sys.modules, 'the mark was left behind'\n"
            "assert not arraymath._HAVE_BLAS\n"
            "assert 'scipy.linalg' not in sys.modules\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr


def test_cpu_search_from_gsdb_never_imports_numba(tmp_path):
    """hmmsearch on the CPU path from a .gsdb compiles nothing: numba (a quarter of a second of
    the start) is not imported; from FASTA its scanner is."""
    db = tmp_path / "p.gsdb"
    assert run("makedb", "-q", "-o", db, TEST_DATA / "proteome.faa").returncode == 0
    for target, imported in ((db, False), (TEST_DATA / "proteome.faa", True)):
        code = ("import sys\nfrom gpu_search import cli\n"
                f"cli.main(['hmmsearch', '-q', '--device', 'cpu', '-o', {os.devnull!r}, "
                f"{str(TEST_DATA / 'four-models.hmm')!r}, {str(target)!r}])\n"
                "print('numba' in sys.modules)\n")
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
        assert r.returncode == 0, r.stderr
        assert r.stdout.split()[-1] == str(imported)


def test_cuda_started_on_a_helper_thread(monkeypatch):
    """device.start_cuda: CuPy imported on the calling thread (on the helper where the run
    forks nothing), each chosen GPU's context created on a helper thread (wait_cuda joins
    it); nothing for --device cpu, nor without CuPy.  A stand-in CuPy records the calls."""
    import importlib.util
    import threading
    import types

    from gpu_search import device

    calls = []

    class Device:
        def __init__(self, d):
            self.d = d

        def __enter__(self):
            calls.append(("device", self.d, threading.current_thread().name))

        def __exit__(self, *exc):
            return False

    fake = types.ModuleType("cupy")
    fake.cuda = types.SimpleNamespace(Device=Device, runtime=types.SimpleNamespace(
        free=lambda ptr: calls.append(("free", ptr, threading.current_thread().name))))
    monkeypatch.setitem(sys.modules, "cupy", fake)
    monkeypatch.setattr(device, "gpu_status", lambda: (True, "2 GPU(s)", ["A", "B"]))
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: object() if name == "cupy" else real_find_spec(name, *a))
    monkeypatch.setattr(device, "_cuda_start", None)
    device.start_cuda("cpu")
    assert device._cuda_start is None
    device.start_cuda("gpu", [1])
    device.wait_cuda()
    assert calls == [("device", 1, "cuda-start"), ("free", 0, "cuda-start")]
    calls.clear()
    monkeypatch.setattr(device, "_cuda_start", None)
    device.start_cuda("auto")
    device.wait_cuda()
    assert [c[:2] for c in calls] == [("device", 0), ("free", 0), ("device", 1), ("free", 0)]
    # the HMMER programs fork nothing: CuPy is imported on the helper as well
    imported_on = []
    monkeypatch.setattr(device, "_import_cupy", lambda: imported_on.append(threading.current_thread().name) or fake)
    for forks, where in ((True, ["MainThread", "cuda-start"]), (False, ["cuda-start"])):
        imported_on.clear()
        monkeypatch.setattr(device, "_cuda_start", None)
        device.start_cuda("gpu", [0], forks=forks)
        device.wait_cuda()
        assert imported_on == where
    monkeypatch.setattr(device, "_cuda_start", None)
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None)
    device.start_cuda("gpu")
    assert device._cuda_start is None


def test_newline_in_file_names_keeps_comment_lines_comments(tmp_path):
    """A newline in an input's name (legal on POSIX) is written escaped in the tables' header
    and tail: every line that is not a row still starts with '#', so the rows read back are
    those of the same search under plain names."""
    import shutil

    odd = tmp_path / "odd\nname"
    odd.mkdir()
    hmm, faa = odd / "m\n.hmm", odd / "db\r.faa"
    shutil.copy(TEST_DATA / "four-models.hmm", hmm)
    shutil.copy(TEST_DATA / "proteome.faa", faa)
    rows = {}
    for key, (h, f) in {"odd": (hmm, faa), "plain": (TEST_DATA / "four-models.hmm", TEST_DATA / "proteome.faa")}.items():
        r = run("hmmsearch", "--device", "cpu", "--cpu", "1", "-o", tmp_path / f"{key}.txt",
                "--tblout", tmp_path / f"{key}.tbl", "--domtblout", tmp_path / f"{key}.dom", h, f, cwd=odd)
        assert r.returncode == 0, r.stderr
        rows[key] = [l for x in ("tbl", "dom") for l in (tmp_path / f"{key}.{x}").read_text().splitlines()
                     if not l.startswith("#")]
        if key == "odd":
            tail = (tmp_path / "odd.tbl").read_text().splitlines()
            assert "# Query file:      " + str(hmm).replace("\n", "\\n") in tail
            assert "# Target file:     " + str(faa).replace("\r", "\\r").replace("\n", "\\n") in tail
            assert any(l.startswith("# Current dir:     ") and l.endswith("odd\\nname") for l in tail)
            report = (tmp_path / "odd.txt").read_text().splitlines()
            assert "# query HMM file:                  " + str(hmm).replace("\n", "\\n") in report
    assert rows["odd"] == rows["plain"] and rows["plain"]
    db = odd / "b\nlast.faa"
    shutil.copy(TEST_DATA / "proteome.faa", db)
    r = run("blastp", "-query", TEST_DATA / "blastp-queries.faa", "-db", db, "-outfmt", "7", "-out",
            tmp_path / "b.tsv", "-num_threads", "1", "--device", "cpu", cwd=odd)
    assert r.returncode == 0, r.stderr
    lines = (tmp_path / "b.tsv").read_text().splitlines()
    assert all(l.startswith("#") or l.count("\t") == 11 for l in lines), lines[:8]
    assert any(l.startswith("# Database: ") and "b\\nlast" in l for l in lines)


def test_signal_surfacing_as_another_error_is_still_an_interruption(tmp_path, monkeypatch, capsys):
    """Ctrl-C or SIGTERM landing while compiled code hands back its result surfaces as a
    SystemError caused by the signal's exception: still 'interrupted' (130) or 'terminated'
    (143), not an internal error."""
    import signal

    from gpu_search import cli
    from gpu_search.hmmer import models

    for raised, code, line in ((KeyboardInterrupt(), 130, "gpu-search: interrupted"),
                               (cli.Terminated(signal.SIGTERM), 143, "gpu-search: terminated")):
        def broken(*args, raised=raised, **kwargs):
            try:
                raise raised
            except BaseException as exc:
                raise SystemError("<built-in function scan> returned a result with an exception set") from exc

        monkeypatch.setattr(models, "open_hmms", broken)
        with pytest.raises(SystemExit) as stop:
            cli.main(["hmmsearch", "--device", "cpu", "-o", str(tmp_path / "o"), str(TEST_DATA / "four-models.hmm"),
                      str(TEST_DATA / "proteome.faa")])
        assert stop.value.code == code and capsys.readouterr().err.splitlines() == [line]
        assert not list(tmp_path.iterdir())
