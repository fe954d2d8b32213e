"""Sequence files in HMMER's other formats (--tformat, --qformat, or recognised as HMMER does).

The files are written here from the proteome in EMBL, UniProt, GenBank (protein), Stockholm
and Pfam formats, with accessions and descriptions.  Each is read as Easel reads it
(pyhmmer's SequenceFile), and searched through the command line beside the HMMER oracles
(hmmsearch's, phmmer's, jackhmmer's and hmmscan's own code, opening the same files with
Easel): every report and table line for line.
"""

from __future__ import annotations

import gzip
import io
import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest
from conftest import ROOT

import gpu_search
from gpu_search.errors import AlphabetError, EmptyInputError, FormatError, OptionError
from gpu_search.seqdb import open_database
from gpu_search.seqformats import open_queries, open_sequences
from hmmer_outputs import assert_same
from oracle.build import build, missing

N_SEQS = 300
EXEMPT = ("# CPU time:", "# Mc/sec:", "# Date:", "# Option settings:", "# Current dir:")
PROVENANCE = {"report": f"# computed by gpu-search {gpu_search.__version__}: HMMER 3.4's results",
              "table": f"# Computed by:     gpu-search {gpu_search.__version__}"}


# --- the files ------------------------------------------------------------------------

def records(proteome_path: Path, n: int = N_SEQS):
    """(name, accession, description, sequence) of the proteome's first n sequences; every
    third without an accession, every fifth without a description, every seventh's starting
    with spaces (which Easel keeps)."""
    db = open_database(proteome_path)
    for i in range(n):
        acc = "" if i % 3 == 2 else f"Q{i:05d}.{1 + i % 2}"
        desc = "" if i % 5 == 4 else db.description(i) or f"protein {i}"
        desc = "   " + desc if desc and i % 7 == 6 else desc
        yield db.name(i).replace("|", "_")[:40], acc, desc, db.text(i)


def embl(recs, uniprot=False) -> str:
    out = []
    for name, acc, desc, seq in recs:
        out.append(f"ID   {name}    Reviewed;    {len(seq)} AA." if uniprot else
                   f"ID   {name}; SV 1; linear; protein; STD; PRO; {len(seq)} AA.")
        if acc:
            out.append(f"AC   {acc};")
        for line in textwrap.wrap(desc, 70):
            out.append(f"DE   {line}")
        out.append(f"SQ   SEQUENCE   {len(seq)} AA;")
        out += ["     " + " ".join(seq[j:j + 10] for j in range(k, min(k + 60, len(seq)), 10))
                for k in range(0, len(seq), 60)]
        out.append("//")
    return "\n".join(out) + "\n"


def genbank(recs) -> str:
    out = []
    for name, acc, desc, seq in recs:
        out.append(f"LOCUS       {name:<16} {len(seq):>11} aa            linear   BCT 01-JAN-2000")
        out.append(f"DEFINITION  {desc or '.'}")
        if acc:
            out += [f"ACCESSION   {acc.split('.')[0]}", f"VERSION     {acc}"]
        out.append("ORIGIN")
        out += [f"{k + 1:>9} " + " ".join(seq[j:j + 10].lower() for j in range(k, min(k + 60, len(seq)), 10))
                for k in range(0, len(seq), 60)]
        out.append("//")
    return "\n".join(out) + "\n"


def stockholm(recs, pfam=False) -> str:
    """An 'alignment' of the sequences: each padded with gaps, some inside (Easel reads the
    sequences without them)."""
    recs = list(recs)
    rows = [seq[:7] + "-" * (i % 4) + seq[7:] for i, (_, _, _, seq) in enumerate(recs)]
    width = max(map(len, rows))
    out = ["# STOCKHOLM 1.0"]
    for name, acc, desc, _ in recs:
        if acc:
            out.append(f"#=GS {name} AC {acc}")
        if desc:
            out.append(f"#=GS {name} DE {desc}")
    out += [f"{name:<42} {row.ljust(width, '.')}" for (name, _, _, _), row in zip(recs, rows)]
    return "\n".join(out) + "\n//\n"


