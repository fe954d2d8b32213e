"""hmmsearch benchmark matrix: gpu-search end to end through its command line against
pyhmmer and HMMER's hmmsearch binary on all cores, on the same host, in one run.

Measured in each cell (number of models x database x homolog density), every tool run as a
subprocess and timed by its wall time (interpreter start, imports, reading the inputs, the
search, writing the tables):

* gpu-search: ``python -m gpu_search hmmsearch --cpu N -o /dev/null --noali --tblout T
  --domtblout D MODELS DB`` with ``--device gpu`` (``--device cpu`` in --smoke), runs:
    - cold: DB is the .gsdb, compiled-code caches empty (CUPY_CACHE_DIR, NUMBA_CACHE_DIR and
      CUDA_CACHE_PATH pointed at a new empty folder), as on the first run on a fresh host;
    - warm: the same command again, with caches holding what the cold run compiled (--work/cache,
      also filled by one untimed run on a small input before the first cell);
    - FASTA: warm, reading the FASTA file instead of the .gsdb (databases of 50 M residues or
      more, where reading matters; --fasta always/never);
    - CPU: ``--device cpu`` (pyhmmer's whole pipeline inside our command), .gsdb, warm, where
      pyhmmer took at most --cheap-seconds;
* pyhmmer: ``pyhmmer.hmmer.hmmsearch(HMMFile(MODELS), block, cpus=N)`` in a subprocess that
  reads the FASTA file into a block itself and writes each TopHits with
  ``TopHits.write(fh, format="targets"/"domains", header=False)``;
* HMMER's ``hmmsearch --cpu N -o /dev/null --noali --tblout --domtblout`` on the FASTA file,
  when on PATH and where pyhmmer took at most --cheap-seconds (--binary always/never);
* hits: the rows of each of our tblout and domtblout files (comment lines ignored) compared
  with pyhmmer's: identical or not, and the counts (sequences / domains);
* GPU busy: mean of ``nvidia-smi --query-gpu=utilization.gpu`` sampled every 100 ms during the
  warm run (blank where nvidia-smi is absent);
* the ratio: pyhmmer's time over our warm .gsdb run's (above 1: gpu-search faster).

Cells: models {1, 20, 200, 2000, 20000} x databases {proteome (6.8 M residues), 68m (68 M),
273m (273 M)} x homologs {few, many}, selected with --models/--dbs/--homologs (their product)
or --cells 200:proteome:many,20:273m:few.  Cells run cheapest first (by an estimate printed
before each, from the project's last measurements and rescaled by the cells already run); a
cell whose estimate does not fit in what is left of --budget-seconds is reported as not run,
and a tool that passes --tool-timeout is reported as "> T s".  The table (JSON and markdown in
--out) is rewritten after every cell, and printed last.

Inputs, all built deterministically (fixed seeds) from pyhmmer's test data (its 2,100-protein
Anaerococcus proteome, 682,583 residues), cached under --work keyed by their parameters:

* databases: the proteome plus 9, 99 or 399 copies of it.  few homologs: each copy's residues
  shuffled within each sequence (same lengths and composition, as bench/hmmsearch_bench.py
  does).  many homologs: copy c mutated to 90, 70, 50 or 35% identity (c cycling through them):
  substitutions at rate 1 - identity drawn from HMMER's background frequencies (the identity
  is nominal: a draw may give back the same residue), and indels of 1-4 residues at rate
  (1 - identity) / 50 per residue, half insertions (background residues), half deletions.
  Written as FASTA, then as .gsdb by ``python -m gpu_search makedb``;
* models: single-sequence profiles built by ``pyhmmer.plan7.Builder`` (seed 42) with the
  default Background, from proteome windows whose lengths follow a Pfam-like log-normal
  distribution (median 140, sigma 0.75) truncated to M = 30..1,500, at evenly spaced
  quantiles (1 model: M = 143; 20: 39-607; 200: 31-1,079; 2,000: 30-1,413; 20,000: 30-1,490;
  median 143, mean 184-187).  Each window is cut at a random place of a random protein at
  least that long (stop symbols removed), unused proteins first, longest models first; a
  protein used again is mutated to 80% identity (substitutions only, seeded by the model's
  index) so that every model differs.  Named m<index>_<protein>_<start>-<end>[_v<use>].
  Built in parallel on --cpus processes; the DATE and COM lines are fixed, so the files are
  the same bytes on every host.

Usage (on the GPU host: ``bash bench/device_run.sh matrix [these options]``):

    python bench/hmmsearch_matrix.py --models 1,20,200 --dbs proteome --homologs few,many
    python bench/hmmsearch_matrix.py --cells 2000:proteome:many,20:273m:few --budget-seconds 500
    python bench/hmmsearch_matrix.py --smoke      # a tiny run of every code path, no GPU, 2 cores
    python bench/hmmsearch_matrix.py --build-only --models 20000 --dbs 273m
"""

from __future__ import annotations

import argparse
import io
import itertools
import json
import math
import multiprocessing
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from statistics import NormalDist

import numpy as np

REPO = Path(__file__).resolve().parent.parent
GENERATOR = 1                     # part of every cache key: bump it when the inputs change
SYMBOLS = b"ACDEFGHIKLMNPQRSTVWY-BJZOUX*~"      # Easel's amino alphabet; codes 0-19 are residues
MODEL_COUNTS = (1, 20, 200, 2000, 20000)
DB_COPIES = {"proteome": 9, "68m": 99, "273m": 399}
HOMOLOGS = ("few", "many")
IDENTITIES = (0.90, 0.70, 0.50, 0.35)
REUSE_IDENTITY = 0.80
M_MEDIAN, M_SIGMA, M_MIN, M_MAX = 140, 0.75, 30, 1500
BUILD_SEED = 42
FIXED_DATE = (2000, 1, 1)         # the models' DATE line, so that the files are byte-identical


# --------------------------------------------------------------------------------------------
# inputs


def proteome_path() -> Path:
    import pyhmmer

    return Path(pyhmmer.__file__).parent / "tests" / "data" / "seqs" / "938293.PRJEB85.HG003687.faa"


def read_proteome(n_base: int | None) -> tuple[list[str], list[bytes]]:
    """Names and sequences (upper-case bytes) of the proteome's first n_base proteins (all: None)."""
    names, seqs, cur = [], [], []
    for line in proteome_path().read_bytes().splitlines():
        if line.startswith(b">"):
            if names:
                seqs.append(b"".join(cur).upper())
            names.append(line[1:].split()[0].decode())
            cur = []
        else:
            cur.append(line.strip())
    seqs.append(b"".join(cur).upper())
    if n_base:
        names, seqs = names[:n_base], seqs[:n_base]
    return names, seqs


