"""blastp stages 4-5: preliminary gapped extension (gapped.py) and traceback (traceback.py).

Three levels of checks:

(a) hand-derived cases: an X-drop stop (the preliminary X-drop 38 stops where
    the final X-drop 64 goes on), gap costs (open 11, extend 1: the first gap
    letter costs 12), where the restricted variant may open gaps, the start
    point of a gapped extension, the containment tree and the purge of HSPs
    sharing an endpoint; the end-to-end ones are also run through ``blastp``;
(b) against BLAST+ 2.12 on query/subject pairs: ``blastp -query q.fa -subject
    s.fa -comp_based_stats 0 -outfmt "6 qstart qend sstart send score nident
    positive gaps gapopen length qseq sseq"`` for the pairs BLAST reports when
    searching three proteome queries (130/499/1000 residues) against the
    proteome, plus random pairs.  Every row must be identical, in order;
(c) against a database search (``blastp -db``), the same columns per subject,
    with the database's real size and with ``-dbsize 1e10``: the larger search
    space raises the cutoff score so that the restricted gapped alignment and
    its exact restart (``BLAST_GetGappedScore``) happen on most subjects.

Our rows come from the whole chain: lookup + ungapped extension (ungapped.py),
stats.py's cutoffs and E-values, then gapped.preliminary_gapped_hsps, the
E-value reap, and traceback.traceback.  With ``-subject``, BLAST's statistics
treat the subject as the database (db length and shortest sequence = the
subject).  With ``-db``, BLAST computes the cutoff score with the database's
shortest-sequence length from ``BlastSeqSrcGetMinSeqLen``, which answers
BLAST_SEQSRC_MINLENGTH = 10 for a makeblastdb 2.12 database (the real shortest
proteome sequence, 33, gives a cutoff one higher and loses HSPs).
"""

from __future__ import annotations

import random
import subprocess
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from blast_cases import BLASTP, MAKEBLASTDB, QUERIES, needs_blast

from gpu_search.blast import gapped, stats
from gpu_search.blast import traceback as tb
from gpu_search.blast.alphabet import EASEL_TO_NCBISTDAA, NCBISTDAA, blast_query_codes, encode
from gpu_search.blast.lookup import build_lookup
from gpu_search.blast.matrix import load_matrix
from gpu_search.blast.ungapped import INIT_HSP_DTYPE, sort_by_score, ungapped_extensions

COLUMNS = "qstart qend sstart send score nident positive gaps gapopen length qseq sseq"
GAP_OPEN, GAP_EXTEND = 11, 1


@pytest.fixture(scope="module")
def blosum62():
    return load_matrix("BLOSUM62")


@pytest.fixture(scope="module")
def gp():
    return stats.gapped_params("BLOSUM62", GAP_OPEN, GAP_EXTEND)


@pytest.fixture(scope="module")
def proteome_seqs(proteome):
    """(name, NCBIstdaa codes, letters) of every proteome sequence, in database order."""
    out = []
    for i in range(proteome.n_seqs):
        codes = EASEL_TO_NCBISTDAA[proteome.residues[proteome.offsets[i]:proteome.offsets[i + 1]]]
        out.append((proteome.name(i), codes, "".join(NCBISTDAA[c] for c in codes)))
    return out


# ---------------------------------------------------------------------------------------------
# Our pipeline
# ---------------------------------------------------------------------------------------------

