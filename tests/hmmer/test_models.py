"""Reading HMM files: a large text file parsed in pieces on several threads gives the models
of a one-thread parse, in file order, and a bad record the same error."""

from __future__ import annotations

import io
import re

import pytest

from gpu_search.errors import FormatError
from gpu_search.hmmer import models


def serial(data: bytes) -> list:
    from pyhmmer.plan7 import HMMFile

    with HMMFile(io.BytesIO(data)) as hf:
        return list(hf)


@pytest.fixture(scope="module")
def many_models(data_dir) -> bytes:
    """Real Pfam-like models of several files, 24 records, as one text file."""
    names = ["Thioesterase", "PF02826", "LuxC", "KR", "RREFam"]
    texts = [(data_dir / "hmms" / "txt" / f"{n}.hmm").read_bytes() for n in names]
    return b"".join(texts * 4)


def test_pieces_equal_one_thread(many_models, tmp_path, monkeypatch):
    path = tmp_path / "many.hmm"
    path.write_bytes(many_models)
    expected = serial(many_models)
    assert len(expected) >= 20
    monkeypatch.setattr(models, "PARALLEL_PARSE_BYTES", 1)
    assert models._parse_in_pieces(many_models, 3) is not None        # really cut into pieces
    for threads in (2, 3, 8):
        got = models.read_hmms(path, threads=threads)
        assert [h.name for h in got] == [h.name for h in expected]
        assert all(a == b for a, b in zip(got, expected))


