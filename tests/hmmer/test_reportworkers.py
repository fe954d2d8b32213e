"""The reports formatted in worker processes against those formatted in the searching process.

``write_outputs(..., workers=N)`` hands each query's report text and table rows to N spawned
processes (gpu_search.hmmer.reportworkers); the files must be byte for byte those of
``workers=0``, the formatting that tests/hmmer/test_report.py checks against HMMER's own C
code, for hmmsearch (alignments, -A and the three tables), phmmer (the query sequence's lines)
and hmmscan (scan mode), and also when the pool breaks part way or cannot start.  The pooled
runs check that the workers, not the searching process, formatted every query.
"""

from __future__ import annotations

from concurrent.futures import Future
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

import re
import time

import pytest
from conftest import pyhmmer_data
from pyhmmer.plan7 import HMMFile

from gpu_search.cli import write_outputs
from gpu_search.hmmer import report, reportworkers
from gpu_search.hmmer.hmmscan import hmmscan, open_hmmdb
from gpu_search.hmmer.options import PhmmerOptions, SearchOptions
from gpu_search.hmmer.phmmer import phmmer
from gpu_search.hmmer.search import hmmsearch
from gpu_search.seqdb import open_database

DATA = pyhmmer_data()
PROTEOME = DATA / "seqs" / "938293.PRJEB85.HG003687.faa"
MODELS = ("RREFam", "PF02826", "Thioesterase", "LuxC")
# the per-query timing lines differ from run to run
TIMING = ("# CPU time:", "# Mc/sec:")


def outputs(results, options, folder: Path, workers: int, program=report.HMMSEARCH,
            alignment: bool = True) -> dict[str, str]:
    files = {k: folder / f"w{workers}.{k}" for k in ("o", "tbl", "dom", "pfam", "sto")}
    write_outputs(results, options, hmmfile="queries", seqfile="targets", output=str(files["o"]),
                  tblout=str(files["tbl"]), domtblout=str(files["dom"]), pfamtblout=str(files["pfam"]),
                  alignment=str(files["sto"]) if alignment else None, program=program, workers=workers)
    texts = {}
    for key, path in files.items():
        if path.exists():
            text = path.read_text().replace(f"w{workers}.", "W.")
            texts[key] = "".join(line for line in text.splitlines(True)
                                 if not line.startswith(TIMING) and not line.startswith("# Date:"))
    return texts


@pytest.fixture
def formatted_here(monkeypatch):
    """How many queries this process formatted itself (the workers do not see the patch)."""
    calls = []
    original = reportworkers.format_query
    monkeypatch.setattr(reportworkers, "format_query", lambda *a: calls.append(1) or original(*a))
    return calls


def assert_same_outputs(results, options, tmp_path, formatted_here, program=report.HMMSEARCH, alignment=True):
    inline = outputs(results, options, tmp_path, 0, program, alignment)
    assert len(formatted_here) == len(results)
    formatted_here.clear()
    pooled = outputs(results, options, tmp_path, 2, program, alignment)
    assert not formatted_here, "queries formatted in the searching process, not in the workers"
    assert sorted(pooled) == sorted(inline)
    for key in inline:
        assert pooled[key] == inline[key], f"{key} differs with the report formatted in workers"
    return inline


@pytest.fixture(scope="module")
def proteome():
    return open_database(PROTEOME)


@pytest.fixture(scope="module")
def search_results(proteome):
    hmms = []
    for name in MODELS:
        with HMMFile(DATA / "hmms" / "txt" / f"{name}.hmm") as fh:
            hmms.extend(fh)
    options = SearchOptions(E=1000.0, F1=1.0, F2=1.0, F3=1.0)    # (hits enough that order would show)
    return list(hmmsearch(hmms, proteome, options, device="cpu", cpus=2)), options


def test_hmmsearch_reports_alike(search_results, tmp_path, formatted_here, monkeypatch):
    results, options = search_results
    monkeypatch.setattr(reportworkers, "MAX_PENDING", 2)     # (a full queue waits for its oldest query)
    texts = assert_same_outputs(results, options, tmp_path, formatted_here)
    assert texts["o"].count("\n//\n") == len(results)
    assert texts["tbl"].count("\n") > 1000
    assert "== domain 1" in texts["o"] and texts["sto"].startswith("# STOCKHOLM")


def test_phmmer_reports_alike(proteome, tmp_path, formatted_here):
    options = PhmmerOptions()
    queries = proteome.subset(list(range(0, 60, 3)))
    results = list(phmmer(queries, proteome, options, device="cpu", cpus=2))
    texts = assert_same_outputs(results, options, tmp_path, formatted_here, program=report.PHMMER)
    assert texts["o"].count("\nQuery:       ") == len(results)


