"""blastp stages 1-3: lookup table, word hits binned by diagonal, two-hit ungapped extension.

Three levels of checks:

(a) hand-derived cases on tiny sequences (the two-hit window, overlapping
    hits, an X-drop stop, the lookup table's contents and order), each also
    run through the real ``blastp`` when it is installed;
(b) the binned cuBLASTP pipeline (find_hits -> two_hit_binned -> BLAST's order)
    against the literal transcription of BLAST's scan loop, on the proteome;
(c) against BLAST+ 2.12 itself: ``blastp -ungapped -comp_based_stats 0`` on
    queries of 130/499/1000 residues from the proteome against a BLAST
    database of the proteome.  Every HSP it reports must be one of our init
    HSPs (same coordinates, same raw score).

About (c): with ``-ungapped`` BLAST reports the init HSPs of the word finder
that pass the ungapped cutoff min(gap trigger, cutoff_score_max) and then
the E-value threshold; no extension is redone, so coordinates and scores
are the word finder's.  We save everything (cutoff 0), so ours are a
superset; conversely every HSP of ours that scores a little above BLAST's
weakest reported one is reported (no purging of ungapped HSPs was seen; the
margin leaves room for sum statistics, which make the E-value threshold on
the score depend on the subject).  The X-drop is BLAST's
``ceil(7 ln2 / lambda_u)`` from the query's own ungapped lambda (stats.py);
the ungapped cutoff does not change the diagonal state, so a lower cutoff
cannot change which extensions happen.  Each query is searched alone, as
BLAST's results do not depend on the other queries of a run (see ungapped.py).
"""

from __future__ import annotations

import subprocess

import numpy as np
import pytest
from blast_cases import BLASTP, MAKEBLASTDB, QUERIES, needs_blast

from gpu_search.blast.alphabet import EASEL_TO_NCBISTDAA, blast_query_codes, encode
from gpu_search.blast.lookup import build_lookup, word_index
from gpu_search.blast.matrix import load_matrix
from gpu_search.blast.ungapped import (INIT_HSP_DTYPE, extend_one_hit, extend_two_hit, sort_by_score,
                                       ungapped_extensions, ungapped_extensions_reference)
from gpu_search.blast.wordhits import (bin_hits, find_hits, hit_layout, scan_hits,
                                       unpack_hits)



@pytest.fixture(scope="module")
def blosum62():
    return load_matrix("BLOSUM62")


@pytest.fixture(scope="module")
def db(proteome):
    """The proteome in NCBIstdaa: (residues, offsets, names)."""
    residues = EASEL_TO_NCBISTDAA[proteome.residues]
    names = [proteome.name(i) for i in range(proteome.n_seqs)]
    return residues, np.asarray(proteome.offsets, np.int64), names


def x_drop_of(query, matrix) -> int:
    from gpu_search.blast import stats
    return stats.ungapped_x_dropoff(stats.ungapped_params(query, matrix))


def one_subject(s):
    return s, np.array([0, len(s)], np.int64), np.array([0], np.int64)


def as_tuples(hsps):
    """(q_start, q_end, s_start, s_end, score), 1-based inclusive like outfmt 6."""
    return [(int(h["q_start"]) + 1, int(h["q_start"] + h["length"]), int(h["s_start"]) + 1,
             int(h["s_start"] + h["length"]), int(h["score"])) for h in hsps]


def blastp_ungapped(query_fasta, db_path, extra=()):
    out = subprocess.run(
        [BLASTP, "-query", str(query_fasta), "-db", str(db_path), "-ungapped",
         "-comp_based_stats", "0", "-evalue", "10", "-seg", "no", "-num_threads", "1",
         "-outfmt", "6 qseqid sseqid qstart qend sstart send score", *extra],
        capture_output=True, text=True, check=True).stdout
    return [line.split("\t") for line in out.splitlines()]