WRITERS = {"embl": embl, "uniprot": lambda r: embl(r, uniprot=True), "genbank": genbank,
           "stockholm": stockholm, "pfam": stockholm}


@pytest.fixture(scope="module")
def files(tmp_path_factory, proteome_path) -> dict:
    folder = tmp_path_factory.mktemp("formats")
    recs = list(records(proteome_path))
    paths = {}
    for fmt, write in WRITERS.items():
        paths[fmt] = folder / f"db.{fmt}"
        paths[fmt].write_text(write(recs))
    paths["queries.sto"] = folder / "queries.sto"
    paths["queries.sto"].write_text(stockholm(recs[:3]))
    paths["queries.embl"] = folder / "queries.embl"
    paths["queries.embl"].write_text(embl(recs[3:6]))
    return paths


def easel_read(path: Path, fmt: str | None) -> list:
    from pyhmmer.easel import Alphabet, SequenceFile

    with SequenceFile(str(path), format=fmt, digital=True, alphabet=Alphabet.amino()) as sf:
        return [(s.name, s.accession, s.description, bytes(s.sequence)) for s in sf]


def ours(db) -> list:
    return [(db.name(i), db.accession(i), db.description(i), db.sequence(i).tobytes()) for i in range(len(db))]


@pytest.mark.parametrize("fmt", list(WRITERS))
def test_read_as_easel_reads(files, fmt):
    """Names, accessions, descriptions and residues as Easel reads them, the format given or
    recognised (the Pfam file recognised as Stockholm); gaps gone; a FASTA file unchanged."""
    expected = easel_read(files[fmt], fmt)
    assert len(expected) == N_SEQS and sum(1 for e in expected if e[1]) == 200     # the test's own data
    assert sum(1 for e in expected if e[2]) >= 200
    assert fmt not in ("embl", "uniprot") or sum(1 for e in expected if e[2].startswith("  ")) >= 30
    assert ours(open_sequences(files[fmt], fmt, "tformat")) == expected
    assert ours(open_sequences(files[fmt], None, "tformat")) == expected
    db = open_sequences(files[fmt], fmt, "tformat")
    block = db.digital_block([0, 1, 2])
    assert [(s.name, s.accession, s.description) for s in block] == [e[:3] for e in expected[:3]]
    sub = db.subset([5, 2])
    assert ours(sub) == [expected[5], expected[2]]


def test_gzip_recognised_a_pipe_needs_the_option(files, tmp_path):
    """A gzipped file in a format other than FASTA is recognised as HMMER recognises it (its
    sequences those Easel reads from it), with the option too; a gzipped file that is no
    recognised format, and a pipe, are refused without the option, the message saying to
    give it."""
    gz = tmp_path / "db.embl.gz"
    gz.write_bytes(gzip.compress(files["embl"].read_bytes()))
    expected = easel_read(files["embl"], "embl")
    assert ours(open_sequences(gz, "embl", "tformat")) == expected
    assert ours(open_sequences(gz, None, "tformat")) == expected == easel_read(gz, None)
    assert ours(open_queries(gz, None, "qformat")) == expected
    stray = tmp_path / "two.slx.gz"
    stray.write_bytes(gzip.compress(b"hello WORLDWIDE\nother KLMNPQRSTV\n"))
    with pytest.raises(FormatError, match="; for another of HMMER's formats give --tformat FORMAT"):
        open_sequences(stray, None, "tformat")
    damaged = tmp_path / "bad.gz"
    damaged.write_bytes(b"\x1f\x8b\x08junk")
    with pytest.raises(FormatError, match="bad.gz: corrupt or truncated gzip file"):
        open_sequences(damaged, None, "tformat")
    # a pipe (a process substitution): read once, with the option
    r, w = os.pipe()
    writer = threading.Thread(target=lambda: (os.write(w, files["stockholm"].read_bytes()), os.close(w)))
    writer.start()
    try:
        assert ours(open_sequences(f"/dev/fd/{r}", "stockholm", "tformat")) == easel_read(files["stockholm"],
                                                                                           "stockholm")
    finally:
        writer.join()
        os.close(r)


