"""Sequence inputs as they come: pipes read once, inputs that never end, CR line endings as
Easel reads them, makedb writing as it reads (the same bytes as before), Ctrl-C and SIGTERM
during the scan."""

from __future__ import annotations

import gzip
import hashlib
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from conftest import ROOT, TEST_DATA

from gpu_search import errors, seqdb


def generated_fasta(n_seqs: int, seed: int, eol: str = "\n", width: int = 60) -> bytes:
    """Protein FASTA: lengths 1 to 900 (many equal: the length order's ties), names with and
    without descriptions (tabs in them), lower case, X and *."""
    rng = random.Random(seed)
    letters = "ACDEFGHIKLMNPQRSTVWY"
    lines = []
    for i in range(n_seqs):
        length = rng.choice((rng.randint(1, 30), rng.randint(31, 900), 120, 121))
        seq = "".join(rng.choices(letters, k=length))
        if i % 7 == 3:
            seq = seq.lower()
        if i % 11 == 5:
            seq = seq[:length // 2] + "X*"[: length - length // 2] + seq[length // 2 + 2:]
        desc = "" if i % 5 == 0 else f" protein {i} of\tsample {seed}"
        lines.append(f">seq{i}{desc}")
        lines += [seq[j:j + width] for j in range(0, length, width)]
    return (eol.join(lines) + eol).encode()


INPUTS = {"proteome.faa": lambda: (TEST_DATA / "proteome.faa").read_bytes(),
          "gen.faa": lambda: generated_fasta(3000, 7),
          "two.faa": lambda: generated_fasta(2, 5)}

CASES = [("proteome.faa", 1), ("proteome.faa", 4), ("gen.faa", 1), ("gen.faa", 3), ("two.faa", 3)]


def loaded_whole(name: str, shards: int, where: Path) -> list[str]:
    """SHA-256 of the files makedb writes from INPUTS[name] read whole into memory and written
    from there (the path of a database loaded whole: a BLAST database, a .gsdb), which streamed
    makedb must equal byte for byte; ``where`` is a new folder (the input's file name is in
    the header)."""
    where.mkdir()
    (where / name).write_bytes(INPUTS[name]())
    return sha256(seqdb._makedb_of(seqdb.read_fasta(where / name), where / "db.gsdb", shards))


def sha256(paths) -> list[str]:
    return [hashlib.sha256(p.read_bytes()).hexdigest() for p in paths]


def small_pieces(monkeypatch, piece: int = 997, batch: int = 37) -> None:
    """Read, gunzip and sort in tiny steps, so that every boundary between steps is crossed."""
    monkeypatch.setattr(seqdb, "PIECE", piece)
    monkeypatch.setattr(seqdb, "_ORDER_BATCH", batch)


def env():
    return dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))


def cli(*args, timeout=60, **kwargs):
    """gpu-search as a user runs it; an input read twice hangs: a failure, not a stuck test."""
    try:
        return subprocess.run([sys.executable, "-m", "gpu_search", *map(str, args)], capture_output=True,
                              text=True, env=env(), timeout=timeout, **kwargs)
    except subprocess.TimeoutExpired:
        pytest.fail(f"gpu-search {' '.join(map(str, args))} did not end in {timeout} s")


def bash(script, timeout=120):
    """A bash command line (process substitution), gpu-search on PATH as ``python -m``."""
    try:
        return subprocess.run(["bash", "-c", f'gs() {{ "{sys.executable}" -m gpu_search "$@"; }}; {script}'],
                              capture_output=True, text=True, env=env(), timeout=timeout)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{script} did not end in {timeout} s")


# --- makedb: the same bytes as before, however the input comes -------------------------------


@pytest.mark.parametrize("tiny", [False, True], ids=["pieces", "tiny-pieces"])
@pytest.mark.parametrize("name, shards", CASES)
def test_makedb_streamed_writes_the_files_of_a_database_loaded_whole(name, shards, tiny, tmp_path, monkeypatch):
    want = loaded_whole(name, shards, tmp_path / "whole")
    (tmp_path / "streamed").mkdir()
    if tiny:
        small_pieces(monkeypatch)
    (tmp_path / "streamed" / name).write_bytes(INPUTS[name]())
    paths = seqdb.makedb(tmp_path / "streamed" / name, tmp_path / "streamed" / "db.gsdb", shards=shards)
    assert len(paths) == len(want) and sha256(paths) == want
    assert sorted(p.name for p in (tmp_path / "streamed").iterdir()) == sorted([name] + [p.name for p in paths])


