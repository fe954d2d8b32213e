// cuBLASTP's GPU phases for one query against a database: hit detection,
// binning by diagonal, sorting within bins, the two-hit filter and ungapped
// X-drop extension -- BLAST+ 2.12's s_BlastAaWordFinder_TwoHit, hit for hit.
//
// One thread block per subject at a time (a persistent grid pulls subjects
// from a counter, longest first).  For a subject of npos = length - W + 1 word
// positions, the block
//
//   1. counts the word hits of every diagonal bin (bin counters in shared
//      memory): subject offset s looks up its word's cell of the query's lookup
//      table; each query offset q of the cell is a hit on diagonal q - s;
//   2. turns the counts into bin starts (a block-wide exclusive scan);
//   3. scans again, writing each hit's subject offset into its bin of the
//      block's buffer (global scratch, L1/L2-resident);
//   4. one thread per bin: sorts the bin's hits by subject offset (bins hold a
//      few hits: insertion sort, Shell's passes first for large bins) and
//      replays BLAST's diagonal-array cell over
//      them -- the two-hit rule with window A, extensions inline (cuBLASTP's
//      diagonal-based extension, its Algorithm 3) -- saving extensions that
//      reach the cutoff.  Variant: window-based (WIN lanes per bin extend each
//      hit together, WIN positions a step: its Algorithm 5).
//
// Bins are BLAST's diagonal-array cells, (q - s) & DIAG_MASK, rotated by
// npos - 1 so that a subject touching fewer cells than the array has uses
// bins 0 .. qlen - W + npos - 1 only.  The CPU twin of step 4 is
// ungapped.two_hit_binned (same state machine, same extension code); the
// proof that bins can be processed independently is in ungapped.py.
//
// A subject whose hits overflow the block's buffer is listed with its hit count
// (overflow list); the host runs those subjects again with buffers that fit.
//
// Compile-time constants: WORD_SIZE (BLAST's W, 2..4), BLOCK (threads),
// WIN (0, or lanes per window: 4, 8, 16 or 32), MATRIX_SMEM
// (0: scores from the query's PSSM, 1: from the matrix in shared memory),
// PREFILTER (0/1, window-based only: a thread per listed bin sorts it and strikes
// it off when no two of its hits are W to A - 1 apart, before the windows take the
// bins left).
// Output rows: int32 x 7 = subject, q_off, s_off, q_start, s_start, length,
// score (INIT_HSP_DTYPE), in no particular order: the host sorts them.

#ifndef WORD_SIZE
#define WORD_SIZE 3
#endif
#ifndef BLOCK
#define BLOCK 128
#endif
#define CHARSIZE 5           // bits per letter in a lookup-table index
#define ALPHABET 28          // NCBIstdaa: PSSM rows are 28 scores wide
#define N_WARPS (BLOCK / 32)
#ifndef WIN
#define WIN 0                        // lanes per window of the window-based extension (0: off)
#endif
#ifndef PREFILTER
#define PREFILTER 0                  // 1: window-based, bins that cannot trigger struck off first (step 4)
#endif
#if PREFILTER && !WIN
#error "PREFILTER is a step of the window-based extension (WIN > 0)"
#endif
// buffer slots per hit, times 2: hits + bin list (1.5)
#define SLOTS_PER_HIT_X2 3

// ---- scores: the query's PSSM, or the matrix in shared memory -------------------------
//
// A BLASTP query's PSSM row q is the matrix row of its residue q (no
// composition adjustment), so both give the same score.  MATRIX_SMEM reads
// the 28 x 28 matrix from shared memory and the query's residues through the
// read-only path (cuBLASTP's hierarchical buffering) instead of the
// query-long PSSM through L1.
#ifndef MATRIX_SMEM
#define MATRIX_SMEM 0
#endif
__shared__ int smat[ALPHABET * ALPHABET];