def test_a_recognised_file_is_opened_once_after_the_fasta_reader(files, tmp_path, monkeypatch):
    """A file in another format, plain or gzipped, given without the option: after the FASTA
    reader's look, one opening of it is both guessed from and read."""
    from gpu_search import seqformats

    gz = tmp_path / "db.embl.gz"
    gz.write_bytes(gzip.compress(files["embl"].read_bytes()))
    opened = []

    def counted(path, *args, **kwargs):
        opened.append(str(path))
        return open(path, *args, **kwargs)

    monkeypatch.setattr(seqformats, "open", counted, raising=False)
    for path in (files["embl"], files["stockholm"], gz):
        opened.clear()
        assert ours(open_sequences(path, None, "tformat")) == easel_read(path, None)
        assert opened == [str(path)]


def test_formats_without_a_header_need_the_option(tmp_path):
    """Easel takes any lines of two words for SELEX: such a file is read with --tformat
    selex only, where HMMER's guess would search 'hello' = WORLD."""
    path = tmp_path / "two.slx"
    path.write_text("hello WORLDWIDE\nother KLMNPQRSTV\n")
    with pytest.raises(FormatError, match="not FASTA .*; for another of HMMER's formats give --tformat FORMAT"):
        open_sequences(path, None, "tformat")
    assert ours(open_sequences(path, "selex", "tformat")) == easel_read(path, "selex")
    assert [name for name, *_ in easel_read(path, None)] == ["hello", "other"]       # Easel's guess


def test_file_names_never_reach_a_shell(files, tmp_path):
    """Easel reads a file whose name ends in '.gz' through 'gzip -dc NAME' in a shell: a plain
    file of such a name is read here by its descriptor."""
    odd = tmp_path / "x;touch PWNED;y.gz"
    odd.write_bytes(files["embl"].read_bytes())
    expected = easel_read(files["embl"], "embl")
    assert ours(open_sequences(odd, "embl", "tformat")) == expected
    assert ours(open_sequences(odd, None, "tformat")) == expected
    assert not (tmp_path / "PWNED").exists() and not Path("PWNED").exists()


def test_names_not_utf8_one_line(files, tmp_path):
    path = tmp_path / "latin1.embl"
    path.write_bytes(files["embl"].read_bytes().replace(b"\nDE   ", b"\nDE   lat\xe9in ", 1))
    with pytest.raises(FormatError, match="latin1.embl: a name, accession or description that is not UTF-8"):
        open_sequences(path, "embl", "tformat")


# --- searches beside HMMER's own code ---------------------------------------------------

def oracle_exe(name: str) -> Path:
    try:
        exe = build(name)
    except subprocess.CalledProcessError as exc:
        pytest.skip(f"cannot build tests/helpers/oracle/{name}.c: {exc.stderr.decode(errors='replace')[-2000:]}")
    if exe is None:
        pytest.skip(f"cannot build the HMMER oracle: {missing()}")
    return exe


def run_ours(args, cwd, stdin: bytes | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-m", "gpu_search", *map(str, args)], capture_output=True,
                          input=stdin, text=stdin is None, cwd=cwd, env=env)


TABLES = {"hmmsearch": ("--tblout", "--domtblout"), "phmmer": ("--tblout", "--domtblout"),
          "jackhmmer": ("--tblout", "--domtblout"), "hmmscan": ("--tblout", "--domtblout")}