def ours(query, subjects, matrix, gp, db_length, min_subject_len, *, evalue=10.0,
         modes=None, batch=False):
    """Rows of ``COLUMNS`` per subject index: our blastp for one query.

    ``subjects`` is a list of NCBIstdaa code arrays (the database); E-values
    are Spouge's with the given database length.  ``batch``: the preliminary
    stage of all subjects in one call (``preliminary_gapped_hsps_batch``)
    instead of subject by subject (``preliminary_gapped_hsps``).
    """
    q = blast_query_codes(query)
    kbp_u = stats.ungapped_params(q, matrix)
    cut = stats.search_cutoffs(kbp_u, gp, query_len=len(q), db_length=db_length, evalue=evalue,
                               min_subject_len=min_subject_len)
    lut = build_lookup(q, matrix.scores, 3, 11)
    offsets = np.zeros(len(subjects) + 1, np.int64)
    offsets[1:] = np.cumsum([len(s) for s in subjects])
    residues = np.concatenate(subjects).astype(np.uint8)
    init_all = ungapped_extensions(q, lut, residues, offsets,
                                   np.arange(len(subjects), dtype=np.int64), matrix.scores,
                                   cut.x_drop_ungapped, cut.ungapped_cutoff)
    if batch:
        prelim_all, restarted_all = gapped.preliminary_gapped_hsps_batch(
            init_all, q, residues, offsets, matrix.scores, GAP_OPEN, GAP_EXTEND,
            cut.x_drop_gapped, cut.cutoff_score, expect_value=evalue)
    init_all = sort_by_score(init_all)
    out = {}
    for g, sj in enumerate(dict.fromkeys(init_all['subject'].tolist())):
        s = subjects[sj]
        init = init_all[init_all['subject'] == sj]
        restricted = gapped.restricted_alignment_on(int(init['score'][0]), cut.cutoff_score,
                                                    evalue)
        if batch:
            prelim = prelim_all[prelim_all['subject'] == sj]
            restarted = bool(restarted_all[g])
        else:
            prelim, restarted = gapped.preliminary_gapped_hsps(
                init, q, s, matrix.scores, GAP_OPEN, GAP_EXTEND, cut.x_drop_gapped,
                cut.cutoff_score, restricted=restricted)
        if modes is not None:
            modes[("restarted" if restarted else "restricted") if restricted else "exact"] += 1

        def e_values(scores, s=s):
            return np.array([stats.spouge_evalue(int(x), gp.kbp, gp.gbp, len(q), len(s),
                                                 db_length) for x in scores], dtype=float)

        if len(prelim):
            prelim = prelim[~(e_values(prelim['score']) > evalue)]   # Blast_HSPListReapByEvalue
        if not len(prelim):
            continue
        result = tb.traceback(prelim, q, s, matrix.scores, GAP_OPEN, GAP_EXTEND,
                              cut.x_drop_final, evalue=e_values, expect_value=evalue)
        rows = tb.tabular_rows(result, q, s)
        if rows:
            out[sj] = rows
    return out


def parse_rows(text, with_subject=False):
    rows = []
    for line in text.splitlines():
        f = line.split("\t")
        head = [f.pop(0)] if with_subject else []
        rows.append(tuple(head + [int(x) for x in f[:10]] + f[10:12]))
    return rows


def blastp_pair(directory, query: str, subject: str):
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "q.fa").write_text(f">q\n{query}\n")
    (directory / "s.fa").write_text(f">s\n{subject}\n")
    out = subprocess.run([BLASTP, "-query", str(directory / "q.fa"), "-subject",
                          str(directory / "s.fa"), "-comp_based_stats", "0", "-outfmt",
                          "6 " + COLUMNS], capture_output=True, text=True, check=True).stdout
    return parse_rows(out)


def ours_pair(query: str, subject: str, matrix, gp):
    s = encode(subject)
    rows = ours(encode(query), [s], matrix, gp, len(s), len(s))
    return rows.get(0, [])


# ---------------------------------------------------------------------------------------------
# (a) hand-derived cases
# ---------------------------------------------------------------------------------------------

def forward(query: str, subject: str):
    """Padded sequences and the addressing of an extension from before the first letters."""
    return (gapped.pad(encode(query)), 0, 1, gapped.pad(encode(subject)), 0, 1,
            len(query), len(subject))


XDROP_Q = "W" * 10 + "E" * 10 + "W" * 10
XDROP_S = "W" * 10 + "C" * 10 + "W" * 10


def test_x_drop_stop(blosum62):
    # W/W = 11, E/C = -4: after the first ten W the score drops 40 below the best
    # 110.  With the preliminary X-drop 38 the extension stops there; with the
    # final X-drop 64 it crosses to the second ten W: 110 - 40 + 110 = 180.
    # (Skipping both middles with two gaps costs 2 * 21 = 42 > 40, so no gap.)
    m = blosum62.scores
    args = forward(XDROP_Q, XDROP_S)
    for kernel in (gapped.semi_gapped_align, gapped.restricted_gapped_align):
        assert kernel(*args, m, GAP_OPEN, GAP_EXTEND, 38) == (110, 10, 10)
        assert kernel(*args, m, GAP_OPEN, GAP_EXTEND, 64) == (180, 30, 30)
    score, a, b, steps = tb.align_ex(*args, m, GAP_OPEN, GAP_EXTEND, 64)
    assert (score, a, b) == (180, 30, 30) and steps.tolist() == [tb.OP_SUB] * 30
    # an X-drop below gap_open + gap_extend is raised to it (12): the E/C run stops at once
    assert gapped.semi_gapped_align(*args, m, GAP_OPEN, GAP_EXTEND, 5) == (110, 10, 10)