struct Scores {
    const int* __restrict__ pssm;                 // qlen x 28
    const unsigned char* __restrict__ query;      // NCBIstdaa residues
    __device__ __forceinline__ int operator()(int q, int s) const
    {
#if MATRIX_SMEM
        return smat[__ldg(&query[q]) * ALPHABET + s];
#else
        return __ldg(&pssm[q * ALPHABET + s]);
#endif
    }
};

// ---- ungapped X-drop extension (s_BlastAaExtendLeft / Right / TwoHit) ----------------

struct Extension {
    int score, q_start, s_start, length, right_extend, s_last_off;
};

// s_BlastAaExtendLeft: from (q_off, s_off) inclusive to the left.
__device__ __forceinline__ void extend_left(const Scores& sc, const unsigned char* __restrict__ subject,
                                            int s_off, int q_off, int dropoff, int& maxscore, int& length)
{
    int n = min(s_off, q_off);
    int best_i = n + 1;
    int score = maxscore;
    for (int i = n; i >= 0; --i) {
        score += sc(q_off - n + i, subject[s_off - n + i]);
        if (score > maxscore) {
            maxscore = score;
            best_i = i;
        }
        if (maxscore - score >= dropoff) break;
    }
    length = n - best_i + 1;
}

// s_BlastAaExtendRight: from (q_off, s_off) inclusive to the right; also stops at a score <= 0.
__device__ __forceinline__ void extend_right(const Scores& sc, const unsigned char* __restrict__ subject,
                                             int s_len, int qlen, int s_off, int q_off, int dropoff,
                                             int& maxscore, int& length, int& s_last_off)
{
    int n = min(s_len - s_off, qlen - q_off);
    int best_i = -1;
    int score = maxscore;
    int i = 0;
    while (i < n) {
        score += sc(q_off + i, subject[s_off + i]);
        if (score > maxscore) {
            maxscore = score;
            best_i = i;
        }
        if (score <= 0 || maxscore - score >= dropoff) break;
        ++i;
    }
    length = best_i + 1;
    s_last_off = s_off + i;
}

#if WIN
// The same two extensions by a window of WIN lanes (cuBLASTP's window-based
// extension): each step the lanes take the next WIN positions, a prefix sum
// gives each position's score and a max-scan the best score so far; the
// first position that meets BLAST's stop test (one ballot) ends the
// extension, and the best one is where the maximum was first reached, as in
// the serial loop.  All lanes of a window return the same values.
struct Window {
    unsigned mask;   // the window's lanes in the warp
    int shift;       // its first lane
    int lane;        // this lane in the window
};

__device__ __forceinline__ Window window_of_thread()
{
    const int lane = threadIdx.x & 31;
    Window w;
    w.shift = lane / WIN * WIN;
    w.mask = (WIN == 32) ? 0xffffffffu : (((1u << WIN) - 1u) << w.shift);
    w.lane = lane - w.shift;
    return w;
}

// One step: v the score of this lane's position (0 past the end); score and
// maxscore carried in; returns the window lane that ends the step (the first
// stop, or `last`) and whether it stopped; updates score, maxscore and, where
// the maximum rose, best_t (the step index of the new best position).
__device__ __forceinline__ bool window_step(const Window& w, int v, bool valid, int last, bool right, int dropoff,
                                            int base, int& score, int& maxscore, int& best_t, int& upto)
{
    int sc = v;
#pragma unroll
    for (int d = 1; d < WIN; d <<= 1) {
        const int u = __shfl_up_sync(w.mask, sc, d, WIN);
        if (w.lane >= d) sc += u;
    }
    sc += score;
    int mx = sc;
#pragma unroll
    for (int d = 1; d < WIN; d <<= 1) {
        const int u = __shfl_up_sync(w.mask, mx, d, WIN);
        if (w.lane >= d) mx = max(mx, u);
    }
    mx = max(mx, maxscore);
    const bool stop = valid && ((right && sc <= 0) || mx - sc >= dropoff);
    const unsigned stops = __ballot_sync(w.mask, stop) >> w.shift;
    upto = stops ? __ffs(stops) - 1 : last;
    const int mx_upto = __shfl_sync(w.mask, mx, upto, WIN);
    if (mx_upto > maxscore) {        // first position reaching the new maximum
        const unsigned at = __ballot_sync(w.mask, w.lane <= upto && sc == mx_upto) >> w.shift;
        best_t = base + __ffs(at) - 1;
        maxscore = mx_upto;
    }
    score = __shfl_sync(w.mask, sc, upto, WIN);
    return stops != 0;
}

