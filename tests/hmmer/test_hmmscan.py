"""gpu-search hmmscan against HMMER 3.4's own hmmscan, line by line.

The oracle (tests/helpers/oracle/hmmscan_oracle.c) is hmmscan.c's serial code path
rebuilt from HMMER 3.4's library (the one inside the pyhmmer wheel): it reads the
pressed database as hmmscan does (the MSV part of each model from .h3f, the rest
from .h3p) and writes every report with HMMER's own C functions.  It also presses
the database (``--press``: hmmpress.c's code), since HMMER's hmmscan reads only
pressed databases.  Our side is the ``gpu-search hmmscan`` command, given the
pressed database, or the text HMM file alone (its pressed files removed after the
oracle ran).  Both run in the same folder with the same file names (each side's
outputs moved aside before the other runs), so the header's and the tables' file
and folder lines are compared too.

What must be identical: the main report, --tblout, --domtblout and --pfamtblout,
every line, except

* the timing lines ``# CPU time:`` and ``# Mc/sec:`` of the main report;
* the tables' ``# Date:`` line;
* the tables' ``# Option settings:`` line: HMMER writes a command line rebuilt
  from its option table (esl_opt_SpoofCmdline), gpu-search the command line as
  typed, which holds gpu-search's own options (--device, -q);
* the line each of our files adds after HMMER's version line, saying gpu-search
  computed it (checked to be there once, then left out).

The database: 14 models of pyhmmer's test data, cat'ed in a fixed order (Pfam's
2-Hacid_dh_C, with GA/TC/NC lines and a CS line, and LuxC; KR, with TC only;
Thioesterase; ten RREFam models with accessions and descriptions).
"""

from __future__ import annotations

import gzip
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT

import gpu_search
from hmmer_outputs import assert_same
from oracle.build import build, missing

MODELS = ["PF02826", "LuxC", "KR", "Thioesterase", "RREFam"]     # 14 models in all
GA_MODELS = ["PF02826", "LuxC"]                                   # each with GA, TC and NC
# proteome proteins with hits among the models (one model, two, three; a strong one
# whose alignment shows 2-Hacid_dh_C's CS line; LuxC's, which has an accession)
QUERY_NAMES = ["938293.PRJEB85.HG003688_14", "938293.PRJEB85.HG003686_714", "938293.PRJEB85.HG003691_78",
               "938293.PRJEB85.HG003690_243", "938293.PRJEB85.HG003685_328"]
PRESSED = (".h3m", ".h3i", ".h3f", ".h3p")
EXEMPT_REPORT = ("# CPU time:", "# Mc/sec:")
EXEMPT_TABLE = ("# Date:", "# Option settings:")
PROVENANCE = {"report": f"# computed by gpu-search {gpu_search.__version__}: HMMER 3.4's results",
              "table": f"# Computed by:     gpu-search {gpu_search.__version__}"}
OUTPUTS = {"-o": "out.txt", "--tblout": "hits.tbl", "--domtblout": "hits.dom", "--pfamtblout": "hits.pfam"}


@pytest.fixture(scope="module")
def oracle() -> Path:
    try:
        exe = build("hmmscan_oracle")
    except subprocess.CalledProcessError as exc:
        pytest.skip(f"cannot build tests/helpers/oracle/hmmscan_oracle.c: {exc.stderr.decode(errors='replace')[-2000:]}")
    if exe is None:
        pytest.skip(f"cannot build the HMMER oracle: {missing()}")
    return exe


def hmm_text(data_dir: Path, names: list[str]) -> bytes:
    return b"".join((data_dir / "hmms" / "txt" / f"{name}.hmm").read_bytes() for name in names)


@pytest.fixture(scope="module")
def queries(tmp_path_factory, proteome_path) -> Path:
    """Six queries: five proteome proteins with hits, and a random protein without a
    description (no hit: the reports' "no hits" lines)."""
    records, name = {}, None
    for line in proteome_path.read_text().splitlines(keepends=True):
        if line.startswith(">"):
            name = line[1:].split()[0]
            records[name] = [line]
        else:
            records[name].append(line)
    rng = random.Random(7)
    decoy = ">random_decoy\n" + "".join(rng.choice("ACDEFGHIKLMNPQRSTVWY") for _ in range(150)) + "\n"
    path = tmp_path_factory.mktemp("hmmscan") / "queries.faa"
    path.write_text("".join("".join(records[n]) for n in QUERY_NAMES) + decoy)
    return path