def test_x_drop_end_to_end(blosum62, gp):
    # Two ungapped HSPs (the W blocks) each get a preliminary gapped extension
    # stopped by X = 38; the traceback of the better one (X = 64) spans both,
    # and the second, now contained in it, is dropped.
    q, s = encode(XDROP_Q), encode(XDROP_S)
    init = np.array([(0, 14, 14, 0, 0, 10, 110), (0, 24, 24, 20, 20, 10, 110)],
                    dtype=INIT_HSP_DTYPE)
    prelim, restarted = gapped.preliminary_gapped_hsps(init, q, s, blosum62.scores, 11, 1, 38, 30)
    assert not restarted
    assert [tuple(int(v) for v in h) for h in prelim] == [
        (110, 0, 10, 0, 10, 5, 5), (110, 20, 30, 20, 30, 25, 25)]
    result = tb.traceback(prelim, q, s, blosum62.scores, 11, 1, 64)
    assert tb.tabular_rows(result, q, s) == [
        (1, 30, 1, 30, 180, 20, 20, 0, 0, 30, XDROP_Q, XDROP_S)]


def test_gap_costs(blosum62):
    # one gap letter costs 11 + 1 = 12, three cost 11 + 3 = 14
    m = blosum62.scores
    assert gapped.semi_gapped_align(*forward("W" * 20, "W" * 10 + "G" + "W" * 10), m,
                                    11, 1, 38) == (220 - 12, 20, 21)
    assert gapped.semi_gapped_align(*forward("W" * 20, "W" * 10 + "GGG" + "W" * 10), m,
                                    11, 1, 38) == (220 - 14, 20, 23)
    # ALIGN_EX's traceback: ten pairs, the gap in the query (OP_DEL), ten pairs
    score, a, b, steps = tb.align_ex(*forward("W" * 20, "W" * 10 + "GGG" + "W" * 10), m,
                                     11, 1, 38)
    assert (score, a, b) == (206, 20, 23)
    assert steps[::-1].tolist() == [tb.OP_SUB] * 10 + [tb.OP_DEL] * 3 + [tb.OP_SUB] * 10
    # a gap in the subject (OP_INS) the other way round
    score, a, b, steps = tb.align_ex(*forward("W" * 10 + "GGG" + "W" * 10, "W" * 20), m,
                                     11, 1, 38)
    assert (score, a, b) == (206, 23, 20)
    assert steps[::-1].tolist() == [tb.OP_SUB] * 10 + [tb.OP_INS] * 3 + [tb.OP_SUB] * 10


def test_gapped_alignment_with_traceback(blosum62):
    # From a start point inside the first W run: left (reversed, start pair
    # included) 6 pairs, right the rest; the two edit blocks join into one script.
    q, s = encode("MKV" + "W" * 20 + "KLM"), encode("MKV" + "W" * 10 + "G" + "W" * 10 + "KLM")
    score, q0, q1, s0, s1, ops, nums = tb.gapped_alignment_with_traceback(
        gapped.pad(q), len(q), gapped.pad(s), len(s), 5, 5, blosum62.scores, 11, 1, 64)
    assert (score, q0, q1, s0, s1) == (14 + 220 - 12 + 14, 0, 26, 0, 27)
    assert list(zip(ops.tolist(), nums.tolist())) == [(tb.OP_SUB, 13), (tb.OP_DEL, 1),
                                                      (tb.OP_SUB, 13)]
    stats_ = tb.alignment_stats(gapped.pad(q), gapped.pad(s), blosum62.scores, q0, s0, ops, nums)
    assert stats_ == (26, 26, 27, 1, 1)       # ident, positives, length, gaps, gap opens
    assert tb.alignment_strings(q, s, q0, s0, ops, nums) == (
        "MKV" + "W" * 10 + "-" + "W" * 10 + "KLM", "MKV" + "W" * 10 + "G" + "W" * 10 + "KLM")