@pytest.mark.parametrize("form", ["CR", "CRLF", "gzip, two members and zero padding"])
def test_makedb_same_files_from_other_line_ends_and_gzip(form, tmp_path, monkeypatch):
    want = loaded_whole("gen.faa", 3, tmp_path / "whole")
    small_pieces(monkeypatch)
    text = generated_fasta(3000, 7, eol={"CR": "\r", "CRLF": "\r\n"}.get(form, "\n"))
    if form.startswith("gzip"):
        cut = text.index(b">seq1001 ")
        text = gzip.compress(text[:cut]) + bytes(100) + gzip.compress(text[cut:])
    (tmp_path / "gen.faa").write_bytes(text)
    assert sha256(seqdb.makedb(tmp_path / "gen.faa", tmp_path / "db.gsdb", shards=3)) == want


def test_shard_cuts_from_pieces_equal_shard_bounds():
    """The shard cuts found a piece of running sums at a time are those of the whole array."""
    rng = np.random.default_rng(5)
    for _ in range(300):
        lengths = rng.integers(1, int(rng.choice([3, 50, 5000])), int(rng.integers(1, 60)))
        cum = np.cumsum(lengths)
        for shards in (1, 2, 3, 7, 80):
            step = int(rng.integers(1, 9))
            pieces = [cum[i:i + step] for i in range(0, len(cum), step)]
            assert seqdb._cut(len(lengths), int(cum[-1]), shards, pieces) == seqdb.shard_bounds(lengths, shards)


# --- pipes: read once ------------------------------------------------------------------------------


def test_makedb_from_pipes(tmp_path, proteome):
    """A named pipe fed gzip, and bash's <(...) of a .gsdb, are read once: the same files as
    from the files (the format told from the bytes read, not by opening the input again)."""
    want = loaded_whole("gen.faa", 3, tmp_path / "whole")
    text = generated_fasta(3000, 7)
    (tmp_path / "gen.faa.gz").write_bytes(gzip.compress(text))
    (tmp_path / "pipe").mkdir()
    fifo = tmp_path / "pipe" / "gen.faa"                # the name is in the .gsdb's header
    os.mkfifo(fifo)
    seqdb.write_gsdb(proteome, tmp_path / "p.gsdb")
    r = bash(f'cat "{tmp_path / "gen.faa.gz"}" > "{fifo}" & gs makedb "{fifo}" -o "{tmp_path / "db.gsdb"}" '
             f'--shards 3 -q; rc=$?; wait; [ $rc = 0 ] || exit $rc; '
             f'gs makedb <(cat "{tmp_path / "p.gsdb"}") -o "{tmp_path / "again.gsdb"}" -q')
    assert r.returncode == 0 and r.stderr == "", r.stderr
    assert sha256([tmp_path / f"db.shard{i}of3.gsdb" for i in (1, 2, 3)]) == want
    again = seqdb.open_database(tmp_path / "again.gsdb")
    assert np.array_equal(again.residues, proteome.residues) and np.array_equal(again.offsets, proteome.offsets)


def test_blastp_reads_pipes(tmp_path):
    """blastp's query through <(cat ...), its database through <(gzip -dc ...): BLAST+'s rows
    (its defaults: composition-based statistics 2)."""
    gz = tmp_path / "p.faa.gz"
    gz.write_bytes(gzip.compress((TEST_DATA / "proteome.faa").read_bytes()))
    r = bash(f'gs blastp -query <(cat "{TEST_DATA / "blastp-queries.faa"}") -db <(gzip -dc "{gz}") '
             f'-outfmt "6 std" -out "{tmp_path / "rows.tsv"}" -q')
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "rows.tsv").read_text() == (TEST_DATA / "blastp-queries.cbs2.std.tsv").read_text()


# --- inputs that never end, binary ones ---------------------------------------------------------


