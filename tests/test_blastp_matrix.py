"""bench/blastp_matrix.py's pieces that decide what its table says: the verdict on our rows
against BLAST+'s, the query sets (each the first N of one order), the cells it accepts."""

from __future__ import annotations

import argparse
import sys

import pytest
from conftest import ROOT

sys.path.insert(0, str(ROOT / "bench"))

import blastp_matrix as bm  # noqa: E402


@pytest.mark.parametrize("ours, blast, verdict", [
    ([b"q1\ts1\t1", b"q1\ts2\t2"], [b"q1\ts1\t1", b"q1\ts2\t2"], "identical"),
    ([b"q1\ts2\t2", b"q1\ts1\t1"], [b"q1\ts1\t1", b"q1\ts2\t2"], "same rows, other order"),
    # a line twice on our side is one line only ours, not the same set
    ([b"q1\ts1\t1", b"q1\ts1\t1", b"q1\ts3\t3"], [b"q1\ts1\t1", b"q1\ts2\t2"],
     "2 rows only ours, 1 only BLAST+"),
    ([], [b"q1\ts1\t1"], "0 rows only ours, 1 only BLAST+"),
])
def test_rows_verdict(ours, blast, verdict):
    assert bm.compare_rows(ours, blast) == verdict


def test_query_sets_are_first_n_of_one_order(tmp_path, proteome_path):
    """The 1-query file is the 10-query file's first record, "all" holds every one of the
    proteome's first 30 proteins once, as the proteome's FASTA file spells them."""
    import pyhmmer

    with pyhmmer.easel.SequenceFile(str(proteome_path)) as sf:
        proteins = {s.name: s.sequence.upper() for s, _ in zip(sf, range(30))}
    args = argparse.Namespace(work=tmp_path, base_seqs=30, n_proteins=30)
    files = {label: bm.build_queries(label, args) for label in ("1", "10", "all")}
    records = {label: path.read_text().split(">")[1:] for label, (path, _) in files.items()}
    assert [len(r) for r in records.values()] == [1, 10, 30]
    assert records["10"][:1] == records["1"] and records["all"][:10] == records["10"]
    parsed = dict(r.rstrip("\n").split("\n") for r in records["all"])
    assert parsed == proteins
    assert files["all"][1]["residues"] == sum(len(s) for s in proteins.values())
    assert bm.build_queries("all", args)[0] == files["all"][0]        # cached, not rewritten


@pytest.mark.parametrize("cell", ["0:proteome:few", "ten:proteome:few", "1:5m:few", "1:proteome:some",
                                  "1:proteome"])
def test_unknown_cells_refused(cell):
    args = argparse.Namespace(cells=cell, copies={"proteome": 9, "68m": 99})
    with pytest.raises(SystemExit, match="unknown cell"):
        bm.select_cells(args)


def test_cells_from_their_product():
    args = argparse.Namespace(cells=None, queries="1,all", dbs="proteome,68m", homologs="many",
                              copies={"proteome": 9, "68m": 99})
    assert bm.select_cells(args) == [("1", "proteome", "many"), ("1", "68m", "many"),
                                     ("all", "proteome", "many"), ("all", "68m", "many")]
