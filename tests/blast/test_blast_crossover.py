"""--device auto for blastp: the CPU where the search is too small to repay the GPU's start
(said on stderr, before CUDA is started), the GPU where it is large; the rows the same."""

from __future__ import annotations

import gzip
import importlib.util
import os
import subprocess

import pytest
from conftest import TEST_DATA

from gpu_search import cli, device, seqdb
from gpu_search.blast.crossover import Crossover, auto_device, choose_device

# End-to-end runs through the command line, H200 host, 16 threads, few homologs
# (bench/blastp_matrix.py, docs/benchmarks.md): (queries, query residues, database
# residues, seconds with --device cpu, seconds with --device gpu).
MEASURED = [
    (1, 157, 6_827_230, 1.07, 2.12),
    (10, 3_792, 6_827_230, 1.67, 1.72),
    (100, 29_776, 6_827_230, 4.54, 2.73),
    (1, 157, 68_258_300, 2.52, 2.13),
]


@pytest.mark.parametrize("n, qres, dbres, cpu, gpu", MEASURED)
def test_choice_is_the_faster_path_of_each_measured_search(n, qres, dbres, cpu, gpu):
    used, why = choose_device(n, qres, dbres, 16)
    assert used == ("cpu" if cpu < gpu else "gpu"), why


def test_small_work_goes_to_the_cpu_large_to_the_gpu():
    used, why = choose_device(1, 157, 6_827_230, 16)
    assert used == "cpu" and "too little work" in why and "1 query (157 residues) x 6.83 M residues" in why
    assert choose_device(100, 29_776, 273_033_200, 16)[0] == "gpu"      # 3.7 s against BLAST+'s 34.6
    assert choose_device(500, 166_348, 68_263_761, 16)[0] == "gpu"
    # on 2 threads the CPU path is slower still: 100 queries x a proteome go to the GPU sooner
    assert choose_device(100, 29_776, 6_827_230, 2)[0] == "gpu"


def test_estimates_follow_the_work():
    c = Crossover()
    cpu1, gpu1 = c.seconds(10, 4_000, 7_000_000, 16)
    cpu2, gpu2 = c.seconds(10, 4_000, 70_000_000, 16)
    assert cpu2 == pytest.approx(10 * cpu1) and gpu2 > gpu1
    # each query runs on one thread: threads beyond the queries idle
    assert c.seconds(1, 400, 10**8, 16)[0] == c.seconds(1, 400, 10**8, 1)[0]
    assert c.seconds(16, 400, 10**8, 16)[0] == pytest.approx(c.seconds(1, 400, 10**8, 16)[0] / 16)


def test_residues_hint(tmp_path):
    faa = TEST_DATA / "proteome.faa"
    db = seqdb.open_database(faa)
    seqdb.write_gsdb(db, tmp_path / "p.gsdb")
    assert seqdb.residues_hint(tmp_path / "p.gsdb") == db.n_residues           # exact
    assert seqdb.residues_hint(faa) == os.path.getsize(faa) >= db.n_residues    # an overestimate
    (tmp_path / "p.faa.gz").write_bytes(gzip.compress(faa.read_bytes()))
    assert seqdb.residues_hint(tmp_path / "p.faa.gz") is None
    fifo = tmp_path / "pipe.faa"
    os.mkfifo(fifo)
    writer = subprocess.Popen(["sh", "-c", f'cat "{faa}" > "{fifo}"'])
    try:
        assert seqdb.residues_hint(fifo) is None
        # nothing read from the stream: the search still reads all of it
        assert seqdb.open_database(fifo).n_residues == db.n_residues
    finally:
        writer.kill()
        writer.wait()


def cupy_installed(monkeypatch):
    """Make CuPy look installed (the crossover weighs the GPU only where it could be used)."""
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: object() if name == "cupy" else real(name, *a))


def test_without_cupy_nothing_is_weighed(monkeypatch, capsys):
    """No CuPy: no crossover note (its advice, --device gpu, would fail); device.resolve says
    there is no usable GPU instead."""
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None)
    assert auto_device(1, 157, 6_827_230, 16) == "auto"
    assert capsys.readouterr().err == ""


def test_auto_starts_cuda_where_the_gpu_pays(monkeypatch, tmp_path):
    from gpu_search.blast import engine

    started, ran = [], []
    monkeypatch.setattr(device, "start_cuda", lambda *a, **k: started.append(a))
    monkeypatch.setattr(seqdb, "residues_hint", lambda path: 10**10)
    monkeypatch.setattr(engine, "run_blastp", lambda *a, device, **k: ran.append(device))
    cli.main(["blastp", "-num_threads", "2", "-query", str(TEST_DATA / "blastp-queries.faa"),
              "-db", str(TEST_DATA / "proteome.faa"), "-out", str(tmp_path / "x.tsv")])
    assert started == [("auto", None)] and ran == ["auto"]


def test_auto_says_it_chose_the_cpu_starts_no_cuda_and_matches_device_cpu(monkeypatch, tmp_path, capsys):
    cupy_installed(monkeypatch)
    monkeypatch.setattr(device, "gpu_status", lambda: (True, "1 GPU(s)", ["A stand-in GPU"]))
    started = []
    monkeypatch.setattr(device, "start_cuda", lambda *a, **k: started.append(a))
    query, db = TEST_DATA / "blastp-queries.faa", TEST_DATA / "proteome.faa"
    rows = {}
    for dev in ("auto", "cpu"):
        cli.main(["blastp", "--device", dev, "-num_threads", "2", "-outfmt", "6", "-query", str(query),
                  "-db", str(db), "-out", str(tmp_path / f"{dev}.tsv")])
        rows[dev] = (tmp_path / f"{dev}.tsv").read_text()
        err = capsys.readouterr().err
        if dev == "auto":
            assert "--device auto: searching on the CPU" in err and "--device gpu to use the GPU anyway" in err
    assert rows["auto"] == rows["cpu"] and rows["cpu"]
    # decided from the files' sizes before CUDA's start: started only for --device cpu, which returns at once
    assert started == [("cpu", None)]
    # --quiet silences progress, not this: a GPU was asked for (auto) and is not used
    cli.main(["blastp", "--quiet", "--device", "auto", "-num_threads", "2", "-query", str(query),
              "-db", str(db), "-out", str(tmp_path / "q.tsv")])
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith("gpu-search: --device auto: searching on the CPU"), err