def test_hmmscan_reports_alike(proteome, tmp_path, formatted_here):
    db = open_hmmdb(DATA / "hmms" / "txt" / "RREFam.hmm")
    options = SearchOptions(E=1000.0)
    queries = proteome.subset(list(range(40)))
    results = list(hmmscan(queries, db, options, device="cpu", cpus=2))
    texts = assert_same_outputs(results, options, tmp_path, formatted_here, program=report.HMMSCAN,
                                alignment=False)
    assert "Scores for complete sequence (score includes all domains)" in texts["o"]


class BreakingPool:
    """A pool whose workers die after `alive` tasks (the two first tasks start the workers):
    later futures fail, then submit does.  It runs the workers' function in this process."""

    def __init__(self, *args, alive=4, **kwargs):
        self.alive = alive

    def submit(self, fn, *args):
        if self.alive < -2:
            raise BrokenProcessPool("a worker died")
        self.alive -= 1
        future = Future()
        if self.alive >= 0:
            future.set_result(fn(*args))
        else:
            future.set_exception(BrokenProcessPool("a worker died"))
        return future

    def shutdown(self, wait=True, cancel_futures=False):
        pass


def test_broken_pool_leaves_the_rest_to_this_process(search_results, tmp_path, monkeypatch):
    results, options = search_results
    inline = outputs(results, options, tmp_path, 0)
    monkeypatch.setattr(reportworkers, "ProcessPoolExecutor", BreakingPool)
    monkeypatch.setattr(reportworkers, "_WORKER", {})
    reportworkers._start_worker(options, ("targets", "domains", "pfam"), False)    # (as a worker starts)
    assert outputs(results, options, tmp_path, 2) == inline


class NoProcesses:
    """A pool made, whose processes cannot start (a process limit)."""

    shut_down = False

    def __init__(self, *args, **kwargs):
        pass

    def submit(self, fn, *args):
        raise OSError(11, "Resource temporarily unavailable")

    def shutdown(self, wait=True, cancel_futures=False):
        NoProcesses.shut_down = True


def no_semaphores(*args, **kwargs):
    raise OSError(38, "Function not implemented")       # (a host without /dev/shm)


@pytest.mark.parametrize("pool", [no_semaphores, NoProcesses], ids=["no-semaphores", "no-processes"])
def test_pool_that_cannot_start_leaves_all_to_this_process(search_results, tmp_path, monkeypatch, pool):
    results, options = search_results
    inline = outputs(results, options, tmp_path, 0)
    monkeypatch.setattr(reportworkers, "ProcessPoolExecutor", pool)
    assert outputs(results, options, tmp_path, 2) == inline
    assert pool is no_semaphores or NoProcesses.shut_down


@pytest.mark.parametrize("workers", [0, 2])
def test_first_query_timed_from_the_search_start(search_results, tmp_path, workers):
    """Each query's '# CPU time' line counts from the query before, the first's from the
    start of the search (results come lazily, as a search yields them)."""
    results, options = search_results

    def searched():
        for result in results:
            time.sleep(0.3)
            yield result

    path = tmp_path / "report"
    write_outputs(searched(), options, hmmfile="queries", seqfile="targets", output=str(path), tblout=None,
                  domtblout=None, pfamtblout=None, workers=workers)
    elapsed = [int(m) * 60 + float(s) for m, s in
               re.findall(r"^# CPU time: .* Elapsed: 00:(\d\d):(\d\d\.\d\d)$", path.read_text(), re.M)]
    assert len(elapsed) == len(results)
    assert all(0.25 <= e < 5 for e in elapsed), elapsed


def test_worker_count():
    assert reportworkers.worker_count(reportworkers.MIN_QUERIES, 16) == reportworkers.WORKERS
    assert reportworkers.worker_count(reportworkers.MIN_QUERIES - 1, 16) == 0
    assert reportworkers.worker_count(1000, 1) == 0
    assert reportworkers.worker_count(1000, None) == reportworkers.WORKERS


def test_filtered_search_reports_alike_from_the_state_it_took(proteome, tmp_path, formatted_here):
    """The filtered path serializes each model's hits once (its statistics read it) and the
    workers are sent that state: their files are those formatted here from the hits."""
    small = tmp_path / "small.faa"
    small.write_text("".join(f">{proteome.name(i)} {proteome.description(i)}\n{proteome.text(i)}\n"
                             for i in range(0, proteome.n_seqs, 7)))
    db = open_database(small)
    hmms = []
    for name in MODELS[:2]:
        with HMMFile(DATA / "hmms" / "txt" / f"{name}.hmm") as fh:
            hmms.extend(fh)
    options = SearchOptions(E=1000.0, F1=1.0, F2=1.0, F3=1.0)
    results = list(hmmsearch(hmms, db, options, device="reference", cpus=2))
    assert all(r.hits_state is not None for r in results)
    assert sum(len(r.hits) for r in results) > 50
    assert_same_outputs(results, options, tmp_path, formatted_here)
