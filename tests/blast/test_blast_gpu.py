"""blastp's GPU phases against the CPU path (marked gpu; run on the GPU host).

The CPU path (ungapped.ungapped_extensions, itself checked against BLAST+'s
scan loop and against BLAST+) is the reference: the GPU's init HSPs must be
the same array, field for field and in the same order, and ``--device gpu``
output byte-identical to ``--device cpu``.
"""

from __future__ import annotations

import numpy as np
import pytest
from blast_cases import compare, query_codes
from click.testing import CliRunner

from gpu_search.blast.alphabet import EASEL_TO_NCBISTDAA, blast_query_codes
from gpu_search.blast.matrix import load_matrix
from gpu_search.blast.settings import BlastSettings
from gpu_search.device import gpu_status

pytestmark = pytest.mark.gpu
if not gpu_status()[0]:
    pytest.skip(f"no usable GPU: {gpu_status()[1]}", allow_module_level=True)

from gpu_search.blast.gpu import HIT_SLOTS, GpuUngapped  # noqa: E402
from gpu_search.gpu import DeviceDatabase  # noqa: E402


@pytest.fixture(scope="module")
def blosum62():
    return load_matrix("BLOSUM62")


@pytest.fixture(scope="module")
def db_codes(proteome):
    return (EASEL_TO_NCBISTDAA[np.asarray(proteome.residues)], np.asarray(proteome.offsets, np.int64))


@pytest.fixture(scope="module")
def gpu(db_codes):
    return GpuUngapped(*db_codes)


def test_init_hsps_equal_cpu_on_the_proteome(gpu, db_codes, proteome, blosum62):
    """Forty proteome queries of every length, BLAST's cutoffs and a zero cutoff (every extension)."""
    rng = np.random.default_rng(5)
    lengths = np.diff(np.asarray(proteome.offsets))
    idx = list(rng.choice(proteome.n_seqs, 36, replace=False)) + [int(np.argmax(lengths)), int(np.argmin(lengths))]
    total = 0
    for i in idx:
        total += compare(gpu, db_codes, query_codes(proteome, i), blosum62)
    for i in idx[:4]:
        total += compare(gpu, db_codes, query_codes(proteome, i), blosum62, cutoff=0)
    assert total > 1000


@pytest.mark.parametrize("word_size,threshold,window", [(2, 9, 40), (4, 13, 40), (3, 11, 20), (3, 11, 80), (3, 11, 0)])
def test_init_hsps_other_word_sizes_and_windows(gpu, db_codes, proteome, blosum62, word_size, threshold, window):
    for i in (3, 200, 1000):
        compare(gpu, db_codes, query_codes(proteome, i), blosum62, word_size, threshold, window, cutoff=0)


def test_overflowing_subjects_are_searched_on_the_cpu(db_codes, proteome, blosum62):
    """A tiny hit buffer sends most subjects back to the CPU: same result."""
    small = GpuUngapped(*db_codes, hit_slots=64)
    compare(small, db_codes, query_codes(proteome, 10), blosum62, cutoff=0)


def test_streamed_database(db_codes, proteome, blosum62, monkeypatch):
    """A database streamed through the GPU chunk by chunk (as one larger than GPU
    memory is): the same init HSPs; an out-of-memory error while uploading a
    chunk cuts it in halves and the search goes on, still exact."""
    import cupy

    streamed = GpuUngapped(*db_codes, streamed=True, max_chunk_residues=200_000)
    assert streamed.streamed and len(streamed.chunks) > 2 and streamed.queries_per_pass == 32
    assert not any(c.resident for c in streamed.chunks)      # nothing kept on the GPU
    for i in (10, 500):
        compare(streamed, db_codes, query_codes(proteome, i), blosum62)
    compare(streamed, db_codes, query_codes(proteome, 7), blosum62, cutoff=0)

    real_upload = DeviceDatabase._upload

    def small_gpu(self, chunk):
        if chunk.n > 300:
            raise cupy.cuda.memory.OutOfMemoryError(1 << 40, 0)
        return real_upload(self, chunk)

    monkeypatch.setattr(DeviceDatabase, "_upload", small_gpu)
    n_before = len(streamed.chunks)
    compare(streamed, db_codes, query_codes(proteome, 10), blosum62, cutoff=0)
    assert len(streamed.chunks) > n_before and all(c.n <= 300 for c in streamed.chunks)