__device__ __forceinline__ void extend_left_window(const Scores& sc,
                                                   const unsigned char* __restrict__ subject, int s_off, int q_off,
                                                   int dropoff, int& maxscore, int& length)
{
    const Window w = window_of_thread();
    const int n = min(s_off, q_off);
    int best_t = -1, score = maxscore, upto;
    for (int base = 0; base <= n; base += WIN) {     // step t: position (q_off - t, s_off - t)
        const int t = base + w.lane;
        const bool valid = t <= n;
        const int v = valid ? sc(q_off - t, subject[s_off - t]) : 0;
        if (window_step(w, v, valid, min(WIN - 1, n - base), false, dropoff, base, score, maxscore, best_t, upto))
            break;
    }
    length = best_t + 1;             // serial: n - best_i + 1 with best_i = n - best_t
}

__device__ __forceinline__ void extend_right_window(const Scores& sc,
                                                    const unsigned char* __restrict__ subject, int s_len, int qlen,
                                                    int s_off, int q_off, int dropoff, int& maxscore, int& length,
                                                    int& s_last_off)
{
    const Window w = window_of_thread();
    const int n = min(s_len - s_off, qlen - q_off);
    int best_t = -1, score = maxscore, upto, end = n;
    for (int base = 0; base < n; base += WIN) {
        const int t = base + w.lane;
        const bool valid = t < n;
        const int v = valid ? sc(q_off + t, subject[s_off + t]) : 0;
        if (window_step(w, v, valid, min(WIN - 1, n - 1 - base), true, dropoff, base, score, maxscore, best_t,
                        upto)) {
            end = base + upto;
            break;
        }
    }
    length = best_t + 1;
    s_last_off = s_off + end;
}
#define EXTEND_LEFT extend_left_window
#define EXTEND_RIGHT extend_right_window
#else
#define EXTEND_LEFT extend_left
#define EXTEND_RIGHT extend_right
#endif

// s_BlastAaExtendTwoHit: s_left_off is one past the first hit's word, (q_right_off,
// s_right_off) the second hit.
__device__ Extension extend_two_hit(const Scores& sc, const unsigned char* __restrict__ subject,
                                    int s_len, int qlen, int s_left_off, int s_right_off, int q_right_off,
                                    int dropoff)
{
    int left_score = 0, right_d = 0, score = 0;
    for (int i = 0; i < WORD_SIZE; ++i) {      // best-scoring prefix of the second word
        score += sc(q_right_off + i, subject[s_right_off + i]);
        if (score > left_score) {
            left_score = score;
            right_d = i + 1;
        }
    }
    q_right_off += right_d;
    s_right_off += right_d;
    Extension e;
    e.right_extend = 0;
    e.s_last_off = s_right_off;
    int left_d = 0;
    left_score = 0;
    EXTEND_LEFT(sc, subject, s_right_off - 1, q_right_off - 1, dropoff, left_score, left_d);
    int right_score = 0;
    right_d = 0;
    if (left_d >= s_right_off - s_left_off) {  // the left extension reached the first hit
        e.right_extend = 1;
        right_score = left_score;
        EXTEND_RIGHT(sc, subject, s_len, qlen, s_right_off, q_right_off, dropoff, right_score, right_d,
                     e.s_last_off);
    }
    e.score = max(left_score, right_score);
    e.q_start = q_right_off - left_d;
    e.s_start = s_right_off - left_d;
    e.length = left_d + right_d;
    return e;
}