def press(oracle: Path, hmm_file: Path) -> None:
    proc = subprocess.run([str(oracle), "--press", str(hmm_file)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def run_ours(args, cwd) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-m", "gpu_search", "hmmscan", *map(str, args)], capture_output=True,
                          text=True, cwd=cwd, env=env)


def output_args() -> list[str]:
    return [a for flag, name in OUTPUTS.items() for a in (flag, name)]


def run_both(oracle, tmp_path, args, kind, query_file, models, device="cpu") -> tuple[Path, Path]:
    """The oracle's and our outputs of one scan of ``models`` (as db.hmm in tmp_path), in
    tmp_path/hmmer and tmp_path/ours.  kind "pressed": both read the pressed database;
    "text": the oracle the pressed one, ours the text file alone.  ``device``: ours on the
    CPU (pyhmmer's hmmscan), or 'reference' (the filter engine with numpy filters)."""
    (tmp_path / "db.hmm").write_bytes(models)
    press(oracle, tmp_path / "db.hmm")
    sides = {}
    for who in ("hmmer", "ours"):
        if who == "hmmer":
            proc = subprocess.run([str(oracle), *output_args(), *args, "db.hmm", str(query_file)],
                                  capture_output=True, text=True, cwd=tmp_path)
        else:
            if kind == "text":
                for suffix in PRESSED:
                    (tmp_path / f"db.hmm{suffix}").unlink()
            proc = run_ours([*output_args(), *args, "--device", device, "-q", "db.hmm", query_file], tmp_path)
        assert proc.returncode == 0, (who, proc.stdout, proc.stderr)
        assert proc.stderr == "" or who == "hmmer", proc.stderr
        folder = tmp_path / who
        folder.mkdir()
        for name in OUTPUTS.values():
            shutil.move(tmp_path / name, folder / name)
        sides[who] = folder
    return sides["hmmer"], sides["ours"]


def check_all_outputs(hmmer: Path, ours: Path) -> str:
    """Every output of both sides compared; HMMER's main report returned."""
    report = (hmmer / OUTPUTS["-o"]).read_text()
    assert_same(report, (ours / OUTPUTS["-o"]).read_text(), EXEMPT_REPORT, "main report", PROVENANCE["report"])
    for flag in ("--tblout", "--domtblout", "--pfamtblout"):
        assert_same((hmmer / OUTPUTS[flag]).read_text(), (ours / OUTPUTS[flag]).read_text(), EXEMPT_TABLE, flag,
                    PROVENANCE["table"])
    return report


# hmmscan options of each case, in hmmscan's option-table order
CASES = [
    [],
    ["--F3", "1"],                                      # every Viterbi survivor to Forward
    ["--F2", "1", "--F3", "1"],                         # every MSV survivor to Viterbi and Forward
    ["-E", "1e3", "--domE", "1e3"],                     # weak hits, wider name columns
    ["--max"],
    ["--nobias", "--cpu", "1"],
    ["--nonull2", "--seed", "7"],
    ["--acc", "--textw", "160"],
    ["--noali", "--notextw"],
    ["-Z", "1e6", "--domZ", "5"],
    ["-T", "10", "--domT", "5", "--incT", "20", "--incdomT", "15"],
    # "1e-3" is hmmscan's default text: not echoed; "10" is not "10.0": echoed
    ["-E", "10", "--incE", "1e-20", "--incdomE", "1e-20", "--F2", "1e-3"],
    ["--seed", "7", "--qformat", "FASTA", "--cpu", "1"],
    # fewer queries than threads: the CPU path scans pieces of the models on every thread
    ["--cpu", "8"],
    ["-E", "1e3", "--domE", "1e3", "--cpu", "8"],
    ["-T", "10", "--domT", "5", "--cpu", "8"],
]


@pytest.mark.parametrize("device", ["cpu", "reference"])
@pytest.mark.parametrize("kind", ["pressed", "text"])
@pytest.mark.parametrize("args", CASES, ids=["".join(a) or "defaults" for a in CASES])
def test_outputs_identical_to_hmmer(oracle, data_dir, queries, tmp_path, args, kind, device):
    """Six queries against 14 models: every output (report with or without alignments,
    three tables); on the CPU (pyhmmer's hmmscan) and through the filter engine (the
    queries its database, the models its stream: numpy filters here, the GPU's below)."""
    hmmer, ours = run_both(oracle, tmp_path, args, kind, queries, hmm_text(data_dir, MODELS), device)
    report = check_all_outputs(hmmer, ours)
    # the cases are worth comparing: each query reported, with its hits
    assert report.count("\nQuery:       ") == 6 and "Query:       random_decoy  [L=150]\n" in report
    assert [l.split()[2] for l in report.splitlines() if l.startswith("Target model(s):")] == ["14"] * 6
    if not args:
        assert "   [No hits detected that satisfy reporting thresholds]" in report
        assert report.count(">> ") >= 8 and " CS\n" in report      # 2-Hacid_dh_C's own CS line
        assert "Scores for complete sequence (score includes all domains):" in report


@pytest.mark.gpu
def test_gpu_outputs_identical_to_hmmer(oracle, data_dir, queries, tmp_path):
    """The same on the GPU (marked gpu: run where one is)."""
    from gpu_search.device import gpu_status

    if not gpu_status()[0]:
        pytest.skip(f"no usable GPU: {gpu_status()[1]}")
    for args in (CASES[0], CASES[2], CASES[3], CASES[5], ["--cut_ga"]):
        folder = tmp_path / ("".join(args) or "defaults")
        folder.mkdir()
        models = hmm_text(data_dir, GA_MODELS if args == ["--cut_ga"] else MODELS)
        check_all_outputs(*run_both(oracle, folder, args, "pressed", queries, models, "gpu"))


@pytest.mark.gpu
@pytest.mark.parametrize("opts", [{}, {"F2": 1.0, "F3": 1.0, "E": 1e6}])
def test_gpu_scan_of_many_models_equals_cpu(proteome, tmp_path, opts):
    """Sixty single-sequence models of proteome proteins (M 40 to 900: batches of several
    kernel geometries) against 400 proteome proteins, their homologs among them: every hit
    and domain, and each query's pipeline counts, those of pyhmmer's hmmscan."""
    import numpy as np
    from pyhmmer.plan7 import Background, Builder

    from pyhmmer.easel import Alphabet

    from gpu_search.device import gpu_status
    from gpu_search.hmmer.hmmscan import hmmscan, open_hmmdb
    from gpu_search.hmmer.options import SearchOptions

    if not gpu_status()[0]:
        pytest.skip(f"no usable GPU: {gpu_status()[1]}")
    from pyhmmer.easel import TextSequence

    abc = Alphabet.amino()
    builder, background = Builder(abc), Background(abc)
    order = np.argsort(proteome.lengths)
    picks = order[np.linspace(len(order) * 0.05, len(order) * 0.97, 60).astype(int)]
    with open(tmp_path / "models.hmm", "wb") as fh:
        for i in picks.tolist():             # (each protein without its stop symbol)
            seq = TextSequence(name=proteome.name(i).encode(), sequence=proteome.text(i).rstrip("*"))
            builder.build(seq.digitize(abc), background)[0].write(fh)
    db = open_hmmdb(tmp_path / "models.hmm")
    queries = proteome.subset(np.arange(0, proteome.n_seqs, max(1, proteome.n_seqs // 400)))
    options = SearchOptions(**opts)

    def summary(results):
        return [(r.query.name, [(h.name, h.score, h.evalue, h.reported, h.included,
                                 [(d.env_from, d.env_to, d.score, d.i_evalue) for d in h.domains]) for h in r.hits],
                 (r.stats.nmodels, r.stats.nnodes, r.stats.nres, r.stats.n_past_msv, r.stats.n_past_bias,
                  r.stats.n_past_vit, r.stats.n_past_fwd, r.stats.Z, r.stats.domZ)) for r in results]

    cpu = summary(hmmscan(queries, db, options, device="cpu"))
    gpu = summary(hmmscan(queries, db, options, device="gpu"))
    assert gpu == cpu
    assert sum(len(hits) for _, hits, _ in cpu) >= 30


def test_kernel_shapes_are_prepared_before_the_filters(data_dir, proteome, tmp_path):
    """A backend that compiles kernel shapes ahead (the GPU's, on a fresh host) is given every
    model's size, in the order of the batches, before any batch is filtered, on the scan's
    threads, and is told to stop when the scan ends; the hits are the plain backend's."""
    import numpy as np

    from gpu_search.hmmer import reference
    from gpu_search.hmmer.hmmscan import hmmscan, open_hmmdb

    names = ["Thioesterase", "PF02826", "LuxC", "KR", "RREFam"]
    (tmp_path / "models.hmm").write_bytes(b"".join((data_dir / "hmms" / "txt" / f"{n}.hmm").read_bytes()
                                                   for n in names))
    db = open_hmmdb(tmp_path / "models.hmm")
    queries = proteome.subset(np.arange(0, proteome.n_seqs, 50))
    events = []

    class Preparing(reference.ReferenceBackend):
        def prepare_kernels(self, Ms, threads):
            events.append(("prepare", list(Ms), threads))

        def stop_preparing(self):
            events.append(("stop",))

        def msv_batch(self, profs, idx):
            events.append(("filter",))
            return super().msv_batch(profs, idx)

    def hits(results):
        return [(r.query.name, [(h.name, h.score, h.evalue) for h in r.hits]) for r in results]

    got = hits(hmmscan(queries, db, device="reference", cpus=2, backend=Preparing(queries)))
    assert got == hits(hmmscan(queries, db, device="reference", cpus=2))
    kind, Ms, threads = events[0]
    assert kind == "prepare" and threads == 2 and sorted(Ms) == sorted(om.M for om in db.profiles)
    assert len(set(Ms)) > 2               # (models of several sizes)
    assert events[-1] == ("stop",) and events.count(("stop",)) == 1 and ("filter",) in events


@pytest.mark.parametrize("device", ["cpu", "reference", "cpu --cpu 8"])
@pytest.mark.parametrize("flag", ["--cut_ga", "--cut_nc", "--cut_tc"])
def test_model_cutoffs_identical_to_hmmer(oracle, data_dir, queries, tmp_path, flag, device):
    """--cut_ga/nc/tc: each model's own thresholds (two Pfam models that have all three); with
    --cpu 8, the CPU path's pieces of the models, each with the thresholds of its own."""
    device, *more = device.split(" ", 1)
    args = [flag, *more[0].split()] if more else [flag]
    hmmer, ours = run_both(oracle, tmp_path, args, "pressed", queries, hmm_text(data_dir, GA_MODELS), device)
    report = check_all_outputs(hmmer, ours)
    assert f"# model-specific thresholding:     {flag[-2:].upper()} cutoffs" in report
    assert [l.split()[2] for l in report.splitlines() if l.startswith("Target model(s):")] == ["2"] * 6
    assert report.count(">> ") >= 2                    # LuxC's hit passes its GA of -133.5


def annotated_model(data_dir: Path) -> bytes:
    """2-Hacid_dh_C with a reference line (RF: 'x', every 7th node '.') and a model mask
    (MM: every 5th node masked) beside its CS line."""
    lines = []
    for line in (data_dir / "hmms" / "txt" / "PF02826.hmm").read_text().splitlines():
        if line.startswith(("RF    no", "MM    no")):
            line = line[:2] + "    yes"
        fields = line.split()
        if len(fields) == 26 and fields[0].isdigit():      # a node's match emissions: ... MAP CONS RF MM CS
            k = int(fields[0])
            head, _, _, cs = line.rsplit(" ", 3)
            line = f"{head} {'x' if k % 7 else '.'} {'m' if k % 5 == 0 else '-'} {cs}"
        lines.append(line)
    return ("\n".join(lines) + "\n").encode()


@pytest.mark.parametrize("kind", ["pressed", "text"])
def test_annotation_lines_identical_to_hmmer(oracle, data_dir, queries, tmp_path, kind):
    """Each model's own annotation lines above its alignments (CS, RF; MM where HMMER shows
    it), from a model with all three, beside one with none."""
    models = annotated_model(data_dir) + hmm_text(data_dir, ["KR"])
    hmmer, ours = run_both(oracle, tmp_path, [], kind, queries, models)
    report = check_all_outputs(hmmer, ours)
    assert " RF\n" in report and " CS\n" in report


def test_gzip_h3m_and_pressed_alone_read_the_same_models(oracle, data_dir, queries, tmp_path):
    """A gzipped text database, the pressed database named by its .h3m file (HMMER reads
    neither: it needs the pressed files, looked for beside the name given), and the pressed
    files without their text file (as HMMER reads them) give HMMER's rows of the pressed
    database."""
    models = hmm_text(data_dir, MODELS)
    hmmer, _ = run_both(oracle, tmp_path, ["-E", "1e3"], "pressed", queries, models)
    expected = {f: [l for l in (hmmer / OUTPUTS[f]).read_text().splitlines() if not l.startswith("#")]
                for f in ("--tblout", "--domtblout", "--pfamtblout")}
    assert len(expected["--tblout"]) >= 8
    (tmp_path / "gz").mkdir()
    (tmp_path / "gz" / "db.hmm.gz").write_bytes(gzip.compress(models))
    (tmp_path / "alone").mkdir()
    for suffix in PRESSED:
        shutil.copy(tmp_path / f"db.hmm{suffix}", tmp_path / "alone")
    for db in (tmp_path / "gz" / "db.hmm.gz", tmp_path / "db.hmm.h3m", tmp_path / "alone" / "db.hmm"):
        folder = tmp_path / f"ours-{db.parent.name}-{db.suffix[1:]}"
        folder.mkdir()
        proc = run_ours([*output_args(), "-E", "1e3", "-q", db, queries], folder)
        assert proc.returncode == 0, proc.stderr
        for flag, rows in expected.items():
            assert [l for l in (folder / OUTPUTS[flag]).read_text().splitlines() if not l.startswith("#")] == rows


def test_device_auto_takes_the_cpu_for_small_work_and_says_so(data_dir, queries, tmp_path, monkeypatch, capsys):
    """--device auto where a GPU is usable (made to look so here): six queries against 14
    models are too little work to repay the GPU's start; one line says so, even with -q."""
    from gpu_search import cli, device

    monkeypatch.setattr(device, "gpu_status", lambda: (True, "1 GPU(s)", ["a GPU"]))
    monkeypatch.setattr(device, "wait_cuda", lambda: None)
    monkeypatch.setattr(device, "start_cuda", lambda *a, **k: None)
    (tmp_path / "db.hmm").write_bytes(hmm_text(data_dir, MODELS))
    cli.main(["hmmscan", "-q", "--tblout", str(tmp_path / "t.tbl"), "-o", str(tmp_path / "o.txt"),
              str(tmp_path / "db.hmm"), str(queries)])
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith("gpu-search: --device auto: searching on the CPU: 6 queries x 14 "
                                               "models is too little work to repay the GPU's start"), err
    assert (tmp_path / "o.txt").read_text().count("\nQuery:       ") == 6


def test_device_auto_takes_the_gpu_for_pfam_sized_work():
    """The estimate behind --device auto: a proteome against a Pfam-sized database goes to
    the GPU, one short query against a few models stays on the CPU."""
    from types import SimpleNamespace

    from gpu_search.hmmer.crossover import choose_scan_device

    pfam = [SimpleNamespace(M=300)] * 20000
    assert choose_scan_device(pfam, 2100, 800_000, 16)[0] == "gpu"
    assert choose_scan_device(pfam[:10], 1, 300, 16)[0] == "cpu"


def test_device_gpu_without_one_refused(data_dir, queries, tmp_path):
    """--device gpu where no GPU is usable: the device error's one line and exit code, no output."""
    from gpu_search.device import gpu_status
    from gpu_search.errors import DeviceError

    if gpu_status()[0]:
        pytest.skip("a GPU is usable here")
    (tmp_path / "db.hmm").write_bytes(hmm_text(data_dir, MODELS))
    proc = run_ours(["-o", "o.txt", "--device", "gpu", "db.hmm", queries], tmp_path)
    assert proc.returncode == DeviceError.exit_code, proc.stderr
    assert proc.stderr.count("\n") == 1 and "--device gpu: no usable GPU" in proc.stderr, proc.stderr
    assert not (tmp_path / "o.txt").exists()


def test_help_says_what_is_not_offered():
    r = run_ours(["--help"], ROOT)
    text = " ".join(r.stdout.split())
    assert r.returncode == 0 and "Usage: gpu-search hmmscan [OPTIONS] HMMDB SEQFILE" in text
    assert "Not offered: hmmscan's search of the $PFAMDB" in text and "On the GPU the queries are held" in text
    assert "or another of HMMER's formats (--qformat)" in text
    assert "-A FILE" not in text and "Report models with E-value <= E." in text
    assert "Exit codes:" in text


# --- bad input ---------------------------------------------------------------------


def bad_inputs(oracle, data_dir: Path, tmp: Path):
    """(name, HMM database, query file, extra args, exit code, words in the message)."""
    faa = tmp / "q.faa"
    faa.write_text(">q\nMKTAYIAKQRQISFVKSHFSRQLEERLGLIEVQAPILSRVGDGTQDNLSGAEKAVQ\n")

    def write(name, content):
        p = tmp / name
        p.write_bytes(content if isinstance(content, bytes) else content.encode())
        return p

    def pressed(name, models):
        folder = tmp / name
        folder.mkdir()
        (folder / "db.hmm").write_bytes(hmm_text(data_dir, models))
        press(oracle, folder / "db.hmm")
        return folder / "db.hmm"

    def without(name, suffix):
        db = pressed(name, MODELS)
        Path(f"{db}{suffix}").unlink()
        return db

    def mismatched(name, suffix):
        db, other = pressed(name, ["PF02826", "KR"]), pressed(name + "-other", ["LuxC", "Thioesterase", "RREFam"])
        shutil.copy(f"{other}{suffix}", f"{db}{suffix}")
        return db

    text_db = write("db.hmm", hmm_text(data_dir, MODELS))
    return [
        ("missing database", tmp / "nope.hmm", faa, [], 3, "no such file"),
        ("pressed, no .h3f", without("no-h3f", ".h3f"), faa, [], 3, "without its .h3f file"),
        ("pressed, no .h3i", without("no-h3i", ".h3i"), faa, [], 3, "without its .h3i file"),
        ("pressed, another .h3f", mismatched("h3f", ".h3f"), faa, [], 5, "do not belong together"),
        ("pressed, another .h3p", mismatched("h3p", ".h3p"), faa, [], 5, "do not belong together"),
        ("pressed, another .h3i", mismatched("h3i", ".h3i"), faa, [], 5, "do not belong together"),
        ("pressed, another .h3m", mismatched("h3m", ".h3m"), faa, [], 5, "do not belong together"),
        ("nucleotide models", write("rna.hmm", hmm_text(data_dir, ["RF00001"])), faa, [], 6, "nhmmscan"),
        ("nucleotide models, pressed", pressed("rna", ["RF00001"]), faa, [], 6, "nhmmscan"),
        ("empty database", write("e.hmm", ""), faa, [], 4, "empty"),
        ("FASTA as database", faa, text_db, [], 5, "the HMM database comes first: hmmscan HMMDB SEQFILE"),
        ("missing query file", text_db, tmp / "nope.faa", [], 3, "no such file"),
        ("empty query file", text_db, write("e.faa", ""), [], 4, "empty"),
        ("nucleotide queries", text_db, write("n.faa", ">a\n" + "ACGTTGCAACGTGGCATTAGC" * 5 + "\n"), [], 6,
         "nucleotide"),
        ("query without residues", text_db, write("z.faa", ">a\nACDEFGH\n>b\n"), [], 7, "'b' is empty"),
        ("query over HMMER's limit", text_db, write("l.faa", ">long\n" + "ACDEFGHIKL" * 10001 + "\n"), [], 7,
         "over HMMER's limit of 100,000 for hmmscan"),
        ("--cut_ga, a model without GA", text_db, faa, ["--cut_ga"], 2, "model 'KR' has no GA cutoff"),
        ("two cutoffs", text_db, faa, ["--cut_ga", "--cut_tc"], 2, "use only one of"),
        ("--qformat of a format the file is not in", text_db, faa, ["--qformat", "genbank"], 4,
         "no sequences (read as genbank)"),
        ("--qformat of no format", text_db, faa, ["--qformat", "gb"], 2, "--qformat gb: not a sequence file format"),
    ]


N_BAD = 20


@pytest.mark.parametrize("case", range(N_BAD))
def test_bad_input_one_line_exit_code_no_output(oracle, data_dir, case, tmp_path):
    cases = bad_inputs(oracle, data_dir, tmp_path)
    assert len(cases) == N_BAD
    name, hmmdb, seqfile, extra, code, words = cases[case]
    out = tmp_path / "out"
    out.mkdir()
    r = run_ours([*extra, "--tblout", out / "t.tbl", "--domtblout", out / "d.tbl", "-o", out / "main.txt",
                  hmmdb, seqfile], tmp_path)
    assert r.returncode == code, (name, r.returncode, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("gpu-search: error:"), (name, r.stderr)
    assert words in lines[0], (name, lines[0])
    assert "Traceback" not in r.stderr
    assert list(out.iterdir()) == [], f"{name}: output left behind"


@pytest.mark.parametrize("device", ["cpu", "reference"])
def test_skip_long_of_every_query_writes_empty_outputs(data_dir, tmp_path, device):
    """--skip-long where every query is over the limit: no query is searched, the outputs are
    written without one (no error), on either path."""
    (tmp_path / "db.hmm").write_bytes(hmm_text(data_dir, MODELS))
    (tmp_path / "long.faa").write_text(">long\n" + "ACDEFGHIKL" * 10001 + "\n")
    proc = run_ours(["--skip-long", "--device", device, "--cpu", "4", "--tblout", "t.tbl", "-o", "o.txt", "-q",
                     "db.hmm", "long.faa"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "Query:" not in (tmp_path / "o.txt").read_text()
    assert [l for l in (tmp_path / "t.tbl").read_text().splitlines() if not l.startswith("#")] == []


def test_models_sharing_a_name_give_serial_hmmscans_hits(data_dir, queries, tmp_path):
    """A text database where two models share a name (Thioesterase twice: hmmpress refuses
    such a file, so HMMER's hmmscan never reads one), fewer queries than threads, weak hits
    kept: the same report and tables as one thread's serial scans (the pieces of the models,
    which tell hits apart by name, are not used there)."""
    (tmp_path / "db.hmm").write_bytes(hmm_text(data_dir, MODELS) + hmm_text(data_dir, ["Thioesterase"]))
    out = {}
    for cpu in ("1", "8"):
        proc = run_ours(["-E", "1e3", "--domE", "1e3", "--cpu", cpu, "--device", "cpu", "-q", "--tblout",
                         f"{cpu}.tbl", "-o", f"{cpu}.txt", "db.hmm", queries], tmp_path)
        assert proc.returncode == 0, proc.stderr
        text = (tmp_path / f"{cpu}.txt").read_text()       # (from the first query: the header names the files)
        report = [l for l in text[text.index("Query:"):].splitlines() if not l.startswith(EXEMPT_REPORT)]
        rows = [l for l in (tmp_path / f"{cpu}.tbl").read_text().splitlines() if not l.startswith("#")]
        out[cpu] = (report, rows)
    assert out["8"] == out["1"]
    assert sum(l.startswith("Target model(s):                          15  ") for l in out["1"][0]) == 6
    assert len(out["1"][1]) >= 8


def test_skip_long_leaves_out_the_long_query(data_dir, queries, tmp_path):
    """--skip-long: a query over HMMER's 100,000-residue limit is left out; the others are
    reported as without it."""
    (tmp_path / "db.hmm").write_bytes(hmm_text(data_dir, MODELS))
    (tmp_path / "with-long.faa").write_text(queries.read_text() + ">long\n" + "ACDEFGHIKL" * 10001 + "\n")
    rows = {}
    for name, qfile, extra in (("skip", "with-long.faa", ["--skip-long"]), ("plain", queries, [])):
        proc = run_ours([*extra, "--tblout", f"{name}.tbl", "-o", f"{name}.txt", "-q", "db.hmm", qfile], tmp_path)
        assert proc.returncode == 0, proc.stderr
        rows[name] = [l for l in (tmp_path / f"{name}.tbl").read_text().splitlines() if not l.startswith("#")]
        assert (tmp_path / f"{name}.txt").read_text().count("\nQuery:       ") == 6
    assert rows["skip"] == rows["plain"] and len(rows["plain"]) >= 8


# (query, E, model files in order): hits and none with the default E; a weak hit (E 8.2e-6 with Z
# = 14, its place 7 among RREFam's models put first) kept only at its own place
RUNNING_Z_CASES = [(QUERY_NAMES[0], 10.0, MODELS), (QUERY_NAMES[2], 10.0, MODELS),
                   ("938293.PRJEB85.HG003685_1", 10.0, MODELS), (QUERY_NAMES[2], 5e-6, MODELS[::-1])]


@pytest.mark.parametrize("query,E,files", RUNNING_Z_CASES)
def test_running_Z_candidate_models_searched_together_first(data_dir, proteome_path, query, E, files):
    """hmmscan's running-Z screen (search.with_running_z_hit given the models' names): the
    models named longer than the widest hit, scanned together once with the smallest place as
    Z, then only those kept there one by one, give the hits each scanned alone gives, in fewer
    scans."""
    import numpy as np
    from pyhmmer.easel import Alphabet, SequenceFile

    from gpu_search.hmmer.hmmscan import ScanFinisher, _configure
    from gpu_search.hmmer.models import read_hmms
    from gpu_search.hmmer.options import SearchOptions
    from gpu_search.hmmer.search import with_running_z_hit

    abc = Alphabet.amino()
    hmms = [h for name in files for h in read_hmms(data_dir / "hmms" / "txt" / f"{name}.hmm")]
    with SequenceFile(str(proteome_path), digital=True, alphabet=abc) as f:
        seq = next(s for s in f.read_block() if s.name == query)
    kwargs = SearchOptions(E=E).pipeline_kwargs(float(len(hmms)))
    kept = {h.name for h in ScanFinisher(abc, kwargs, _configure(hmms, 1)).nothing(seq).merge(
        *[ScanFinisher(abc, kwargs, _configure([hmm], 1))(seq, 0) for hmm in hmms])}
    named = [hmm.copy() for hmm in hmms]
    for m, hmm in enumerate(named):              # the models without a hit kept named longer than any
        if hmm.name not in kept:
            hmm.name = f"A_MODEL_NAMED_LONGER_THAN_ANY_HIT_{m}"
    profiles = _configure(named, 1)
    finish = ScanFinisher(abc, kwargs, profiles)
    every = np.arange(len(profiles))
    hits = finish.nothing(seq).merge(*[finish(seq, m) for m in every])
    name_len = np.array([len(om.name.encode()) for om in profiles])
    results, calls = [], []
    for name_of in (None, lambda m: profiles[m].name):
        sizes = []

        def search_one(idx, Z, E, sizes=sizes):
            sizes.append(len(idx))
            return finish.alone(seq)(idx, Z, E)

        got = with_running_z_hit(hits, every, every, name_len, search_one, name_of)
        results.append([(h.name, h.score, h.evalue, h.reported, h.included) for h in got])
        calls.append(sizes)
    assert results[0] == results[1]
    alone, together = calls
    candidates = len(profiles) - len(kept)
    assert together[0] == candidates > 1 and set(alone) == {1} and set(together[1:]) <= {1}
    weak = len(results[0]) > len(hits)           # (a hit kept at its own place, unreported)
    assert weak == (E < 1e-5)
    assert len(together) == (2 if weak else 1) < len(alone)
