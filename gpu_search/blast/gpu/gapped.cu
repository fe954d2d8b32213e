// blastp's preliminary gapped stage on the GPU: BLAST_GetGappedScore of
// BLAST+ 2.12 for queries against many subjects, score only, per subject (the
// subject's "group" of init HSPs) either one warp (prelim_gapped_warp, the
// default) or one thread (prelim_gapped).
//
// Each replays gapped.py's _get_gapped_score_kernel for its subject:
//
//   1. sorts the subject's init HSPs as Blast_InitHitListSortByScore
//      (insertion sort: stable, groups are small -- big ones stay on the CPU);
//   2. for each init HSP not contained in a gapped HSP already found
//      (BlastIntervalTreeContainsHSP), finds its start point
//      (BlastGetStartForGappedAlignment) and extends it left and right with
//      the score-only affine X-drop DP (Blast_SemiGappedAlign), or with gaps
//      restricted to every 10th row/column (s_RestrictedGappedAlign) when the
//      subject's best init HSP is below 0.68 x the cutoff; an inconclusive
//      restricted score restarts the subject exactly;
//   3. saves extensions reaching the cutoff and adds them to the containment
//      set (BlastIntervalTreeAddHSP).
//
// The warp kernel computes each DP row 32 cells at a time (see "One warp per
// subject" below, with why that is BLAST's cell-by-cell loop exactly), 10-16x
// faster than a thread per subject on an H100 (docs/benchmarks.md).  The
// thread kernel runs its program as one flat loop of small steps (a DP cell,
// a cell added to the band, the next init HSP, ...; see XDrop below) rather
// than as loops nested four deep: a warp's 32 subjects need rows, extensions
// and HSP counts of very different lengths (ncu: 7.5 of 32 threads active
// with nested loops, 10.2 flat).
//
// The DP keeps its two rows (best, best_gap) in a ring of BAND cells (a
// thread's local memory, or the warp's shared memory): only the band
// [first_b_index, b_size] is live.  A band wider than the ring stops the
// subject with status OVERFLOW, and so does a subject whose extensions have
// computed more than CELL_BUDGET DP cells: the host runs those on the CPU
// (same result).  The host purges HSPs with common endpoints, sorts them by
// score and computes E-values (gapped.purge_and_sort_rows, engine.py).
//
// Tests without a GPU: the thread kernel's per-subject code builds as C++ for
// the host (no __CUDACC__; prelim_gapped_host below), and both CUDA kernels
// run on the CPU through tests/helpers/warp_emulator.cpp.
//
// Compile-time constants: BAND (ring cells per DP row, a power of two),
// CELL_BUDGET (DP cells a subject may compute), WARPS (warps a block of the
// warp kernel).
// Inputs: the groups of several queries (prelim_gapped below).
// Output per subject g: rows [group_start[g], + count[g]) of out, int32 x 7 =
// score, q_start, q_end, s_start, s_end, q_gapped_start, s_gapped_start
// (PRELIM_HSP_DTYPE), in the order BLAST saves them; status[g]: bit 0 the
// restricted extensions restarted, bit 1 OVERFLOW (ring or budget: left to the CPU).

#ifndef BAND
#define BAND 256
#endif
#define BAND_MASK (BAND - 1)
#ifndef CELL_BUDGET
#define CELL_BUDGET (1 << 30)
#endif
#define ALPHABET 28                 // NCBIstdaa: matrix rows are 28 scores wide
#define MININT (-(1 << 30))         // INT4_MIN / 2 in blast_gapalign.c
#define RESTRICT_SIZE 10            // restricted DP: gaps open every 10 offsets
#define HSP_MAX_WINDOW 11           // BlastGetStartForGappedAlignment
#define MAX_SUBJECT_OFFSET 90000    // AdjustSubjectRange
#define MAX_TOTAL_GAPS 3000
#define STATUS_RESTARTED 1
#define STATUS_OVERFLOW 2

#ifdef __CUDACC__
#define HD __device__ __forceinline__
#else
#define HD inline
#endif

static_assert((BAND & (BAND - 1)) == 0, "BAND must be a power of two");

HD int imax(int a, int b) { return a > b ? a : b; }
HD int imin(int a, int b) { return a < b ? a : b; }

// A sequence as BLAST's padded buffer: letter i (1-based) at [i], sentinel 0 at
// [0] and [length + 1] (the DP reads one letter past each end, never using it).
struct Seq {
    const unsigned char* res;       // residues, unpadded
    int length;
    HD int operator[](int p) const { return (p >= 1 && p <= length) ? res[p - 1] : 0; }
};

