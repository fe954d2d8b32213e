"""Damaged inputs, made by a seeded mutator: every one read or refused with a documented error
(a GpuSearchError, one line), never a traceback, a crash or a hang, never an output left behind;
and refused wherever HMMER (pyhmmer's HMMFile and SequenceFile) refuses it.

A failure prints the seed and the mutation: ``mutate(data, random.Random(seed))`` remakes it.
"""

from __future__ import annotations

import io
import json
import os
import random
import shutil
import subprocess
import sys

import pytest
from conftest import ROOT, TEST_DATA

from gpu_search.errors import GpuSearchError

HMM_TEXT = TEST_DATA / "Thioesterase.hmm"
FASTA = TEST_DATA / "blastp-queries.faa"


def mutate(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    """One or two damages of ``data``, and their description."""
    done = []
    for _ in range(rng.choice((1, 1, 2))):
        n = max(len(data), 1)
        # anywhere, or in the header or the last bytes, where a few bytes say much
        at = rng.choice((rng.randrange(n), rng.randrange(n), rng.randrange(min(n, 400)),
                         max(0, n - 1 - rng.randrange(min(n, 200)))))
        kind = rng.choice(("flip", "flip", "insert", "delete", "truncate", "duplicate", "crlf",
                           "nul", "huge", "empty field", "blank lines"))
        if kind == "flip" and data:
            data = data[:at] + bytes([data[at] ^ rng.randrange(1, 256)]) + data[at + 1:]
        elif kind == "insert":
            data = data[:at] + bytes(rng.randrange(256) for _ in range(rng.randrange(1, 4))) + data[at:]
        elif kind == "delete":
            data = data[:at] + data[at + rng.randrange(1, 64):]
        elif kind == "truncate":
            data = data[:at]
        elif kind == "duplicate":
            # a record again (FASTA '>' or HMM 'HMMER' to the next one), after the first
            start = max(data.rfind(b"\n>", 0, at), data.rfind(b"\nHMMER", 0, at), 0)
            end = data.find(b"\n>", start + 1)
            end = len(data) if end < 0 else end
            data = data[:end] + data[start:end] + data[end:]
        elif kind == "crlf":
            data = data.replace(b"\n", b"\r\n")
        elif kind == "nul":
            data = data[:at] + b"\0" + data[at:]
        elif kind == "huge":
            data = data[:at] + rng.choice((b"99999999999999999999", b"1e999999", b"-2147483649", b"nan")) + data[at:]
        elif kind == "empty field":
            # a field of a line cut out (two spaces where a value was)
            sp = data.find(b" ", at)
            end = data.find(b" ", sp + 1) if sp >= 0 else -1
            if end > sp >= 0:
                data = data[:sp] + data[end:]
        elif kind == "blank lines":
            data = data[:at] + b"\n\n \t\n" + data[at:]
        done.append(f"{kind}@{at}")
    return data, ", ".join(done)


def hmm_inputs(count: int, seed: int):
    """(seed, mutation, bytes): text and binary HMM files damaged."""
    from pyhmmer.plan7 import HMMFile

    text = HMM_TEXT.read_bytes()
    with HMMFile(io.BytesIO(text)) as hf:
        model = next(hf)
    binary = io.BytesIO()
    model.write(binary, binary=True)
    sources = (text, binary.getvalue())
    for k in range(count):
        s = seed + k
        rng = random.Random(s)
        data, what = mutate(sources[k % 2], rng)
        yield s, f"{('text', 'binary')[k % 2]} {what}", data


# --- HMM files: read_hmms against HMMER's parser -----------------------------------------------

# HMMER's parser and read_hmms, on each mutant, in a child process: a crash of the parser must
# fail this test, not end the test run.  Our refusals where HMMER reads the file, and why:
DELIBERATE = ("has no closing '//' line",            # text cut inside its last model
              "records ('//' lines) but",             # a record HMMER merges with the next
              "does not end the file as written",     # binary cut in its last field
              "not probabilities",                    # values HMMER's search crashes on
              "has no consensus line",                # HMMER stops on it
              "is not ASCII text",                    # pyhmmer cannot decode it
              "no models in file",                    # HMMER reads none, silently
              "a NUL byte on line")                   # HMMER reads lines up to one (or crashes)
CHILD = r"""
import io, json, sys
from gpu_search.errors import GpuSearchError
from gpu_search.hmmer.models import read_hmms
from pyhmmer.easel import Alphabet, TextSequence, DigitalSequenceBlock
from pyhmmer.plan7 import HMMFile
import pyhmmer
path = sys.argv[1]
abc = Alphabet.amino()
targets = DigitalSequenceBlock(abc, [TextSequence(name=b"s%d" % i, sequence=s).digitize(abc) for i, s in
                                     enumerate(["MKVLAAGIVGWCDEHK" * 5, "ACDEFGHIKLMNPQRSTVWY" * 3])])
for line in sys.stdin:
    seed, data = json.loads(line)
    data = bytes.fromhex(data)
    open(path, "wb").write(data)
    print(json.dumps(["start", seed]), flush=True)
    try:
        hmms = read_hmms(path, threads=1)
        ours = ["read", len(hmms)]
        # the models read must be searchable (HMMER's search is what crashed on damaged ones)
        for hits in pyhmmer.hmmsearch(hmms, targets, cpus=1):
            len(hits)
    except GpuSearchError as exc:
        ours = [type(exc).__name__, str(exc)]
    except BaseException as exc:
        ours = ["BUG " + type(exc).__name__, str(exc)]
    hmmer = None
    if ours[0] == "read" or not any(w in ours[1] for w in ("ALPH line", "alphabet code", "NUL byte")):
        try:                # (the refusals above are files HMMER's parser can crash on)
            with HMMFile(io.BytesIO(data)) as hf:
                hmmer = len(list(hf))
        except Exception as exc:
            hmmer = type(exc).__name__
    print(json.dumps(["done", seed, ours, hmmer]), flush=True)
"""


def test_damaged_hmm_files(tmp_path):
    cases = {s: (what, data) for s, what, data in hmm_inputs(1000, seed=1000)}
    stdin = "".join(json.dumps([s, d.hex()]) + "\n" for s, (_, d) in cases.items())
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    r = subprocess.run([sys.executable, "-c", CHILD, str(tmp_path / "m.hmm")], input=stdin,
                       capture_output=True, text=True, timeout=300, env=env)
    rows = [json.loads(line) for line in r.stdout.splitlines()]
    if r.returncode != 0:
        last = rows[-1][1]
        pytest.fail(f"the reader crashed (exit {r.returncode}) on seed {last} ({cases[last][0]}): {r.stderr[-300:]}")
    done = [row for row in rows if row[0] == "done"]
    assert len(done) == len(cases)
    kinds = set()
    for _, seed, (ours, msg), hmmer in done:
        label = f"seed {seed} ({cases[seed][0]}): ours {ours} {msg!r}, HMMER {hmmer!r}"
        assert not ours.startswith("BUG"), label
        assert r.stderr == "", r.stderr[-300:]
        if ours == "read":
            assert hmmer == msg, label                              # the same models
        else:
            assert ours in ("FormatError", "EmptyInputError", "AlphabetError"), label
            assert msg.isprintable() and len(msg) < 600, label
            if isinstance(hmmer, int):                               # HMMER read it: a refusal of ours
                assert any(w in msg for w in DELIBERATE), label
        kinds.add(ours)
    assert {"read", "FormatError"} <= kinds        # the mutator made both readable and damaged files
    assert os.listdir(tmp_path) == ["m.hmm"]


# --- FASTA: read_fasta against Easel's reader ---------------------------------------------------

# our refusals where Easel reads the file (README: refused before any search)
FASTA_DELIBERATE = ("is empty", "without a sequence name", "looks like nucleotide", "no sequences")


def easel_reads(data: bytes):
    from pyhmmer.easel import Alphabet, SequenceFile

    try:
        with SequenceFile(io.BytesIO(data), format="fasta", digital=True, alphabet=Alphabet.amino()) as sf:
            return len(list(sf))
    except Exception as exc:
        return type(exc).__name__


def test_damaged_fasta_files(tmp_path):
    from gpu_search.seqdb import open_database, read_fasta

    source = FASTA.read_bytes()
    path = tmp_path / "q.faa"
    refused = 0
    for seed in range(2000, 3000):
        rng = random.Random(seed)
        data, what = mutate(source, rng)
        if b"\r" in data.replace(b"\r\n", b""):
            continue            # lone carriage returns: their own tests (tests/test_seqdb.py)
        path.write_bytes(data)
        easel = easel_reads(data)
        for read in (read_fasta, open_database):
            label = f"seed {seed} ({what}), {read.__name__}: Easel {easel!r}"
            try:
                n = read(path).n_seqs
            except GpuSearchError as exc:
                msg = str(exc)
                assert "\n" not in msg and len(msg) < 600, f"{label}: {msg!r}"
                if isinstance(easel, int) and easel > 0 and "invalid residue '>'" not in msg:
                    # ('>' inside a line: test_gt_inside_a_line_starts_a_record below)
                    assert any(w in msg for w in FASTA_DELIBERATE), f"{label}: ours {msg!r}"
                refused += read is read_fasta
            except Exception as exc:
                pytest.fail(f"{label}: {type(exc).__name__}: {exc}")
            else:
                assert n == easel, f"{label}: ours {n} sequences"
    assert 50 < refused < 950
    assert os.listdir(tmp_path) == ["q.faa"]


def test_gt_inside_a_line_refused_as_blast_does(tmp_path):
    """A '>' inside a sequence line: Easel starts a new record there, the rest of the line its
    header; BLAST+'s makeblastdb refuses the file. The two references disagree, and gpu-search
    reads one FASTA for both searches: it refuses it as BLAST+ does (a damaged file is more
    likely than a header glued to a sequence line), with the residue and line (documented in
    the README)."""
    from gpu_search.errors import SequenceError
    from gpu_search.seqdb import read_fasta

    data = b">a\nACDEF>b second\nGHIKL\n"
    assert easel_reads(data) == 2
    path = tmp_path / "gt.faa"
    path.write_bytes(data)
    with pytest.raises(SequenceError, match="'>'"):
        read_fasta(path)
    makeblastdb = shutil.which("makeblastdb")
    if makeblastdb:
        r = subprocess.run([makeblastdb, "-in", str(path), "-dbtype", "prot", "-out", str(tmp_path / "db")],
                           capture_output=True, text=True)
        assert r.returncode != 0 and "does not match input format" in r.stdout + r.stderr, r


# --- the command line, in the process: damaged inputs, random option values ---------------------


def random_options(rng: random.Random, command: str) -> list[str]:
    """A few options with values from the sensible to the absurd."""
    values = ["0", "-1", "1e-300", "1e308", "nan", "inf", "-inf", "10", "0.5", "abc", "", "2147483648",
              "99999999999999999999", "1,2", " 3"]
    names = {"hmmsearch": ["-E", "-T", "--domE", "--incE", "--F1", "--F2", "--F3", "-Z", "--domZ",
                           "--seed", "--cpu", "--textw", "--gpus"],
             "blastp": ["-evalue", "-max_target_seqs", "-max_hsps", "-word_size", "-threshold",
                        "-window_size", "-gapopen", "-gapextend", "-num_threads", "-outfmt",
                        "-matrix", "-comp_based_stats", "-dbsize"]}[command]
    args = []
    for name in rng.sample(names, rng.randrange(0, 3)):
        args += [name, rng.choice(values)]
    return args


def run_in_process(argv) -> tuple[int, str]:
    from contextlib import redirect_stderr, redirect_stdout

    from gpu_search.cli import main

    err = io.StringIO()
    with redirect_stderr(err), redirect_stdout(io.StringIO()):
        try:
            main(argv)
            code = 0
        except SystemExit as exc:
            code = exc.code
    return code, err.getvalue()


DOCUMENTED = {0, 2, 3, 4, 5, 6, 7, 10}


def check_run(label, code, stderr, out_dir):
    assert code in DOCUMENTED, f"{label}: exit {code}: {stderr[-400:]}"
    assert "Traceback" not in stderr and "internal error" not in stderr, f"{label}: {stderr[-400:]}"
    if code != 0:
        errors = [l for l in stderr.splitlines() if l.startswith("gpu-search: error:")]
        if code != 2:                 # (click's usage errors take two lines, as BLAST+'s do)
            assert len(errors) == 1 and stderr.count("\n") == 1, f"{label}: {stderr!r}"
        assert sorted(os.listdir(out_dir)) == [], f"{label}: outputs left: {os.listdir(out_dir)}"


def test_command_line_damaged_inputs_and_options(tmp_path):
    from gpu_search.seqdb import makedb

    db = tmp_path / "db.gsdb"
    makedb(FASTA, db)
    hmm_cases = list(hmm_inputs(40, seed=5000))
    source = FASTA.read_bytes()
    codes = []
    for k in range(80):
        seed = 6000 + k
        rng = random.Random(seed)
        out = tmp_path / f"out{k}"
        out.mkdir()
        if k % 2 == 0:
            s, what, data = hmm_cases[k // 2]
            inp = tmp_path / f"m{k}.hmm"
            inp.write_bytes(data)
            argv = ["hmmsearch", "--device", "cpu", "-q", *random_options(rng, "hmmsearch"),
                    "-o", str(out / "o.txt"), "--tblout", str(out / "t.tbl"), str(inp), str(db)]
            label = f"seed {seed}, HMM seed {s} ({what}): {argv}"
        else:
            data, what = mutate(source, rng)
            inp = tmp_path / f"q{k}.faa"
            inp.write_bytes(data)
            argv = ["blastp", "-query", str(inp), "-db", str(db), "--device", "cpu", "-q",
                    *random_options(rng, "blastp"), "-out", str(out / "rows.tsv")]
            label = f"seed {seed} ({what}): {argv}"
        code, stderr = run_in_process(argv)
        codes.append(code)
        if code == 0:
            for name in os.listdir(out):
                os.remove(out / name)
        check_run(label, code, stderr, out)
    print(sorted(codes))
    assert codes.count(0) >= 10 and codes.count(5) >= 5 and codes.count(2) >= 5, sorted(codes)


# option values that ended as internal errors (exit 1), found by the fuzz: BLAST+ 2.12 runs with
# the first two (C's (int) of a double out of range gives INT_MIN on x86-64; gpu-search does the
# same, rows checked against BLAST+ in tests/blast/test_blastp.py) and the third (its 32-bit
# arithmetic overflowing: gpu-search refuses it, exit 2); HMMER 3.4 refuses the last
OPTION_VALUES = [
    ["blastp", "-threshold", "1e308"],
    ["blastp", "-evalue", "1e-308"],
    ["blastp", "-window_size", "2147483647"],
    ["hmmsearch", "--seed", "99999999999999999999"],
]


@pytest.mark.parametrize("args", OPTION_VALUES, ids=[" ".join(a) for a in OPTION_VALUES])
def test_option_values_beyond_range(args, tmp_path):
    """Each must run (exit 0) or be an option error (exit 2), never exit 1."""
    out = tmp_path / "out"
    out.mkdir()
    if args[0] == "blastp":
        argv = [*args, "-query", str(FASTA), "-db", str(FASTA), "--device", "cpu", "-q", "-out", str(out / "rows.tsv")]
    else:
        argv = [*args, "--device", "cpu", "-q", "-o", str(out / "o.txt"), str(HMM_TEXT), str(FASTA)]
    code, stderr = run_in_process(argv)
    assert code in (0, 2), stderr
    check_run(f"{argv}", code, stderr, out)


def test_file_name_with_a_newline_one_line(tmp_path):
    code, stderr = run_in_process(["hmmsearch", "--device", "cpu", "-q", str(tmp_path / "no\nsuch.hmm"), str(FASTA)])
    assert code == 3 and stderr.count("\n") == 1 and stderr.rstrip("\n").isprintable(), repr(stderr)


# --- a few real processes: bin/gpu-search and python -m gpu_search ----------------------------------


def test_real_processes_on_damaged_inputs(tmp_path):
    """24 damaged inputs through the real programs, four at a time: one line, a documented
    exit code, nothing left behind, within 60 s each."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), PATH=os.path.dirname(sys.executable) + os.pathsep
               + os.environ.get("PATH", ""))
    source_faa = FASTA.read_bytes()
    hmm_cases = list(hmm_inputs(12, seed=7000))
    runs = []
    for k in range(24):
        rng = random.Random(8000 + k)
        out = tmp_path / f"out{k}"
        out.mkdir()
        program = [str(ROOT / "bin" / "gpu-search")] if k % 3 == 0 else [sys.executable, "-m", "gpu_search"]
        if k % 2 == 0:
            s, what, data = hmm_cases[k // 2]
            inp = tmp_path / f"m{k}.hmm"
            inp.write_bytes(data)
            args = ["hmmsearch", "--device", "cpu", "-q", "--cpu", "1", "-o", str(out / "o"), str(inp), str(FASTA)]
            label = f"HMM seed {s} ({what})"
        else:
            data, what = mutate(source_faa, rng)
            inp = tmp_path / f"q{k}.faa"
            inp.write_bytes(data)
            args = ["makedb", "-q", str(inp), "-o", str(out / "db.gsdb")]
            label = f"FASTA seed {8000 + k} ({what})"
        runs.append((label, out, program + args))
    for i in range(0, len(runs), 4):
        procs = [(label, out, subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                               text=True, env=env)) for label, out, cmd in runs[i:i + 4]]
        for label, out, p in procs:
            try:
                _, stderr = p.communicate(timeout=60)
            except subprocess.TimeoutExpired:
                p.kill()
                pytest.fail(f"{label}: still running after 60 s")
            if p.returncode == 0:
                for name in os.listdir(out):
                    os.remove(out / name)
            check_run(label, p.returncode, stderr, out)


# --- BLAST+'s makeblastdb, where it is installed -----------------------------------------------------


def test_makeblastdb_refuses_what_we_refuse(tmp_path):
    """A FASTA file makeblastdb refuses outright is refused here too (makeblastdb takes
    many files Easel refuses, with warnings: only its refusals are compared)."""

    from gpu_search.seqdb import read_fasta

    if shutil.which("makeblastdb") is None:
        pytest.skip("BLAST+'s makeblastdb is not installed here")
    source = FASTA.read_bytes()
    compared = 0
    for seed in range(9000, 9080):
        data, what = mutate(source, random.Random(seed))
        path = tmp_path / f"q{seed}.faa"
        path.write_bytes(data)
        r = subprocess.run(["makeblastdb", "-in", str(path), "-dbtype", "prot", "-out", str(tmp_path / "bdb")],
                           capture_output=True, text=True, errors="replace", timeout=60)
        if r.returncode == 0:
            continue
        compared += 1
        with pytest.raises(GpuSearchError):
            read_fasta(path)
            pytest.fail(f"seed {seed} ({what}): makeblastdb refused it ({r.stderr.strip()[-200:]}), we read it")
    assert compared >= 3, f"makeblastdb refused only {compared} of 80 damaged files"
