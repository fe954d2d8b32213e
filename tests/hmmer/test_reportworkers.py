"""The reports formatted in worker processes against those formatted in the searching process.

``write_outputs(..., workers=N)`` hands each query's report text and table rows to N spawned
processes (gpu_search.hmmer.reportworkers); the files must be byte for byte those of
``workers=0``, the formatting that tests/hmmer/test_report.py checks against HMMER's own C
code, for hmmsearch (alignments, -A and the three tables), phmmer (the query sequence's lines)
and hmmscan (scan mode), and also when the pool breaks part way.
"""

from __future__ import annotations

from concurrent.futures import Future
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

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


def assert_same_outputs(results, options, tmp_path, program=report.HMMSEARCH, alignment=True):
    inline = outputs(results, options, tmp_path, 0, program, alignment)
    pooled = outputs(results, options, tmp_path, 2, program, alignment)
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


def test_hmmsearch_reports_alike(search_results, tmp_path):
    results, options = search_results
    texts = assert_same_outputs(results, options, tmp_path)
    assert texts["o"].count("\n//\n") == len(results)
    assert texts["tbl"].count("\n") > 1000
    assert "== domain 1" in texts["o"] and texts["sto"].startswith("# STOCKHOLM")


def test_phmmer_reports_alike(proteome, tmp_path):
    options = PhmmerOptions()
    queries = proteome.subset(list(range(0, 60, 3)))
    results = list(phmmer(queries, proteome, options, device="cpu", cpus=2))
    texts = assert_same_outputs(results, options, tmp_path, program=report.PHMMER)
    assert texts["o"].count("\nQuery:       ") == len(results)


def test_hmmscan_reports_alike(proteome, tmp_path):
    db = open_hmmdb(DATA / "hmms" / "txt" / "RREFam.hmm")
    options = SearchOptions(E=1000.0)
    queries = proteome.subset(list(range(40)))
    results = list(hmmscan(queries, db, options, device="cpu", cpus=2))
    texts = assert_same_outputs(results, options, tmp_path, program=report.HMMSCAN, alignment=False)
    assert "Scores for complete sequence (score includes all domains)" in texts["o"]


class BreakingPool:
    """A pool whose workers die after `alive` queries: later futures fail, then submit does."""

    def __init__(self, *args, alive=3, **kwargs):
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
    # the fake pool runs the workers' function here, as a spawned worker would
    monkeypatch.setattr(reportworkers, "ProcessPoolExecutor", BreakingPool)
    reportworkers._start_worker(options, ("targets", "domains", "pfam"), False)
    broken = outputs(results, options, tmp_path, 2)
    assert broken == inline