// BlastGetStartForGappedAlignment: centre of the best 11-letter window of the
// ungapped HSP (its midpoint if at most 11 long, its start if no window scores > 0).
HD int start_for_gapped_alignment(Seq qp, Seq sp, const int* matrix, int q_start, int s_start, int length)
{
    if (length <= HSP_MAX_WINDOW) return q_start + length / 2;
    int score = 0;
    for (int k = 0; k < HSP_MAX_WINDOW; k++)
        score += matrix[qp[q_start + k + 1] * ALPHABET + sp[s_start + k + 1]];
    int max_score = score;
    int max_offset = q_start + HSP_MAX_WINDOW - 1;
    const int d = s_start - q_start;
    for (int i = q_start + HSP_MAX_WINDOW; i < q_start + length; i++) {
        score -= matrix[qp[i - HSP_MAX_WINDOW + 1] * ALPHABET + sp[i - HSP_MAX_WINDOW + d + 1]];
        score += matrix[qp[i + 1] * ALPHABET + sp[i + d + 1]];
        if (score > max_score) {
            max_score = score;
            max_offset = i;
        }
    }
    return max_score > 0 ? max_offset - HSP_MAX_WINDOW / 2 : q_start;
}

// The containment set (gapped.tree_contains / tree_add): rows of 6 ints
// q_start, q_end, s_start, s_end, score, alive.
HD bool tree_contains(const int* tree, int n_tree, int q_start, int q_end, int s_start, int s_end, int score)
{
    for (int t = 0; t < n_tree; t++) {
        const int* h = tree + 6 * t;
        if (h[5] && score <= h[4] && h[0] <= q_start && q_start <= h[1] && h[2] <= s_start &&
            s_start <= h[3] && h[0] <= q_end && q_end <= h[1] && h[2] <= s_end && s_end <= h[3])
            return true;
    }
    return false;
}

// s_HSPsHaveCommonEndpoint: true if the set's HSP h is kept over the new one.
HD bool common_endpoint_keeps_tree(const int* h, int q_start, int q_end, int s_start, int s_end, int score)
{
    if (score != h[4]) return score < h[4];
    const int in_q = q_end - q_start, tree_q = h[1] - h[0];
    if (in_q != tree_q) return in_q > tree_q;
    const int in_s = s_end - s_start, tree_s = h[3] - h[2];
    if (in_s != tree_s) return in_s > tree_s;
    return true;
}

HD int tree_add(int* tree, int n_tree, int q_start, int q_end, int s_start, int s_end, int score)
{
    for (int which = 0; which < 2; which++) {
        for (int t = 0; t < n_tree; t++) {
            int* h = tree + 6 * t;
            if (!h[5]) continue;
            const bool match = which == 0 ? (h[0] == q_start && h[2] == s_start)
                                          : (h[1] == q_end && h[3] == s_end);
            if (match) {
                if (common_endpoint_keeps_tree(h, q_start, q_end, s_start, s_end, score)) return n_tree;
                h[5] = 0;
            }
        }
    }
    int* h = tree + 6 * n_tree;
    h[0] = q_start; h[1] = q_end; h[2] = s_start; h[3] = s_end; h[4] = score; h[5] = 1;
    return n_tree + 1;
}

// score_compare_match (blast_extend.c): init HSP a before b.
HD bool init_before(int a, int b, const int* q_start, const int* s_start, const int* length, const int* score)
{
    if (score[a] != score[b]) return score[a] > score[b];
    if (s_start[a] != s_start[b]) return s_start[a] < s_start[b];
    if (length[a] != length[b]) return length[a] > length[b];
    return q_start[a] < q_start[b];
}

// s_BlastProtGappedAlignment's extent from the start point (q_off, s_off), with
// AdjustSubjectRange for subjects of 90,000 letters or more: the letters left of
// the start in each sequence (start included), the subject's usable length and
// the shift of its window.
struct Extent {
    int q_length, s_length, subject_len_adj, subject_shift;
};

HD Extent gapped_extent(Seq qp, Seq sp, int q_off, int s_off)
{
    Extent x = {q_off + 1, s_off + 1, sp.length, 0};
    if (sp.length >= MAX_SUBJECT_OFFSET) {
        const int max_extension_left = x.q_length + MAX_TOTAL_GAPS;
        const int max_extension_right = qp.length - x.q_length + MAX_TOTAL_GAPS;
        const int s0 = x.s_length;
        if (s0 > max_extension_left) {
            x.subject_shift = s0 - max_extension_left;
            x.s_length = max_extension_left;
        }
        x.subject_len_adj = imin(sp.length, s0 + max_extension_right) - x.subject_shift;
    }
    return x;
}

// A gapped HSP as the kernel returns it: 7 ints (PRELIM_HSP_DTYPE's order).
HD void save_hsp(int* o, int score, int q_start, int q_stop, int s_start, int s_stop, int q_off, int s_off)
{
    o[0] = score; o[1] = q_start; o[2] = q_stop; o[3] = s_start; o[4] = s_stop; o[5] = q_off; o[6] = s_off;
}

// Subject group g of a batch (one query's init HSPs on one subject): its init
// HSPs [lo, hi), the query's and subject's letters, the query's parameters
// p[0..3] = X-drop, cutoff, restricted cutoff, restricted extensions allowed.
struct Group {
    int lo, hi;
    Seq qp, sp;
    const int* p;
};