def batch_of_queries(db_codes, proteome, matrix):
    """UngappedJobs of a mix that a batch must keep apart, with each one's CPU init HSPs: kernel
    choices of every kind (short and long queries: other block sizes, lanes and scores; a
    low-complexity query: diagonal-based), a zero cutoff, another word size and window,
    one-hit mode and a query past the GPU's length limit (both on the CPU within the batch)."""
    from blast_cases import cutoffs

    from gpu_search.blast.gpu import extension_for
    from gpu_search.blast.lookup import build_lookup
    from gpu_search.blast.ungapped import UngappedJob, ungapped_extensions

    residues, offsets = db_codes
    lengths = np.diff(np.asarray(proteome.offsets))
    low = next(i for i in range(proteome.n_seqs)
               if extension_for(build_lookup(query_codes(proteome, i), matrix.scores, 3, 11)) == "diagonal")
    picks = [(10, 3, 11, 40, None), (int(np.argmax(lengths)), 3, 11, 40, None), (low, 3, 11, 40, None),
             (500, 3, 11, 40, 0), (7, 2, 9, 20, 0), (200, 3, 11, 0, None), (3, 3, 11, 40, None)]
    queries = [query_codes(proteome, i) for i, *_ in picks]
    queries.append(blast_query_codes(np.ascontiguousarray(residues[:17000])))      # the CPU's
    picks.append((None, 3, 11, 40, None))
    jobs, refs = [], []
    for q, (_, word_size, threshold, window, cutoff) in zip(queries, picks):
        lookup = build_lookup(q, matrix.scores, word_size, threshold)
        x_drop, cu = cutoffs(q, matrix, int(offsets[-1]))
        job = UngappedJob(q, lookup, matrix.scores, x_drop, cu if cutoff is None else cutoff, window)
        jobs.append(job)
        refs.append(ungapped_extensions(q, lookup, residues, offsets, np.arange(len(offsets) - 1), matrix.scores,
                                        job.x_drop, job.cutoff, window, method="scan"))
    return jobs, refs


@pytest.mark.parametrize("how", ["resident", "streamed", "overflow", "overflow to the cpu", "rows over a region"])
def test_queries_batched_per_pass(how, db_codes, proteome, blosum62, monkeypatch):
    """Several queries in one pass over the database (ungapped_extensions_many): each query's
    init HSPs equal the CPU path's, whatever its neighbours in the batch; a streamed
    database is uploaded once per batch, not once per query; tiny hit buffers send
    subjects of several queries to the second pass, and with no GPU memory for its
    buffers, to the CPU; a small output buffer leaves queries more rows than their
    region of it holds (run again alone, the buffer grown)."""
    from gpu_search.blast.gpu import kernel_choice

    jobs, refs = batch_of_queries(db_codes, proteome, blosum62)
    assert len({kernel_choice(j.lookup, j.window) for j in jobs}) >= 3
    if how == "streamed":
        engine = GpuUngapped(*db_codes, streamed=True, max_chunk_residues=300_000)
        assert len(engine.chunks) > 2 and engine.queries_per_pass > 1
        uploads = []
        real_upload = DeviceDatabase._upload

        def counted_upload(self, chunk):
            uploads.append(chunk.first)
            return real_upload(self, chunk)

        monkeypatch.setattr(DeviceDatabase, "_upload", counted_upload)
    else:
        engine = GpuUngapped(*db_codes, hit_slots=64 if how.startswith("overflow") else HIT_SLOTS)
        assert not engine.streamed and engine.queries_per_pass > 1
    if how == "rows over a region":
        engine.n_out_cap = 4000                    # 666 rows a query for the batch's 6 GPU queries
        ran = []
        alone = engine._chunk

        def counted_alone(c, query):
            ran.append(query)
            return alone(c, query)

        monkeypatch.setattr(engine, "_chunk", counted_alone)
    left_to_cpu = []
    if how == "overflow to the cpu":
        monkeypatch.setattr(engine, "_second_pass_scratch", lambda n_ints: None)
        cpu = engine._cpu

        def counted_cpu(*args):
            left_to_cpu.append(len(args[-1]))
            return cpu(*args)

        monkeypatch.setattr(engine, "_cpu", counted_cpu)
    got = engine.ungapped_extensions_many(jobs)
    assert len(got) == len(refs)
    for k, (g, ref) in enumerate(zip(got, refs)):
        assert g.dtype == ref.dtype and np.array_equal(g, ref), f"query {k}: {len(g)} rows, CPU {len(ref)}"
    assert sum(len(r) for r in refs) > 1000
    if how == "streamed":
        assert sorted(uploads) == [c.first for c in engine.chunks]      # each chunk once
    if how.startswith("overflow"):
        assert engine.overflowed > 0
    if how == "rows over a region":
        assert 1 <= len(ran) < len(refs) - 2 and engine.n_out_cap > 4000     # some in the batch, some alone
    if how == "overflow to the cpu":       # subjects of GPU queries, besides the two whole CPU queries
        n_subjects = len(db_codes[1]) - 1
        assert sum(1 for n in left_to_cpu if n < n_subjects) >= 2