// ---- helpers --------------------------------------------------------------------------

// Sort of one bin's subject offsets: insertion sort (bins hold a few hits), after
// Shell's passes (Ciura's gaps) where a bin holds more than 32 -- long queries, and
// low-complexity ones against low-complexity subjects, put up to hundreds of hits
// on one diagonal, in whatever order the atomics gave them, and insertion alone is
// quadratic there (a 2,627-aa query's kernel 5-12% faster on an H200).
__device__ __forceinline__ void insertion_pass(int* hits, int n, int gap)
{
    for (int k = gap; k < n; ++k) {
        const int v = hits[k];
        int i = k - gap;
        while (i >= 0 && hits[i] > v) {
            hits[i + gap] = hits[i];
            i -= gap;
        }
        hits[i + gap] = v;
    }
}

__device__ __forceinline__ void sort_hits(int* hits, int n)
{
    if (n > 32) {
        const int gaps[] = {701, 301, 132, 57, 23, 10, 4};
        for (int g : gaps) insertion_pass(hits, n, g);
    }
    insertion_pass(hits, n, 1);
}

// Whether two of a bin's sorted subject offsets are WORD_SIZE to window - 1 apart.  If not,
// the two-hit rule never triggers in the bin: before the bin's first extension, last_hit is
// either -window (too far from any hit) or an earlier hit of the bin, and a trigger needs
// WORD_SIZE <= s_off - last_hit < window.  (A bin's offsets are distinct: two hits at one
// subject offset are at query offsets less than the query's length apart, so in two bins.)
__device__ __forceinline__ bool two_hits_in_window(const int* hits, int n, int window)
{
    for (int j = 1; j < n; ++j)
        for (int i = j - 1; i >= 0 && hits[j] - hits[i] < window; --i)
            if (hits[j] - hits[i] >= WORD_SIZE) return true;
    return false;
}

// BLAST's lookup-table index of the word at s (ComputeTableIndex).
__device__ __forceinline__ int word_at(const unsigned char* __restrict__ subject, int s)
{
    int w = 0;
#pragma unroll
    for (int k = 0; k < WORD_SIZE; ++k) w = (w << CHARSIZE) | subject[s + k];
    return w;
}

// Exclusive prefix sum of a[0..n) in place (shared memory), returns the total;
// also zeroes zero[0..n) on the way.
__device__ int block_exclusive_scan(int* a, int n, int* warp_sums, int* zero)
{
    const int per = (n + BLOCK - 1) / BLOCK;
    const int lo = min(n, threadIdx.x * per), hi = min(n, lo + per);
    int local = 0;
    for (int i = lo; i < hi; ++i) local += a[i];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    int incl = local;
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
        int v = __shfl_up_sync(0xffffffffu, incl, d);
        if (lane >= d) incl += v;
    }
    if (lane == 31) warp_sums[warp] = incl;
    __syncthreads();
    if (threadIdx.x == 0) {
        int acc = 0;
        for (int w = 0; w < N_WARPS; ++w) {
            int t = warp_sums[w];
            warp_sums[w] = acc;
            acc += t;
        }
        warp_sums[N_WARPS] = acc;
    }
    __syncthreads();
    int run = warp_sums[warp] + incl - local;
    for (int i = lo; i < hi; ++i) {
        int t = a[i];
        a[i] = run;
        zero[i] = 0;
        run += t;
    }
    int total = warp_sums[N_WARPS];
    __syncthreads();
    return total;
}

// ---- the kernel -----------------------------------------------------------------------