HD Group group_of(int g, const int* group_start, const int* group_subject, const int* group_query,
                  const unsigned char* queries, const int* query_start, const int* params,
                  const unsigned char* residues, const long long* offsets)
{
    const int s = group_subject[g], q = group_query[g];
    const long long s0 = offsets[s];
    return {group_start[g], group_start[g + 1],
            {queries + query_start[q], query_start[q + 1] - query_start[q]},
            {residues + s0, (int)(offsets[s + 1] - s0)},
            params + 4 * q};
}

// Blast_InitHitListSortByScore (stable: insertion sort) of init HSPs [lo, lo + n)
// into order[0, n); returns their best score.
HD int sort_init_hsps(int lo, int n, const int* init_q_start, const int* init_s_start, const int* init_length,
                      const int* init_score, int* order)
{
    int best_init = init_score[lo];
    for (int k = 0; k < n; k++) {
        const int x = lo + k;
        best_init = imax(best_init, init_score[x]);
        int m = k - 1;
        while (m >= 0 && init_before(x, order[m], init_q_start, init_s_start, init_length, init_score)) {
            order[m + 1] = order[m];
            m--;
        }
        order[m + 1] = x;
    }
    return best_init;
}

// One score-only X-drop extension (Blast_SemiGappedAlign, gapped.semi_gapped_align;
// with `restricted` s_RestrictedGappedAlign, gapped.restricted_gapped_align) kept as
// a state that moves on one step at a time: a DP cell, a cell added to the band
// on the right, or the end of a row.  The threads of a warp extend different
// HSPs of different subjects, with rows and bands of different lengths; as one
// loop of small steps (no loops nested in loops) they stay on the same
// instructions, where nested loops had each thread wait for the warp's longest
// row, extension and subject (ncu: 7.5 of 32 threads active).
//
// Letters of A (query) at qp[q_base + q_dir * i] and of B (subject) at
// sp[s_base + s_dir * j], i, j >= 1: right of a start point dir = +1, left of
// it (the start pair included) dir = -1, as gapped.py.
enum Step { CELL, GROW, APPEND, CONTROL, FINISHED };
enum Side { TAKE_HSP, LEFT_RUNNING, START_RIGHT, RIGHT_RUNNING, HSP_DONE };

struct XDrop {
    int q_base, q_dir, s_base, s_dir, M, N;            // the extension
    int a_index, b_index, first_b_index, b_size, last_b_index, b_gap;
    int score, score_gap_row, best_score, a_offset, b_offset;
    bool gap_in_a;
    const int* row;                                     // matrix row of the query letter a_index
};

// The DP's first row and band (best[0..b_size) in the ring).  Returns false if
// the band outgrew the ring (OVERFLOW).
HD bool xdrop_start(XDrop& d, int gap_open_extend, int gap_extend, int x_dropoff, int* best, int* best_gap)
{
    int score = -gap_open_extend;
    best[0] = 0;
    best_gap[0] = -gap_open_extend;
    int i = 1;
    while (i <= d.N) {
        if (score < -x_dropoff) break;
        if (i >= BAND) return false;
        best[i] = score;
        best_gap[i] = score - gap_open_extend;
        score -= gap_extend;
        i++;
    }
    d.b_size = i;
    d.best_score = 0;
    d.a_offset = 0;
    d.b_offset = 0;
    d.first_b_index = 0;
    d.b_gap = 0;
    d.a_index = 1;
    return true;
}

// Start of row a_index: BLAST's per-row initialisation.
HD void xdrop_row(XDrop& d, Seq qp, const int* matrix, bool restricted)
{
    d.row = matrix + qp[d.q_base + d.q_dir * d.a_index] * ALPHABET;
    d.score = MININT;
    d.score_gap_row = MININT;
    d.last_b_index = d.first_b_index;
    d.gap_in_a = !restricted || d.a_index % RESTRICT_SIZE == 0;     // a gap in A may open
    d.b_index = d.first_b_index;
}