def test_bad_record_in_a_piece_reports_as_one_thread(many_models, tmp_path, monkeypatch):
    """A corrupt record half-way: the pieces give up, and the whole file's parse reports it."""
    middle = many_models.find(b"\n//\n", len(many_models) // 2) + 4
    line = many_models.find(b"\n  1 ", middle)           # the first match line of the next model
    bad = many_models[:line + 1] + b"  1   garbage\n" + many_models[many_models.find(b"\n", line + 1) + 1:]
    path = tmp_path / "bad.hmm"
    path.write_bytes(bad)
    with pytest.raises(FormatError) as one:
        models.read_hmms(path, threads=1)
    monkeypatch.setattr(models, "PARALLEL_PARSE_BYTES", 1)
    assert models._parse_in_pieces(bad, 4) is None
    with pytest.raises(FormatError) as pieces:
        models.read_hmms(path, threads=4)
    assert str(pieces.value).split(" (")[0] == str(one.value).split(" (")[0]
    assert "not a valid HMMER profile file" in str(pieces.value)


def test_a_file_cut_inside_its_last_model_is_an_error(many_models, tmp_path):
    """HMMER reads a text HMM file cut inside its last model as one model shorter, silently;
    here it is a FormatError naming that model, wherever the cut falls in it (its header, its
    match states, just before its '//'), in one piece or parsed on threads; a complete file,
    with trailing blank lines or CRLF line ends, still reads."""
    last_start = many_models.rstrip().rfind(b"\nHMMER3") + 1
    last_name = many_models[last_start:].split(b"\nNAME", 1)[1].split()[0].decode()
    end = len(many_models.rstrip()) - len(b"//")
    named = f"truncated HMM file \\(model '{last_name}' has no closing '//' line\\)"
    # cut at line ends (where HMMER's parser is silent) and inside lines (where it sometimes
    # fails itself): never a silent success
    line_ends = [i + 1 for i in range(last_start, end) if many_models[i] == 10]
    for cut in line_ends[5::max(1, len(line_ends) // 9)] + [last_start + 200, end - 1, end]:
        path = tmp_path / f"cut{cut}.hmm"
        path.write_bytes(many_models[:cut])
        for threads in (1, 4):
            with pytest.raises(FormatError, match=named if cut in line_ends or cut >= end - 1 else "HMM file"):
                models.read_hmms(path, threads=threads)
    whole = tmp_path / "whole.hmm"
    for text in (many_models + b"\n\n", many_models.replace(b"\n", b"\r\n")):
        whole.write_bytes(text)
        assert len(models.read_hmms(whole, threads=1)) == len(serial(many_models))


# --- damaged files ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def binary_model(data_dir) -> bytes:
    """HMMER's binary format (hmmpress'd .h3m), one model of 199 nodes."""
    return (data_dir / "hmms" / "bin" / "PF02826.h3m").read_bytes()


@pytest.fixture(scope="module")
def text_model(data_dir) -> bytes:
    return (data_dir / "hmms" / "txt" / "Thioesterase.hmm").read_bytes()


def patched(data: bytes, at: int, new: bytes) -> bytes:
    return data[:at] + new + data[at + len(new):]


def refused(tmp_path, data: bytes, name="m.hmm") -> str:
    """read_hmms' error message for ``data``: one printable line."""
    path = tmp_path / name
    path.write_bytes(data)
    with pytest.raises(FormatError) as err:
        models.read_hmms(path, threads=1)
    msg = str(err.value)
    assert msg.isprintable() and "\n" not in msg and len(msg) < 600, msg
    return msg


def _error_or_none(tmp_path, data: bytes):
    """read_hmms' exception for ``data``, or None where it reads."""
    path = tmp_path / "maybe.hmm"
    path.write_bytes(data)
    try:
        models.read_hmms(path, threads=1)
    except Exception as exc:
        return exc
    return None


def test_damage_that_crashes_hmmer_is_a_format_error(binary_model, text_model, tmp_path):
    """Files that end HMMER's own parser (and so the process): a binary model with an alphabet
    code Easel does not know (esl_fatal, exit 1 with a bare line), a text record without its
    ALPH line, a NUL byte inside the LENG line (segmentation faults).  Read in a child process so that a crash fails this test
    instead of the test run."""
    import subprocess
    import sys

    cases = {"alphabet code 9": patched(binary_model, 12, (9).to_bytes(4, sys.byteorder)),
             "no ALPH line": text_model.replace(b"\nALPH  amino\n", b"\n"),
             "no ALPH line, second model": text_model + text_model.replace(b"\nALPH  amino\n", b"\n"),
             "no ALPH line, after a comment": b"# from a pipeline\n\n" + text_model.replace(b"\nALPH  amino\n", b"\n"),
             "NUL byte": text_model.replace(b"LENG  243\n", b"LENG  24\x003\n")}
    for label, data in cases.items():
        (tmp_path / label).write_bytes(data)
    code = ("import sys\nfrom gpu_search.hmmer.models import read_hmms\nfrom gpu_search.errors import FormatError\n"
            "for p in sys.argv[1:]:\n    try:\n        read_hmms(p, threads=1)\n        print(p, 'read')\n"
            "    except FormatError as e:\n        print(e)\n")
    r = subprocess.run([sys.executable, "-c", code, *(str(tmp_path / k) for k in cases)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stderr == "", (r.returncode, r.stderr)
    lines = r.stdout.splitlines()
    assert len(lines) == 5, r.stdout
    assert "alphabet code 9" in lines[0]
    assert all("model 'Thioesterase' has no ALPH line" in line for line in lines[1:4]), lines
    assert "a NUL byte on line 3" in lines[4]


def test_damaged_binary_model(binary_model, tmp_path):
    import struct

    # a model built from one sequence, its flags' third byte damaged (x ^ 27): read with no
    # consensus; HMMER stops in the profile's configuration ("HMM must have a consensus")
    tiny = tiny_binary_model()
    no_cons = patched(tiny, 6, bytes([tiny[6] ^ 27]))
    assert serial(no_cons)[0].consensus is None
    assert "has no consensus line (CONS)" in refused(tmp_path, no_cons)
    # the first match emission of node 1 (after magic, flags, M, alphabet and node 0's 20
    # values) made 1.7e36: HMMER's search crashes on it
    at = 16 + 4 * 20
    assert 0 < struct.unpack("<f", binary_model[at:at + 4])[0] < 1
    huge = patched(binary_model, at, struct.pack("<f", 1.7e36))
    assert "not probabilities" in refused(tmp_path, huge)
    # cut inside its last field (the composition of a model without cutoffs): HMMER reads it
    # whole, silently
    for cut in (1, 4, 40, 76):
        assert len(serial(tiny[:-cut])) == 1
        assert "truncated or damaged binary HMM file (model 'tiny'" in refused(tmp_path, tiny[:-cut])
    assert [h.name for h in models.read_hmms(_write(tmp_path, binary_model * 2), threads=1)] == ["2-Hacid_dh_C"] * 2


def tiny_binary_model() -> bytes:
    from pyhmmer.easel import Alphabet, TextSequence
    from pyhmmer.plan7 import Background, Builder

    abc = Alphabet.amino()
    seq = TextSequence(name=b"tiny", sequence="MKVLAAGIVGWCDEHK").digitize(abc)
    hmm, _, _ = Builder(abc).build(seq, Background(abc))
    out = io.BytesIO()
    hmm.write(out, binary=True)
    return out.getvalue()


def _write(tmp_path, data: bytes):
    path = tmp_path / "ok.h3m"
    path.write_bytes(data)
    return path


def test_damaged_text_records(text_model, tmp_path):
    # a record whose HMM line is damaged: HMMER's parser reads it and the next as one model
    two = text_model + text_model.replace(b"\nHMM ", b"\nHXM ", 1)
    three = two + text_model
    assert serial(three) and len(serial(three)) == 2                    # HMMER: 2 models, silently
    assert "3 records ('//' lines) but 2 models read" in refused(tmp_path, three)
    # a byte beyond ASCII in the consensus column: pyhmmer cannot decode it
    line = text_model.index(b"\n      1 ")
    col = text_model.index(b"      2 p - - -\n", line) + len(b"      2 ")   # MAP 2, consensus p
    bad = patched(text_model, col, b"\xe9")
    msg = refused(tmp_path, bad)
    assert "consensus is not ASCII text" in msg and "\\xe9" in msg


def test_messages_quote_the_file_printably(text_model, tmp_path):
    """Bytes of a damaged file in a message: escaped, on one line, bounded."""
    bad = text_model.replace(b"ALPH  amino", b"ALPH  \x1b[31mamino\x07" + b"x" * 500)
    # HMMER refuses it too (pyhmmer's detail, "Unrecognized alphabet type", sometimes comes back
    # empty in a long test run: only the refusal is checked)
    with pytest.raises(ValueError, match="Invalid format in file"):
        serial(bad)
    msg = refused(tmp_path, bad)
    assert "model 'Thioesterase' has an unrecognized alphabet type" in msg
    assert "\\x1b[31mamino\\x07" in msg and "\x1b" not in msg and "\x07" not in msg
    # Easel knows the name "custom" but makes no alphabet of it: HMMER's parser ends the process
    assert "unrecognized alphabet type 'custom'" in refused(tmp_path, text_model.replace(b"ALPH  amino",
                                                                                         b"ALPH  custom"))
    for name in (b"Amino", b"dna"):                                    # Easel's names, any case: read
        assert "unrecognized alphabet" not in str(_error_or_none(tmp_path, text_model.replace(b"ALPH  amino", b"ALPH  " + name)))
    assert models.printable(b"a\r\nb\x00\xff\xe2\x80\xa8c" + b"y" * 500, 20) == "a b\\x00\\xff c" + "y" * 4 + "..."      # 20 characters
    # a file pyhmmer cannot tell the format of: the message quotes the file, not pyhmmer's
    # buffer (which held bytes beyond the file's)
    for data in (b"\xb6", b"\xb6\xb0\xed", b"HMMER9/z\r\n\x01junk\n"):
        msg = refused(tmp_path, data)
        assert "unrecognized format: the file starts with" in msg, msg
    assert "'\\xb6\\xb0\\xed'" in refused(tmp_path, b"\xb6\xb0\xed")
    assert "'HMMER9/z'" in refused(tmp_path, b"HMMER9/z\r\n\x01junk\n")


# --- a large text file streamed into the search (open_hmms) ------------------------------


def _stream(path, monkeypatch, threads=3):
    monkeypatch.setattr(models, "PARALLEL_PARSE_BYTES", 1)
    got = models.open_hmms(path, threads=threads)
    assert isinstance(got, models.HMMStream)
    return got


def test_stream_hands_on_the_models_of_one_thread(many_models, tmp_path, monkeypatch):
    """In file order, the same models, its length the records' and its nodes their M summed;
    read once."""
    path = tmp_path / "many.hmm"
    path.write_bytes(many_models)
    expected = serial(many_models)
    stream = _stream(path, monkeypatch)
    assert len(stream) == len(expected) and stream.nodes == sum(h.M for h in expected)
    got = list(stream)
    assert [h.name for h in got] == [h.name for h in expected]
    assert all(a == b for a, b in zip(got, expected))
    with pytest.raises(RuntimeError):
        list(stream)
    monkeypatch.setattr(models, "PARALLEL_PARSE_BYTES", 1 << 40)          # small: read whole, a list
    assert isinstance(models.open_hmms(path, threads=3), list)


def _damaged(many_models: bytes) -> dict:
    """Files damaged past their first piece, by name."""
    last = many_models.rstrip().rfind(b"\nHMMER3") + 1
    middle = many_models.find(b"\n//\n", len(many_models) // 2) + 4
    line = re.compile(rb"\n +1 ").search(many_models, middle).start()     # the next model's first match line
    dna = (many_models[:last] + many_models[last:].replace(b"ALPH  amino", b"ALPH  DNA", 1)
           .replace(b"ALPH  Amino", b"ALPH  DNA", 1))
    return {
        "a corrupt match line half-way": many_models[:line + 1] + b"  1   garbage\n"
        + many_models[many_models.find(b"\n", line + 1) + 1:],
        "cut inside the last model": many_models.rstrip()[:-len(b"//")].rstrip() + b"\n",
        "a nucleotide model last": dna,
        "two records read as one": many_models[:middle - 3] + many_models[middle:],
    }


@pytest.mark.parametrize("case", ["a corrupt match line half-way", "cut inside the last model",
                                  "a nucleotide model last", "two records read as one"])
def test_stream_raises_what_reading_the_whole_file_raises(case, many_models, tmp_path, monkeypatch):
    """A fault past the first piece: read whole, the file is refused before any model; streamed,
    the same error (class and message) when the search reaches it."""
    data = _damaged(many_models)[case]
    path = tmp_path / "bad.hmm"
    path.write_bytes(data)
    with pytest.raises(Exception) as whole:
        models.read_hmms(path, threads=1)
    stream = _stream(path, monkeypatch)
    with pytest.raises(Exception) as streamed:
        list(stream)
    assert type(streamed.value) is type(whole.value)
    assert str(streamed.value) == str(whole.value), case


def test_stream_checks_cutoffs_as_it_reads(many_models, tmp_path, monkeypatch):
    """--cut_ga on a stream: a model without GA is refused when it is reached, as the whole
    file's check refuses it."""
    from gpu_search.errors import OptionError

    path = tmp_path / "many.hmm"
    path.write_bytes(many_models)
    lacking = next(h for h in serial(many_models) if h.cutoffs.gathering is None)
    stream = _stream(path, monkeypatch)
    stream.bit_cutoffs = "gathering"
    with pytest.raises(OptionError, match=f"model '{lacking.name}' has no GA cutoff"):
        list(stream)


def _hmmsearch(args, cwd):
    import os
    import subprocess
    import sys

    from conftest import ROOT

    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-m", "gpu_search", "hmmsearch", *map(str, args)], capture_output=True,
                          text=True, cwd=cwd, env=env)


@pytest.fixture(scope="module")
def streamed_file_and_db(many_models, proteome_path, tmp_path_factory):
    """A model file large enough to be streamed (over PARALLEL_PARSE_BYTES) and 60 proteome
    sequences."""
    folder = tmp_path_factory.mktemp("stream")
    big = many_models * 2
    assert len(big) >= models.PARALLEL_PARSE_BYTES
    (folder / "big.hmm").write_bytes(big)
    records = proteome_path.read_bytes().split(b"\n>")[:60]
    (folder / "db.faa").write_bytes(b"\n>".join(records).rstrip(b"\n") + b"\n")
    return folder


def test_command_streams_a_large_model_file(streamed_file_and_db):
    """Through the command line, the filter path (reference device) searching a streamed
    model file writes the tables of HMMER's whole pipeline (the CPU path)."""
    folder = streamed_file_and_db
    tables = {}
    for device in ("reference", "cpu"):
        proc = _hmmsearch(["--cpu", 2, "-q", "--device", device, "-o", "/dev/null", "--tblout", f"{device}.tbl",
                           "--domtblout", f"{device}.dom", "big.hmm", "db.faa"], folder)
        assert proc.returncode == 0, proc.stderr
        tables[device] = [[line for line in (folder / f"{device}{ext}").read_text().splitlines()
                           if not line.startswith(("# Option settings:", "# Date:", "# Current dir:"))]
                          for ext in (".tbl", ".dom")]
    assert tables["reference"] == tables["cpu"]
    assert sum(not line.startswith("#") for line in tables["cpu"][0]) > 0


def test_command_refuses_a_fault_found_while_streaming(streamed_file_and_db):
    """A nucleotide model at the end of a streamed file: found after the search has started,
    the command's one line and exit code those of the file read whole, and no output written."""
    folder = streamed_file_and_db
    big = (folder / "big.hmm").read_bytes()
    last = big.rstrip().rfind(b"\nHMMER3") + 1
    bad = big[:last] + big[last:].replace(b"ALPH  amino", b"ALPH  DNA", 1).replace(b"ALPH  Amino", b"ALPH  DNA", 1)
    (folder / "bad.hmm").write_bytes(bad)
    with pytest.raises(Exception) as whole:
        models.read_hmms(folder / "bad.hmm", threads=1)
    proc = _hmmsearch(["--cpu", 2, "--device", "reference", "-o", "out.txt", "--tblout", "out.tbl", "bad.hmm",
                       "db.faa"], folder)
    assert proc.returncode == whole.value.exit_code, proc.stderr
    assert proc.stderr == f"gpu-search: error: {str(whole.value).replace(str(folder / 'bad.hmm'), 'bad.hmm')}\n"
    assert not (folder / "out.txt").exists() and not (folder / "out.tbl").exists()


@pytest.mark.parametrize("text, error, words", [
    (b"", "EmptyInputError", "file is empty"),
    (b" \r\n\t\x0b\x0c\n", "EmptyInputError", "file is empty"),
    (b">seq\nACDE\n", "FormatError", "this is a FASTA file"),
    (b"\n \t\r\n>seq\nACDE\n", "FormatError", "this is a FASTA file"),
    (b"\n x>seq\n", "FormatError", "not a valid HMMER profile file"),
])
def test_blank_and_fasta_files_are_refused_before_parsing(text, error, words, tmp_path):
    from gpu_search import errors

    path = tmp_path / "x.hmm"
    path.write_bytes(text)
    with pytest.raises(getattr(errors, error), match=words):
        models.read_hmms(path)
