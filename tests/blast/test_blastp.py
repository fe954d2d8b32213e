"""gpu-search blastp against NCBI BLAST+ 2.12 blastp itself (-comp_based_stats 0).

Needs the `blastp` and `makeblastdb` programs of BLAST+ 2.12 (Debian package
ncbi-blast+); the tests are skipped, saying so, where they are missing.
Criterion: at least 99% of BLAST+'s rows reproduced exactly and at
most 1% extra rows; a failing test lists every difference.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import shutil
import subprocess
import sys
import time

import numpy as np
import pytest
from conftest import ROOT

BLASTP = shutil.which("blastp")
MAKEBLASTDB = shutil.which("makeblastdb")
pytestmark = pytest.mark.skipif(
    not (BLASTP and MAKEBLASTDB), reason="BLAST+ (blastp, makeblastdb) not installed: apt-get install ncbi-blast+")

EXTENDED = "6 std sallseqid score nident positive gaps ppos qframe sframe qseq sseq qlen slen salltitles"


@pytest.fixture(scope="module")
def blast_setup(tmp_path_factory, proteome_path, proteome):
    """The proteome as a BLAST db; query files of ~130, ~500, ~1000 residues and 50 random proteins."""
    d = tmp_path_factory.mktemp("blast")
    db_fasta = d / "prot.faa"
    shutil.copy(proteome_path, db_fasta)
    subprocess.run([MAKEBLASTDB, "-in", str(db_fasta), "-dbtype", "prot", "-out", str(d / "prot")],
                   check=True, capture_output=True)
    L = proteome.lengths

    def write(path, idx):
        with open(path, "w") as fh:
            for i in idx:
                fh.write(f">{proteome.name(i)} {proteome.description(i)}\n{proteome.text(i)}\n")
        return path

    singles = {n: write(d / f"q{n}.faa", [int(np.argmin(np.abs(L - n)))]) for n in (130, 500, 1000)}
    rng = np.random.default_rng(50)
    many = write(d / "q50.faa", rng.choice(proteome.n_seqs, 50, replace=False))
    return {"dir": d, "db_fasta": db_fasta, "db": d / "prot", "singles": singles, "many": many}


def run_blast(query, db, *args):
    r = subprocess.run([BLASTP, "-query", str(query), "-db", str(db), "-comp_based_stats", "0", *map(str, args)],
                       capture_output=True, text=True, check=True)
    return r.stdout.splitlines()


def run_ours(*args):
    """gpu-search blastp, with -comp_based_stats 0 unless ``args`` set it (this module
    compares with BLAST+'s rows without composition-based statistics)."""
    if "-comp_based_stats" not in args:
        args = ("-comp_based_stats", "0", *args)
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    r = subprocess.run([sys.executable, "-m", "gpu_search", "blastp", *map(str, args)],
                       capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    return r.stdout.splitlines()


def assert_parity(theirs: list[str], ours: list[str], what: str):
    """>= 99% of BLAST+'s rows reproduced, <= 1% extra; every difference listed."""
    t = [r for r in theirs if not r.startswith("#")]
    o = [r for r in ours if not r.startswith("#")]
    missing = sorted(set(t) - set(o))
    extra = sorted(set(o) - set(t))
    report = "\n".join([f"{what}: {len(t)} BLAST+ rows, {len(missing)} missing, {len(extra)} extra"]
                       + [f"  missing: {m}" for m in missing] + [f"  extra:   {e}" for e in extra])
    assert len(t) > 0, f"{what}: BLAST+ found nothing, the test tests nothing"
    assert len(missing) <= 0.01 * len(t) and len(extra) <= 0.01 * len(t), report
    return missing, extra


@pytest.mark.parametrize("length", [130, 500, 1000])
def test_single_queries(length, blast_setup):
    q = blast_setup["singles"][length]
    theirs = run_blast(q, blast_setup["db"], "-outfmt", EXTENDED)
    ours = run_ours("-query", q, "-db", blast_setup["db_fasta"], "-outfmt", EXTENDED)
    missing, extra = assert_parity(theirs, ours, f"{length}-residue query")
    if not missing and not extra:
        assert ours == theirs     # and in the same order


@pytest.mark.parametrize("args", [
    ["-outfmt", "6"],
    ["-outfmt", EXTENDED],
    ["-outfmt", "6", "-evalue", "1e-5"],
    ["-outfmt", "6", "-evalue", "1000"],
    ["-outfmt", "6", "-max_target_seqs", "5"],
    ["-outfmt", "6", "-max_hsps", "1"],
    ["-outfmt", "6 std qlen slen", "-matrix", "BLOSUM45"],
    ["-outfmt", "6", "-matrix", "PAM30", "-gapopen", "9", "-gapextend", "1"],
    # every matrix: its own default gap costs, word threshold and two-hit window
    ["-outfmt", "6", "-matrix", "BLOSUM50"],
    ["-outfmt", "6", "-matrix", "BLOSUM80"],
    ["-outfmt", "6", "-matrix", "BLOSUM90"],
    ["-outfmt", "6", "-matrix", "PAM70"],
    ["-outfmt", "6", "-matrix", "PAM250"],
    ["-outfmt", "6", "-matrix", "BLOSUM80", "-gapopen", "25", "-gapextend", "2"],
    ["-outfmt", "6", "-matrix", "PAM30", "-window_size", "40"],
    ["-outfmt", "6", "-word_size", "2", "-threshold", "12"],
    ["-outfmt", "6", "-window_size", "20"],
    ["-outfmt", "6", "-window_size", "0"],         # BLAST's one-hit word finder
    ["-outfmt", "6", "-dbsize", "50000000"],
], ids=lambda a: " ".join(a)[:60])
def test_fifty_queries(args, blast_setup):
    theirs = run_blast(blast_setup["many"], blast_setup["db"], *args)
    ours = run_ours("-query", blast_setup["many"], "-db", blast_setup["db_fasta"], *args)
    assert_parity(theirs, ours, " ".join(args))


@pytest.mark.parametrize("args, length", [(["-threshold", "1e308"], 130), (["-evalue", "1e-308"], 1000)],
                         ids=lambda a: " ".join(a) if isinstance(a, list) else str(a))
def test_extreme_option_values_as_blast(args, length, blast_setup):
    """Option values whose C conversion to a 32-bit int is out of range: BLAST+ runs with INT_MIN
    there (x86-64): every word a neighbour, or a score of 2 to start the search for the cutoff
    from; the same rows (the 1,000-residue query's self hit has an E-value of 0, below 1e-308)."""
    query = blast_setup["singles"][length]
    theirs = run_blast(query, blast_setup["db"], "-outfmt", "6", *args)
    ours = run_ours("-query", query, "-db", blast_setup["db_fasta"], "-outfmt", "6", *args)
    assert ours == theirs and theirs
    if args[0] == "-threshold":           # (more rows than the default threshold's: all words searched)
        assert len(theirs) > len(run_blast(query, blast_setup["db"], "-outfmt", "6"))


def test_outfmt7_comment_lines(blast_setup):
    theirs = run_blast(blast_setup["many"], blast_setup["db"], "-outfmt", "7 qaccver saccver evalue bitscore")
    ours = run_ours("-query", blast_setup["many"], "-db", blast_setup["db_fasta"], "-outfmt",
                    "7 qaccver saccver evalue bitscore")
    # the program line names gpu-search besides BLAST+'s version; every other line is BLAST+'s
    from gpu_search import __version__
    assert [l for l in ours if l.startswith("# BLASTP")] == \
           [f"# BLASTP 2.12.0+ (computed by gpu-search {__version__})"] * len(ours_queries(ours))
    assert [l for l in ours if not l.startswith(("# Database", "# BLASTP"))] == \
           [l for l in theirs if not l.startswith(("# Database", "# BLASTP"))]
    assert [l for l in theirs if l.startswith("# BLASTP")] == ["# BLASTP 2.12.0+"] * len(ours_queries(ours))


def test_outfmt10_as_blast_writes_it(blast_setup, tmp_path):
    """-outfmt 10: BLAST+'s columns separated by commas, nothing quoted, also in titles holding
    commas and quotes; merge writes it the same."""
    src = blast_setup["db_fasta"].read_text().split(">")[1:60]
    records = []
    for i, rec in enumerate(src):
        header, seq = rec.split("\n", 1)
        if i % 3 == 0:
            header = f'{header.split()[0]} a title, with "quotes" and, commas'
        records.append(f">{header}\n{seq}")
    fasta = tmp_path / "titled.faa"
    fasta.write_text("".join(records))
    subprocess.run([MAKEBLASTDB, "-in", str(fasta), "-dbtype", "prot", "-out", str(tmp_path / "titled")],
                   check=True, capture_output=True)
    fmt = "10 qseqid sseqid pident evalue bitscore stitle salltitles qseq"
    theirs = run_blast(fasta, tmp_path / "titled", "-outfmt", fmt)
    ours = run_ours("-query", fasta, "-db", fasta, "-outfmt", fmt)
    assert ours == theirs and any('with "quotes" and, commas' in line for line in theirs)
    run_ours("-query", fasta, "-db", fasta, "-outfmt", "6", "--hits-out", tmp_path / "t.gsblast")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    r = subprocess.run([sys.executable, "-m", "gpu_search", "merge", str(tmp_path / "t.gsblast"), "-outfmt", fmt],
                       capture_output=True, text=True, env=env, check=True)
    assert r.stdout.splitlines() == theirs


def ours_queries(lines):
    return [l for l in lines if l.startswith("# Query: ")]


def test_shards_merged_equal_unsharded(blast_setup, tmp_path):
    d = blast_setup["dir"]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    subprocess.run([sys.executable, "-m", "gpu_search", "makedb", str(blast_setup["db_fasta"]), "-o",
                    str(tmp_path / "db.gsdb"), "--shards", "3", "-q"], check=True, env=env)
    hits = []
    for i in (1, 2, 3):
        out = tmp_path / f"s{i}.gsblast"
        run_ours("-query", blast_setup["many"], "-db", tmp_path / f"db.shard{i}of3.gsdb", "-outfmt", "6",
                 "-max_target_seqs", "20", "--hits-out", out)
        hits.append(str(out))
    r = subprocess.run([sys.executable, "-m", "gpu_search", "merge", *hits, "-outfmt", "6"],
                       capture_output=True, text=True, env=env, check=True)
    whole = run_ours("-query", blast_setup["many"], "-db", blast_setup["db_fasta"], "-outfmt", "6",
                     "-max_target_seqs", "20")
    assert r.stdout.splitlines() == whole
    assert whole == run_blast(blast_setup["many"], d / "prot", "-outfmt", "6", "-max_target_seqs", "20")


@pytest.mark.parametrize("case", ["empty query", "dna query", "implausible first line", "missing query",
                                  "query folder", "missing db", "unknown matrix",
                                  "bad outfmt", "outfmt 1", "bad gap costs"])
def test_bad_input(case, blast_setup, tmp_path):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    q, db = blast_setup["singles"][130], blast_setup["db_fasta"]
    extra = []
    if case == "empty query":
        q = tmp_path / "e.faa"; q.write_text("")
    elif case == "dna query":
        q = tmp_path / "d.faa"; q.write_text(">d\n" + "ACGTTGCA" * 20 + "\n")
    elif case == "implausible first line":        # (BLAST+ refuses it too: "doesn't look like plausible data")
        q = tmp_path / "i.faa"; q.write_text(">i\nMKV..LL\n")
    elif case == "missing query":
        q = tmp_path / "nope.faa"
    elif case == "query folder":
        q = tmp_path
    elif case == "missing db":
        db = tmp_path / "nope.faa"
    elif case == "unknown matrix":
        extra = ["-matrix", "BLOSUM99"]
    elif case == "bad outfmt":
        extra = ["-outfmt", "6 qseqid nonsense"]
    elif case == "outfmt 1":
        extra = ["-outfmt", "1"]
    elif case == "bad gap costs":
        extra = ["-gapopen", "3", "-gapextend", "3"]
    out = tmp_path / "out.tsv"
    r = subprocess.run([sys.executable, "-m", "gpu_search", "blastp", "-query", str(q), "-db", str(db),
                        "-out", str(out), *extra], capture_output=True, text=True, env=env)
    assert r.returncode not in (0, 1), (case, r.returncode, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("gpu-search: error:"), (case, r.stderr)
    assert not out.exists()


@pytest.fixture(scope="module")
def gapped_kernel_on_cpu(tmp_path_factory):
    """blast/gpu/gapped.cu built for the CPU (tests/helpers/gapped_host.py), None without a C++ compiler."""
    from gapped_host import CXX, build

    return build(tmp_path_factory.mktemp("gapped")) if CXX else None


@pytest.fixture(scope="module")
def traceback_kernel_on_cpu(tmp_path_factory):
    """blast/gpu/traceback.cu built for the CPU (tests/helpers/traceback_host.py), None without a C++ compiler."""
    from traceback_host import CXX, build

    return build(tmp_path_factory.mktemp("traceback")) if CXX else None


@pytest.mark.parametrize("gpus, cbs", [(None, 0), ([0, 1, 2], 0), (None, 2)])
def test_gpu_pipeline_with_a_cpu_stand_in(tmp_path, proteome, gpus, cbs, gapped_kernel_on_cpu,
                                          traceback_kernel_on_cpu):
    """The GPU pipeline of run_blastp (tables built ahead, each query's gapped work cut into
    pieces on threads, the preliminary gapped kernel for subjects with at most 2 init HSPs on
    each GPU's gapped threads, for the queries waiting at once, traceback in query order, on
    worker processes with one GPU and on threads with three; with one GPU and no composition-based
    statistics, the traceback's alignments by traceback.cu, some left to the workers) with
    stand-ins for the GPU: the CPU word finder, and gapped.cu and traceback.cu built for the
    CPU: the same output as the CPU path.  (The kernels
    themselves are checked against the CPU path in test_blast_gpu.py, on the GPU host.)  With
    composition-based statistics too (cbs 2: the redo on the worker processes, in pieces)."""
    import io

    from gapped_host import run_batch

    import gpu_search.blast.gpu.gapped as gpu_gapped

    kernel_runs, batch_sizes = [], []

    class PrelimStandIn(gpu_gapped.GpuPrelim):
        def __init__(self, ungapped, **kwargs):
            super().__init__(ungapped, max_gpu_group=2, **kwargs)

        def _launch(self, batch, matrix_scores, gap_open, gap_extend):
            u = self.ungapped
            on_gpu = batch.on_gpu
            if gapped_kernel_on_cpu is None:                  # no compiler: every group "overflows"
                z = np.zeros(len(on_gpu), np.int32)
                return np.empty((0, 7), np.int32), z, z + gpu_gapped.STATUS_OVERFLOW
            rows, counts, status = run_batch(gapped_kernel_on_cpu, batch, u.residues, u.offsets, matrix_scores,
                                             gap_open, gap_extend)
            rows = rows[np.repeat(on_gpu, counts)]
            kernel_runs.append(int(on_gpu.sum()))
            batch_sizes.append(len(batch.query_start) - 1)
            if len(batch_sizes) == 1:
                time.sleep(0.5)                               # a slow first launch: queries pile up
            return rows, np.where(on_gpu, counts, 0), np.where(on_gpu, status, 0)

    from gpu_search.blast import engine
    from gpu_search.blast.options import BlastOptions
    from gpu_search.blast.output import parse_outfmt
    from gpu_search.blast.settings import BlastSettings
    from gpu_search.blast.ungapped import ungapped_extensions

    used = set()

    class StandIn:
        streamed = False

        def __init__(self, residues, offsets, device_id=0, **kwargs):
            self.residues, self.offsets, self.device_id = residues, offsets, device_id
            self.seconds = {"kernel wait": 0.0}   # (the timings line's split of the GPU threads' time)

        def worker(self):                     # a second query in flight on the same "GPU"
            return StandIn(self.residues, self.offsets, self.device_id)

        stream_twin = worker                  # the gapped threads' view of the "GPU"

        def ungapped_extensions(self, q, lookup, scores, x_drop, cutoff, window=40):
            used.add(self.device_id)
            ids = np.arange(len(self.offsets) - 1, dtype=np.int64)
            return ungapped_extensions(q, lookup, self.residues, self.offsets, ids, scores, x_drop, cutoff,
                                       window, method="scan")

    from traceback_host import HostTraceback

    traceback_launches = []

    class TracebackStandIn(HostTraceback):
        def __init__(self, ungapped, **kwargs):    # a cap of 3,000 traceback bytes: some jobs overflow
            super().__init__(traceback_kernel_on_cpu, ungapped.residues, tb_cap=3000)

        def _launch(self, plans, *args):
            traceback_launches.append(len(plans))
            return super()._launch(plans, *args)

    stand_ins = engine.GpuEngineTypes(StandIn, PrelimStandIn,
                                      TracebackStandIn if traceback_kernel_on_cpu is not None else None)
    # many gapped pieces per query; with one GPU, one gapped thread (the queries waiting pile up
    # behind its first launch) and long hit lists traced back in pieces on worker processes;
    # with three, the traceback on threads and the lookup tables built on three threads; the
    # GPU run's timeline kept
    settings = BlastSettings(gapped_piece=40, gapped_threads=1 if gpus is None else 2,
                             lookup_threads=1 if gpus is None else 3,
                             traceback_split=300 if gpus is None else BlastSettings.traceback_split,
                             traceback_processes=gpus is None, timeline=str(tmp_path / "timeline.json"))
    idx = list(range(0, proteome.n_seqs, proteome.n_seqs // 12))[:12]
    queries = proteome.subset(idx)
    switch_interval = sys.getswitchinterval()
    out = {}
    for dev in ("cpu", "gpu"):
        fh = io.StringIO()
        fmt, columns = parse_outfmt("6 std qlen slen")
        engine.run_blastp(queries, proteome, BlastOptions(num_threads=3, comp_based_stats=cbs), fh, fmt=fmt,
                          columns=columns,
                          db_name="proteome", quiet=True, device=dev, gpus=gpus,
                          settings=settings if dev == "gpu" else None,
                          engine_types=stand_ins if dev == "gpu" else None)
        out[dev] = fh.getvalue()
    assert out["gpu"] == out["cpu"]
    timeline = json.loads((tmp_path / "timeline.json").read_text())
    assert all(0 <= start <= end for _, _, start, end in timeline)
    threads = {(name.rstrip("0123456789."), phase) for name, phase, _, _ in timeline}
    traceback = ("blastp_", "traceback (CPU threads)") if gpus else \
        ("blastp-process-", "E-values+traceback (worker processes)")
    assert {("blastp-gpu", "GPU phases"), traceback} <= threads
    if gapped_kernel_on_cpu is not None:
        assert ("blastp-gapped", "preliminary gapped (GPU threads)") in threads
    assert sys.getswitchinterval() == switch_interval          # restored after the GPU run
    assert used == set(gpus or [0])          # every GPU got queries
    assert gapped_kernel_on_cpu is None or sum(kernel_runs) > 100
    if gpus is None:
        assert gapped_kernel_on_cpu is None or max(batch_sizes) > 1   # several queries per launch
        # a task per query, and more for the hit lists cut into pieces
        assert sum(1 for name, _, _, _ in timeline if name.startswith("blastp-process-")) > len(idx)
    assert out["cpu"].count("\n") > 200
    if gpus is None and not cbs and traceback_kernel_on_cpu is not None:
        assert len(traceback_launches) > 1 and max(traceback_launches) > 1    # queries' alignments in one launch
        assert sum(traceback_launches) > len(idx)     # long hit lists aligned in pieces, a plan each
        assert ("blastp-traceback", "traceback alignments (GPU threads)") in threads
    else:
        assert not traceback_launches          # (threads, or the redo: the CPU aligns)


@pytest.mark.parametrize("gpus", [[0], [0, 1]])
def test_gpu_pipeline_takes_queries_in_batches(tmp_path, proteome, gpus):
    """A GPU engine that searches several queries per pass over the database (queries_per_pass,
    as a streamed database's does) is handed them in batches of up to that many (the first
    of 1, 2, 4...), each query once; with a CPU stand-in for its word finder the output is the CPU
    path's, also with an all-X query (no lookup table: BLAST skips it) among them."""
    import io

    from gpu_search.seqdb import read_fasta

    from gpu_search.blast import engine
    from gpu_search.blast.options import BlastOptions
    from gpu_search.blast.output import parse_outfmt
    from gpu_search.blast.ungapped import UngappedJob, ungapped_extensions

    batches = []

    class Batched:
        streamed = True                       # one engine per GPU, no GPU gapped stage
        queries_per_pass = 5

        def __init__(self, residues, offsets, device_id=0, **kwargs):
            self.residues, self.offsets = residues, offsets
            self.seconds = {"kernel wait": 0.0}   # (the timings line's split of the GPU threads' time)

        def ungapped_extensions_many(self, jobs):
            batches.append([len(j.query_codes) for j in jobs])
            ids = np.arange(len(self.offsets) - 1, dtype=np.int64)
            return [ungapped_extensions(j.query_codes, j.lookup, self.residues, self.offsets, ids, j.matrix_scores,
                                        j.x_drop, j.cutoff, j.window, method="scan") for j in jobs]

        def ungapped_extensions(self, *job):
            return self.ungapped_extensions_many([UngappedJob(*job)])[0]

    fasta = tmp_path / "q.fa"
    with open(fasta, "w") as fh:
        for k, i in enumerate(list(range(0, proteome.n_seqs, proteome.n_seqs // 22))[:22]):
            fh.write(f">{proteome.name(i)}\n{proteome.text(i)}\n")
            if k == 10:
                fh.write(">all_x\n" + "X" * 60 + "\n")
    queries = read_fasta(fasta)
    out = {}
    for dev in ("cpu", "gpu"):
        fh = io.StringIO()
        fmt, columns = parse_outfmt("6 std qlen slen")
        engine.run_blastp(queries, proteome, BlastOptions(num_threads=2), fh, fmt=fmt, columns=columns,
                          db_name="proteome", quiet=True, device=dev, gpus=gpus,
                          engine_types=engine.GpuEngineTypes(Batched, None) if dev == "gpu" else None)
        out[dev] = fh.getvalue()
    assert out["gpu"] == out["cpu"] and out["cpu"].count("\n") > 200
    with_lookup = [n for n in np.diff(np.asarray(queries.offsets)).tolist() if n != 60]
    assert len(with_lookup) == 22 and sorted(n for b in batches for n in b) == sorted(with_lookup)
    assert max(map(len, batches)) <= 5 and len(batches) < 22
    if len(gpus) == 1:                        # the first passes: 1, 2, 4 queries, then up to 5
        assert [len(b) for b in batches[:3]] == [1, 2, 4] and max(map(len, batches)) == 5


def test_gpu_pipeline_error_is_raised_not_hung(proteome):
    """A failure on the GPU side (here: the third query) reaches the caller; nothing hangs."""
    import io

    from gpu_search.blast import engine
    from gpu_search.blast.options import BlastOptions
    from gpu_search.blast.output import parse_outfmt
    from gpu_search.blast.ungapped import INIT_HSP_DTYPE
    from gpu_search.errors import DeviceError

    calls = []

    class Failing:
        streamed = True                       # one engine, no GPU gapped stage

        def __init__(self, residues, offsets, device_id=0, **kwargs):
            pass

        def ungapped_extensions(self, *args, **kwargs):
            calls.append(1)
            if len(calls) == 3:
                raise DeviceError("GPU out of memory (planted)")
            return np.zeros(0, dtype=INIT_HSP_DTYPE)

    fmt, columns = parse_outfmt("6")
    with pytest.raises(DeviceError, match="planted"):
        engine.run_blastp(proteome.subset(list(range(8))), proteome, BlastOptions(num_threads=2), io.StringIO(),
                          fmt=fmt, columns=columns, db_name="p", quiet=True, device="gpu", gpus=[0, 1],
                          engine_types=engine.GpuEngineTypes(Failing, None))
    assert not multiprocessing.active_children()          # the traceback's workers ended too


def test_gpu_pipeline_traceback_worker_error(monkeypatch, proteome):
    """An error in a traceback worker process reaches the caller with the worker's traceback;
    the workers end and drop the database they inherited."""
    import io

    from gpu_search.blast import engine, pipeline, workers
    from gpu_search.blast.options import BlastOptions
    from gpu_search.blast.output import parse_outfmt
    from gpu_search.blast.ungapped import INIT_HSP_DTYPE

    class NoHits:
        streamed = True                       # one engine, no GPU gapped stage

        def __init__(self, residues, offsets, device_id=0, **kwargs):
            pass

        def ungapped_extensions(self, *args, **kwargs):
            return np.zeros(0, dtype=INIT_HSP_DTYPE)

    def failing_traceback(work, *args):
        if work.index == 2:
            raise ValueError("traceback failed (planted)")
        return []

    monkeypatch.setattr(pipeline, "traceback_stage", failing_traceback)   # inherited by the forked workers
    fmt, columns = parse_outfmt("6")
    with pytest.raises(RuntimeError, match=r"query 3 failed: ValueError\('traceback failed \(planted\)'\)"):
        engine.run_blastp(proteome.subset(list(range(6))), proteome, BlastOptions(num_threads=2), io.StringIO(),
                          fmt=fmt, columns=columns, db_name="p", quiet=True, device="gpu",
                          engine_types=engine.GpuEngineTypes(NoHits, None))
    assert not multiprocessing.active_children()
    assert workers._FORKED is None


def test_gpu_pipeline_threads_end_after_a_failure(proteome):
    """A failing gapped launch: the error reaches the caller, and the GPU and gapped threads end
    (the queries it never handed over give no room back to the threads waiting for some)."""
    import io
    import threading

    import gpu_search.blast.gpu.gapped as gpu_gapped
    from gpu_search.blast import engine
    from gpu_search.blast.options import BlastOptions
    from gpu_search.blast.output import parse_outfmt
    from gpu_search.blast.ungapped import INIT_HSP_DTYPE
    from gpu_search.errors import DeviceError

    class Resident:
        streamed = False

        def __init__(self, residues, offsets, device_id=0, **kwargs):
            self.device_id = device_id

        def worker(self):
            return Resident(None, None, self.device_id)

        stream_twin = worker

        def ungapped_extensions(self, *args, **kwargs):        # one init HSP on subject 0
            return np.array([(0, 0, 0, 0, 0, 1, 20)], dtype=INIT_HSP_DTYPE)

    class FailingPrelim(gpu_gapped.GpuPrelim):
        def run_many(self, *args, **kwargs):
            time.sleep(0.3)                                    # the GPU threads fill the window meanwhile
            raise DeviceError("gapped launch failed (planted)")

    fmt, columns = parse_outfmt("6")
    with pytest.raises(DeviceError, match="planted"):
        engine.run_blastp(proteome.subset(list(range(40))), proteome, BlastOptions(num_threads=2),
                          io.StringIO(), fmt=fmt, columns=columns, db_name="p", quiet=True, device="gpu",
                          engine_types=engine.GpuEngineTypes(Resident, FailingPrelim))
    deadline = time.time() + 5
    while time.time() < deadline:
        alive = [t.name for t in threading.enumerate() if t.name.startswith(("blastp-gpu", "blastp-gapped"))]
        if not alive:
            break
        time.sleep(0.05)
    assert not alive, alive
    assert not multiprocessing.active_children()          # the traceback's workers ended too


def test_a_failing_traceback_launch_reaches_the_caller(proteome):
    """A failing launch of the traceback kernel: the error reaches the caller, and the traceback
    launchers, the GPU threads and the worker processes end."""
    import io
    import threading

    from gpu_search import warmup
    from gpu_search.blast import engine
    from gpu_search.blast.gpu import traceback as gpu_traceback
    from gpu_search.blast.options import BlastOptions
    from gpu_search.blast.output import parse_outfmt
    from gpu_search.errors import DeviceError

    launches = []

    class FailingTraceback(gpu_traceback.GpuTraceback):
        def _launch(self, *args):
            launches.append(1)
            raise DeviceError("traceback launch failed (planted)")

    stand_ins = warmup.gpu_stand_ins()
    fmt, columns = parse_outfmt("6")
    with pytest.raises(DeviceError, match="planted"):
        engine.run_blastp(proteome.subset(list(range(8))), proteome, BlastOptions(num_threads=2), io.StringIO(),
                          fmt=fmt, columns=columns, db_name="p", quiet=True, device="gpu",
                          engine_types=engine.GpuEngineTypes(stand_ins.ungapped, stand_ins.gapped, FailingTraceback))
    assert launches
    deadline = time.time() + 5
    while time.time() < deadline:
        alive = [t.name for t in threading.enumerate()
                 if t.name.startswith(("blastp-gpu", "blastp-gapped", "blastp-traceback"))]
        if not alive:
            break
        time.sleep(0.05)
    assert not alive, alive
    assert not multiprocessing.active_children()


def test_results_pickle_as_their_fields():
    """The traceback's worker processes send SubjectResults of Hsps back pickled as their fields
    (output.fields_reduce): every field, defaults included, comes back as it was."""
    import pickle

    from gpu_search.blast.hitlist import SubjectResult
    from gpu_search.blast.output import Hsp, format_row, parse_outfmt

    rows = [Hsp("q1", "q1 a query", 120, f"s{k}", f"s{k} title", 300 + k, 55 + k, 25.4 + k, 10.0 ** -k,
                3, 40, 7 + k, 44 + k, "ACD-EF", "AC-KEF", 4, 5, 2, 2, oid=k) for k in range(3)]
    rows.append(Hsp("q1", "q1", 120, "s9", "s9", 30, 20, 9.5, 2.5, 1, 6, 1, 6, "ACDEFG", "ACDEFG", 6, 6, 0, 0))
    result = SubjectResult(17, (0.0, -60, -17), (1e-3, -60, -17), rows)
    back = pickle.loads(pickle.dumps([result], protocol=pickle.HIGHEST_PROTOCOL))[0]
    assert back == result and back.rows[-1].oid == 0 and back.rows[1].oid == 1
    _, columns = parse_outfmt("6 std qlen slen nident positive gaps ppos btop stitle qcovhsp score")
    assert [format_row(h, columns) for h in back.rows] == [format_row(h, columns) for h in rows]


def test_worker_answers_load_without_running_python():
    """What the worker processes send back in a tabular run (workers.as_sent: results as
    tuples, rows as lines; a hit list's alignment plan) loads in the parent without calling
    any Python function (the pool's one loading thread would give the GIL away at each call),
    and comes back as it was: the results as SubjectResults (workers.received), the plan as
    an AlignmentPlan of arrays."""
    import pickle
    from multiprocessing.reduction import ForkingPickler

    from gpu_search.blast import workers
    from gpu_search.blast.gpu.traceback import AlignmentPlan
    from gpu_search.blast.hitlist import SubjectResult
    from gpu_search.blast.output import Hsp
    from gpu_search.blast.traceback import StackedPrelims

    def loads_calling_nothing(obj):
        data = ForkingPickler.dumps(obj)          # as the process pool pickles
        calls = []
        sys.setprofile(lambda frame, event, arg: event == "call" and calls.append(frame.f_code.co_name))
        try:
            back = pickle.loads(data)
        finally:
            sys.setprofile(None)
        assert calls == [], calls
        return back

    hsp = Hsp("q1", "q1", 120, "s3", "s3 title", 300, 55, 25.4, 1e-5, 3, 40, 7, 44, "ACD-EF", "AC-KEF", 4, 5, 2, 2)
    results = [SubjectResult(17, (0.0, -60, -17), (1e-3, -60, -17), [hsp]),
               SubjectResult(3, (2e-3, -40, -3), (2e-3, -40, -3), [hsp, hsp], (1e-3, 40, 3))]
    lines = [["row 0"], ["row 1", "row 2"]]              # (each Hsp's line, in order)
    keys = [(r.oid, r.prelim_key, r.final_key, r.heap_record) for r in results]
    numbered = iter(range(3))
    sent = workers.as_sent(results, lambda h: f"row {next(numbered)}")
    back = workers.received(loads_calling_nothing(sent))
    assert [(r.oid, r.prelim_key, r.final_key, r.heap_record) for r in back] == keys
    assert [r.rows for r in back] == lines
    assert all(isinstance(r, SubjectResult) for r in back)
    prelims = StackedPrelims(np.arange(14, dtype=np.int64).reshape(2, 7), np.array([0, 1, 2], np.int64))
    plan = AlignmentPlan([((1e-9, -50, -4), 4), ((1e-3, -30, -9), 9)], prelims, np.ones((4, 9), np.int64),
                         np.zeros((2, 4), np.int64))
    again = loads_calling_nothing(plan)
    assert type(again) is AlignmentPlan and type(again.prelims) is StackedPrelims and again.hits == plan.hits
    assert all(np.array_equal(a, b) for a, b in [(again.prelims.rows, prelims.rows), (again.prelims.first, prelims.first),
                                                 (again.jobs, plan.jobs), (again.starts, plan.starts)])


def test_worker_lines_write_as_their_rows(monkeypatch, tmp_path, proteome):
    """A tabular run's worker processes send rows back as lines (workers.as_sent): the output
    is that of the same run with the traceback on threads, which writes Hsp objects (formats 6,
    7 and 10, every column kind); a run that writes XML or saves its hits (--hits-out) gets
    Hsps back, which its writers need."""
    import io

    from gpu_search.blast import engine, workers
    from gpu_search.blast.options import BlastOptions
    from gpu_search.blast.output import parse_outfmt
    from gpu_search.blast.settings import BlastSettings

    formatters = []
    start = workers.start_workers
    monkeypatch.setattr(workers, "start_workers", lambda setup, queries, n, row_text=None:
                        formatters.append(row_text) or start(setup, queries, n, row_text))
    queries = proteome.subset([0, 1, 2, 3])
    options = BlastOptions(num_threads=2, comp_based_stats=2)

    def run(spec, hits_out=None, processes=True):
        fmt, columns = parse_outfmt(spec)
        fh = io.StringIO()
        engine.run_blastp(queries, proteome, options, fh, fmt=fmt, columns=columns, db_name="proteome",
                          quiet=True, device="cpu", hits_out=hits_out,
                          settings=BlastSettings(traceback_processes=processes))
        return fh.getvalue()

    for spec in ("6", "7 std qlen slen btop qseq sseq stitle", "10 std ppos qcovhsp"):
        lines = run(spec)
        assert formatters.pop() is not None                  # (the workers sent lines)
        assert lines == run(spec, processes=False) and lines.count("\n") > 20
    run("5")
    run("6", hits_out=str(tmp_path / "hits.gsblast"))
    assert formatters == [None, None]