def test_cli_streamed_batches_identical_to_cpu(tmp_path, proteome_path, monkeypatch):
    """A database streamed through the GPU (BlastSettings.stream_residues), its queries in
    batches of one pass each: the same bytes as the CPU; batches of 5 and the default."""
    sizes = []
    many = GpuUngapped.ungapped_extensions_many

    def recorded(self, jobs):
        sizes.append(len(jobs))
        return many(self, jobs)

    monkeypatch.setattr(GpuUngapped, "ungapped_extensions_many", recorded)
    for batch in (5, None):
        sizes.clear()
        settings = BlastSettings(stream_residues=250000, queries_per_pass=batch)
        outs = cli_outputs(tmp_path, proteome_path, 24, "6 std qlen slen", ["--gpus", "0"], settings)
        assert outs["gpu"] == outs["cpu"], batch
        # batches ramp up 1, 2, 4... to the most a pass takes, or the queries left; the first
        # four always fit in the room for queries in flight, later ones depend on how fast the
        # CPU stages give room back
        assert sizes[:4] == ([1, 2, 4, 5] if batch else [1, 2, 4, 8]), sizes
        assert sum(sizes) == 24 and max(sizes) <= (batch or 32), sizes


def test_chunked_database(db_codes, proteome, blosum62):
    """A database uploaded in many chunks (each under half the free memory): same result."""
    chunked = GpuUngapped(*db_codes, max_chunk_residues=50_000)
    assert len(chunked.chunks) > 5 and all(c.resident for c in chunked.chunks)
    compare(chunked, db_codes, query_codes(proteome, 10), blosum62)
    # a small resident database takes several queries a pass (their kernels launched
    # together), one of 64 M residues one
    from gpu_search.blast.gpu import resident_queries_per_pass

    assert chunked.queries_per_pass == resident_queries_per_pass(len(db_codes[0])) > 1
    assert resident_queries_per_pass(64 << 20) == 1
    assert GpuUngapped(*db_codes, max_chunk_residues=50_000, queries_per_pass=5).queries_per_pass == 5


def test_edge_queries(gpu, db_codes, blosum62):
    """Very short queries, runs of X, a query longer than the shared-memory bins (CPU fallback)."""
    rng = np.random.default_rng(9)
    res = db_codes[0]
    for q in (res[100:104], res[5000:5003], np.full(50, 21, np.uint8),
              np.concatenate([res[0:300], np.full(40, 21, np.uint8), res[300:600]]),
              res[:17000]):
        compare(gpu, db_codes, blast_query_codes(np.ascontiguousarray(q)), blosum62)
    compare(gpu, db_codes, blast_query_codes(rng.integers(1, 23, 700).astype(np.uint8)), blosum62, cutoff=0)