def test_endless_inputs_are_refused_at_once(tmp_path):
    """/dev/zero and a header line that never ends (a '>' then bytes without a line end, from
    a pipe): one line, the format error, in seconds (both were read into memory until it ran out)."""
    r = cli("makedb", "/dev/zero", "-o", tmp_path / "z.gsdb", timeout=30)
    assert r.returncode == 5 and r.stderr.strip().splitlines() == [
        "gpu-search: error: /dev/zero: not FASTA (a FASTA file starts with '>' header lines)"], r.stderr
    writer = subprocess.Popen([sys.executable, "-c", "import sys\nout = sys.stdout.buffer\nout.write(b'>x ')\n"
                               "while True: out.write(b'A' * 65536)"], stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL)
    try:
        r = cli("makedb", "/dev/stdin", "-o", tmp_path / "h.gsdb", stdin=writer.stdout, timeout=60)
    finally:
        writer.kill()
        writer.wait()
        writer.stdout.close()
    assert r.returncode == 5 and r.stderr.strip().splitlines() == [
        "gpu-search: error: /dev/stdin: a header line longer than 64 MiB (line 1); not a FASTA file?"], r.stderr
    assert list(tmp_path.iterdir()) == []


def test_binary_input_one_line(tmp_path):
    """Random bytes after a '>': an error on one line, the sequence name's control characters
    escaped (some of them end a line for Python's splitlines)."""
    (tmp_path / "binary.faa").write_bytes(b">" + random.Random(3).randbytes(300_000))
    with pytest.raises((errors.FormatError, errors.SequenceError)) as caught:
        seqdb.read_fasta(tmp_path / "binary.faa")
    assert len(str(caught.value).splitlines()) == 1 and str(caught.value).isprintable()


def test_a_long_header_line_in_pieces(tmp_path, monkeypatch):
    """The header line limit holds across pieces; a header up to it is read whole."""
    monkeypatch.setattr(seqdb, "MAX_HEADER_LINE", 5000)
    small_pieces(monkeypatch, piece=1000)
    (tmp_path / "ok.faa").write_bytes(b">a " + b"d" * 4990 + b"\nACDE\n>b\nWW\n")
    db = seqdb.read_fasta(tmp_path / "ok.faa")
    assert db.description(0) == "d" * 4990 and db.text(0) == "ACDE" and db.text(1) == "WW"
    (tmp_path / "long.faa").write_bytes(b">a\nACDE\n\n>b " + b"d" * 6000 + b"\nWW\n")
    with pytest.raises(errors.FormatError, match=r"a header line longer than 5,000 bytes \(line 4\)"):
        seqdb.read_fasta(tmp_path / "long.faa")


# --- CR line ends: as Easel reads them ------------------------------------------------------------

ODD = {
    "CR": b">a first one\rACDEF\rghik\r\r>b\tdesc x  \rWWW\r",
    "CR, no last line end": b">a first one\rACDEF\rGHIK\r>b\rWWW",
    "CRLF": b">a first one\r\nACDEF\r\nGHIK\r\n>b\tdesc x  \r\nWWW\r\n",
    "mixed": b">a first one\rACDEF\nGHIK\r\n>b desc\rWWW\n\r\n",
    "CR inside a header line": b">a desc\rmore\nACDE\n>b\nW\n",
    "CR inside a sequence line": b">a desc\nAC\rDE\n",
    "blank CR lines": b"\r\r  \r\n>a d\r\r\rAC\r\r>b\r\rW\r",
}


@pytest.mark.parametrize("piece", [None, 1, 3], ids=["whole", "1-byte pieces", "3-byte pieces"])
@pytest.mark.parametrize("case", list(ODD))
def test_line_ends_read_as_easel_reads_them(case, piece, tmp_path, monkeypatch):
    """Names, descriptions and sequences as pyhmmer's (Easel's) FASTA reader gives them."""
    from pyhmmer.easel import Alphabet, SequenceFile

    if piece:
        small_pieces(monkeypatch, piece=piece)
    path = tmp_path / "odd.faa"
    path.write_bytes(ODD[case])
    abc = Alphabet.amino()
    with SequenceFile(str(path), digital=True, alphabet=abc, format="fasta") as f:
        want = [(s.name, s.description, abc.decode(s.sequence)) for s in f]
    for p in (path, tmp_path / "odd.faa.gz"):
        if p.suffix == ".gz":
            p.write_bytes(gzip.compress(ODD[case]))
        db = seqdb.open_database(p)
        assert [(db.name(i), db.description(i), db.text(i)) for i in range(db.n_seqs)] == want


