"""Long queries as BLAST+ splits them (gpu_search/blast/split.py), against BLAST+ 2.12 itself.

BLAST+ searches a batch of queries of 19,800 residues or more in chunks of about
10,000 in the preliminary stage; its rows for such queries differ from those of
the same queries searched whole.  The queries here are built deterministically
from mutated proteome proteins.  Needs `blastp` and `makeblastdb` (Debian
ncbi-blast+) for the comparisons.
"""

from __future__ import annotations

import io
import random
import shutil
import subprocess

import numpy as np
import pytest

from gpu_search.blast import engine, pipeline, split
from gpu_search.blast.options import BlastOptions
from gpu_search.blast.output import parse_outfmt
from gpu_search.seqdb import read_fasta

BLASTP = shutil.which("blastp")
MAKEBLASTDB = shutil.which("makeblastdb")
needs_blast = pytest.mark.skipif(not (BLASTP and MAKEBLASTDB),
                                 reason="BLAST+ (blastp, makeblastdb) not installed: apt-get install ncbi-blast+")
LETTERS = "ACDEFGHIKLMNPQRSTVWY"


def test_chunk_bounds_as_blast_computes_them():
    # SplitQuery_CalculateNumChunks: n = L // 9,900 chunks (none below 2), of size
    # (L + (n - 1) * 100) // n, one more where n < size - 100; each starts 100 before the
    # last one's end, the last ends at L
    assert split.chunk_bounds(19_799) == [(0, 19_799)]
    assert split.chunk_bounds(19_800) == [(0, 9_951), (9_851, 19_800)]
    fifty = split.chunk_bounds(50_000)
    assert len(fifty) == 5 and fifty[0] == (0, 10_081) and fifty[-1] == (4 * 9_981, 50_000)
    assert all(b - a == 10_081 for a, b in fifty[:-1])
    assert all(a2 == a1 + 9_981 for (a1, _), (a2, _) in zip(fifty, fifty[1:]))


def test_split_queries_follow_blast_batches():
    # BLAST+'s batches hold queries up to the first that takes them to 10,000 residues; a
    # batch of 19,800 or more is cut, and every query that crosses a cut is split, short ones too
    assert split.split_queries([5_000] * 10) == {}                 # batches of 10,000: never cut
    # 30,000: 3 chunks of (30,000 + 200) // 3 + 1 = 10,067
    assert split.split_queries([30_000]) == {0: [(0, 10_067), (9_967, 20_034), (19_934, 30_000)]}
    # a batch of 5,000 + 4,990 + 9,900 = 19,890 residues: chunks [0, 9,996) and [9,896, 19,890).
    # The second query [5,000, 9,990) lies whole in the first chunk and its end in the second;
    # the third [9,990, 19,890) lies whole in the second and its first 6 residues in the first
    got = split.split_queries([5_000, 4_990, 9_900, 300])
    assert got == {1: [(0, 4_990), (4_896, 4_990)], 2: [(0, 6), (0, 9_900)]}


def _proteome(path):
    seqs = []
    for line in open(path):
        if line.startswith(">"):
            seqs.append([])
        else:
            seqs[-1].append(line.strip())
    return ["".join(s).rstrip("*") for s in seqs]


def _mutated(s, rng, rate):
    return "".join(c if rng.random() > rate else rng.choice(LETTERS) for c in s)


def _long_query(proteins, rng, length):
    q = ""
    while len(q) < length:
        q += _mutated(rng.choice(proteins), rng, 0.3)
    return q[:length]