def test_restricted_gaps_only_every_tenth_offset(blosum62):
    # W20 against W5 G W15: the exact alignment puts a one-letter gap against the
    # G (220 - 12 = 208).  The restricted one may open a gap only at offsets that
    # are multiples of 10, so it aligns W/G (-2) and loses the last W: 207.
    m = blosum62.scores
    args = forward("W" * 20, "W" * 5 + "G" + "W" * 15)
    assert gapped.semi_gapped_align(*args, m, 11, 1, 38) == (208, 20, 21)
    assert gapped.restricted_gapped_align(*args, m, 11, 1, 38) == (207, 20, 20)
    # with the G after ten W the gap opens at offset 10: both agree
    args = forward("W" * 20, "W" * 10 + "G" + "W" * 10)
    assert gapped.restricted_gapped_align(*args, m, 11, 1, 38) == (208, 20, 21)


def test_restricted_decision():
    # (Int4)(0.68 * cutoff): 0.68 * 70 = 47.6 -> 47
    assert gapped.restricted_alignment_on(46, 70)
    assert not gapped.restricted_alignment_on(47, 70)
    assert not gapped.restricted_alignment_on(10, 70, expect_value=11.0)


def test_restart_after_inconclusive_restricted_score(blosum62):
    # A restricted score in [(Int4)(0.68 cutoff), cutoff) restarts the subject
    # with exact extensions, so the result is the exact one.
    q, s = encode("W" * 20), encode("W" * 5 + "G" + "W" * 15)
    init = np.array([(0, 2, 2, 0, 0, 5, 55)], dtype=INIT_HSP_DTYPE)
    exact, restarted = gapped.get_gapped_score(init, q, s, blosum62.scores, 11, 1, 38, 208)
    assert not restarted and int(exact['score'][0]) == 208
    hsps, restarted = gapped.get_gapped_score(init, q, s, blosum62.scores, 11, 1, 38, 208,
                                              restricted=True)
    assert restarted and hsps.tolist() == exact.tolist()
    # below (Int4)(0.68 * cutoff) the restricted score is final: nothing saved
    hsps, restarted = gapped.get_gapped_score(init, q, s, blosum62.scores, 11, 1, 38, 400,
                                              restricted=True)
    assert not restarted and len(hsps) == 0


def test_start_for_gapped_alignment(blosum62):
    m = blosum62.scores
    q = encode("AAAAAAAAAA" + "WWWWWWWWWWW" + "AAAA")
    s = encode("PPPPPPPPPP" + "WWWWWWWWWWW" + "PPPP")
    qp, sp = gapped.pad(q), gapped.pad(s)
    # the best window is the W run at 10..20: its centre 15
    assert gapped.get_start_for_gapped_alignment(qp, sp, m, 0, 25, 0, 25) == 15
    # an HSP of at most 11 letters: its midpoint
    assert gapped.get_start_for_gapped_alignment(qp, sp, m, 3, 11, 3, 11) == 8
    # no window above 0: the HSP's first letter
    neg = gapped.pad(encode("P" * 25))
    assert gapped.get_start_for_gapped_alignment(neg, gapped.pad(encode("W" * 25)), m,
                                                 2, 20, 2, 20) == 2
    # the traceback's start point for an HSP without one
    assert tb.get_offsets_for_gapped_alignment(qp, sp, m, 0, 25, 0, 25) == (True, 20, 20)
    assert tb.get_offsets_for_gapped_alignment(neg, gapped.pad(encode("W" * 25)), m,
                                               0, 25, 0, 25) == (False, 0, 0)


def test_containment_tree():
    tree = np.zeros((4, 6), dtype=np.int64)
    n = gapped.tree_add(tree, 0, 10, 50, 20, 60, 100)
    # ends are inclusive, the score must not exceed the tree HSP's
    assert gapped.tree_contains(tree, n, 10, 50, 20, 60, 100)
    assert not gapped.tree_contains(tree, n, 10, 50, 20, 60, 101)
    assert not gapped.tree_contains(tree, n, 9, 50, 20, 60, 50)
    # same start, lower score: not added
    n2 = gapped.tree_add(tree, n, 10, 40, 20, 50, 90)
    assert n2 == n
    # same end, higher score: replaces the tree HSP
    n2 = gapped.tree_add(tree, n, 5, 50, 15, 60, 120)
    assert n2 == 2 and tree[0, 5] == 0 and tree[1, 5] == 1
    # equal score, shorter query range wins
    n3 = gapped.tree_add(tree, n2, 5, 45, 15, 55, 120)
    assert n3 == 3 and tree[1, 5] == 0