@pytest.mark.parametrize("piece", [None, 2, 5])
@pytest.mark.parametrize("text, error, words", [
    (b">a\rAC\r>b\rA1\r", errors.SequenceError, r"invalid residue '1' in sequence 'b' \(line 4\)"),
    (b">a\r\nAC\r\n>b\r\nA1\r\n", errors.SequenceError, r"invalid residue '1' in sequence 'b' \(line 4\)"),
    (b">a\nAC\n\n\r\n>b\nA\nA1\n", errors.SequenceError, r"invalid residue '1' in sequence 'b' \(line 7\)"),
    (b">a\rAC\r>  \rWW\r", errors.FormatError, r"header without a sequence name \(line 3\)"),
    (b">a\rAC\r>b\r>c\rW\r>d\r", errors.SequenceError, r"sequence 'b' is empty \(2 empty"),
    (b"\x00\x00>a\nAC\n", errors.FormatError, "not FASTA"),
    (b" \r\n\t", errors.EmptyInputError, "file is empty"),
])
def test_errors_name_the_line_across_pieces(text, error, words, piece, tmp_path, monkeypatch):
    if piece:
        small_pieces(monkeypatch, piece=piece)
    (tmp_path / "x.faa").write_bytes(text)
    with pytest.raises(error, match=words):
        seqdb.read_fasta(tmp_path / "x.faa")


# --- Ctrl-C and SIGTERM during the scan -----------------------------------------------------------

INTERRUPTED_SCANS = r"""
import os, signal, sys, threading, time
from gpu_search import seqdb
data = open(sys.argv[1], "rb").read() * 4
seqdb.parse_fasta(data[:100000].rsplit(b">", 1)[0])      # numba's compiled code loaded
done = threading.Event()
def interrupt():                 # Ctrl-C again and again, most of them inside the compiled scan
    while not done.is_set():
        time.sleep(0.013)
        os.kill(os.getpid(), signal.SIGINT)
sender = threading.Thread(target=interrupt, daemon=True)
sender.start()
caught = 0
give_up = time.monotonic() + 30  # (a loaded machine gives the signalling thread few turns)
while caught < 10 and time.monotonic() < give_up:
    try:
        seqdb.parse_fasta(data)
    except KeyboardInterrupt:
        caught += 1
while True:                      # the signals still on their way, ignored
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        done.set()
        sender.join()
        break
    except KeyboardInterrupt:
        caught += 1
print("interrupted", caught)
"""