def compare(program: str, tmp_path: Path, args: list, device: str, stdin: bytes | None = None) -> str:
    """The oracle's and our outputs of ``program ARGS`` (files last; ``stdin`` the standard
    input of both), line by line; HMMER's report returned."""
    outputs = ["-o", "out.txt"] + [a for flag in TABLES[program] for a in (flag, flag.strip("-") + ".txt")]
    sides = {}
    for who in ("hmmer", "ours"):
        folder = tmp_path / who
        folder.mkdir()
        if who == "hmmer":
            proc = subprocess.run([str(oracle_exe(f"{program}_oracle")), *outputs, *map(str, args)],
                                  capture_output=True, input=stdin, cwd=folder)
        else:
            proc = run_ours([program, *outputs, "--device", device, "-q", *args], folder, stdin)
        assert proc.returncode == 0, (who, proc.stdout, proc.stderr)
        sides[who] = folder
    report = (sides["hmmer"] / "out.txt").read_text()
    assert_same(report, (sides["ours"] / "out.txt").read_text(), EXEMPT, "main report", PROVENANCE["report"])
    for flag in TABLES[program]:
        name = flag.strip("-") + ".txt"
        assert_same((sides["hmmer"] / name).read_text(), (sides["ours"] / name).read_text(), EXEMPT, flag,
                    PROVENANCE["table"])
    return report


@pytest.fixture(scope="module")
def models(tmp_path_factory, proteome_path) -> Path:
    """Three models built by pyhmmer from proteome sequences (hits among the 300 and
    beyond them)."""
    from pyhmmer.easel import Alphabet, TextSequence
    from pyhmmer.plan7 import Background, Builder

    abc = Alphabet.amino()
    db = open_database(proteome_path)
    builder, background = Builder(abc, seed=42), Background(abc)
    out = io.BytesIO()
    for i in (1, 41, 250):            # (41: a target without an accession)
        # (without the proteome's closing '*': a match state emitting only '*' is no model)
        seq = TextSequence(name=f"model{i}", sequence=db.text(i).rstrip("*")).digitize(abc)
        hmm, _, _ = builder.build(seq, background)
        hmm.accession = f"PFTEST{i}.1"
        hmm.write(out)
    path = tmp_path_factory.mktemp("models") / "three.hmm"
    path.write_bytes(out.getvalue())
    return path


DEVICES = ["cpu", "reference"]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("fmt", ["embl", "stockholm", "genbank"])
@pytest.mark.parametrize("given", [True, False], ids=["tformat", "recognised"])
def test_hmmsearch_target_formats(files, models, tmp_path, fmt, given, device):
    args = (["--tformat", fmt.upper()] if given else []) + ["--acc", "-E", "1000", models, files[fmt]]
    report = compare("hmmsearch", tmp_path, args, device)
    # worth comparing: hits shown by accession where they have one, by name where not
    assert report.count(">> ") > report.count(">> Q0") >= 2


@pytest.mark.parametrize("device", DEVICES)
def test_phmmer_query_and_target_formats(files, tmp_path, device):
    report = compare("phmmer", tmp_path, ["--qformat", "stockholm", files["queries.sto"], files["uniprot"]], device)
    assert report.count("Accession:   Q0") == 2 and report.count("Query:  ") == 3


@pytest.mark.parametrize("device", DEVICES)
def test_jackhmmer_query_and_target_formats(files, tmp_path, device):
    report = compare("jackhmmer", tmp_path, ["-N", "2", "--tformat", "pfam", files["queries.embl"], files["pfam"]],
                     device)
    assert "Accession:   Q00003.2" in report