def cli_outputs(tmp_path, proteome_path, n_queries, outfmt, gpu_args=(), settings=None):
    """blastp of n proteome queries on the CPU and on the GPU: {device: output bytes}.
    settings: the run's BlastSettings (the command line's ctx.obj["blast_settings"])."""
    from gpu_search.cli import cli
    from gpu_search.seqdb import open_database

    db = open_database(proteome_path)
    q = tmp_path / "q.fa"
    with open(q, "w") as fh:
        for i in range(0, db.n_seqs, max(1, db.n_seqs // n_queries))[:n_queries]:
            fh.write(f">{db.name(i)} {db.description(i)}\n{db.text(i)}\n")
    outs = {}
    for device, extra in (("cpu", []), ("gpu", list(gpu_args))):
        out = tmp_path / f"{device}.tsv"
        r = CliRunner().invoke(cli, ["blastp", "-query", str(q), "-db", str(proteome_path), "-out", str(out),
                                     "-outfmt", outfmt, "-num_threads", "4", "--device", device, "--quiet",
                                     *extra], obj=None if settings is None else {"blast_settings": settings})
        assert r.exit_code == 0, r.output
        outs[device] = out.read_bytes()
    return outs


def test_cli_split_query_identical_to_cpu(tmp_path, proteome_path):
    """A 30,000-residue query among proteome queries (BLAST+ searches its batch in three
    chunks, blast/split.py): its pieces on the GPU, merged, byte-identical to the CPU path,
    with and without composition-based statistics."""
    import random

    from gpu_search.cli import cli
    from gpu_search.seqdb import open_database

    db = open_database(proteome_path)
    rng = random.Random(30_000)
    long = ""
    while len(long) < 30_000:
        long += "".join(c if rng.random() > 0.3 else rng.choice("ACDEFGHIKLMNPQRSTVWY")
                        for c in db.text(rng.randrange(db.n_seqs)))
    q = tmp_path / "q.fa"
    with open(q, "w") as fh:
        for i in range(0, 40, 4):
            fh.write(f">{db.name(i)}\n{db.text(i)}\n")
        fh.write(f">long\n{long[:30_000]}\n")
    for cbs in ("0", "2"):
        outs = {}
        for device in ("cpu", "gpu"):
            out = tmp_path / f"{device}.tsv"
            r = CliRunner().invoke(cli, ["blastp", "-query", str(q), "-db", str(proteome_path), "-out", str(out),
                                         "-outfmt", "6 std qlen slen", "-comp_based_stats", cbs,
                                         "-num_threads", "4", "--device", device, "--quiet"])
            assert r.exit_code == 0, r.output
            outs[device] = out.read_bytes()
        assert outs["gpu"] == outs["cpu"]
        assert outs["cpu"].count(b"\nlong\t") > 50


def test_cli_gpu_output_identical_to_cpu(tmp_path, proteome_path):
    """50 proteome queries, tabular with many columns: byte-identical."""
    outs = cli_outputs(tmp_path, proteome_path, 50, "7 std qlen slen nident positive gaps qseq sseq")
    assert outs["gpu"] == outs["cpu"]
    assert outs["cpu"].count(b"\n") > 1000


def test_kernels_compiled_ahead_of_time_need_no_nvrtc(proteome, tmp_path, monkeypatch):
    """`python -m gpu_search.gpu.compiled --searches blastp` builds every kernel shape blastp
    asks for: runs of queries of every block size, lanes and scores (and a low-complexity
    one: diagonal-based), with the defaults and with other word size, window, lanes, no
    prefilter and the gapped thread kernel, then load them all from cubins, never calling
    NVRTC, and write the CPU's rows."""
    import io

    import cupy

    from gpu_search.blast import engine
    from gpu_search.blast.options import BlastOptions
    from gpu_search.blast.output import parse_outfmt
    from gpu_search.gpu import compiled, loader

    monkeypatch.setattr(compiled, "FOLDER", tmp_path / "compiled")
    assert compiled.main(["--arch", cupy.cuda.Device().compute_capability, "--searches", "blastp"]) == 0
    lengths = proteome.lengths
    picks = [int(np.argmin(np.abs(lengths - n))) for n in (130, 500, 900, 1100, 2099)] + [164]
    queries = proteome.subset(picks)
    real = cupy.RawModule
    from_cubins = []

    def no_nvrtc(*args, code=None, path=None, **kwargs):
        assert code is None, "NVRTC called for a kernel shape built ahead of time"
        from_cubins.append(path)
        return real(*args, path=path, **kwargs)

    fmt, columns = parse_outfmt("6 std qlen slen")
    runs = [({}, {}), (dict(word_size=2, window_size=20), dict(window_lanes=4, prefilter=False,
                                                                gapped_kernel="thread"))]
    for options, settings in runs:
        out = {}
        for device in ("gpu", "cpu"):
            fh = io.StringIO()
            loader.clear_cache()
            if device == "gpu":
                monkeypatch.setattr(cupy, "RawModule", no_nvrtc)
            try:
                engine.run_blastp(queries, proteome, BlastOptions(num_threads=4, **options), fh, fmt=fmt,
                                  columns=columns, db_name="proteome", quiet=True, device=device,
                                  settings=BlastSettings(**settings))
            finally:
                monkeypatch.setattr(cupy, "RawModule", real)
                loader.clear_cache()
            out[device] = fh.getvalue()
        assert out["gpu"] == out["cpu"] and out["cpu"].count("\n") > 500, options
    # the ungapped kernels of several shapes, the order and the gapped kernels: all from cubins
    assert len(set(from_cubins)) >= 8


@pytest.mark.parametrize("block", [64, 256, 512])
def test_block_sizes(db_codes, proteome, blosum62, block):
    """Every block size the kernel may be compiled for gives the same init HSPs."""
    engine = GpuUngapped(*db_codes, block=block)
    for i in (10, 500):
        compare(engine, db_codes, query_codes(proteome, i), blosum62, cutoff=0)


def test_cli_two_gpus_identical_to_cpu(tmp_path, proteome_path):
    """--gpus 0,1 (queries shared between two GPUs): the same bytes as the CPU."""
    if len(gpu_status()[2]) < 2:
        pytest.skip("fewer than two GPUs")
    outs = cli_outputs(tmp_path, proteome_path, 30, "6", ["--gpus", "0,1"])
    assert outs["gpu"] == outs["cpu"]


@pytest.mark.parametrize("extension,lanes,scores", [("window", 4, "pssm"), ("window", 8, "matrix"),
                                                    ("window", 16, "pssm"), ("window", 32, "matrix"),
                                                    ("diagonal", None, "pssm"), ("diagonal", None, "matrix")])
def test_extension_variants(extension, lanes, scores, db_codes, proteome, blosum62):
    """cuBLASTP's window-based variant (``lanes`` threads extend each hit together, a
    prefix sum and a max-scan per step) and its diagonal-based one, with
    scores from the PSSM or the matrix in shared memory: the same init HSPs,
    also with BLAST's cutoffs, other word sizes, windows, a short X-drop and
    the overflow pass."""
    win = GpuUngapped(*db_codes, extension=extension, window_lanes=lanes, scores=scores)
    for i in (3, 10, 200, 500, 1000, int(np.argmax(np.diff(np.asarray(proteome.offsets))))):
        compare(win, db_codes, query_codes(proteome, i), blosum62, cutoff=0)
        compare(win, db_codes, query_codes(proteome, i), blosum62)
    compare(win, db_codes, query_codes(proteome, 7), blosum62, 2, 9, 40, cutoff=0)
    compare(win, db_codes, query_codes(proteome, 7), blosum62, 3, 11, 20, cutoff=0)
    compare(win, db_codes, query_codes(proteome, 7), blosum62, 4, 13, 80, cutoff=0)
    compare(win, db_codes, query_codes(proteome, 200), blosum62, x_drop=4, cutoff=0)   # short X-drop
    small = GpuUngapped(*db_codes, extension=extension, window_lanes=lanes, scores=scores, hit_slots=64)
    compare(small, db_codes, query_codes(proteome, 10), blosum62, cutoff=0)


@pytest.mark.parametrize("extension", ["auto", "window"])
def test_low_complexity_queries(extension, gpu, db_codes, proteome, blosum62):
    """The proteome's low-complexity proteins as queries (a lookup cell of 128 query offsets or
    more: the default extension takes them diagonal-based), against the proteome, whose
    low-complexity subjects put hundreds of hits in a bin (Shell's passes before the insertion
    sort) and overflow the blocks' buffers: the same init HSPs."""
    from gpu_search.blast.gpu import extension_for
    from gpu_search.blast.lookup import build_lookup

    low = [i for i in range(proteome.n_seqs)
           if extension_for(build_lookup(query_codes(proteome, i), blosum62.scores, 3, 11)) == "diagonal"]
    assert len(low) >= 10
    engine = gpu if extension == "auto" else GpuUngapped(*db_codes, extension=extension)
    for i in low:
        compare(engine, db_codes, query_codes(proteome, i), blosum62)
        assert engine.last_extension == ("diagonal" if extension == "auto" else "window")
    compare(engine, db_codes, query_codes(proteome, 10), blosum62)
    assert engine.last_extension == "window"
    compare(engine, db_codes, query_codes(proteome, low[0]), blosum62, cutoff=0)
    small = GpuUngapped(*db_codes, extension=extension, hit_slots=4096)
    compare(small, db_codes, query_codes(proteome, low[-1]), blosum62, cutoff=0)
    assert small.overflowed > 0


@pytest.mark.parametrize("lanes,prefilter", [(None, True), (4, True), (32, True), (8, False), (4, False)])
def test_window_bins_struck_off_first(lanes, prefilter, db_codes, proteome, blosum62):
    """The window-based extension with the bins that cannot trigger struck off by a thread each
    first (PREFILTER, the default) and without: the same init HSPs, word sizes 2 to 4 and other
    windows, with the overflow pass."""
    struck = GpuUngapped(*db_codes, extension="window", window_lanes=lanes, prefilter=prefilter)
    for i in (3, 10, 500, int(np.argmax(np.diff(np.asarray(proteome.offsets))))):
        compare(struck, db_codes, query_codes(proteome, i), blosum62, cutoff=0)
        compare(struck, db_codes, query_codes(proteome, i), blosum62)
    compare(struck, db_codes, query_codes(proteome, 7), blosum62, 2, 9, 40, cutoff=0)
    compare(struck, db_codes, query_codes(proteome, 7), blosum62, 3, 11, 20, cutoff=0)
    compare(struck, db_codes, query_codes(proteome, 7), blosum62, 4, 13, 80, cutoff=0)
    small = GpuUngapped(*db_codes, extension="window", window_lanes=lanes, prefilter=prefilter, hit_slots=64)
    compare(small, db_codes, query_codes(proteome, 10), blosum62, cutoff=0)


def test_cli_extension_variants_identical_to_cpu(tmp_path, proteome_path):
    for args in (["--gpu-extension", "window", "--gpu-window-lanes", "32"], ["--gpu-extension", "diagonal"]):
        outs = cli_outputs(tmp_path, proteome_path, 20, "6", args)
        assert outs["gpu"] == outs["cpu"], args


# --- the preliminary gapped stage on the GPU (blast/gpu/gapped.cu) ---------------------------------------


def compare_prelim(prelim, db_codes, q, matrix, cutoff_scale=1.0):
    """GpuPrelim.run (+ the CPU for what it leaves) against gapped.preliminary_gapped_hsps_batch.

    Returns (subjects done on the GPU, subjects left to the CPU)."""
    from gapped_host import search

    from gpu_search.blast import gapped

    residues, offsets = db_codes
    init, x_drop, cutoff = search(q, residues, offsets, matrix, cutoff_scale)
    hsps, left = prelim.run(init, q, matrix.scores, 11, 1, x_drop, cutoff)
    cpu, _ = gapped.preliminary_gapped_hsps_batch(left, q, residues, offsets, matrix.scores, 11, 1,
                                                  x_drop, cutoff)
    both = np.concatenate([hsps, cpu])
    both = both[np.argsort(both["subject"], kind="stable")]
    ref, _ = gapped.preliminary_gapped_hsps_batch(init, q, residues, offsets, matrix.scores, 11, 1,
                                                  x_drop, cutoff)
    assert np.array_equal(both, ref), f"GPU+CPU {len(both)} rows, CPU {len(ref)}"
    n_left = len(np.unique(left["subject"]))
    return len(np.unique(init["subject"])) - n_left, n_left


@pytest.mark.parametrize("kernel", ["warp", "thread"])
@pytest.mark.parametrize("cutoff_scale", [1.0, 2.5])
def test_prelim_gapped_equal_cpu(gpu, db_codes, proteome, blosum62, cutoff_scale, kernel):
    """Queries of every length; a raised cutoff makes restricted extensions restart exactly."""
    from gpu_search.blast.gpu.gapped import GpuPrelim

    prelim = GpuPrelim(gpu, kernel=kernel)
    lengths = np.diff(np.asarray(proteome.offsets))
    picks = [3, 10, 200, 500, 1000, int(np.argmax(lengths))] + [int(np.argmin(np.abs(lengths - n)))
                                                                  for n in (60, 130, 500, 1000, 2000)]
    on_gpu = 0
    for i in picks:
        on_gpu += compare_prelim(prelim, db_codes, query_codes(proteome, i), blosum62, cutoff_scale)[0]
    assert on_gpu > 1000


@pytest.mark.parametrize("kernel", ["warp", "thread"])
def test_prelim_gapped_fallbacks(db_codes, proteome, blosum62, kernel):
    """A 16-cell ring (bands overflow to the CPU), subjects of 2+ init HSPs left to the CPU, and a
    database in many chunks: the same HSPs."""
    from gpu_search.blast.gpu.gapped import GpuPrelim

    chunked = GpuUngapped(*db_codes, max_chunk_residues=50_000)
    small = GpuPrelim(chunked, band=16, max_gpu_group=1, kernel=kernel)
    left = 0
    for i in (10, 500, 1000):
        left += compare_prelim(small, db_codes, query_codes(proteome, i), blosum62)[1]
    assert small.overflowed > 0 and left > small.overflowed


def test_cli_cpu_gapped_identical(tmp_path, proteome_path):
    """--cpu-gapped (all gapped extensions on CPU threads) and the default --gpu-gapped: same bytes as the CPU."""
    outs = cli_outputs(tmp_path, proteome_path, 20, "6", ["--cpu-gapped"])
    assert outs["gpu"] == outs["cpu"]


def test_prelim_gapped_out_of_memory_goes_to_the_cpu(gpu, db_codes, proteome, blosum62, monkeypatch):
    """No GPU memory for a query's gapped buffers: all its subjects are left to the CPU (same HSPs)."""
    import cupy as cp

    from gpu_search.blast.gpu.gapped import GpuPrelim

    prelim = GpuPrelim(gpu)

    def no_memory(*args, **kwargs):
        raise cp.cuda.memory.OutOfMemoryError(1 << 30, 1 << 30)

    monkeypatch.setattr(prelim, "_launch_on_device", no_memory)
    done, left = compare_prelim(prelim, db_codes, query_codes(proteome, 10), blosum62)
    assert done == 0 and left > 0 and prelim.out_of_memory == 1


def test_prelim_gapped_several_queries_per_launch(gpu, db_codes, proteome, blosum62, monkeypatch):
    """run_many: queries of every length and two cutoffs in one launch, each as the CPU path; a
    batch without GPU memory is halved until it fits."""
    from gapped_host import search

    from gpu_search.blast import gapped
    from gpu_search.blast.gpu.gapped import GpuPrelim, PrelimJob

    residues, offsets = db_codes
    lengths = np.diff(np.asarray(proteome.offsets))
    jobs = []
    for n, scale in ((60, 1.0), (130, 2.5), (500, 1.0), (1000, 1.6), (2000, 1.0), (300, 1.0)):
        q = query_codes(proteome, int(np.argmin(np.abs(lengths - n))))
        init, x_drop, cutoff = search(q, residues, offsets, blosum62, scale)
        jobs.append(PrelimJob(init, q, x_drop, cutoff))
    for max_queries in (None, 2):
        prelim = GpuPrelim(gpu)
        launches = []
        real = prelim._launch_on_device

        def launch(cp, batch, *args):
            launches.append(len(batch.query_start) - 1)
            if max_queries is not None and launches[-1] > max_queries:
                raise cp.cuda.memory.OutOfMemoryError(1 << 30, 1 << 30)
            return real(cp, batch, *args)

        monkeypatch.setattr(prelim, "_launch_on_device", launch)
        on_gpu = 0
        for job, (hsps, left) in zip(jobs, prelim.run_many(jobs, blosum62.scores, 11, 1)):
            cpu, _ = gapped.preliminary_gapped_hsps_batch(left, job.query_codes, residues, offsets,
                                                          blosum62.scores, 11, 1, job.x_dropoff, job.cutoff)
            both = np.concatenate([hsps, cpu])
            ref, _ = gapped.preliminary_gapped_hsps_batch(job.init, job.query_codes, residues, offsets,
                                                          blosum62.scores, 11, 1, job.x_dropoff, job.cutoff)
            assert np.array_equal(both[np.argsort(both["subject"], kind="stable")], ref)
            on_gpu += len(hsps)
        assert on_gpu > 100 and prelim.out_of_memory == 0
        assert launches == ([6] if max_queries is None else [6, 3, 1, 2, 3, 1, 2])
        assert prelim.kernel_seconds > 0


@pytest.mark.parametrize("kernel", ["warp", "thread"])
@pytest.mark.parametrize("band,budget", [(256, None), (64, 1 << 12), (1024, 1 << 30)])
def test_prelim_gapped_homologs_with_indels(blosum62, kernel, band, budget):
    """Subjects made from the queries with substitutions, insertions and deletions (gapped
    alignments of every shape, restricted and exact), rings and budgets that keep them on the GPU
    or send them back: the CPU path's HSPs."""
    from gpu_search.blast.gpu.gapped import CELL_BUDGET, GpuPrelim

    rng = np.random.default_rng(2026)
    queries = [rng.integers(1, 23, n).astype(np.uint8) for n in (40, 150, 400, 900)]
    subjects = []
    for q in queries:
        for identity in (0.35, 0.5, 0.7, 0.95):
            s = []
            for c in q:
                r = rng.random()
                if r < 0.04:
                    continue                                       # deletion
                if r < 0.08:
                    s.extend(rng.integers(1, 23, int(rng.integers(1, 8))).tolist())   # insertion
                s.append(int(c) if rng.random() < identity else int(rng.integers(1, 23)))
            subjects.append(rng.integers(1, 23, int(rng.integers(0, 200))).tolist() + s +
                            rng.integers(1, 23, int(rng.integers(0, 200))).tolist())
    subjects += [rng.integers(1, 23, int(n)).tolist() for n in rng.integers(20, 800, 300)]
    residues = np.concatenate([np.asarray(s, np.uint8) for s in subjects])
    offsets = np.concatenate(([0], np.cumsum([len(s) for s in subjects]))).astype(np.int64)
    prelim = GpuPrelim(GpuUngapped(residues, offsets), band=band,
                       cell_budget=CELL_BUDGET if budget is None else budget, kernel=kernel)
    done = 0
    for q in queries:
        for scale in (1.0, 3.0):
            done += compare_prelim(prelim, (residues, offsets), q, blosum62, scale)[0]
    assert done > 20