def blastp_pair(tmp_path, query: str, subject: str):
    """BLAST's ungapped HSPs of one query against a one-sequence database."""
    (tmp_path / "s.fa").write_text(f">s\n{subject}\n")
    (tmp_path / "q.fa").write_text(f">q\n{query}\n")
    subprocess.run([MAKEBLASTDB, "-in", str(tmp_path / "s.fa"), "-dbtype", "prot",
                    "-out", str(tmp_path / "s")], capture_output=True, check=True)
    rows = blastp_ungapped(tmp_path / "q.fa", tmp_path / "s")
    return sorted(tuple(int(v) for v in r[2:]) for r in rows)


def ours_pair(query: str, subject: str, matrix, x_drop=None, cutoff=0):
    q, s = encode(query), encode(subject)
    lut = build_lookup(q, matrix.scores)
    x = x_drop_of(q, matrix) if x_drop is None else x_drop
    return ungapped_extensions(q, lut, *one_subject(s), matrix.scores, x, cutoff)


# ---------------------------------------------------------------------------------------------
# (a) hand-derived cases
# ---------------------------------------------------------------------------------------------

def window_case(d: int):
    """Query CCC A..A CCC against subject CCC T..T CCC, the CCCs d apart (BLOSUM62: A/T = 0).

    Word hits on diagonal 0: CCC/CCC at 0 (27), CCA/CCT at 1 (18; 1 < W from the
    first: ignored, and it does NOT become the last hit), ACC/TCC at d-1 (18) and
    CCC/CCC at d.  CAA/CTT (9) and AAC/TTC (9) are below T.  So the pair that
    decides is (0, d-1): distance d-1.  Diagonals +1 and -1 carry a similar pair
    (CCA/CCC 18 at 0 and CCC/TCC 17 at d-1, and the mirror image).
    """
    return "CCC" + "A" * (d - 3) + "CCC", "CCC" + "T" * (d - 3) + "CCC"


def test_two_hit_window_39_extends(blosum62):
    # hits 39 apart: diff = 39 < window 40 -> extension.  On diagonal 0 the left
    # extension from the second word runs back through the zero-scoring A/T run
    # to the first CCC, so the right extension happens: the whole diagonal, 54.
    q, s = window_case(40)
    hsps = ours_pair(q, s, blosum62, x_drop=16)
    assert sorted(as_tuples(hsps)) == [(1, 42, 2, 43, 35), (1, 43, 1, 43, 54), (2, 43, 1, 42, 35)]
    # the triggering (second) hits, in BLAST's order: subject offset, then cell order
    assert [(int(h["q_off"]), int(h["s_off"])) for h in hsps] == [(39, 39), (40, 39), (39, 40)]


def test_two_hit_window_40_does_not_extend(blosum62):
    # hits 40 apart: diff = 40 >= window -> the second hit only starts a new pair
    # ("diff >= window", not ">").  Had the overlapping hit at 1 updated the
    # diagonal, the distance would be 39 and it would extend.
    q, s = window_case(41)
    assert len(ours_pair(q, s, blosum62, x_drop=16)) == 0


def test_x_drop_stop(blosum62):
    # After the second CCC, W/D pairs score -4 each: with X = 16 the right
    # extension stops 4 letters in (16 below the best), before the CCCC that would
    # have lifted the score to 70 (reached with X = 25: 5 * -4 = -20 > -25).
    q = "CCC" + "A" * 17 + "CCC" + "WWWWW" + "CCCC"
    s = "CCC" + "T" * 17 + "CCC" + "DDDDD" + "CCCC"
    best = ours_pair(q, s, blosum62, x_drop=16)
    assert (1, 23, 1, 23, 54) in as_tuples(best)
    assert max(as_tuples(best), key=lambda t: t[4])[4] == 54
    wide = ours_pair(q, s, blosum62, x_drop=25)
    assert (1, 32, 1, 32, 70) in as_tuples(wide)