@pytest.fixture(scope="module")
def pressed(tmp_path_factory, models) -> Path:
    """The three models pressed (hmmscan's database), by the oracle as hmmpress does."""
    path = tmp_path_factory.mktemp("pressed") / "three.hmm"
    path.write_bytes(models.read_bytes())
    proc = subprocess.run([str(oracle_exe("hmmscan_oracle")), "--press", str(path)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return path


@pytest.mark.parametrize("device", DEVICES)
def test_hmmscan_query_formats(files, pressed, tmp_path, device):
    report = compare("hmmscan", tmp_path, ["--qformat", "embl", pressed, files["queries.embl"]], device)
    assert "Accession:   Q00003.2" in report


@pytest.mark.parametrize("device", DEVICES)
def test_standard_input_as_hmmer_reads_it(files, models, proteome_path, tmp_path, device):
    """'-' as an input file is the standard input, as in HMMER's programs: a database (EMBL
    with --tformat, or FASTA), phmmer's queries.  (HMMER's hmmsearch searches a database from
    the standard input with one model only: it cannot read the input again; here any number.)"""
    one = tmp_path / "one.hmm"
    one.write_text(models.read_text().split("//\n")[0] + "//\n")
    for i, (program, args, stdin) in enumerate([
            ("hmmsearch", ["--tformat", "embl", one, "-"], files["embl"].read_bytes()),
            ("hmmsearch", [one, "-"], proteome_path.read_bytes()),
            ("phmmer", ["--qformat", "stockholm", "-", files["uniprot"]], files["queries.sto"].read_bytes())]):
        folder = tmp_path / str(i)
        folder.mkdir()
        report = compare(program, folder, args, device, stdin)
        assert report.count(">> ") >= 1


def test_standard_input_for_one_input_only(models, tmp_path):
    proc = run_ours(["hmmsearch", "-o", "out.txt", "-", "-"], tmp_path, b"")
    assert proc.returncode == OptionError.exit_code and not (tmp_path / "out.txt").exists()
    assert proc.stderr.decode() == "gpu-search: error: only one of the two inputs may be '-' (the standard input)\n"


# --- bad input ----------------------------------------------------------------------------

def test_bad_format_input_one_line_no_output(files, models, tmp_path):
    """Each: one line on stderr, the error's exit code, no output file."""
    fasta = tmp_path / "db.fa"
    fasta.write_text(">a\nMKVLAAGIVG\n")
    damaged = tmp_path / "damaged.embl"
    damaged.write_text(files["embl"].read_text().replace("SQ   SEQUENCE", "SQ   SEQ\x01UENCE", 1)
                       .replace("     M", "     M1", 1).replace("//\n", "", 1)[:5000])
    stray_gz = tmp_path / "notes.txt.gz"
    stray_gz.write_bytes(gzip.compress(b"hello WORLDWIDE\nother KLMNPQRSTV\n"))
    nucleotide = tmp_path / "dna.gb"
    nucleotide.write_text(genbank([("dna1", "X1.1", "a gene", "ACGTTGCA" * 40)]))
    empty = tmp_path / "empty.embl"
    empty.write_text("\n\n")
    cases = [
        (["hmmsearch", "--tformat", "embl", models, fasta], FormatError, "not a valid embl file"),
        (["hmmsearch", "--tformat", "embl", models, damaged], FormatError, "damaged.embl: not a valid embl file"),
        (["hmmsearch", models, stray_gz], FormatError, "give --tformat FORMAT"),
        (["hmmsearch", "--tformat", "ncbi", models, fasta], OptionError, "give a BLAST database without --tformat"),
        (["hmmsearch", "--tformat", "gb", models, fasta], OptionError, "--tformat gb: not a sequence file format"),
        (["phmmer", "--qformat", "daemon", fasta, fasta], OptionError, "daemon files are not read"),
        (["hmmsearch", models, nucleotide], AlphabetError, "looks like nucleotide"),
        (["hmmsearch", "--tformat", "embl", models, empty], EmptyInputError, "empty.embl: no sequences (read as embl)"),
        (["hmmscan", "--qformat", "stockholm", models, fasta], FormatError, "not a valid stockholm file"),
    ]
    for args, error, words in cases:
        proc = run_ours([*args[:1], "-o", "out.txt", "--tblout", "t.txt", *args[1:]], tmp_path)
        assert proc.returncode == error.exit_code, (args, proc.stderr)
        assert proc.stderr.count("\n") == 1 and words in proc.stderr, (args, proc.stderr)
        assert not (tmp_path / "out.txt").exists() and not (tmp_path / "t.txt").exists()


@pytest.mark.gpu
def test_gpu_target_and_query_formats(files, models, pressed, tmp_path):
    from gpu_search.device import gpu_status

    if not gpu_status()[0]:
        pytest.skip(f"no usable GPU: {gpu_status()[1]}")
    for i, (program, args) in enumerate([
            ("hmmsearch", ["--acc", models, files["embl"]]),
            ("phmmer", [files["queries.sto"], files["uniprot"]]),
            ("hmmscan", [pressed, files["queries.embl"]])]):
        folder = tmp_path / str(i)
        folder.mkdir()
        compare(program, folder, args, "gpu")