@pytest.fixture(scope="module")
def split_inputs(tmp_path_factory, proteome_path):
    """The proteome as a BLAST database; a 50,000-residue query (5 chunks); and a query set
    whose first batch is short queries then a long one, so that a cut falls in a short query."""
    d = tmp_path_factory.mktemp("split")
    db_fasta = d / "prot.faa"
    shutil.copy(proteome_path, db_fasta)
    if MAKEBLASTDB:
        subprocess.run([MAKEBLASTDB, "-in", str(db_fasta), "-dbtype", "prot", "-out", str(d / "prot")],
                       check=True, capture_output=True)
    proteins = _proteome(proteome_path)
    rng = random.Random(50_000)
    (d / "long.faa").write_text(">long50000 concatenated mutated proteins\n" + _long_query(proteins, rng, 50_000) + "\n")
    rng = random.Random(3)        # (a seed whose rows, searched whole, are not BLAST+'s)
    mixed, total = [], 0
    while total < 9_990:
        s = _mutated(rng.choice(proteins), rng, 0.3)[: 9_990 - total]
        mixed.append(s)
        total += len(s)
    mixed += [_long_query(proteins, rng, 9_900)] + [_mutated(rng.choice(proteins), rng, 0.3) for _ in range(3)]
    (d / "mixed.faa").write_text("".join(f">m{k}\n{s}\n" for k, s in enumerate(mixed)))
    # a batch of 9,880 + 60 + 9,910 = 19,850 residues, chunks [0, 9,976) and [9,876, 19,850): the
    # 60-residue query (a proteome protein's, unchanged) lies whole in both chunks; the third
    # query's piece in the first chunk is its first 36 residues, all X (no Karlin block: skipped)
    protein = max(proteins, key=len)
    overlap = [_long_query(proteins, rng, 9_880), protein[100:160], "X" * 36 + _long_query(proteins, rng, 9_874)]
    (d / "overlap.faa").write_text("".join(f">o{k}\n{s}\n" for k, s in enumerate(overlap)))
    return d


def _blast(d, query, cbs, max_target_seqs=500):
    r = subprocess.run([BLASTP, "-query", str(d / query), "-db", str(d / "prot"), "-outfmt", "6",
                        "-comp_based_stats", str(cbs), "-max_target_seqs", str(max_target_seqs)],
                       capture_output=True, text=True, check=True)
    return r.stdout


def _ours(d, query, cbs, max_target_seqs=500, engine_types=None, device="cpu"):
    fh = io.StringIO()
    fmt, columns = parse_outfmt("6")
    engine.run_blastp(read_fasta(d / query), read_fasta(d / "prot.faa"),
                      BlastOptions(num_threads=2, comp_based_stats=cbs, max_target_seqs=max_target_seqs), fh, fmt=fmt, columns=columns,
                      db_name="prot", quiet=True, device=device, engine_types=engine_types)
    return fh.getvalue()


@needs_blast
@pytest.mark.parametrize("query, cbs, max_target_seqs", [("long.faa", 0, 500), ("long.faa", 1, 500),
                                                          ("long.faa", 2, 500), ("long.faa", 3, 500),
                                                          ("mixed.faa", 0, 500), ("long.faa", 0, 20)])
def test_split_queries_give_blast_rows(split_inputs, monkeypatch, query, cbs, max_target_seqs):
    # (-max_target_seqs 20: each chunk's hit list, and the merged one, cut to 40 subjects)
    theirs = _blast(split_inputs, query, cbs, max_target_seqs)
    assert theirs.count("\n") > 20
    assert _ours(split_inputs, query, cbs, max_target_seqs) == theirs
    # the split is what makes them BLAST+'s: searched whole, the same queries give other rows
    monkeypatch.setattr(pipeline, "split_queries", lambda lengths: {})
    assert _ours(split_inputs, query, cbs, max_target_seqs) != theirs


@needs_blast
@pytest.mark.parametrize("cbs", [0, 2])
def test_a_query_inside_an_overlap_and_an_all_x_piece(split_inputs, cbs):
    # the 60-residue query is searched whole in both chunks, its HSPs appended (not joined);
    # the all-X piece is left out as BLAST+ leaves it out
    lengths = read_fasta(split_inputs / "overlap.faa").lengths.tolist()
    assert split.split_queries(lengths) == {0: [(0, 9_880), (9_876, 9_880)], 1: [(0, 60), (0, 60)],
                                            2: [(0, 36), (0, 9_910)]}
    theirs = _blast(split_inputs, "overlap.faa", cbs)
    assert theirs.count("\no1\t") > 5
    assert _ours(split_inputs, "overlap.faa", cbs) == theirs


def test_joined_hsps(monkeypatch, split_inputs):
    # HSPs that meet across a cut are joined (s_BlastMergeTwoHSPs): the 50,000-residue query's
    # mutated proteins cross its four cuts; count the joins
    joined = []
    join = split._join

    def counted(h1, h2):
        joined.append(join(h1, h2))
        return joined[-1]

    monkeypatch.setattr(split, "_join", counted)
    _ours(split_inputs, "long.faa", 0)
    assert sum(joined) >= 2