def test_extend_two_hit_left_must_reach_first_hit(blosum62):
    # s_BlastAaExtendTwoHit: if the left extension stops before the end of the
    # first word, there is no right extension and the HSP is the left part only.
    q = encode("WWW" + "G" * 10 + "WWW" + "W" * 5)
    s = encode("WWW" + "P" * 10 + "WWW" + "W" * 5)      # G/P = -2
    pssm = blosum62.scores[q]
    # first word ends at 3, second hit at 13; the split point is 16 (best prefix WWW)
    score, hsp_q, hsp_s, length, right_extend, s_last = extend_two_hit(
        pssm, s, 0, len(s), 3, 13, 13, 16, 3)
    # X = 16: 8 G/P pairs drop 16 below 33 -> stop at 5, far from 3
    assert not right_extend
    assert (score, hsp_q, hsp_s, length, s_last) == (33, 13, 13, 3, 16)
    score, hsp_q, hsp_s, length, right_extend, s_last = extend_two_hit(
        pssm, s, 0, len(s), 3, 13, 13, 100, 3)
    # X = 100: 33 - 20 + 33 = 46 at offset 0, then right through the 5 W: 46 + 55
    assert right_extend
    assert (score, hsp_q, hsp_s, length, s_last) == (101, 0, 0, 21, 21)


def test_extend_one_hit_seed_and_both_sides(blosum62):
    # s_BlastAaExtendOneHit (-window_size 0), hit at offset 4 of both.  Word "DWW"
    # against "WWW": D/W = -4 drops the running sum to <= 0, so the seed restarts
    # after it: WW, score 22, width 2, from offset 5.  BLOSUM62: A/A 4, W/W 11, P/G -2.
    q = encode("AAAA" + "DWW" + "WWWW" + "PPPP")
    s = encode("AAAA" + "WWW" + "WWWW" + "GGGG")
    pssm = blosum62.scores[q]
    # X = 3: left, D/W takes 22 to 18 (4 below) -> stop, nothing added; right from 7:
    # four W/W to 66, then 64, 62 (4 below) -> stop at 12; HSP 5..10
    assert extend_one_hit(pssm, s, 0, len(s), 4, 4, 3, 3) == (66, 5, 5, 6, 12)
    # X = 10: left goes through D/W (18) and the four A/A (34, best at 0): 5 letters;
    # right: 78 after the W, then the P/G pairs only 8 below at the end (offset 15)
    assert extend_one_hit(pssm, s, 0, len(s), 4, 4, 10, 3) == (78, 0, 0, 5 + 4 + 2, 15)
    # a word whose sum never turns positive (P/W = -4 three times): score 0, the
    # seed keeps BLAST's initial right end (q_off + W = 7) and start (4), width
    # 7 - 7 + 1 = 1 (from the last restart); left from 3 adds the four W (44),
    # right from 8 the last three (77)
    q2 = encode("WWWW" + "PPP" + "WWWW")
    s2 = encode("WWWW" + "WWW" + "WWWW")
    assert extend_one_hit(blosum62.scores[q2], s2, 0, len(s2), 4, 4, 100, 3) == (77, 0, 0, 4 + 3 + 1, 11)


@needs_blast
@pytest.mark.parametrize("case", ["window39", "window40", "xdrop"])
def test_hand_cases_against_blastp(tmp_path, blosum62, case):
    if case == "xdrop":
        q = "CCC" + "A" * 17 + "CCC" + "WWWWW" + "CCCC"
        s = "CCC" + "T" * 17 + "CCC" + "DDDDD" + "CCCC"
    else:
        q, s = window_case(40 if case == "window39" else 41)
    theirs = blastp_pair(tmp_path, q, s)
    ours = sorted(as_tuples(ours_pair(q, s, blosum62)))
    assert theirs == ours


def test_lookup_contents_and_order(blosum62):
    m = blosum62.scores
    # WWY (offset 0, 24), AWW (offset 4, 19) and WWW (offset 5, 33) all reach
    # cell WWW; BLAST fills cells query word by query word in word-index order
    # (AWW < WWW < WWY), not in query order.
    q = encode("WWYAAWWW")
    lut = build_lookup(q, m, 3, 11)
    assert lut.cell(word_index(encode("WWW"))).tolist() == [4, 5, 0]
    # A*A scores 4+1+4 = 9 < T against itself: added as an exact match anyway
    q = encode("KA*AK")
    lut = build_lookup(q, m, 3, 11)
    assert lut.cell(word_index(encode("A*A"))).tolist() == [1]
    # words over a masked residue are not indexed
    lut = build_lookup(encode("WWWWW"), m, 3, 11, mask=np.array([0, 0, 0, 1, 0], bool))
    assert lut.cell(word_index(encode("WWW"))).tolist() == [0]