// BLAST_GetGappedScore for one subject: init HSPs [lo, hi) of the arrays.
// Returns the number of rows written to out (7 ints each); sets *status.
//
// The program of gapped.py's _get_gapped_score_kernel, as steps: CONTROL picks
// the next init HSP (sort order, containment test, start point), starts its
// left then right extension (s_BlastProtGappedAlignment, with AdjustSubjectRange
// for subjects of 90,000 letters or more), takes their scores, saves the HSP or
// restarts the subject; CELL, GROW and APPEND run the extension's DP.
HD int get_gapped_score(int lo, int hi, const int* init_q_start, const int* init_s_start,
                        const int* init_length, const int* init_score, Seq qp, Seq sp,
                        const int* matrix, int gap_open, int gap_extend, int x_dropoff, int cutoff,
                        int restricted_cutoff, bool restricted_allowed, int* order, int* tree, int* out,
                        int* best, int* best_gap, int* status)
{
    const int n = hi - lo;
    const int best_init = sort_init_hsps(lo, n, init_q_start, init_s_start, init_length, init_score, order);
    // restricted_alignment_on: the subject's best init HSP below (Int4)(0.68 x cutoff)
    bool restricted = restricted_allowed && best_init < restricted_cutoff;
    const int gap_open_extend = gap_open + gap_extend;
    const int x_drop = imax(x_dropoff, gap_open_extend);   // as Blast_SemiGappedAlign
    int n_out = 0, n_tree = 0;
    int cells = 0;                                   // DP cells computed for this subject
    *status = 0;

    int index = 0;             // the init HSP order[index] is being extended
    int side = TAKE_HSP;       // where CONTROL is in the program of one init HSP
    int q_off = 0, s_off = 0, q_length = 0, s_length = 0, subject_len_adj = 0, subject_shift = 0;
    int score_left = 0, score_right = 0, g_q_start = 0, g_q_stop = 0, g_s_start = 0, g_s_stop = 0;
    bool overflow = false;
    XDrop d;
    int step = CONTROL;
    while (step != FINISHED) {
        if (step == CELL) {                          // one DP cell (a_index, b_index)
            if (d.b_index < d.b_size) {
                const int b_index = d.b_index;
                const int b = b_index & BAND_MASK;
                const int next_score = best[b] + d.row[sp[d.s_base + d.s_dir * (b_index + 1)]];
                const bool gap_in_b = !restricted || b_index == d.b_gap;       // a gap in B may open
                int score = d.score;
                int score_gap_col = MININT;
                if (restricted && gap_in_b) d.b_gap += RESTRICT_SIZE;
                if (gap_in_b) {
                    score_gap_col = best_gap[b];
                    if (score < score_gap_col) score = score_gap_col;
                }
                if (d.gap_in_a && score < d.score_gap_row) score = d.score_gap_row;
                if (d.best_score - score > x_drop) {
                    if (restricted) {
                        best[b] = MININT;
                        if (b_index == d.first_b_index) d.first_b_index++;
                    } else if (b_index == d.first_b_index) {
                        d.first_b_index++;
                    } else {
                        best[b] = MININT;
                    }
                } else {
                    d.last_b_index = b_index;
                    if (score > d.best_score) {
                        d.best_score = score;
                        d.a_offset = d.a_index;
                        d.b_offset = b_index;
                    }
                    if (d.gap_in_a) {
                        d.score_gap_row -= gap_extend;
                        d.score_gap_row = imax(score - gap_open_extend, d.score_gap_row);
                    }
                    if (gap_in_b) {
                        score_gap_col -= gap_extend;
                        best_gap[b] = imax(score - gap_open_extend, score_gap_col);
                    }
                    best[b] = score;
                }
                d.score = next_score;
                d.b_index = b_index + 1;
            }
            if (d.b_index >= d.b_size) {             // end of the row
                if (restricted && !d.gap_in_a) d.score_gap_row = d.score;
                cells += d.b_size - d.first_b_index;
                if (cells > CELL_BUDGET) {
                    overflow = true;
                    step = FINISHED;
                } else if (d.first_b_index == d.b_size) {
                    step = CONTROL;                  // the extension is over
                } else {
                    if (restricted) {                // first column of the next row a gap may open in
                        const int rem = d.first_b_index % RESTRICT_SIZE;
                        d.b_gap = d.first_b_index + (rem > 0 ? RESTRICT_SIZE - rem : 0);
                    }
                    if (d.last_b_index < d.b_size - 1) {
                        d.b_size = d.last_b_index + 1;
                        step = APPEND;
                    } else {
                        step = GROW;
                    }
                }
            }
        } else if (step == GROW) {                   // the band grows right while a gap in A stays in reach
            if (d.score_gap_row >= d.best_score - x_drop && d.b_size <= d.N) {
                if (d.b_size - d.first_b_index >= BAND) {
                    overflow = true;
                    step = FINISHED;
                } else {
                    best[d.b_size & BAND_MASK] = d.score_gap_row;
                    best_gap[d.b_size & BAND_MASK] = d.score_gap_row - gap_open_extend;
                    d.score_gap_row -= gap_extend;
                    d.b_size++;
                }
            } else {
                step = APPEND;
            }
        }
        if (step == APPEND) {                        // one dead cell past the band, then the next row
            if (d.b_size <= d.N) {
                if (d.b_size - d.first_b_index >= BAND) {
                    overflow = true;
                    step = FINISHED;
                } else {
                    best[d.b_size & BAND_MASK] = MININT;
                    best_gap[d.b_size & BAND_MASK] = MININT;
                    d.b_size++;
                }
            }
            if (step == APPEND) {
                d.a_index++;
                if (d.a_index > d.M) {
                    step = CONTROL;                  // the extension is over
                } else {
                    xdrop_row(d, qp, matrix, restricted);
                    step = CELL;
                }
            }
        }
        while (step == CONTROL) {                    // between extensions, until the next DP starts
            if (side == TAKE_HSP) {                  // the next init HSP not contained in a gapped one
                if (index == n) {
                    step = FINISHED;
                    break;
                }
                const int x = order[index];
                const int q_start = init_q_start[x], s_start = init_s_start[x], length = init_length[x];
                if (tree_contains(tree, n_tree, q_start, q_start + length, s_start, s_start + length,
                                  init_score[x])) {
                    index++;
                    continue;
                }
                q_off = start_for_gapped_alignment(qp, sp, matrix, q_start, s_start, length);
                s_off = s_start + (q_off - q_start);
                const Extent ext = gapped_extent(qp, sp, q_off, s_off);
                q_length = ext.q_length;
                s_length = ext.s_length;
                subject_len_adj = ext.subject_len_adj;
                subject_shift = ext.subject_shift;
                g_q_start = g_q_stop = q_off;
                g_s_start = g_s_stop = s_off;
                score_left = score_right = 0;
                if (q_length == 0 || s_length == 0) {
                    side = START_RIGHT;              // no left extension
                    continue;
                }
                d.q_base = q_off + 2; d.q_dir = -1; d.s_base = s_off + 2; d.s_dir = -1;
                d.M = q_length; d.N = s_length;
                side = LEFT_RUNNING;                 // its score comes back here when its DP ends
            } else if (side == LEFT_RUNNING) {       // the left extension's score
                score_left = d.best_score;
                g_q_start = q_length - d.a_offset;
                g_s_start = s_length - d.b_offset + subject_shift;
                side = START_RIGHT;
                continue;
            } else if (side == START_RIGHT) {
                if (!(q_length < qp.length && s_length < subject_len_adj)) {
                    side = HSP_DONE;                 // no right extension
                    continue;
                }
                d.q_base = q_off + 1; d.q_dir = 1; d.s_base = s_off + 1; d.s_dir = 1;
                d.M = qp.length - q_length; d.N = subject_len_adj - s_length;
                side = RIGHT_RUNNING;
            } else if (side == RIGHT_RUNNING) {      // the right extension's score
                score_right = d.best_score;
                g_q_stop = d.a_offset + q_off + 1;
                g_s_stop = d.b_offset + s_off + 1;
                side = HSP_DONE;
                continue;
            } else {                                 // HSP_DONE: save it, or restart the subject
                const int score = score_left + score_right;
                side = TAKE_HSP;
                if (restricted && score < cutoff && score >= restricted_cutoff) {
                    // inconclusive: drop everything and recompute exactly
                    restricted = false;
                    *status |= STATUS_RESTARTED;
                    n_out = 0;
                    n_tree = 0;
                    index = 0;
                    continue;
                }
                if (score >= cutoff) {
                    save_hsp(out + 7 * n_out, score, g_q_start, g_q_stop, g_s_start, g_s_stop, q_off, s_off);
                    n_out++;
                    n_tree = tree_add(tree, n_tree, g_q_start, g_q_stop, g_s_start, g_s_stop, score);
                }
                index++;
                continue;
            }
            // an extension is set up in d: its DP starts (an empty one scores 0 at once)
            if (d.N <= 0 || d.M <= 0) {
                d.best_score = 0;
                d.a_offset = 0;
                d.b_offset = 0;
            } else if (!xdrop_start(d, gap_open_extend, gap_extend, x_drop, best, best_gap)) {
                overflow = true;
                step = FINISHED;
            } else {
                xdrop_row(d, qp, matrix, restricted);
                step = CELL;
            }
        }
    }
    if (overflow) {
        *status |= STATUS_OVERFLOW;
        return 0;
    }
    return n_out;
}