extern "C" __global__ void __launch_bounds__(BLOCK)
two_hit_ungapped(const unsigned char* __restrict__ residues,   // NCBIstdaa, packed
                 const long long* __restrict__ offsets,        // subject i: residues[offsets[i]:offsets[i+1]]
                 const int* __restrict__ order,                // subjects to search, longest first
                 const int n_order,
                 const int* __restrict__ cell_start,           // lookup table: cell -> entries
                 const int* __restrict__ cell_offsets,         // query offsets, cell by cell
                 const int* __restrict__ pssm,                 // qlen x 28
                 const unsigned char* __restrict__ query,      // qlen residues (MATRIX_SMEM)
                 const int* __restrict__ matrix,               // 28 x 28 (MATRIX_SMEM)
                 const int qlen,
                 const int diag_mask,                          // BLAST's diagonal array length - 1
                 const int window, const int dropoff, const int cutoff,
                 int* __restrict__ scratch, const int cap,     // cap hit slots per block
                 int* __restrict__ next_job,
                 int* __restrict__ out, const int out_cap, int* __restrict__ n_out,
                 int* __restrict__ overflow, int* __restrict__ n_overflow)
{
    extern __shared__ int smem[];
    const Scores sc{pssm, query};
#if MATRIX_SMEM
    for (int i = threadIdx.x; i < ALPHABET * ALPHABET; i += BLOCK) smat[i] = matrix[i];
    __syncthreads();
#endif
    const int n_cells = diag_mask + 1;
    int* start = smem;                  // bin starts (after the scan)
    int* fill = smem + n_cells;         // hits per bin
    __shared__ int warp_sums[N_WARPS + 1];
    __shared__ int job;
    __shared__ int n_multi;
#if PREFILTER
    __shared__ int n_kept;              // listed bins that may trigger
#endif
    int* buf = scratch + (long long)blockIdx.x * cap;

    for (;;) {
        if (threadIdx.x == 0) job = atomicAdd(next_job, 1);
        __syncthreads();
        const int j = job;
        if (j >= n_order) break;
        const int subj = order[j];
        const long long sbase = offsets[subj];
        const int s_len = (int)(offsets[subj + 1] - sbase);
        const int npos = s_len - WORD_SIZE + 1;
        const unsigned char* __restrict__ subject = residues + sbase;
        if (npos > 0) {
            // bins touched: diagonals -(npos - 1) .. qlen - W, rotated to start at 0
            const int n_bins = min(n_cells, qlen - WORD_SIZE + npos);
            const int rot = npos - 1;
            for (int i = threadIdx.x; i < n_bins; i += BLOCK) start[i] = 0;
            __syncthreads();

            // 1. hit detection: count hits per bin
            for (int s = threadIdx.x; s < npos; s += BLOCK) {
                const int w = word_at(subject, s);
                const int e1 = __ldg(&cell_start[w + 1]);
                for (int e = __ldg(&cell_start[w]); e < e1; ++e)
                    atomicAdd(&start[(__ldg(&cell_offsets[e]) - s + rot) & diag_mask], 1);
            }
            __syncthreads();

            // 2. bin starts (and fill[] zeroed)
            const int total = block_exclusive_scan(start, n_bins, warp_sums, fill);
            if ((long long)total * SLOTS_PER_HIT_X2 / 2 + 2 > cap) {
                if (threadIdx.x == 0) {            // the host runs it again with a bigger buffer
                    const int k = atomicAdd(n_overflow, 1);
                    overflow[2 * k] = subj;
                    overflow[2 * k + 1] = total;
                }
            } else if (total > 1) {
                // 3. hits into their bins (order within a bin: whatever the atomics give);
                //    bins getting a second hit are listed after the hits (buf[total ..])
                int* multi = buf + total;
                if (threadIdx.x == 0) {
                    n_multi = 0;
#if PREFILTER
                    n_kept = 0;
#endif
                }
                __syncthreads();
                for (int s = threadIdx.x; s < npos; s += BLOCK) {
                    const int w = word_at(subject, s);
                    const int e1 = __ldg(&cell_start[w + 1]);
                    for (int e = __ldg(&cell_start[w]); e < e1; ++e) {
                        const int b = (__ldg(&cell_offsets[e]) - s + rot) & diag_mask;
                        const int k = atomicAdd(&fill[b], 1);
                        buf[start[b] + k] = s;
                        if (k == 1) multi[atomicAdd(&n_multi, 1)] = b;
                    }
                }
                __syncthreads();

                // 4. one thread per bin of two hits or more (one hit never triggers an
                //    extension): sort, two-hit rule, extension
#if WIN && PREFILTER
                // window-based, first a thread per listed bin: sort its hits, and strike the
                // bin off if the two-hit rule can never trigger in it (about 80% of the listed
                // bins of proteome queries); the bins left are packed at the list's start, so
                // that the windows only take bins that may extend.  A bin is written back only
                // where every thread has read its own entry (the barrier in the loop): the
                // count of bins kept never passes the entries read so far.
                for (int base = 0; base < n_multi; base += BLOCK) {
                    const int m = base + threadIdx.x;
                    int b = -1;
                    if (m < n_multi) {
                        b = multi[m];
                        sort_hits(buf + start[b], fill[b]);
                        if (!two_hits_in_window(buf + start[b], fill[b], window)) b = -1;
                    }
                    __syncthreads();
                    if (b >= 0) multi[atomicAdd(&n_kept, 1)] = b;
                }
                __syncthreads();
                const int n_bins_left = n_kept;
#elif WIN
                const int n_bins_left = n_multi;
#endif
#if WIN
                // window-based: WIN lanes per bin, all replaying its state machine
                const bool writer = threadIdx.x % WIN == 0;
                for (int m = threadIdx.x / WIN; m < n_bins_left; m += BLOCK / WIN) {
                    const int b = multi[m];
                    const int n = fill[b];
                    int* hits = buf + start[b];
#if !PREFILTER
                    if (writer) sort_hits(hits, n);
                    __syncwarp(window_of_thread().mask);
#endif
#else
                const bool writer = true;
                for (int m = threadIdx.x; m < n_multi; m += BLOCK) {
                    const int b = multi[m];
                    const int n = fill[b];
                    int* hits = buf + start[b];
                    sort_hits(hits, n);
#endif
                    const int diag = b - rot;      // q - s, modulo the array length
                    int last_hit = -window;        // a fresh cell: any first hit is too far
                    bool flag = false;
                    for (int k = 0; k < n; ++k) {
                        const int s_off = hits[k];
                        const int q_off = (diag + s_off) & diag_mask;
                        if (flag) {                // inside the last extension, or a new start
                            if (s_off < last_hit) continue;
                            last_hit = s_off;
                            flag = false;
                            continue;
                        }
                        const int diff = s_off - last_hit;
                        if (diff >= window) {      // too far: a new first hit
                            last_hit = s_off;
                            continue;
                        }
                        if (diff < WORD_SIZE) continue;   // overlapping words
                        if (q_off - diff < 0) {    // first hit before the query start
                            last_hit = s_off;
                            continue;
                        }
                        const Extension x = extend_two_hit(sc, subject, s_len, qlen, last_hit + WORD_SIZE,
                                                           s_off, q_off, dropoff);
                        if (x.score >= cutoff && writer) {
                            const int slot = atomicAdd(n_out, 1);
                            if (slot < out_cap) {
                                int* r = out + 7LL * slot;
                                r[0] = subj;
                                r[1] = q_off;
                                r[2] = s_off;
                                r[3] = x.q_start;
                                r[4] = x.s_start;
                                r[5] = x.length;
                                r[6] = x.score;
                            }
                        }
                        if (x.right_extend) {
                            flag = true;
                            last_hit = x.s_last_off - (WORD_SIZE - 1);
                        } else {
                            last_hit = s_off;
                        }
                    }
                }
            }
        }
        __syncthreads();                           // job, start and fill are reused
    }
}