def test_purge_common_endpoints():
    # (score, q_start, q_end, s_start, s_end)
    h = np.array([(50, 0, 40, 0, 40), (60, 0, 30, 0, 30), (55, 5, 30, 5, 30), (40, 70, 90, 70, 90)])
    keep = gapped.purge_common_endpoints_index(*h.T)
    # (50) shares its start with the better (60), (55) its end with (60)
    assert sorted(keep.tolist()) == [1, 3]


def test_purge_and_sort_numba_matches_numpy():
    # the batch kernel's purge + score sort against the numpy versions, on rows
    # with many shared endpoints and ties
    rng = np.random.default_rng(3)
    for _ in range(200):
        n = int(rng.integers(1, 30))
        rows = np.zeros((n, 7), dtype=np.int32)
        rows[:, 0] = rng.integers(20, 26, n)
        rows[:, 1] = rng.integers(0, 4, n)
        rows[:, 2] = rows[:, 1] + rng.integers(1, 4, n)
        rows[:, 3] = rng.integers(0, 4, n)
        rows[:, 4] = rows[:, 3] + rng.integers(1, 4, n)
        rows[:, 5] = np.arange(n)
        keep = gapped.purge_common_endpoints_index(*rows[:, :5].T)
        kept = rows[keep]
        expected = kept[gapped.score_order(*kept[:, :5].T)]
        got = gapped.purge_and_sort_rows(rows)
        assert got[:, :5].tolist() == expected[:, :5].tolist()


# ---------------------------------------------------------------------------------------------
# end-to-end hand cases against blastp
# ---------------------------------------------------------------------------------------------

HAND_PAIRS = {
    "xdrop": (XDROP_Q, XDROP_S),
    "gap1": ("MKV" + "W" * 20 + "KLM", "MKV" + "W" * 10 + "G" + "W" * 10 + "KLM"),
    "gap3": ("W" * 20, "W" * 10 + "GGG" + "W" * 10),
    "motif_gap": ("HWYFMCHWYFMC" * 2, "HWYFMCHWYFMC" + "G" + "HWYFMCHWYFMC"),
}

HAND_EXPECTED = {
    "xdrop": [(1, 30, 1, 30, 180, 20, 20, 0, 0, 30, XDROP_Q, XDROP_S)],
    "gap3": [(1, 20, 1, 23, 206, 20, 20, 3, 1, 23, "W" * 10 + "---" + "W" * 10,
              "W" * 10 + "GGG" + "W" * 10)],
}


@pytest.mark.parametrize("case", sorted(HAND_PAIRS))
def test_hand_cases(tmp_path, blosum62, gp, case):
    q, s = HAND_PAIRS[case]
    rows = ours_pair(q, s, blosum62, gp)
    if case in HAND_EXPECTED:
        assert rows == HAND_EXPECTED[case]
    if BLASTP is not None:
        assert rows == blastp_pair(tmp_path, q, s)


# ---------------------------------------------------------------------------------------------
# (b) pairs against blastp -subject
# ---------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def blast_db(tmp_path_factory, proteome_seqs):
    if BLASTP is None or MAKEBLASTDB is None:
        pytest.skip("BLAST+ not installed")
    d = tmp_path_factory.mktemp("blastdb")
    with open(d / "prot.faa", "w") as f:
        for i, (_, _, letters) in enumerate(proteome_seqs):
            f.write(f">s{i}\n{letters}\n")
    subprocess.run([MAKEBLASTDB, "-in", str(d / "prot.faa"), "-dbtype", "prot", "-out",
                    str(d / "prot")], capture_output=True, check=True)
    return d / "prot"