def test_lookup_matches_definition(blosum62, db):
    """Every cell = {offsets q : score(word(q), cell) >= T, or cell == word(q) scoring < T}."""
    residues, offsets, _ = db
    m = blosum62.scores.astype(np.int64)
    q = residues[offsets[5]:offsets[5] + 120]
    lut = build_lookup(q, blosum62.scores, 3, 11)
    words = np.stack([q[:-2], q[1:-1], q[2:]], axis=1).astype(np.intp)
    all_words = np.array(np.meshgrid(np.arange(28), np.arange(28), np.arange(28),
                                     indexing="ij")).reshape(3, -1).T
    codes = (all_words[:, 0] << 10) | (all_words[:, 1] << 5) | all_words[:, 2]
    expect = {}
    for off, w in enumerate(words):
        sc = m[w[0], all_words[:, 0]] + m[w[1], all_words[:, 1]] + m[w[2], all_words[:, 2]]
        cells = set(codes[sc >= 11].tolist())
        if m[w[0], w[0]] + m[w[1], w[1]] + m[w[2], w[2]] < 11:
            cells.add(word_index(w))
        for c in cells:
            expect.setdefault(c, []).append((word_index(w), off))
    for c in range(lut.n_cells):
        assert lut.cell(c).tolist() == [off for _, off in sorted(expect.get(c, []))]
    assert lut.n_entries == sum(len(v) for v in expect.values())


def test_lookup_rank_pssm_and_longest_chain(blosum62, db):
    """The table's other arrays from their definitions, a masked stretch included."""
    residues, offsets, _ = db
    q = residues[offsets[7]:offsets[7] + 150]
    mask = np.zeros(len(q), bool)
    mask[40:47] = True
    lut = build_lookup(q, blosum62.scores, 3, 11, mask=mask)
    words = [word_index(q[i:i + 3]) if not mask[i:i + 3].any() else -1 for i in range(len(q) - 2)]
    assert lut.query_word.tolist() == words
    by_word = sorted(range(len(words)), key=lambda i: (words[i], i))
    assert [by_word.index(i) for i in range(len(words))] == lut.query_rank.tolist()
    assert (lut.pssm == blosum62.scores[q.astype(np.intp)]).all()
    assert lut.longest_chain == max(len(lut.cell(c)) for c in range(lut.n_cells))


def test_sort_by_score():
    h = np.zeros(4, dtype=INIT_HSP_DTYPE)
    h["subject"] = [3, 3, 3, 1]
    h["score"] = [40, 50, 40, 99]
    h["s_start"] = [9, 1, 2, 0]
    out = sort_by_score(h)
    assert out["subject"].tolist() == [3, 3, 3, 1]
    assert out["score"].tolist() == [50, 40, 40, 99]
    assert out["s_start"].tolist() == [1, 2, 9, 0]


# ---------------------------------------------------------------------------------------------
# (b) the binned pipeline against BLAST's loop, on the proteome
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("query_name", QUERIES + ["938293.PRJEB85.HG003688_7",
                                                  "938293.PRJEB85.HG003684_71"])
def test_binned_equals_reference(blosum62, db, query_name):
    residues, offsets, names = db
    i = names.index(query_name)
    q = blast_query_codes(residues[offsets[i]:offsets[i + 1]])
    lut = build_lookup(q, blosum62.scores)
    ids = np.arange(len(names), dtype=np.int64)
    x = x_drop_of(q, blosum62)
    ref = ungapped_extensions_reference(q, lut, residues, offsets, ids, blosum62.scores, x, 0)
    assert len(ref) > 0
    binned = ungapped_extensions(q, lut, residues, offsets, ids, blosum62.scores, x, 0)
    np.testing.assert_array_equal(binned, ref)
    # batching, threads and BLAST's own loop change nothing
    other = ungapped_extensions(q, lut, residues, offsets, ids, blosum62.scores, x, 0,
                                batch_residues=50_000, threads=2)
    np.testing.assert_array_equal(other, ref)
    scan = ungapped_extensions(q, lut, residues, offsets, ids, blosum62.scores, x, 0,
                               method="scan", batch_residues=100_000)
    np.testing.assert_array_equal(scan, ref)
    # the cutoff only filters
    cut = ungapped_extensions(q, lut, residues, offsets, ids, blosum62.scores, x, 40)
    np.testing.assert_array_equal(cut, ref[ref["score"] >= 40])