#ifdef __CUDACC__
#include "warp_scan.cuh"

// The arguments of both kernels (below), and the ones group_of takes from them.
#define PRELIM_ARGS                                                                                         \
    const int* __restrict__ jobs, int n_jobs, const int* __restrict__ group_start,                        \
    const int* __restrict__ group_subject, const int* __restrict__ group_query,                           \
    const int* __restrict__ init_q_start, const int* __restrict__ init_s_start,                           \
    const int* __restrict__ init_length, const int* __restrict__ init_score,                              \
    const unsigned char* __restrict__ queries, const int* __restrict__ query_start,                       \
    const int* __restrict__ params, const unsigned char* __restrict__ residues,                           \
    const long long* __restrict__ offsets, const int* __restrict__ matrix_g, int gap_open, int gap_extend, \
    int* __restrict__ order, int* __restrict__ tree, int* __restrict__ out, int* __restrict__ count,      \
    int* __restrict__ status
#define GROUP_ARGS group_start, group_subject, group_query, queries, query_start, params, residues, offsets

// The substitution matrix into the block's shared memory.
__device__ __forceinline__ void load_matrix(int* matrix, const int* matrix_g)
{
    for (int k = threadIdx.x; k < ALPHABET * ALPHABET; k += blockDim.x) matrix[k] = matrix_g[k];
    __syncthreads();
}