def blastp_db(directory, query_letters, db, extra=()):
    """BLAST's rows per subject index for one query against the proteome database."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "q.fa").write_text(f">q\n{query_letters}\n")
    out = subprocess.run([BLASTP, "-query", str(directory / "q.fa"), "-db", str(db),
                          "-comp_based_stats", "0", "-max_target_seqs", "5000",
                          "-outfmt", "6 sseqid " + COLUMNS, *extra],
                         capture_output=True, text=True, check=True).stdout
    rows = {}
    for r in parse_rows(out, with_subject=True):
        rows.setdefault(int(r[0][1:]), []).append(tuple(r[1:]))
    return rows


def compare(pairs_rows):
    """(rows compared, identical rows, differences) over {key: (blast rows, our rows)}."""
    n = same = 0
    diffs = []
    for key, (theirs, mine) in pairs_rows.items():
        n += max(len(theirs), len(mine))
        same += len(set(theirs) & set(mine))
        if theirs != mine:
            diffs.append((key, [r[:10] for r in theirs if r not in mine],
                          [r[:10] for r in mine if r not in theirs]))
    return n, same, diffs


def pair_set(proteome_seqs, blast_db, tmp_path, n_random):
    names = {n: i for i, (n, _, _) in enumerate(proteome_seqs)}
    pairs = set()
    for qname in QUERIES:
        qi = names[qname]
        for sj in blastp_db(tmp_path / qname, proteome_seqs[qi][2], blast_db):
            pairs.add((qi, sj))
    rng = random.Random(12345)
    n = len(proteome_seqs)
    for _ in range(n_random):
        pairs.add((rng.randrange(n), rng.randrange(n)))
    for qname in QUERIES:
        for _ in range(n_random // 5):
            pairs.add((names[qname], rng.randrange(n)))
    return sorted(pairs)


def run_pairs(proteome_seqs, pairs, tmp_path, blosum62, gp):
    def theirs(p):
        return blastp_pair(tmp_path / f"{p[0]}_{p[1]}", proteome_seqs[p[0]][2],
                           proteome_seqs[p[1]][2])

    with ThreadPoolExecutor(max_workers=4) as pool:
        blast_rows = list(pool.map(theirs, pairs))
    out = {}
    for p, b in zip(pairs, blast_rows):
        q, s = proteome_seqs[p[0]][1], proteome_seqs[p[1]][1]
        mine = ours(q, [s], blosum62, gp, len(s), len(s)).get(0, [])
        out[p] = (b, mine)
    return out


@needs_blast
def test_pairs_against_blastp(proteome_seqs, blast_db, tmp_path, blosum62, gp):
    pairs = pair_set(proteome_seqs, blast_db, tmp_path, n_random=40)
    result = run_pairs(proteome_seqs, pairs, tmp_path, blosum62, gp)
    n, same, diffs = compare(result)
    assert n > 300
    assert diffs == [], f"{same}/{n} rows identical; differences: {diffs[:10]}"


@needs_blast
@pytest.mark.slow
def test_many_random_pairs_against_blastp(proteome_seqs, blast_db, tmp_path, blosum62, gp):
    rng = random.Random(777)
    n = len(proteome_seqs)
    pairs = sorted({(rng.randrange(n), rng.randrange(n)) for _ in range(400)})
    result = run_pairs(proteome_seqs, pairs, tmp_path, blosum62, gp)
    n_rows, same, diffs = compare(result)
    assert diffs == [], f"{same}/{n_rows} rows identical; differences: {diffs[:10]}"


def mutated(seq: str, rng: random.Random) -> str:
    """A copy with ~15% substitutions, ~2% deletions and ~2% insertions."""
    letters = "ACDEFGHIKLMNPQRSTVWY"
    out = []
    for c in seq:
        r = rng.random()
        if r < 0.15:
            out.append(rng.choice(letters))
        elif r < 0.17:
            continue
        elif r < 0.19:
            out.append(c + rng.choice(letters))
        else:
            out.append(c)
    return "".join(out)


@needs_blast
@pytest.mark.parametrize("query_name, position", [(QUERIES[2], 60_000), (QUERIES[0], 5_000)])
def test_long_subject(proteome_seqs, tmp_path, blosum62, gp, query_name, position):
    # A subject of ~100000 letters (random, with a mutated copy of the query):
    # AdjustSubjectRange windows subjects of 90000+ letters around the start
    # point (query length + 3000 gaps either side) in both stages.
    rng = random.Random(4)
    letters = "ACDEFGHIKLMNPQRSTVWY"
    q = {n: l for n, _, l in proteome_seqs}[query_name].rstrip("*")
    s = ("".join(rng.choice(letters) for _ in range(position)) + mutated(q, rng)
         + "".join(rng.choice(letters) for _ in range(100_000 - position)))
    assert len(s) >= gapped.MAX_SUBJECT_OFFSET
    rows = ours_pair(q, s, blosum62, gp)
    assert rows and rows[0][2] > position - 10
    assert rows == blastp_pair(tmp_path, q, s)


def test_hit_list_traceback_equals_subject_by_subject(proteome_seqs, blosum62, gp):
    # traceback_hit_list (a query's whole hit list in one compiled call, with the aligned
    # strings) gives every subject the rows, E-values and order of traceback() run subject by
    # subject (whose rows are BLAST+'s: the tests above), in any order of subjects, with
    # HSPs reaped by E-value, and with a subject long enough to be windowed (AdjustSubjectRange)
    rng = random.Random(11)
    names = {n: i for i, (n, _, _) in enumerate(proteome_seqs)}
    long_query = proteome_seqs[names[QUERIES[0]]][2].rstrip("*")
    long_subject = encode("".join(rng.choice("ACDEFGHIKLMNPQRSTVWY") for _ in range(95_000))
                          + mutated(long_query, rng))
    subjects = [c for _, c, _ in proteome_seqs] + [long_subject]
    offsets = np.zeros(len(subjects) + 1, np.int64)
    offsets[1:] = np.cumsum([len(s) for s in subjects])
    residues = np.concatenate(subjects).astype(np.uint8)
    db_length = int(offsets[-1])
    hsps_checked = 0
    for name in QUERIES:
        q = blast_query_codes(proteome_seqs[names[name]][1])
        cut = stats.search_cutoffs(stats.ungapped_params(q, blosum62), gp, query_len=len(q),
                                   db_length=db_length, evalue=10.0,
                                   min_subject_len=stats.BLAST_SEQSRC_MINLENGTH)
        init = ungapped_extensions(q, build_lookup(q, blosum62.scores, 3, 11), residues, offsets,
                                   np.arange(len(subjects), dtype=np.int64), blosum62.scores,
                                   cut.x_drop_ungapped, cut.ungapped_cutoff)
        prelim_all, _ = gapped.preliminary_gapped_hsps_batch(
            init, q, residues, offsets, blosum62.scores, GAP_OPEN, GAP_EXTEND, cut.x_drop_gapped,
            cut.cutoff_score, expect_value=10.0)
        order = sorted(set(prelim_all["subject"].tolist()))
        rng.shuffle(order)
        prelims = [prelim_all[prelim_all["subject"] == s] for s in order]

        def e_values(scores, lengths):
            return np.array([stats.spouge_evalue(int(x), gp.kbp, gp.gbp, len(q), int(n), db_length)
                             for x, n in zip(scores, lengths)], dtype=float)

        for expect in (10.0, 1e-20):
            got = tb.traceback_hit_list(prelims, q, order, residues, offsets, blosum62.scores,
                                        GAP_OPEN, GAP_EXTEND, cut.x_drop_final, evalue=e_values,
                                        expect_value=expect, letters=NCBISTDAA)
            want = []
            for j, (s, prelim) in enumerate(zip(order, prelims)):
                subject = subjects[s]
                r = tb.traceback(prelim, q, subject, blosum62.scores, GAP_OPEN, GAP_EXTEND,
                                 cut.x_drop_final, expect_value=expect,
                                 evalue=lambda sc, n=len(subject): e_values(sc, [n] * len(sc)))
                want += [(j, *row, float(e)) for row, e in zip(tb.tabular_rows(r, q, subject, NCBISTDAA),
                                                               r.hsps["evalue"])]
            h = got.hsps
            mine = [(int(j), int(x["q_start"]) + 1, int(x["q_end"]), int(x["s_start"]) + 1, int(x["s_end"]),
                     int(x["score"]), int(x["num_ident"]), int(x["num_positives"]), int(x["gaps"]),
                     int(x["gap_opens"]), int(x["length"]), qs, ss, float(x["evalue"]))
                    for j, x, qs, ss in zip(got.subject, h, got.qseq, got.sseq)]
            assert mine == want
            hsps_checked += len(mine)
    assert hsps_checked > 300


# ---------------------------------------------------------------------------------------------
# (c) database search, including the restricted alignment and its restart
# ---------------------------------------------------------------------------------------------

def run_db(proteome_seqs, blast_db, tmp_path, blosum62, gp, query_indices, dbsize=None):
    subjects = [c for _, c, _ in proteome_seqs]
    db_length = dbsize or int(sum(len(s) for s in subjects))
    extra = ("-dbsize", str(dbsize)) if dbsize else ()
    modes = {"exact": 0, "restricted": 0, "restarted": 0}
    out = {}
    for qi in query_indices:
        theirs = blastp_db(tmp_path / f"q{qi}", proteome_seqs[qi][2], blast_db, extra)
        mine = ours(proteome_seqs[qi][1], subjects, blosum62, gp, db_length,
                    stats.BLAST_SEQSRC_MINLENGTH, modes=modes, batch=True)
        for sj in set(theirs) | set(mine):
            out[(qi, sj)] = (theirs.get(sj, []), mine.get(sj, []))
    return out, modes


@needs_blast
@pytest.mark.parametrize("dbsize", [None, 10_000_000_000])
def test_database_search_against_blastp(proteome_seqs, blast_db, tmp_path, blosum62, gp,
                                        dbsize):
    names = {n: i for i, (n, _, _) in enumerate(proteome_seqs)}
    queries = [names[q] for q in QUERIES] + random.Random(7).sample(range(len(proteome_seqs)), 12)
    result, modes = run_db(proteome_seqs, blast_db, tmp_path, blosum62, gp, queries, dbsize)
    n, same, diffs = compare(result)
    assert n > 100
    assert diffs == [], f"{same}/{n} rows identical; differences: {diffs[:10]}"
    if dbsize:
        # the large search space exercises the restricted variant and its restart
        assert modes["restricted"] > 100 and modes["restarted"] > 10


@needs_blast
@pytest.mark.slow
def test_database_search_many_queries(proteome_seqs, blast_db, tmp_path, blosum62, gp):
    queries = random.Random(99).sample(range(len(proteome_seqs)), 150)
    for dbsize in (None, 10_000_000_000):
        result, _ = run_db(proteome_seqs, blast_db, tmp_path, blosum62, gp, queries, dbsize)
        n, same, diffs = compare(result)
        assert diffs == [], f"{same}/{n} rows identical; differences: {diffs[:10]}"


# Two batches of proteome queries (database indices) searched in ONE blastp run.
# In BLAST_GetGappedScore the restricted decision looks at the subject's best
# init HSP of every query searched together; blastp 2.12 nevertheless behaves
# as if each query were searched alone: in these batches the per-query
# decision gives BLAST's result for query 291 / subject 807 and query 1366 /
# subject 778, a batch-wide decision (best init HSP of the batch against the
# batch's smallest cutoff) does not.
MULTI_QUERY_BATCHES = [[309, 1290, 1902, 1782, 1695, 169, 580, 291, 1123, 1691, 988],
                       [537, 1337, 1237, 322, 802, 2098, 1366, 1056, 1404, 1311, 178]]


@needs_blast
@pytest.mark.parametrize("batch", MULTI_QUERY_BATCHES)
def test_several_queries_in_one_run(proteome_seqs, blast_db, tmp_path, blosum62, gp, batch):
    dbsize = 10_000_000_000
    (tmp_path / "q.fa").write_text("".join(f">q{qi}\n{proteome_seqs[qi][2]}\n" for qi in batch))
    out = subprocess.run([BLASTP, "-query", str(tmp_path / "q.fa"), "-db", str(blast_db),
                          "-comp_based_stats", "0", "-max_target_seqs", "5000",
                          "-dbsize", str(dbsize), "-outfmt", "6 qseqid sseqid " + COLUMNS],
                         capture_output=True, text=True, check=True).stdout
    theirs = {}
    for line in out.splitlines():
        f = line.split("\t")
        key = (int(f[0][1:]), int(f[1][1:]))
        theirs.setdefault(key, []).append(tuple([int(x) for x in f[2:12]] + f[12:14]))
    subjects = [c for _, c, _ in proteome_seqs]
    result = {}
    for qi in batch:
        mine = ours(proteome_seqs[qi][1], subjects, blosum62, gp, dbsize,
                    stats.BLAST_SEQSRC_MINLENGTH, batch=True)
        for sj in set(mine) | {k[1] for k in theirs if k[0] == qi}:
            result[(qi, sj)] = (theirs.get((qi, sj), []), mine.get(sj, []))
    n, same, diffs = compare(result)
    assert n > 100
    assert diffs == [], f"{same}/{n} rows identical; differences: {diffs[:10]}"