def sigint_at_its_default():
    """A child's SIGINT at its default, as a shell at a terminal starts it: a non-interactive
    shell starts background jobs with SIGINT ignored, every child inherits that, and Python
    then keeps it ignored (the signals these tests send would reach nothing)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_ctrl_c_inside_the_compiled_scan_is_a_keyboard_interrupt(tmp_path):
    """A signal that lands while the compiled scanner runs is raised once it returns: no
    segmentation fault, no SystemError (numba's boxing of returned arrays ran Python code,
    where the signal's handler raised)."""
    (tmp_path / "gen.faa").write_bytes(generated_fasta(3000, 7))
    r = subprocess.run([sys.executable, "-c", INTERRUPTED_SCANS, str(tmp_path / "gen.faa")], capture_output=True,
                       text=True, env=env(), timeout=60, preexec_fn=sigint_at_its_default)
    assert r.returncode == 0 and r.stdout.startswith("interrupted"), (r.returncode, r.stderr[-2000:])
    assert int(r.stdout.split()[1]) > 5


ENDLESS_FASTA = r"""
import sys
block = open(sys.argv[1], "rb").read()
out = sys.stdout.buffer
while True:
    out.write(block)
"""


@pytest.mark.parametrize("sig, code, words, shards", [
    (signal.SIGINT, 130, "gpu-search: interrupted", 1),
    (signal.SIGTERM, 143, "gpu-search: terminated", 3),
])
def test_makedb_stopped_mid_scan_leaves_nothing(sig, code, words, shards, tmp_path):
    """makedb of a pipe that never ends, stopped while it reads and writes: one line, the
    signal's exit code, no .gsdb, no shard, no temporary file."""
    (tmp_path / "in").mkdir()
    (tmp_path / "out").mkdir()
    block = tmp_path / "in" / "block.faa"
    block.write_bytes(generated_fasta(3000, 7))
    writer = subprocess.Popen([sys.executable, "-c", ENDLESS_FASTA, str(block)], stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL)
    p = subprocess.Popen([sys.executable, "-m", "gpu_search", "makedb", "/dev/stdin", "-o",
                          str(tmp_path / "out" / "db.gsdb"), "--shards", str(shards)],
                         stdin=writer.stdout, stderr=subprocess.PIPE, text=True, env=env(),
                         preexec_fn=sigint_at_its_default)
    writer.stdout.close()
    try:
        # numba loaded (a second or two), then reading and writing until stopped
        start = time.monotonic()
        while p.poll() is None and time.monotonic() - start < 3:
            time.sleep(0.05)
        assert p.poll() is None, p.stderr.read()
        p.send_signal(sig)
        err = p.communicate(timeout=30)[1]
    finally:
        writer.kill()
        writer.wait()
        if p.poll() is None:
            p.kill()
    assert p.returncode == code and err.strip().splitlines() == [words], (p.returncode, err[-2000:])
    assert list((tmp_path / "out").iterdir()) == []


MEMORY = r"""
import resource, sys
from gpu_search import seqdb
seqdb.PIECE, seqdb._ORDER_BATCH = 1 << 20, 1 << 14         # steps of 1 MiB: a test's sizes
seqdb.makedb(sys.argv[1], sys.argv[3])
small = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
seqdb.makedb(sys.argv[2], sys.argv[3])
print(small, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def test_makedb_memory_does_not_grow_with_the_database(tmp_path):
    """Peak memory (kB) after a 6 MB and then a 63 MB FASTA, read in steps of 1 MiB: the
    larger adds little (it held the whole input and its residues before: some 110 MB more)."""
    block = generated_fasta(3000, 7)
    (tmp_path / "small.faa").write_bytes(block * 10)
    with open(tmp_path / "large.faa", "wb") as fh:
        for _ in range(100):
            fh.write(block)
    r = subprocess.run([sys.executable, "-c", MEMORY, str(tmp_path / "small.faa"), str(tmp_path / "large.faa"),
                        str(tmp_path / "db.gsdb")], capture_output=True, text=True, env=env(), timeout=120)
    assert r.returncode == 0, r.stderr
    small, large = map(int, r.stdout.split())
    assert large - small < 40_000, (small, large)


def test_makedb_progress_on_a_terminal(tmp_path, monkeypatch):
    """makedb's line on a terminal: sequences so far, the residues after them, the rate;
    nothing with quiet."""
    import io
    from types import SimpleNamespace

    from gpu_search.progress import Progress

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    out = Terminal()
    clock = iter([100.0, 102.0])       # started at 100 s, updated at 102 s: a rate free of timing noise
    monkeypatch.setattr("gpu_search.progress.time", SimpleNamespace(monotonic=lambda: next(clock)))
    p = Progress("makedb", None, "sequences", stream=out)
    p.update(120_000, "41,210,003 residues")
    monkeypatch.undo()
    assert "makedb: 120,000 sequences, 41,210,003 residues (2 s, 60,000/s)" in out.getvalue()
    text = generated_fasta(30, 7)
    residues = sum(len(line) for line in text.splitlines() if not line.startswith(b">"))
    (tmp_path / "gen.faa").write_bytes(text)
    for quiet in (False, True):
        monkeypatch.setattr(sys, "stderr", Terminal())
        seqdb.makedb(tmp_path / "gen.faa", tmp_path / "db.gsdb", quiet=quiet)
        shown = sys.stderr.getvalue()
        assert (f"\rmakedb: 30 sequences, {residues:,} residues (" in shown) != quiet, shown