def background_frequencies() -> np.ndarray:
    import pyhmmer

    abc = pyhmmer.easel.Alphabet.amino()
    f = np.asarray(pyhmmer.plan7.Background(abc).residue_frequencies, dtype=np.float64)
    return f / f.sum()


def to_codes(seq: bytes) -> np.ndarray:
    lut = np.full(256, SYMBOLS.index(b"X"), dtype=np.uint8)
    for i, c in enumerate(SYMBOLS):
        lut[c] = i
    return lut[np.frombuffer(seq, dtype=np.uint8)]


def mutate(codes: np.ndarray, offsets: np.ndarray, identity: float, rng, bg: np.ndarray,
           indels: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Mutated copy of the concatenated sequences ``codes`` (boundaries ``offsets``): returns the
    new codes and the new length of each sequence.  Substitutions at rate 1 - identity drawn from
    ``bg``; indels of 1-4 residues (geometric lengths) at rate (1 - identity) / 50, half each
    way; a sequence's first residue is never deleted, so none becomes empty."""
    n, nseq = len(codes), len(offsets) - 1
    seq_of = np.repeat(np.arange(nseq), np.diff(offsets))
    out = codes.copy()
    sub = rng.random(n) < 1.0 - identity
    out[sub] = rng.choice(20, size=int(sub.sum()), p=bg)
    if not indels:
        return out, np.diff(offsets)
    rate = (1.0 - identity) / 50
    keep = np.ones(n, dtype=np.int64)
    starts = np.flatnonzero(rng.random(n) < rate / 2)
    lens = np.minimum(rng.geometric(0.5, len(starts)), 4)
    for j in range(4):                   # delete starts+j where the run is that long, same sequence
        pos = starts[lens > j] + j
        pos = pos[(pos < n)]
        pos = pos[seq_of[pos] == seq_of[np.maximum(pos - j, 0)]]
        keep[pos] = 0
    keep[offsets[:-1]] = 1
    ins = np.zeros(n, dtype=np.int64)
    at = np.flatnonzero(rng.random(n) < rate / 2)
    ins[at] = np.minimum(rng.geometric(0.5, len(at)), 4)
    # each old residue becomes `keep` copies of itself then `ins` inserted residues
    counts = keep + ins
    idx = np.repeat(np.arange(n), counts)
    first = np.cumsum(counts) - counts
    inserted = (np.arange(len(idx)) - first[idx]) >= keep[idx]
    new = out[idx]
    new[inserted] = rng.choice(20, size=int(inserted.sum()), p=bg)
    return new, np.bincount(seq_of[idx], minlength=nseq)


_BASE: dict = {}                     # the proteome in each worker process (set by _init_base)


def _init_base(n_base):
    names, seqs = read_proteome(n_base)
    lengths = np.array([len(s) for s in seqs], dtype=np.int64)
    _BASE.update(names=names, seqs=seqs, codes=to_codes(b"".join(seqs)), lengths=lengths,
                 offsets=np.concatenate([[0], np.cumsum(lengths)]), bg=background_frequencies())


def _copy_fasta(job) -> tuple[bytes, int, int]:
    """FASTA text, sequences and residues of copy c of the proteome (c = 0: the proteome itself)."""
    homologs, c, seed = job
    codes, offsets, names = _BASE["codes"], _BASE["offsets"], _BASE["names"]
    lengths = np.diff(offsets)
    rng = np.random.default_rng([seed, HOMOLOGS.index(homologs), c])   # one stream per copy
    if c == 0:
        tag = [""] * len(names)
    elif homologs == "few":
        seq_of = np.repeat(np.arange(len(names)), lengths)
        # shuffle within each sequence: sort by sequence + a random fraction
        codes = codes[np.argsort(seq_of + rng.random(len(codes)), kind="stable")]
        tag = [f"_shuf{c}"] * len(names)
    else:
        identity = IDENTITIES[(c - 1) % len(IDENTITIES)]
        codes, lengths = mutate(codes, offsets, identity, rng, _BASE["bg"])
        tag = [f"_mut{c}_id{round(identity * 100)}"] * len(names)
    text = np.frombuffer(SYMBOLS, dtype=np.uint8)[codes].tobytes()
    ends = np.cumsum(lengths)
    chunks, a = [], 0
    for name, t, b in zip(names, tag, ends):
        chunks.append(b">%s%s\n%s\n" % (name.encode(), t.encode(), text[a:b]))
        a = b
    return b"".join(chunks), len(names), int(ends[-1])


def model_specs(n: int, lengths: np.ndarray, seed: int, m_max: int) -> list[tuple]:
    """(index, protein, start, M, reuse) of each of n models; see the module's docstring."""
    nd = NormalDist(math.log(M_MEDIAN), M_SIGMA)
    hi = min(m_max, int(lengths.max()))
    q0, q1 = nd.cdf(math.log(M_MIN)), nd.cdf(math.log(hi))
    ms = [min(hi, max(M_MIN, round(math.exp(nd.inv_cdf(q0 + (q1 - q0) * (i + 0.5) / n)))))
          for i in range(n)]
    rng = np.random.default_rng([seed, n])
    ms = [ms[i] for i in rng.permutation(n)]          # the file's order: not sorted by length
    used = np.zeros(len(lengths), dtype=np.int64)
    specs = [None] * n
    for j in sorted(range(n), key=lambda j: (-ms[j], j)):   # long ones first: fewest proteins fit
        fit = np.flatnonzero(lengths >= ms[j])
        fresh = fit[used[fit] == 0]
        p = int(rng.choice(fresh if len(fresh) else fit))
        start = int(rng.integers(0, lengths[p] - ms[j] + 1))
        specs[j] = (j, p, start, ms[j], int(used[p]))
        used[p] += 1
    return specs


def _build_models(specs) -> bytes:
    """HMMER3 text of single-sequence models, one per spec (worker process)."""
    import datetime

    import pyhmmer
    from pyhmmer.plan7 import Background, Builder

    abc = pyhmmer.easel.Alphabet.amino()
    builder, bg = Builder(abc, seed=BUILD_SEED), Background(abc)
    sym = np.frombuffer(SYMBOLS, dtype=np.uint8)
    out = io.BytesIO()
    for j, p, start, m, reuse in specs:
        window = to_codes(_BASE["model_seqs"][p][start:start + m])
        if reuse:                         # a protein used again: mutated, so the models differ
            rng = np.random.default_rng([BUILD_SEED, j])
            window, _ = mutate(window, np.array([0, m]), REUSE_IDENTITY, rng, _BASE["bg"], indels=False)
        name = f"m{j:05d}_{_BASE['names'][p]}_{start + 1}-{start + m}" + (f"_v{reuse}" if reuse else "")
        seq = pyhmmer.easel.TextSequence(name=name, sequence=sym[window].tobytes().decode()).digitize(abc)
        hmm, _, _ = builder.build(seq, bg)
        hmm.name = name
        hmm.creation_time = datetime.datetime(*FIXED_DATE)
        hmm.command_line = "bench/hmmsearch_matrix.py"      # (not our own options: same bytes)
        hmm.write(out)
    return out.getvalue()


def _init_models(n_base):
    _init_base(n_base)
    # models come from the proteins without stop symbols ('*'), so that each is pure sequence
    _BASE["model_seqs"] = [s.replace(b"*", b"") for s in _BASE["seqs"]]


def pool(cpus, initializer, n_base):
    # spawned, not forked: a fork copies whatever lock another thread of ours holds (a build
    # hung once that way), and each worker reads the proteome itself anyway
    return multiprocessing.get_context("spawn").Pool(cpus, initializer=initializer, initargs=(n_base,))


def build_models(n: int, args) -> tuple[Path, dict]:
    """The n-model HMM file and its summary, built once under --work."""
    key = f"models_n{n}_base{args.base_seqs or 'all'}_mmax{args.max_m}_seed{BUILD_SEED}_g{GENERATOR}"
    path, meta = args.work / f"{key}.hmm", args.work / f"{key}.json"
    if path.exists() and meta.exists():
        return path, json.loads(meta.read_text())
    t = time.perf_counter()
    _init_models(args.base_seqs)
    lengths = np.array([len(s) for s in _BASE["model_seqs"]])
    specs = model_specs(n, lengths, BUILD_SEED, args.max_m)
    size = max(1, min(50, n // (args.cpus * 4)))
    chunks = [specs[i:i + size] for i in range(0, n, size)]
    tmp = path.with_suffix(".tmp")
    with open(tmp, "wb") as fh, pool(args.cpus, _init_models, args.base_seqs) as workers:
        for text in workers.imap(_build_models, chunks):
            fh.write(text)
    tmp.rename(path)
    ms = np.array([s[3] for s in specs])
    info = {"models": n, "M_min": int(ms.min()), "M_median": float(np.median(ms)),
            "M_mean": round(float(ms.mean()), 1), "M_max": int(ms.max()), "M_sum": int(ms.sum()),
            "reused_proteins": int(sum(1 for s in specs if s[4])),
            "build_seconds": round(time.perf_counter() - t, 1), "cpus": args.cpus}
    meta.write_text(json.dumps(info))
    print(f"  built {path.name}: {n} models, M {info['M_min']}-{info['M_max']} (mean "
          f"{info['M_mean']}) in {info['build_seconds']} s on {args.cpus} cores", flush=True)
    return path, info


def build_database(db: str, homologs: str, args) -> tuple[Path, Path, dict]:
    """(FASTA, .gsdb, summary) of a database, built once under --work."""
    copies = args.copies[db]
    key = f"db_{homologs}_c{copies}_base{args.base_seqs or 'all'}_seed{BUILD_SEED}_g{GENERATOR}"
    fasta, gsdb, meta = (args.work / f"{key}{ext}" for ext in (".faa", ".gsdb", ".json"))
    if fasta.exists() and gsdb.exists() and meta.exists():
        return fasta, gsdb, json.loads(meta.read_text())
    t = time.perf_counter()
    tmp = fasta.with_suffix(".tmp")
    n_seqs = n_res = 0
    with open(tmp, "wb") as fh, pool(args.cpus, _init_base, args.base_seqs) as workers:
        for text, k, r in workers.imap(_copy_fasta, [(homologs, c, BUILD_SEED) for c in range(copies + 1)], 4):
            fh.write(text)
            n_seqs, n_res = n_seqs + k, n_res + r
    tmp.rename(fasta)
    t_fasta = time.perf_counter() - t
    t = time.perf_counter()
    subprocess.run([sys.executable, "-m", "gpu_search", "makedb", "-q", "-o", str(gsdb), str(fasta)],
                   check=True, env=child_env())
    info = {"sequences": n_seqs, "residues": n_res, "copies": copies, "homologs": homologs,
            "fasta_seconds": round(t_fasta, 1), "makedb_seconds": round(time.perf_counter() - t, 1),
            "cpus": args.cpus}
    meta.write_text(json.dumps(info))
    print(f"  built {fasta.name}: {n_seqs:,} sequences, {n_res:,} residues: FASTA in "
          f"{info['fasta_seconds']} s on {args.cpus} cores, makedb {info['makedb_seconds']} s", flush=True)
    return fasta, gsdb, info


def add_cell_arguments(ap, homologs: str) -> None:
    """A probe's options naming its cell: --models (2,000), --db, --homologs, --cpus, --work."""
    ap.add_argument("--models", type=int, default=2000)
    ap.add_argument("--db", default="proteome")
    ap.add_argument("--homologs", default=homologs)
    ap.add_argument("--cpus", type=int, default=os.cpu_count())
    ap.add_argument("--work", type=Path, default=Path("/tmp/gsmatrix"))


def probe_cell(args) -> tuple:
    """A probe's cell (args.models models x args.db, args.homologs homologs; the matrix's
    copies, every base protein, its longest model), built once under args.work: (the models,
    read; the database, open; the HMM file; the .gsdb file)."""
    import pyhmmer

    from gpu_search.seqdb import open_database

    args.copies, args.base_seqs, args.max_m = dict(DB_COPIES), 0, M_MAX
    args.work.mkdir(parents=True, exist_ok=True)
    hmm_path, _ = build_models(args.models, args)
    _, gsdb, _ = build_database(args.db, args.homologs, args)
    with pyhmmer.plan7.HMMFile(str(hmm_path)) as fh:
        hmms = list(fh)
    return hmms, open_database(str(gsdb)), hmm_path, gsdb


# --------------------------------------------------------------------------------------------
# running the tools


def child_env(**extra) -> dict:
    env = dict(os.environ, **extra)
    env["PYTHONPATH"] = str(REPO) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def ours_command(args, device, hmm, db, tbl, dom) -> list[str]:
    return [sys.executable, "-m", "gpu_search", "hmmsearch", "-q", "--cpu", str(args.cpus), "-o", os.devnull,
            "--noali", "--device", device, "--tblout", str(tbl), "--domtblout", str(dom), str(hmm), str(db)]


def cache_env(folder: Path) -> dict:
    """Our command's environment with CuPy's, numba's and CUDA's compiled-code caches in `folder`: an
    empty one for a cold run, --work/cache (kept between runs) for the warm ones."""
    return child_env(CUPY_CACHE_DIR=str(folder / "cupy"), NUMBA_CACHE_DIR=str(folder / "numba"),
                     CUDA_CACHE_PATH=str(folder / "nv"))       # (the driver's, for PTX it compiles)


def warm_up(args) -> dict:
    """One untimed run of ours per device on 1 model x 50 proteins, from FASTA and from .gsdb, so
    that --work/cache holds the code every warm run needs (numba's FASTA reader included)."""
    hmm, _ = build_models(1, args)
    names, seqs = read_proteome(50)
    fasta, gsdb = args.work / "warmup.faa", args.work / "warmup.gsdb"
    fasta.write_bytes(b"".join(b">%s\n%s\n" % (n.encode(), s) for n, s in zip(names, seqs)))
    subprocess.run([sys.executable, "-m", "gpu_search", "makedb", "-q", "-o", str(gsdb), str(fasta)],
                   check=True, env=cache_env(args.work / "cache"))
    t, rcs = time.perf_counter(), []
    for device in sorted({args.device, "cpu"}):
        for db in (fasta, gsdb):
            cmd = ours_command(args, device, hmm, db, os.devnull, os.devnull)
            rcs.append(subprocess.run(cmd, env=cache_env(args.work / "cache"), capture_output=True).returncode)
    return {"seconds": round(time.perf_counter() - t, 1), "rcs": rcs}


def gpu_sampler():
    """nvidia-smi printing GPU utilization every 100 ms, or None where it is absent."""
    exe = shutil.which("nvidia-smi")
    if not exe:
        return None
    return subprocess.Popen([exe, "--query-gpu=utilization.gpu", "--format=csv,noheader,nounits",
                             "-lms", "100"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            text=True, start_new_session=True)


def gpu_busy(sampler) -> float | None:
    """Mean utilization (%) over the samples and GPUs of a sampler, stopped here."""
    if sampler is None:
        return None
    sampler.terminate()
    try:
        out, _ = sampler.communicate(timeout=5)
    except subprocess.TimeoutExpired:
        sampler.kill()
        out, _ = sampler.communicate()
    vals = [float(x) for x in out.split() if x.replace(".", "", 1).isdigit()]
    return round(sum(vals) / len(vals), 1) if vals else None


_RUNNING: list = []                  # the tool running now, killed with us (see main)


def _on_term(signum, frame):
    for proc in _RUNNING:
        os.killpg(proc.pid, signal.SIGKILL)
    raise SystemExit(128 + signum)


def run_timed(cmd, timeout: float, log: Path, env=None, sample_gpu=False) -> dict:
    """Wall time of one command; its own process group is killed if it passes `timeout`."""
    sampler = gpu_sampler() if sample_gpu else None
    with open(log, "wb") as fh:
        t = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, env=env or child_env(),
                                start_new_session=True)
        _RUNNING.append(proc)
        try:
            rc = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            rc = None
        finally:
            _RUNNING.remove(proc)
        seconds = time.perf_counter() - t
    res = {"seconds": round(seconds, 2), "rc": rc, "timed_out": rc is None, "timeout": round(timeout, 1)}
    busy = gpu_busy(sampler)
    if busy is not None:
        res["gpu_busy"] = busy
    if rc not in (0, None):
        res["error"] = log.read_text(errors="replace")[-600:]
        print(f"    ! rc {rc}: {res['error'].strip().splitlines()[-1:] or ''}", flush=True)
    return res


def add_run_arguments(ap) -> None:
    """The options of an end-to-end benchmark of queries or models against pyhmmer
    (bench/query_search_bench.py, bench/hmmscan_bench.py); :func:`run_arguments` reads them."""
    ap.add_argument("--cpu-path", default="", help="cells where our --device cpu runs too")
    ap.add_argument("--device", default="gpu", help="our GPU runs' device (reference: a smoke run without a GPU)")
    ap.add_argument("--cpus", type=int, default=os.cpu_count())
    ap.add_argument("--timeout", type=float, default=300)
    ap.add_argument("--work", type=Path, default=Path("/tmp/gsmatrix"))
    ap.add_argument("--out", type=Path, default=Path(os.environ.get("OUT", ".")))


def run_arguments(args) -> None:
    """:func:`add_run_arguments`'s options made ready: --cpu-path a set, the folders made, the
    matrix's model and database settings."""
    args.cpu_path = set(filter(None, args.cpu_path.split(",")))
    args.copies, args.base_seqs, args.max_m = dict(DB_COPIES), 0, M_MAX
    args.work.mkdir(parents=True, exist_ok=True)
    args.out.mkdir(parents=True, exist_ok=True)


def cell_files(stem: str, cell: str, args) -> tuple[Path, dict]:
    """A cell's log folder (--out/logs) and the --tblout of each of its runs (cold, warm, cpu,
    pyhmmer; under --work, none there yet)."""
    logs = args.out / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    tbl = {k: args.work / f"{stem}_{cell.replace(':', '_')}_{k}.tbl" for k in ("cold", "warm", "cpu", "pyhmmer")}
    for path in tbl.values():
        path.unlink(missing_ok=True)
    return logs, tbl


def ours_cold_warm_cpu(command, cell: str, args, logs: Path, tbl: dict, row: dict) -> None:
    """Our command of a cell timed into ``row``: cold ("ours_cold": CuPy's, numba's and CUDA's
    caches a new empty folder), warm ("ours_warm": the same command again on what the cold run
    left, the GPU sampled) and, where --cpu-path names the cell, on the CPU ("ours_cpu").
    ``command(device, tbl_path)`` is the command line; ``tbl`` the --tblout of each run."""
    with tempfile.TemporaryDirectory() as cache:
        env = cache_env(Path(cache))
        row["ours_cold"] = run_timed(command(args.device, tbl["cold"]), args.timeout, logs / f"{cell}_cold.log",
                                     env=env)
        row["ours_warm"] = run_timed(command(args.device, tbl["warm"]), args.timeout, logs / f"{cell}_warm.log",
                                     env=env, sample_gpu=True)
        if cell in args.cpu_path:
            row["ours_cpu"] = run_timed(command("cpu", tbl["cpu"]), args.timeout, logs / f"{cell}_cpu.log", env=env)


def compare_runs(row: dict, tbl: dict, same=lambda ours, theirs: ours == theirs) -> None:
    """A cell's --tblout rows compared into ``row``: the warm run's against the cold run's, the
    CPU run's (where it ran) and pyhmmer's (``same``: how), and pyhmmer's time over the warm
    run's."""
    rows = {k: table_rows(path) for k, path in tbl.items()}
    row["rows"] = len(rows["warm"] or [])
    row["cold_same_as_warm"] = rows["cold"] == rows["warm"]
    if rows["cpu"] is not None:
        row["gpu_same_as_cpu"] = rows["warm"] == rows["cpu"]
    row["same_as_pyhmmer"] = rows["warm"] is not None and same(rows["warm"], rows["pyhmmer"])
    row["pyhmmer_rows"] = len(rows["pyhmmer"] or [])
    if row["ours_warm"].get("rc") == 0 and row["pyhmmer"].get("rc") == 0:
        row["ratio"] = round(row["pyhmmer"]["seconds"] / row["ours_warm"]["seconds"], 2)


def seconds_text(row: dict, key: str) -> str:
    """A timed run's seconds for a table ("" where not run, "rc N" where it failed)."""
    v = row.get(key)
    return "" if v is None else (f"{v['seconds']:.2f}" if v.get("rc") == 0 else f"rc {v.get('rc')}")


def pyhmmer_worker(hmm_path, fasta, cpus, tbl, dom):
    """The pyhmmer side of a cell (run in its own process): read the FASTA, search, write tables."""
    import pyhmmer

    abc = pyhmmer.easel.Alphabet.amino()
    with pyhmmer.easel.SequenceFile(fasta, digital=True, alphabet=abc) as sf:
        block = sf.read_block()
    with pyhmmer.plan7.HMMFile(hmm_path) as hf, open(tbl, "wb") as t, open(dom, "wb") as d:
        for hits in pyhmmer.hmmer.hmmsearch(hf, block, cpus=int(cpus)):
            hits.write(t, format="targets", header=False)
            hits.write(d, format="domains", header=False)


def table_rows(path: Path) -> list[bytes] | None:
    if not path.exists():
        return None
    return [line for line in path.read_bytes().splitlines() if not line.startswith(b"#")]


# --------------------------------------------------------------------------------------------
# estimates: rates of the project's end-to-end runs (docs/benchmarks.md: one H200, 16 cores),
# then rescaled by what this run measured

RATE = {
    "pyhmmer_start": 0.35,         # s: interpreter and imports
    "fasta_per_s": 100e6,          # residues read per second by pyhmmer (ours: 220e6)
    "filter_per_thread": 17e9,     # model positions x residues per second and thread (MSV...)
    "filter_per_thread_big": 9e9,  # the same for a database past the CPU's caches (> 10 M residues)
    "hits_few": 5.0,               # hits per model where homologs are few (the proteome's paralogs)
    "hits_per_copy": 3.4,          # hits per model and database copy where they are many
    "hit_thread_s": 0.009,         # thread-seconds per hit at M = 324 (Forward, domains)
    "ours_start": 1.1,             # s: imports, CUDA, reading the models' file
    "ours_residues_per_s": 3e8,    # residues of the .gsdb read and uploaded per second
    "ours_per_model": 0.0022,      # s of host work per model
    "ours_hit_factor": 0.75,       # our finishing per hit, against pyhmmer's (survivors only)
    "ours_cold_start": 1.0,        # s more on empty caches (CuPy's own kernels, loading cubins)
    "kernel_compile": 0.02,        # s per kernel shape (4.5 n^0.56, at most 320) with cubins built
    "numba_compile": 5.0,          # s: numba's functions on an empty cache (the CPU path)
    "model_build_cpu_s": 0.1,      # cpu-seconds per model (calibration dominates)
    "copy_build_cpu_s": 0.25,      # cpu-seconds per database copy, plus makedb below
    "makedb_per_s": 50e6,
}


def longest_model(n: int, m_mean: float) -> float:
    """The expected longest M among n models drawn from the file's log-normal distribution:
    pyhmmer searches a model on one thread, so with few models the longest bounds its run."""
    if n <= 1:
        return m_mean
    return min(M_MAX, max(m_mean, M_MEDIAN * math.exp(M_SIGMA * math.sqrt(2 * math.log(n)))))


class Estimator:
    def __init__(self, cpus, device):
        self.cpus, self.device = cpus, device
        self.measured: dict[str, list[float]] = {}

    def factor(self, tool):
        m = self.measured.get(tool)
        return m[0] / m[1] if m and m[1] > 0 else 1.0

    def learn(self, tool, measured, estimated, timed_out=False):
        """A run's seconds against its estimate before rescaling."""
        if timed_out and measured < estimated * self.factor(tool):
            return                      # a timeout below the estimate says nothing new
        m = self.measured.setdefault(tool, [0.0, 0.0])
        m[0] += measured
        m[1] += estimated

    def raw(self, tool, n, m_sum, residues, homologs, copies):
        th = self.cpus
        m_mean = m_sum / n
        rate = RATE["filter_per_thread" if residues <= 10e6 else "filter_per_thread_big"]
        found = n * (RATE["hits_few"] + (RATE["hits_per_copy"] * (copies + 1) if homologs == "many" else 0))
        hit_work = found * RATE["hit_thread_s"] * m_mean / 324          # thread-seconds
        work = m_sum * residues / rate + hit_work
        # pyhmmer runs one model per thread: its wall time is the work spread over the threads,
        # or the longest model's share where the models are few
        spread = max(work / th, work / n * longest_model(n, m_mean) / m_mean)
        pyh = RATE["pyhmmer_start"] + residues / RATE["fasta_per_s"] + spread
        if tool in ("pyhmmer", "hmmsearch"):
            return pyh * (0.9 if tool == "hmmsearch" else 1.0)
        if tool == "ours_cpu" or self.device == "cpu":
            base = pyh - RATE["pyhmmer_start"] + RATE["ours_start"] - residues / RATE["fasta_per_s"]
        else:       # our finishing is cut into pieces across the threads
            base = (RATE["ours_start"] + residues / RATE["ours_residues_per_s"] + n * RATE["ours_per_model"]
                    + hit_work / th * RATE["ours_hit_factor"])
        if tool == "ours_fasta":
            base += residues / 220e6
        if tool == "ours_cold":
            base += RATE["ours_cold_start"]
            if self.device == "cpu":
                base += RATE["numba_compile"]
            else:
                base += RATE["kernel_compile"] * min(4.5 * n ** 0.56, 320)
        return base

    def __call__(self, tool, *a):
        return self.raw(tool, *a) * self.factor(tool)


# --------------------------------------------------------------------------------------------
# the matrix


COLUMNS = [("ours_cold", "ours cold"), ("ours_warm", "ours warm"), ("ours_fasta", "ours FASTA"),
           ("ours_cpu", "ours --device cpu"), ("pyhmmer", "pyhmmer"), ("hmmsearch", "hmmsearch bin")]


def fmt_time(r) -> str:
    if r is None:
        return ""
    if r.get("skipped"):
        return r["skipped"]
    if r["timed_out"]:
        return f"> {r['timeout']:g} s"
    if r["rc"] != 0:
        return f"error {r['rc']}"
    return f"{r['seconds']:.2f}" if r["seconds"] < 10 else f"{r['seconds']:.1f}"


def table(cells, device) -> list[list[str]]:
    head = ["models", "database", "homologs", "residues"] + [
        label.replace("ours", f"ours ({device})") if key != "ours_cpu" else label
        for key, label in COLUMNS] + ["pyhmmer / ours warm", "hits seqs/domains", "identical", "GPU busy %"]
    rows = [head]
    for c in cells:
        row = [str(c["models"]), c["db"], c["homologs"],
               f"{c['residues'] / 1e6:.1f} M" if c.get("residues") else ""]
        if c.get("not_run") or "runs" not in c:
            rows.append(row + [f"not run: {c.get('not_run', 'not reached')}"] + [""] * (len(head) - len(row) - 1))
            continue
        runs = c["runs"]
        row += [fmt_time(runs.get(k)) for k, _ in COLUMNS]
        p, w = runs.get("pyhmmer"), runs.get("ours_warm")
        ok = lambda r: r and not r.get("skipped") and r["rc"] == 0   # noqa: E731
        row.append(f"{p['seconds'] / w['seconds']:.2f}x" if ok(p) and ok(w) else "")
        row.append(c.get("hits", ""))
        row.append(c.get("identical", ""))
        b = w.get("gpu_busy") if w else None
        row.append("" if b is None else f"{b:.0f}")
        rows.append(row)
    return rows


def save_tables(out: Path, stem: str, host, cells, rows, notes) -> None:
    """The cells as JSON and the table with its notes as markdown, ``out/<stem>.json`` and ``.md``."""
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{stem}.json").write_text(json.dumps({"host": host, "cells": cells}, indent=1))
    md = ["| " + " | ".join(rows[0]) + " |", "|" + "---|" * len(rows[0])]
    md += ["| " + " | ".join(r) + " |" for r in rows[1:]]
    (out / f"{stem}.md").write_text("\n".join(md + [""] + ["* " + n for n in notes]) + "\n")


def write_outputs(out: Path, cells, host, device):
    rows = table(cells, device)
    notes = [f"host: {host.get('gpu') or 'no GPU'}, {host['cpus']} CPU threads for every tool; "
             f"gpu-search {host.get('gpu_search', '?')}, pyhmmer {host.get('pyhmmer', '?')}, "
             f"{host.get('hmmsearch') or 'no hmmsearch binary'}",
             "times: wall seconds of the whole command; ours cold/warm/--device cpu read the .gsdb, "
             "ours FASTA, pyhmmer and hmmsearch the FASTA file",
             "skipped: the hmmsearch binary and our --device cpu run where pyhmmer took over "
             f"{host['cheap_seconds']:.0f} s; '> T s': stopped at the time limit, or not run where the "
             "estimate was over twice that",
             "hits: tblout / domtblout rows of our warm run (pyhmmer's after '|' where they differ); "
             "identical: every run of ours against pyhmmer's rows"]
    save_tables(out, "hmmsearch_matrix", host, cells, rows, notes)
    return rows, notes


def print_table(rows, notes, cell_columns: int = 4):
    """The table on stdout, its notes after it; a cell not run shows its first ``cell_columns``
    columns (what the cell is) and why."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    k = cell_columns
    for r in rows:
        if len(r) < len(widths) or r[k].startswith("not run"):
            print("  ".join(x.ljust(w) for x, w in zip(r[:k], widths)) + "  " + r[k])
        else:
            print("  ".join(x.rjust(w) for x, w in zip(r, widths)))
    for n in notes:
        print("* " + n)


def host_info(args) -> dict:
    import pyhmmer

    info = {"cpus": args.cpus, "device": args.device, "pyhmmer": pyhmmer.__version__,
            "python": sys.version.split()[0], "generator": GENERATOR}
    v = subprocess.run([sys.executable, "-m", "gpu_search", "--version"], capture_output=True,
                       text=True, env=child_env())
    info["gpu_search"] = v.stdout.strip().split()[-1] if v.returncode == 0 and v.stdout.strip() else None
    if args.hmmsearch:
        h = subprocess.run([args.hmmsearch, "-h"], capture_output=True, text=True)
        info["hmmsearch"] = next((ln.strip("# ").split(";")[0] for ln in h.stdout.splitlines()
                                  if ln.startswith("# HMMER")), "hmmsearch")
    return {**info, **gpu_and_commit()}


def gpu_and_commit() -> dict:
    """The GPUs (names and driver, from nvidia-smi where present) and the checkout's commit."""
    info = {}
    if shutil.which("nvidia-smi"):
        g = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                           capture_output=True, text=True)
        info["gpu"] = "; ".join(g.stdout.strip().splitlines()) or None
    try:
        commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
                                capture_output=True, text=True)
        info["commit"] = commit.stdout.strip() or None
    except OSError:
        info["commit"] = None
    return info


def select_cells(args) -> list[tuple[int, str, str]]:
    if args.cells:
        out = []
        for item in args.cells.split(","):
            n, db, h = item.split(":")
            out.append((int(n), db, h))
    else:
        out = list(itertools.product([int(x) for x in args.models.split(",")], args.dbs.split(","),
                                     args.homologs.split(",")))
    for n, db, h in out:
        if db not in args.copies or h not in HOMOLOGS or n < 1:
            raise SystemExit(f"unknown cell {n}:{db}:{h} (databases {', '.join(args.copies)}; homologs few, many)")
    return out


def run_tool(tool: str, cmd, env, timeout: float, e: float, raw: float, est, rundir: Path, cold: Path, args) -> dict:
    """One tool's run in a cell (estimated ``e`` s, ``raw`` before rescaling), timed, the GPU
    sampled during our warm run: the estimator learns from it, what our cold run compiled is
    kept for the warm ones, a line says how it went."""
    r = run_timed(cmd, timeout, rundir / f"{tool}.log", env=env,
                  sample_gpu=(tool == "ours_warm" and args.device == "gpu"))
    r["estimate"] = round(e, 1)
    if r["rc"] == 0 or r["timed_out"]:
        est.learn(tool, r["seconds"], raw, r["timed_out"])
    if tool == "ours_cold" and r["rc"] == 0:     # what it compiled, for the warm runs
        shutil.copytree(cold, args.work / "cache", dirs_exist_ok=True)
    busy = f", GPU busy {r['gpu_busy']:.0f}%" if r.get("gpu_busy") is not None else ""
    shown = fmt_time(r) + ("" if r["timed_out"] or r["rc"] else " s")
    print(f"    {tool}: {shown} (est. {e:.1f}){busy}", flush=True)
    return r


def run_cell(n, db, homologs, args, est: Estimator, deadline: float, cell: dict):
    """Build the inputs of one cell, run every tool, compare the tables; fills `cell`."""
    hmm, minfo = build_models(n, args)
    fasta, gsdb, dinfo = build_database(db, homologs, args)
    cell.update(residues=dinfo["residues"], sequences=dinfo["sequences"], model_info=minfo)
    shape = (n, minfo["M_sum"], dinfo["residues"], homologs, dinfo["copies"])
    rundir = args.work / "runs" / f"{n}_{db}_{homologs}"
    shutil.rmtree(rundir, ignore_errors=True)
    rundir.mkdir(parents=True)
    cold = Path(tempfile.mkdtemp(prefix="kernel-cache-", dir=rundir))   # empty for the cold run
    runs = cell["runs"] = {}

    plan = ["pyhmmer", "hmmsearch", "ours_cold", "ours_warm", "ours_fasta", "ours_cpu"]
    for tool in plan:
        raw = est.raw(tool, *shape)
        e = raw * est.factor(tool)
        left = deadline - time.monotonic()
        reason = None
        if tool == "hmmsearch" and not args.hmmsearch:
            continue
        if tool in ("hmmsearch", "ours_cpu"):
            p = runs.get("pyhmmer")
            cheap = p and not p.get("skipped") and p["rc"] == 0 and p["seconds"] <= args.cheap_seconds
            want = args.binary if tool == "hmmsearch" else "auto"
            if tool == "ours_cpu" and args.device == "cpu":
                continue                       # the same as the warm run
            if want == "never" or (want == "auto" and not cheap):
                runs[tool] = {"skipped": "skipped", "estimate": round(e, 1)}
                continue
        if tool == "ours_fasta" and (args.fasta == "never" or
                                     (args.fasta == "auto" and dinfo["residues"] < 50e6)):
            continue
        timeout = min(args.tool_timeout, left - 5)       # (5 s to compare and write the table)
        if e > 2 * args.tool_timeout:
            reason = f"> {args.tool_timeout:g} s (est. {e:.0f})"
        elif timeout < min(e, args.tool_timeout):
            reason = "budget"
        if reason:
            runs[tool] = {"skipped": reason, "estimate": round(e, 1)}
            print(f"    {tool}: not run ({reason})", flush=True)
            continue
        tbl, dom = rundir / f"{tool}.tbl", rundir / f"{tool}.domtbl"
        if tool == "pyhmmer":
            cmd = [sys.executable, str(Path(__file__).resolve()), "_pyhmmer", str(hmm), str(fasta),
                   str(args.cpus), str(tbl), str(dom)]
            env = child_env()
        elif tool == "hmmsearch":
            cmd = [args.hmmsearch, "--cpu", str(args.cpus), "-o", os.devnull, "--noali",
                   "--tblout", str(tbl), "--domtblout", str(dom), str(hmm), str(fasta)]
            env = child_env()
        else:
            device = "cpu" if tool == "ours_cpu" else args.device
            cmd = ours_command(args, device, hmm, fasta if tool == "ours_fasta" else gsdb, tbl, dom)
            env = cache_env(cold if tool == "ours_cold" else args.work / "cache")
        runs[tool] = run_tool(tool, cmd, env, timeout, e, raw, est, rundir, cold, args)

    # hits: every finished run of ours (and the binary's, for the record) against pyhmmer's rows
    done = runs["pyhmmer"].get("rc") == 0
    ref = {k: table_rows(rundir / f"pyhmmer.{k}") if done else None for k in ("tbl", "domtbl")}
    verdicts = {}
    for tool, r in runs.items():
        if tool == "pyhmmer" or r.get("skipped") or r["rc"] != 0:
            continue
        mine = {k: table_rows(rundir / f"{tool}.{k}") for k in ("tbl", "domtbl")}
        r["rows"] = [len(mine[k] or []) for k in ("tbl", "domtbl")]
        if done:
            r["identical"] = all(mine[k] == ref[k] for k in ("tbl", "domtbl"))
            if not r["identical"]:       # the same numbers with other spacing, or not
                r["identical_ignoring_spaces"] = all(
                    [ln.split() for ln in mine[k] or []] == [ln.split() for ln in ref[k]] for k in ("tbl", "domtbl"))
            if tool != "hmmsearch":
                verdicts[tool] = r["identical"]
    if done:
        runs["pyhmmer"]["rows"] = [len(ref["tbl"]), len(ref["domtbl"] or [])]
    first = next((runs[t] for t in ("ours_warm", "ours_cold", "ours_fasta", "ours_cpu")
                  if "rows" in runs.get(t, {})), None)
    if first:
        hits = "%d/%d" % tuple(first["rows"])
        pr = runs["pyhmmer"].get("rows")
        cell["hits"] = hits if not pr or pr == first["rows"] else hits + " | %d/%d" % tuple(pr)
    elif runs.get("pyhmmer", {}).get("rows"):
        cell["hits"] = "pyhmmer %d/%d" % tuple(runs["pyhmmer"]["rows"])
    if verdicts:
        bad = [t + (" (spacing only)" if runs[t].get("identical_ignoring_spaces") else "")
               for t, ok in verdicts.items() if not ok]
        cell["identical"] = "yes" if not bad else "NO: " + ",".join(bad)
    shutil.rmtree(cold, ignore_errors=True)
    if not args.keep_tables:
        for f in rundir.glob("*tbl"):
            f.unlink()


def run_cells(order, cells: dict, cell_estimate, run, deadline: float, save, what: str) -> None:
    """Run the cells in ``order`` (cheapest first) with ``run(cell)``: one whose estimate does
    not fit in what is left before ``deadline`` is marked not run, one that fails is marked
    so and the others go on; ``save()`` rewrites the table after each."""
    for i, c in enumerate(order, 1):
        e = cell_estimate(c)
        left = deadline - time.monotonic()
        print(f"cell {i}/{len(order)}: {c[0]} {what} x {c[1]}, {c[2]} homologs: estimate {e:.0f} s, "
              f"budget left {left:.0f} s", flush=True)
        if e > left:
            cells[c]["not_run"] = f"estimate {e:.0f} s > {left:.0f} s left"
            print(f"  not run ({cells[c]['not_run']})", flush=True)
            continue
        t = time.monotonic()
        try:
            run(c)
        except Exception as exc:                           # a broken cell: say so, go on with the rest
            cells[c]["not_run"] = f"failed: {type(exc).__name__}: {exc}"[:200]
            print(f"  {cells[c]['not_run']}", flush=True)
        cells[c]["cell_seconds"] = round(time.monotonic() - t, 1)
        save()


def build_estimate(n, db, homologs, args) -> float:
    """Seconds to build a cell's inputs that are not cached yet."""
    s = 0.0
    key = f"models_n{n}_base{args.base_seqs or 'all'}_mmax{args.max_m}_seed{BUILD_SEED}_g{GENERATOR}"
    if not (args.work / f"{key}.json").exists():
        s += n * RATE["model_build_cpu_s"] / args.cpus
    copies = args.copies[db]
    key = f"db_{homologs}_c{copies}_base{args.base_seqs or 'all'}_seed{BUILD_SEED}_g{GENERATOR}"
    if not (args.work / f"{key}.json").exists():
        s += (copies + 1) * RATE["copy_build_cpu_s"] / args.cpus + (copies + 1) * 682583 / RATE["makedb_per_s"]
    return s


def main():
    if sys.argv[1:2] == ["_pyhmmer"]:           # the pyhmmer side of a cell, in its own process
        pyhmmer_worker(*sys.argv[2:7])
        return
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default=",".join(map(str, MODEL_COUNTS)), help="model counts (default: all)")
    ap.add_argument("--dbs", default=",".join(DB_COPIES), help="databases: proteome,68m,273m")
    ap.add_argument("--homologs", default="few,many")
    ap.add_argument("--cells", help="explicit cells MODELS:DB:HOMOLOGS,... (instead of the three above)")
    ap.add_argument("--cpus", type=int, default=os.cpu_count(), help="threads for every tool (default: all cores)")
    ap.add_argument("--device", choices=("gpu", "cpu"), default="gpu", help="our device for the cold/warm/FASTA runs")
    ap.add_argument("--budget-seconds", type=float, default=500,
                    help="cells whose estimate does not fit in what is left are not run")
    ap.add_argument("--tool-timeout", type=float, default=240, help="seconds per tool and cell")
    ap.add_argument("--cheap-seconds", type=float, default=60,
                    help="the hmmsearch binary and our --device cpu run only where pyhmmer took at most this")
    ap.add_argument("--binary", choices=("auto", "always", "never"), default="auto")
    ap.add_argument("--fasta", choices=("auto", "always", "never"), default="auto",
                    help="our warm run from FASTA too (auto: databases of 50 M residues or more)")
    ap.add_argument("--work", type=Path, default=Path("/tmp/gsmatrix"), help="inputs cached here")
    ap.add_argument("--out", type=Path, default=Path(os.environ.get("OUT", ".")))
    ap.add_argument("--base-seqs", type=int, default=0, help="use the proteome's first N proteins (0: all)")
    ap.add_argument("--max-m", type=int, default=M_MAX, help="longest model")
    ap.add_argument("--build-only", action="store_true", help="build the cells' inputs, run nothing")
    ap.add_argument("--keep-tables", action="store_true", help="keep every tool's tables under --work/runs")
    ap.add_argument("--smoke", action="store_true",
                    help="tiny inputs (150 proteins, 2 copies, 1 and 200 models of M <= 400), "
                         "--device cpu, 2 cores, FASTA run too: every code path without a GPU")
    args = ap.parse_args()
    signal.signal(signal.SIGTERM, _on_term)   # a time limit around us: the running tool ends too
    args.copies = dict(DB_COPIES)
    if args.smoke:
        args.copies = {"proteome": 2}
        args.base_seqs, args.max_m, args.device, args.cpus, args.fasta = 150, 400, "cpu", 2, "always"
        if args.models == ",".join(map(str, MODEL_COUNTS)):
            args.models = "1,200"
        args.dbs = "proteome"
        if args.work == Path("/tmp/gsmatrix"):
            args.work = Path("/tmp/gsmatrix-smoke")
    args.work.mkdir(parents=True, exist_ok=True)
    args.hmmsearch = shutil.which("hmmsearch") if args.binary != "never" else None
    start = time.monotonic()
    deadline = start + args.budget_seconds
    host = host_info(args)
    host.update(cheap_seconds=args.cheap_seconds, tool_timeout=args.tool_timeout,
                budget_seconds=args.budget_seconds, base_seqs=args.base_seqs or 2100, copies=args.copies)
    print(f"host: {host.get('gpu') or 'no GPU'}; {args.cpus} threads; device {args.device}; "
          f"gpu-search {host['gpu_search']}, pyhmmer {host['pyhmmer']}, {host.get('hmmsearch') or 'no hmmsearch'}",
          flush=True)

    est = Estimator(args.cpus, args.device)
    chosen = select_cells(args)
    if args.build_only:
        for n, db, h in chosen:
            build_models(n, args)
            build_database(db, h, args)
        return
    host["warm_up"] = warm_up(args)
    print(f"warm-up of the kernel caches: {host['warm_up']['seconds']} s (exit codes {host['warm_up']['rcs']})",
          flush=True)

    def cell_estimate(c):
        n, db, h = c
        m_sum = n * 185                            # the distribution's mean M, before building
        res = (args.copies[db] + 1) * (682583 if not args.base_seqs else 682583 * args.base_seqs / 2100)
        shape = (n, m_sum, res, h, args.copies[db])
        tools = ["pyhmmer", "ours_cold", "ours_warm"]
        if args.fasta == "always" or (args.fasta == "auto" and res >= 50e6):
            tools.append("ours_fasta")
        if est("pyhmmer", *shape) <= args.cheap_seconds:
            tools += (["hmmsearch"] if args.hmmsearch else []) + (["ours_cpu"] if args.device == "gpu" else [])
        return build_estimate(n, db, h, args) + sum(min(est(t, *shape), args.tool_timeout) for t in tools)

    order = sorted(chosen, key=cell_estimate)                 # the cheapest first
    base_res = 682583 if not args.base_seqs else None      # (nominal sizes until a cell is built)
    cells = {c: {"models": c[0], "db": c[1], "homologs": c[2],
                 "residues": base_res and base_res * (args.copies[c[1]] + 1)} for c in chosen}
    run_cells(order, cells, cell_estimate, lambda c: run_cell(*c, args, est, deadline, cells[c]), deadline,
              lambda: write_outputs(args.out, [cells[k] for k in chosen], host, args.device), "models")

    rows, notes = write_outputs(args.out, [cells[k] for k in chosen], host, args.device)
    print(f"\ntotal {time.monotonic() - start:.0f} s; table in {args.out}/hmmsearch_matrix.md and .json\n")
    print_table(rows, notes)


if __name__ == "__main__":
    main()