// One thread per job (a subject group of one of the batch's queries), jobs[]
// in the order the host chose (most init HSPs first, so that a warp's threads
// do similar work).  Query q of the batch: letters queries[query_start[q],
// query_start[q + 1]), params[4 q ..] = X-drop, cutoff, restricted cutoff,
// restricted extensions allowed.  Several queries per launch fill the GPU:
// one query's subjects make a few dozen blocks.
extern "C" __global__ void __launch_bounds__(128)
prelim_gapped(PRELIM_ARGS)
{
    __shared__ int matrix[ALPHABET * ALPHABET];
    load_matrix(matrix, matrix_g);
    const int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= n_jobs) return;
    const int g = jobs[j];
    const Group grp = group_of(g, GROUP_ARGS);
    int best[BAND], best_gap[BAND];                   // the DP's band, a ring (local memory)
    int st;
    count[g] = get_gapped_score(grp.lo, grp.hi, init_q_start, init_s_start, init_length, init_score, grp.qp,
                                grp.sp, matrix, gap_open, gap_extend, grp.p[0], grp.p[1], grp.p[2], grp.p[3] != 0,
                                order + grp.lo, tree + 6 * grp.lo, out + 7 * grp.lo, best, best_gap, &st);
    status[g] = st;
}

// --- One warp per subject ------------------------------------------------------------------
//
// The same program as get_gapped_score, but the 32 lanes of a warp compute each
// DP row together, 32 cells at a time, instead of one thread walking it cell by
// cell.  Everything between rows (the sort of the init HSPs, the containment
// set, start points, the restricted restart) is run alike by every lane (lane 0
// alone writes memory), so the warp never diverges on it.
//
// Why a row can be computed in parallel (Blast_SemiGappedAlign's cell b of row a,
// h = max(d, gc, gr): d diagonal, gc gap in B from the row above, gr gap in A):
//   * gr(b+1) = max(gr(b) - e, h(b) - oe) = max(gr(b) - e, max(d, gc)(b) - oe)
//     (gr - oe <= gr - e), so gr is a max-plus scan along the row:
//     gr(b) = max_{b' < b} (hd(b') + e b') - oe - e (b - 1), hd = max(d, gc).
//     BLAST leaves gr unchanged over a cell the X-drop removes, where the scan
//     takes it on; the two differ only in values below the X-drop threshold
//     best - X, which then never win a surviving cell (a survivor has h >= best - X
//     > gr, so h = hd) nor open the band's growth (tested against best - X) --
//     the threshold only rises along the row.
//   * The X-drop test of cell b uses best so far, max(best before the row, h of the
//     row's earlier cells): a removed cell's h is below it, so a running max of all
//     cells gives the same values.
//   * The row's first survivor is the next first_b_index, its last the last_b_index;
//     best_score moves to the row's maximum, at its first cell (BLAST's strict >).
// The restricted DP (s_RestrictedGappedAlign) is the same with gc only in
// columns b % 10 == 0 and gr only in rows a % 10 == 0 (its b_gap runs over the
// multiples of 10 from first_b_index); in its other rows the band grows from
// the diagonal score of cell b_size (BLAST's score_gap_row = score).
//
// The ring (best, best_gap) of each warp is in shared memory.

#ifndef WARPS
#define WARPS 4                     // warps per block: one subject each
#endif