def test_hit_keys(blosum62, db):
    residues, offsets, names = db
    i = names.index(QUERIES[1])
    q = residues[offsets[i]:offsets[i + 1]]
    lut = build_lookup(q, blosum62.scores)
    ids = np.arange(0, len(names), 3, dtype=np.int64)       # a subset, out of db order
    raw = scan_hits(lut, residues, offsets, ids)
    binned = find_hits(lut, residues, offsets, ids)
    layout = hit_layout(lut, offsets, ids)
    np.testing.assert_array_equal(binned, np.sort(raw))
    np.testing.assert_array_equal(bin_hits(raw, layout), binned)
    # every key is a real word hit: the subject word is in the query offset's cell
    sub, diag, s_off, q_off = unpack_hits(binned, layout)
    start = offsets[ids[sub]] + s_off
    code = ((residues[start].astype(np.int64) << 10) | (residues[start + 1].astype(np.int64) << 5)
            | residues[start + 2])
    lo, hi = lut.cell_start[code], lut.cell_start[code + 1]
    for k in range(0, len(binned), 997):
        assert q_off[k] in lut.offsets[lo[k]:hi[k]]
    assert np.all(diag == ((q_off - s_off) & layout.diag_mask))
    # as many hits as the cells' sizes summed over every subject position
    total = 0
    for j in ids:
        s = residues[offsets[j]:offsets[j + 1]].astype(np.int64)
        c = (s[:-2] << 10) | (s[1:-1] << 5) | s[2:]
        total += int(np.sum(lut.cell_start[c + 1] - lut.cell_start[c]))
    assert len(raw) == total


# ---------------------------------------------------------------------------------------------
# (c) against blastp
# ---------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def blast_db(tmp_path_factory, proteome_path):
    if BLASTP is None or MAKEBLASTDB is None:
        pytest.skip("BLAST+ (blastp, makeblastdb) not installed")
    out = tmp_path_factory.mktemp("blastdb") / "proteome"
    subprocess.run([MAKEBLASTDB, "-in", str(proteome_path), "-dbtype", "prot", "-parse_seqids",
                    "-out", str(out)], capture_output=True, check=True)
    return out


@needs_blast
@pytest.mark.parametrize("query_name", QUERIES)
def test_against_blastp_ungapped(tmp_path, blast_db, blosum62, db, query_name):
    residues, offsets, names = db
    index = {n: k for k, n in enumerate(names)}
    i = index[query_name]
    q = blast_query_codes(residues[offsets[i]:offsets[i + 1]])
    fasta = tmp_path / "q.fa"
    from gpu_search.blast.alphabet import decode
    fasta.write_text(f">{query_name}\n{decode(q)}\n")
    rows = blastp_ungapped(fasta, blast_db)
    assert len(rows) > 10
    theirs = [(index[r[1]], *(int(v) for v in r[2:7])) for r in rows]

    lut = build_lookup(q, blosum62.scores)
    x = x_drop_of(q, blosum62)
    hsps = ungapped_extensions(q, lut, residues, offsets, np.arange(len(names)),
                               blosum62.scores, x, 0)
    ours = {(int(sub), *t) for sub, t in zip(hsps["subject"], as_tuples(hsps))}
    missing = [t for t in theirs if t not in ours]
    assert not missing, f"{len(missing)} of BLAST's {len(theirs)} HSPs not found: {missing[:5]}"
    weakest = min(t[5] for t in theirs)
    extra = sorted(t for t in ours if t[5] >= weakest + 5 and t not in set(theirs))
    assert not extra, f"HSPs BLAST does not report: {extra[:5]}"