def test_join_two_hsps():
    # s_BlastMergeTwoHSPs on two HSPs of one subject that overlap at a cut: the union box, the
    # gapped start of the higher score, the score density (100 + 80) / (60 + 50) times the
    # joined length 100, truncated, above both scores
    from gpu_search.blast.gapped import PRELIM_HSP_DTYPE

    rows = np.array([(100, 1000, 1060, 200, 260, 1030, 230), (80, 1050, 1100, 250, 300, 1070, 270)],
                    dtype=PRELIM_HSP_DTYPE)
    old = (rows[:1], np.array([1e-5]))
    new = (rows[1:], np.array([1e-3]))
    joined, evalues = split._join_hsp_lists(old, new, 1040)
    assert len(joined) == 1 and evalues.tolist() == [1e-5]
    assert joined[0].tolist() == (int(180 / 110 * 100), 1000, 1100, 200, 300, 1030, 230)
    # on diagonals 10 apart they stay two HSPs, in score order
    far = rows[1:].copy()
    far["s_start"] += 10
    far["s_end"] += 10
    kept, evalues = split._join_hsp_lists(old, (far, np.array([1e-3])), 1040)
    assert kept["score"].tolist() == [100, 80] and evalues.tolist() == [1e-5, 1e-3]
    # where the piece starts the query (a query begun in the overlap) the lists are only joined
    kept, _ = split._join_hsp_lists(old, new, 0)
    assert len(kept) == 2


def test_gpu_pipeline_splits_as_the_cpu_path(split_inputs):
    """The GPU pipeline (a stand-in for the GPU's word finder that runs the CPU's) searches a
    split query's chunks on its engine, in one pass over the database, and merges them: the
    CPU path's rows."""
    from gpu_search.blast.ungapped import ungapped_extensions

    lengths, passes = [], []

    class StandIn:
        streamed = True                # one engine, no gapped kernel

        def __init__(self, residues, offsets, device_id=0, **kwargs):
            self.residues, self.offsets, self.device_id = residues, offsets, device_id
            self.seconds = {}

        def ungapped_extensions(self, q, lookup, scores, x_drop, cutoff, window=40):
            lengths.append(len(q))
            ids = np.arange(len(self.offsets) - 1, dtype=np.int64)
            return ungapped_extensions(q, lookup, self.residues, self.offsets, ids, scores, x_drop, cutoff,
                                       window, method="scan")

        def ungapped_extensions_many(self, jobs):      # (one pass: a split query's chunks together)
            passes.append(len(jobs))
            return [self.ungapped_extensions(*job) for job in jobs]

    for cbs in (0, 2):
        lengths.clear()
        gpu = _ours(split_inputs, "long.faa", cbs, engine_types=engine.GpuEngineTypes(StandIn, None),
                    device="gpu")
        assert gpu == _ours(split_inputs, "long.faa", cbs) and gpu.count("\n") > 100
        assert sorted(lengths) == sorted(b - a for a, b in split.chunk_bounds(50_000))
        assert passes == [5]                            # the five chunks in one pass over the database
        passes.clear()


def test_merging_shards_of_a_split_query_warns(tmp_path, capsys):
    # shards' hit lists are cut per shard, BLAST+'s per chunk over the whole database: merge
    # says so for a query BLAST+ splits (and not for the others)
    from gpu_search.blast import merge
    from gpu_search.blast.hitlist import SubjectResult, list_order_key
    from gpu_search.blast.output import Hsp

    def shard(path, oid):
        results = []
        for title, length in (("long a 25,000-residue query", 25_000), ("short one", 300)):
            row = Hsp(query_id=title.split()[0], query_title=title, query_length=length, subject_id=f"s{oid}",
                      subject_title=f"s{oid}", subject_length=60, score=50, bit_score=20.0, evalue=1e-3,
                      q_start=1, q_end=4, s_start=2, s_end=5, qseq="MKVL", sseq="MKIL", nident=3, positive=3,
                      gaps=0, gapopen=0, oid=oid)
            key = list_order_key(1e-3, 50, oid)
            results.append((title, length, [SubjectResult(oid, key, key, [row])]))
        merge.save_hits(path, results, options=BlastOptions(), db_name="db", database=None)
        return path

    out = io.StringIO()
    merge.merge_files([shard(tmp_path / "a.gsblast", 1), shard(tmp_path / "b.gsblast", 2)], out, fmt=6,
                      columns=parse_outfmt("6")[1])
    warned = capsys.readouterr().err.splitlines()
    assert len(warned) == 1 and warned[0].startswith("gpu-search: warning: query 'long a 25,000-residue query' "
                                                     "is one BLAST+ searches in chunks")
    assert out.getvalue().count("\n") == 4