// One score-only X-drop extension by a warp (Blast_SemiGappedAlign, or with
// `restricted` s_RestrictedGappedAlign).  Returns false when the band outgrows
// the ring or the subject's DP cells pass CELL_BUDGET (the host redoes it);
// otherwise the best score and its offsets.
__device__ bool warp_xdrop(Seq qp, int q_base, int q_dir, Seq sp, int s_base, int s_dir, int M, int N,
                           const int* matrix, int gap_open_extend, int gap_extend, int x_drop, bool restricted,
                           int* best, int* best_gap, int lane, int& cells,
                           int& best_score, int& a_offset, int& b_offset)
{
    best_score = 0; a_offset = 0; b_offset = 0;
    if (N <= 0 || M <= 0) return true;
    // the first row: a gap in B from the start, while above -X
    int n1 = gap_extend > 0 ? (x_drop - gap_open_extend) / gap_extend + 1 : N;
    n1 = imin(n1, N);
    int b_size = n1 + 1;
    if (n1 >= BAND) return false;
    for (int i = lane; i < b_size; i += LANES) {
        const int v = i == 0 ? 0 : -gap_open_extend - (i - 1) * gap_extend;
        best[i] = v;
        best_gap[i] = v - gap_open_extend;
    }
    __syncwarp();
    int first_b = 0;
    for (int a = 1; a <= M; a++) {
        const int* row = matrix + qp[q_base + q_dir * a] * ALPHABET;
        const bool gap_in_a = !restricted || a % RESTRICT_SIZE == 0;
        const int row_first = first_b;
        int best_run = best_score;          // best so far: before the row, then its cells
        int v_run = NEG_SCAN;               // max of hd(b) + e (b - row_first) so far
        int diag_carry = MININT;            // row a-1 at the cell before this chunk
        int tail_prev = MININT;             // row a-1 at cell b_size - 1 (rows without gr)
        int first_survivor = -1, last_survivor = -1;
        for (int b0 = row_first; b0 < b_size; b0 += LANES) {
            const int b = b0 + lane;
            const bool valid = b < b_size;
            const int slot = b & BAND_MASK;
            const int prev = valid ? best[slot] : MININT;
            const int prev_gap = valid ? best_gap[slot] : MININT;
            int left = __shfl_up_sync(WARP_MASK, prev, 1);
            if (lane == 0) left = diag_carry;
            diag_carry = __shfl_sync(WARP_MASK, prev, LANES - 1);
            if (!gap_in_a)                  // the restricted DP's band growth in this row
                tail_prev = __shfl_sync(WARP_MASK, prev, imin(LANES - 1, b_size - 1 - b0));
            const int d = (b == row_first || !valid) ? MININT : left + row[sp[s_base + s_dir * b]];
            const bool gap_in_b = !restricted || b % RESTRICT_SIZE == 0;
            const int gc = gap_in_b ? prev_gap : MININT;
            const int hd = imax(d, gc);
            int h = hd;
            if (gap_in_a) {                 // gr: max-plus scan of hd along the row
                const int v = valid ? hd + gap_extend * (b - row_first) : NEG_SCAN;
                const int before = warp_max_before(v, lane, v_run);
                h = imax(hd, before - gap_open_extend - gap_extend * (b - 1 - row_first));
            }
            // the X-drop test against best so far (the row's earlier cells included)
            const bool survive = warp_xdrop_cells(h, valid, lane, a, b0, x_drop, best_run, first_survivor,
                                                  last_survivor, best_score, a_offset, b_offset);
            if (valid) {
                if (survive) {
                    best[slot] = h;
                    if (gap_in_b) best_gap[slot] = imax(h - gap_open_extend, prev_gap - gap_extend);
                } else {
                    best[slot] = MININT;
                }
            }
        }
        __syncwarp();
        const int next_first = first_survivor < 0 ? b_size : first_survivor;
        cells += b_size - next_first;
        if (cells > CELL_BUDGET) return false;
        if (first_survivor < 0) break;                       // no cell left: the extension is over
        first_b = first_survivor;
        if (last_survivor < b_size - 1) {
            b_size = last_survivor + 1;
        } else {                                             // the band grows right with gr
            const int gr = gap_in_a ? v_run - gap_open_extend - gap_extend * (b_size - 1 - row_first)
                                    : tail_prev + row[sp[s_base + s_dir * b_size]];
            const int floor = best_score - x_drop;
            if (gr >= floor && b_size <= N) {
                const int room = N + 1 - b_size;
                const int grow = gap_extend > 0 ? imin(room, (gr - floor) / gap_extend + 1) : room;
                if (b_size + grow - first_b > BAND) return false;
                for (int k = lane; k < grow; k += LANES) {
                    const int slot = (b_size + k) & BAND_MASK;
                    best[slot] = gr - k * gap_extend;
                    best_gap[slot] = gr - k * gap_extend - gap_open_extend;
                }
                b_size += grow;
            }
        }
        if (b_size <= N) {                                   // one dead cell past the band
            if (b_size - first_b >= BAND) return false;
            if (lane == 0) {
                best[b_size & BAND_MASK] = MININT;
                best_gap[b_size & BAND_MASK] = MININT;
            }
            b_size++;
        }
        __syncwarp();
    }
    return true;
}

// get_gapped_score's program for one warp (same arguments and results; `lane`
// 0 writes order, tree and out).
__device__ int warp_gapped_score(int lo, int hi, const int* init_q_start, const int* init_s_start,
                                 const int* init_length, const int* init_score, Seq qp, Seq sp,
                                 const int* matrix, int gap_open, int gap_extend, int x_dropoff, int cutoff,
                                 int restricted_cutoff, bool restricted_allowed, int* order, int* tree,
                                 int* out, int* best, int* best_gap, int lane, int& status)
{
    const int n = hi - lo;
    int best_init = 0;
    if (lane == 0) best_init = sort_init_hsps(lo, n, init_q_start, init_s_start, init_length, init_score, order);
    best_init = __shfl_sync(WARP_MASK, best_init, 0);
    __syncwarp();
    bool restricted = restricted_allowed && best_init < restricted_cutoff;
    const int gap_open_extend = gap_open + gap_extend;
    const int x_drop = imax(x_dropoff, gap_open_extend);
    int n_out = 0, n_tree = 0, cells = 0;
    status = 0;
    for (int index = 0; index < n; index++) {
        const int x = order[index];
        const int q_start = init_q_start[x], s_start = init_s_start[x], length = init_length[x];
        if (tree_contains(tree, n_tree, q_start, q_start + length, s_start, s_start + length, init_score[x]))
            continue;
        const int q_off = start_for_gapped_alignment(qp, sp, matrix, q_start, s_start, length);
        const int s_off = s_start + (q_off - q_start);
        const Extent ext = gapped_extent(qp, sp, q_off, s_off);
        const int q_length = ext.q_length, s_length = ext.s_length;
        const int subject_len_adj = ext.subject_len_adj, subject_shift = ext.subject_shift;
        int g_q_start = q_off, g_q_stop = q_off, g_s_start = s_off, g_s_stop = s_off;
        int score_left = 0, score_right = 0, a_offset, b_offset;
        if (q_length != 0 && s_length != 0) {
            if (!warp_xdrop(qp, q_off + 2, -1, sp, s_off + 2, -1, q_length, s_length, matrix, gap_open_extend,
                            gap_extend, x_drop, restricted, best, best_gap, lane, cells, score_left,
                            a_offset, b_offset)) {
                status |= STATUS_OVERFLOW;
                return 0;
            }
            g_q_start = q_length - a_offset;
            g_s_start = s_length - b_offset + subject_shift;
        }
        if (q_length < qp.length && s_length < subject_len_adj) {
            if (!warp_xdrop(qp, q_off + 1, 1, sp, s_off + 1, 1, qp.length - q_length, subject_len_adj - s_length,
                            matrix, gap_open_extend, gap_extend, x_drop, restricted, best, best_gap, lane,
                            cells, score_right, a_offset, b_offset)) {
                status |= STATUS_OVERFLOW;
                return 0;
            }
            g_q_stop = a_offset + q_off + 1;
            g_s_stop = b_offset + s_off + 1;
        }
        const int score = score_left + score_right;
        if (restricted && score < cutoff && score >= restricted_cutoff) {
            // inconclusive: drop everything and recompute exactly
            restricted = false;
            status |= STATUS_RESTARTED;
            n_out = 0;
            n_tree = 0;
            index = -1;
            continue;
        }
        if (score >= cutoff) {
            if (lane == 0) {
                save_hsp(out + 7 * n_out, score, g_q_start, g_q_stop, g_s_start, g_s_stop, q_off, s_off);
                n_tree = tree_add(tree, n_tree, g_q_start, g_q_stop, g_s_start, g_s_stop, score);
            }
            n_tree = __shfl_sync(WARP_MASK, n_tree, 0);
            n_out++;
            __syncwarp();
        }
    }
    return n_out;
}

// One warp per job, WARPS jobs a block (jobs[] as prelim_gapped's).  Its rings
// are static shared memory (48 KiB at most): not built for larger rings, which
// GpuPrelim refuses for this kernel (the thread kernel still builds).
#define WARP_SMEM_BYTES ((WARPS * 2 * BAND + ALPHABET * ALPHABET) * 4)
#if WARP_SMEM_BYTES <= 48 * 1024
extern "C" __global__ void __launch_bounds__(WARPS * LANES)
prelim_gapped_warp(PRELIM_ARGS)
{
    __shared__ int matrix[ALPHABET * ALPHABET];
    __shared__ int ring[WARPS][2][BAND];                 // each warp's best, best_gap
    load_matrix(matrix, matrix_g);
    const int warp = threadIdx.x / LANES, lane = threadIdx.x % LANES;
    const int j = blockIdx.x * WARPS + warp;
    if (j >= n_jobs) return;
    const int g = jobs[j];
    const Group grp = group_of(g, GROUP_ARGS);
    int st;
    const int c = warp_gapped_score(grp.lo, grp.hi, init_q_start, init_s_start, init_length, init_score, grp.qp,
                                    grp.sp, matrix, gap_open, gap_extend, grp.p[0], grp.p[1], grp.p[2], grp.p[3] != 0,
                                    order + grp.lo, tree + 6 * grp.lo, out + 7 * grp.lo, ring[warp][0], ring[warp][1],
                                    lane, st);
    if (lane == 0) {
        count[g] = c;
        status[g] = st;
    }
}
#endif

#else

// The host build (tests): every group in turn, same arguments as the kernel
// minus jobs (all groups).
#include <vector>
extern "C" void prelim_gapped_host(int n_groups, const int* group_start, const int* group_subject,
                                   const int* group_query, const int* init_q_start,
                                   const int* init_s_start, const int* init_length, const int* init_score,
                                   const unsigned char* queries, const int* query_start, const int* params,
                                   const unsigned char* residues, const long long* offsets,
                                   const int* matrix, int gap_open, int gap_extend,
                                   int* order, int* tree, int* out, int* count, int* status)
{
    std::vector<int> best(BAND), best_gap(BAND);
    for (int g = 0; g < n_groups; g++) {
        const Group grp = group_of(g, group_start, group_subject, group_query, queries, query_start, params,
                                 residues, offsets);
        int st;
        count[g] = get_gapped_score(grp.lo, grp.hi, init_q_start, init_s_start, init_length, init_score, grp.qp,
                                    grp.sp, matrix, gap_open, gap_extend, grp.p[0], grp.p[1], grp.p[2],
                                    grp.p[3] != 0, order + grp.lo, tree + 6 * grp.lo, out + 7 * grp.lo, best.data(),
                                    best_gap.data(), &st);
        status[g] = st;
    }
}

#endif
