/* HMMER 3.4's MSV and Viterbi filters as CUDA kernels, bit-exact.
 *
 * What they compute
 *   msv_filter:       the final J state xJ of p7_MSVFilter (impl_sse/msvfilter.c),
 *                     or MSV_OVERFLOW (256) where HMMER overflows (xE + bias >= 255: score +inf).
 *   viterbi_filter16: the final C state xC of p7_ViterbiFilter (impl_sse/vitfilter.c),
 *                     two model nodes a 32-bit word (section 4), or RESCORE_W for
 *                     the few sequences it leaves to
 *   viterbi_filter:   the same with int32 cells, or OVERFLOW_W where HMMER
 *                     overflows (xE >= 32767: score +inf).
 *   Floats, logs and P-values are computed on the host exactly as HMMER does.
 *
 * Design (the fine-grained HMMER3 MSV/Viterbi GPU paper and CUDAMPF, re-judged on Hopper; see docs/gpu-design.md)
 *   - A *group* of G lanes (G = 2..32, a power of two, G | 32) scores one
 *     sequence; a warp holds 32/G groups working on neighbouring sequences of a
 *     database sorted by length.  No block-level synchronisation after the
 *     profile is loaded into shared memory: one warp-level persistent loop takes
 *     work from a global counter.
 *   - The model is striped across the group's lanes (CUDAMPF), W 32-bit words
 *     per lane, unrolled at compile time (G and W are NVRTC constants).
 *   - MSV: two 8-bit HMMER cells per 32-bit word as signed 16-bit lanes, updated
 *     with Hopper DPX instructions (__viaddmax_s16x2_relu, __vimax3_s16x2):
 *     HMMER's saturation at 0 is the relu; its saturation at 255 is never reached
 *     before HMMER's own overflow test stops the sequence (max(M,xB) + bias
 *     <= 210 + 20), so 16-bit lanes give HMMER's bytes exactly.
 *   - Viterbi filter (viterbi_filter): one cell per 32-bit register, int32
 *     arithmetic with DPX add-max (__viaddmax_s32).  HMMER saturates 16-bit words at -32768; values
 *     that saturate there are never the maximum against the always-finite
 *     B->M path, so exact int32 sums give HMMER's xE, xC and overflow decisions
 *     (tested against HMMER's own filter on real and random models).
 *     Lazy-F (Farrar): the D->D chain is computed only when max D + ddbound > xB,
 *     then exactly, with a max-plus scan across the group's lanes.  A group may
 *     score SEQS = 2 sequences at once, so that each transition loaded from
 *     shared memory serves two cells; TRANS_REGS holds the transitions of
 *     that many nodes a lane in registers instead; REDUX takes the row
 *     maximum in one instruction (which of them, by model size:
 *     viterbi_geometry, from measurements).
 *   - Viterbi filter (viterbi_filter16, the default): the same on 16-bit halves,
 *     two nodes a word; exact by a floor and a ceiling (section 4).
 *
 * Memory layout
 *   residues  uint8, the whole database; offsets int64 [n+1]; order int32: the
 *             sequences to score, longest first, for each model of the launch
 *             (jobs.cuh: a launch scores several models of one geometry, a
 *             model a row of blocks, its profile at its row's offset in the
 *             profile arrays).
 *   MSV profile (shared memory): emis[x][q/4][lane][q%4] = packed s16x2
 *             (bias - cost) of the nodes of segments lane (low half) and G+lane
 *             (high half), word q; node k = s*W + q + 1 for segment s.
 *   Viterbi profile (shared memory): vemis[x][q][lane] int16 emission,
 *             vtrans[q][t][lane] int32, t in BM MM IM DM MD MI II DD;
 *             node k = lane*W + q + 1.
 *   viterbi_filter16's profile: the same arrays as uint32 words of two int16
 *             halves, nodes lane*W + q + 1 (low) and (G + lane)*W + q + 1 (high).
 *
 * Contents
 *   1. Work distribution.
 *   2. msv_filter kernel.
 *   3. viterbi_filter kernel.
 *   4. viterbi_filter16 kernel.
 */

#include "groups.cuh"

/* The kernels a compilation holds: all three, or only those the host names
   (-DKERNEL_MSV, -DKERNEL_VITERBI, -DKERNEL_VITERBI16): a model's geometry then
   compiles the one kernel it runs, not three (NVRTC's time on a cold cache). */
#if !defined(KERNEL_MSV) && !defined(KERNEL_VITERBI) && !defined(KERNEL_VITERBI16)
#define KERNEL_MSV
#define KERNEL_VITERBI
#define KERNEL_VITERBI16
#endif

#define NEG_W (-32768)
/* msv_filter's result for HMMER's overflow: low byte 0 (xJ), high byte 1 (the flag), so that
   the host reads both bytes as two arrays without a pass over them (msv_states) */
#define MSV_OVERFLOW 256
#define OVERFLOW_W 0x7fffffff

/* --- 1. Work distribution: groups.cuh ----------------------------------------- */

/* --- 2. MSV filter ----------------------------------------------------------- */

#ifdef KERNEL_MSV
extern "C" __global__ void __launch_bounds__(256)
msv_filter(const uint8_t *__restrict__ residues, const long long *__restrict__ offsets,
           const int *__restrict__ order_all, const int *__restrict__ jobs,
           const uint4 *__restrict__ emis_all,          /* [job][KP][W/4][G] */
           const uint8_t *__restrict__ tjb_by_len,
           int *__restrict__ counters, short *__restrict__ out_all)
{
    /* this block's model (jobs.cuh): its sequences, results, scalars and profile */
    const int *order; int n; short *out; int *work_counter;
    const int *p = take_job(jobs, order_all, out_all, counters, order, n, out, work_counter);
    const int tbm = p[0], tec = p[1], base = p[2], bias = p[3];
    const uint4 *emis_global = emis_all + (long long)blockIdx.y * (KP * (W / 4) * G);

    /* W is a multiple of 4: each lane reads its emission words 4 at a time
       (16-byte shared-memory loads, layout [x][q/4][lane][4], conflict-free) */
#if PROFILE_IN_SMEM
    extern __shared__ uint4 emis[];              /* [KP][W/4][G] x uint4 */
    for (int i = threadIdx.x; i < KP * (W / 4) * G; i += blockDim.x) emis[i] = emis_global[i];
    __syncthreads();
#else
    const uint4 *emis = emis_global;             /* large models: through L1/L2 */
#endif

    const int lane = threadIdx.x & 31;
    const int gl = lane & (G - 1);               /* lane within the group */
    const unsigned gmask = group_mask(lane);

    for (int first = next_work(work_counter, lane, GROUPS_PER_WARP); first < n;
         first = next_work(work_counter, lane, GROUPS_PER_WARP)) {
        const int item = first + lane / G;
        if (item >= n) continue;
        const int s = order[item];
        const long long off = offsets[s];
        const int L = (int)(offsets[s + 1] - off);
        const uint8_t *dsq = residues + off;

        /* (int8)tjb + (int8)tbm in a byte, as HMMER builds tjbmv */
        const int tjbm = (tjb_by_len[L] + tbm) & 255;
        int xJ = 0;
        int xB = max(0, base - tjbm);
        int result = MSV_OVERFLOW;
        unsigned dp[W];
#pragma unroll
        for (int q = 0; q < W; q++) dp[q] = 0u;

        int chunk = 0;                            /* residues i..i+G-1, one per lane */
        int i = 0;
        for (; i < L; i++) {
            if ((i & (G - 1)) == 0) chunk = (i + gl < L) ? dsq[i + gl] : 0;
            const int x = (G == 1) ? chunk : __shfl_sync(gmask, chunk, i & (G - 1), G);
            const uint4 *e = emis + x * ((W / 4) * G) + gl;
            const unsigned xBv = (unsigned)xB * 0x10001u;
            /* M(i-1, k-1) for the first word: the last word of the previous
               segment (lane gl-1); lane 0's high half continues from lane G-1's
               low half, its low half starts the model (node 0: 0). */
            const unsigned last = dp[W - 1];
            const unsigned up = __shfl_up_sync(gmask, last, 1, G);
            const unsigned wrap = __shfl_sync(gmask, last, G - 1, G);
            const unsigned first_prev = (gl == 0) ? (wrap << 16) : up;

            unsigned xE = 0u;
#pragma unroll
            for (int q4 = W / 4 - 1; q4 >= 0; q4--) {
                const uint4 ev = e[q4 * G];
                const unsigned ew[4] = {ev.x, ev.y, ev.z, ev.w};
#pragma unroll
                for (int r = 3; r >= 0; r--) {
                    const int q = 4 * q4 + r;
                    const unsigned prev = (q > 0) ? dp[q - 1] : first_prev;
                    /* M(i,k) = max(0, max(M(i-1,k-1), xB) + bias - cost) */
                    const unsigned t = __vimax_s16x2_relu(prev, xBv);
                    dp[q] = __viaddmax_s16x2_relu(t, ew[r], 0u);
                    xE = __vimax_s16x2_relu(xE, dp[q]);
                }
            }
            int xe = max((int)(xE & 0xffffu), (int)(xE >> 16));
            xe = group_max(gmask, xe);
            if (xe + bias >= 255) break;          /* HMMER's overflow: score +inf */
            xJ = max(xJ, xe - tec);
            xB = max(0, max(base, xJ) - tjbm);
        }
        if (i == L) result = xJ;
        if (gl == 0) out[item] = (short)result;
    }
}
#endif /* KERNEL_MSV */

/* --- 3. Viterbi filter -------------------------------------------------------- */

enum { T_BM, T_MM, T_IM, T_DM, T_MD, T_MI, T_II, T_DD, NTRANS };

/* SEQS sequences per group (1 or 2): the lane's transitions, loaded once from
   shared memory for a node, serve SEQS neighbouring sequences of the
   length-sorted database.  Shared-memory loads, not arithmetic, bound this
   kernel (docs/gpu-design.md), so two sequences per group halve the
   transition loads per cell for the price of twice the DP registers.
   (HMMER's local B->M entry costs differ by node, from the model's
   occupancy, so they are loaded per node like the other transitions.) */
#ifndef SEQS
#define SEQS 1
#endif
#ifndef TRANS_REGS
#define TRANS_REGS 0      /* nodes a lane (of W) whose transitions stay in registers */
#endif
#ifdef LAZY_STATS
__device__ unsigned long long lazy_stats[2];   /* rows, rows where HMMER's Lazy-F test holds */
#endif

/* The Viterbi profile, transitions [W][NTRANS][G] then emissions [KP][W][G] as
   pack_viterbi_profile lays them out, copied into shared memory, or read in
   place through L1 for models too large for it. */
template <typename Trans, typename Emit>
__device__ __forceinline__ void viterbi_profile(const Trans *trans_global, const Emit *emis_global,
                                                const Trans *&vtrans, const Emit *&vemis)
{
#if PROFILE_IN_SMEM
    extern __shared__ uint4 vsmem[];
    Trans *trans = (Trans *)vsmem;
    Emit *emis = (Emit *)(trans + W * NTRANS * G);
    for (int i = threadIdx.x; i < W * NTRANS * G; i += blockDim.x) trans[i] = trans_global[i];
    for (int i = threadIdx.x; i < KP * W * G; i += blockDim.x) emis[i] = emis_global[i];
    __syncthreads();
    vtrans = trans;
    vemis = emis;
#else
    vtrans = trans_global;
    vemis = emis_global;
#endif
}

/* The SEQS neighbouring sequences of the length-sorted work a group scores
   together, from item0 on: residues, lengths, move costs and special states
   (past the end of the work: length 0, no sequence). */
struct ViterbiGroup {
    const uint8_t *dsq[SEQS];
    int L[SEQS], move[SEQS], xB[SEQS], xJ[SEQS], xC[SEQS], x_next[SEQS];
    bool stopped[SEQS];          /* overflowed, or handed back (viterbi_filter16) */
    int Lmax;
};

__device__ __forceinline__ void start_group(ViterbiGroup &g, int item0, int n, const int *order,
                                            const long long *offsets, const uint8_t *residues,
                                            const short *move_by_len, int base_w)
{
    g.Lmax = 0;
#pragma unroll
    for (int s = 0; s < SEQS; s++) {
        g.L[s] = 0; g.dsq[s] = residues;
        if (item0 + s < n) {
            const int seq = order[item0 + s];
            const long long o = offsets[seq];
            g.L[s] = (int)(offsets[seq + 1] - o);
            g.dsq[s] = residues + o;
        }
        g.Lmax = max(g.Lmax, g.L[s]);
        g.move[s] = move_by_len[g.L[s]];
        g.xB[s] = base_w + g.move[s];              /* xN + move */
        g.xJ[s] = NEG_W; g.xC[s] = NEG_W;
        g.stopped[s] = false;
        g.x_next[s] = g.L[s] > 0 ? g.dsq[s][0] : 0;
    }
}

/* A lane's transitions: those of its first TRANS_REGS nodes (words) held in
   registers `tr` for the kernel's life (q is a compile-time constant in every
   use), the others read from the profile. */
#if TRANS_REGS > 0
#define IN_REGS(q) ((q) >= 0 && (q) < TRANS_REGS)
#define TR(q, t) (IN_REGS(q) ? tr[IN_REGS(q) ? (q) : 0][t] : vtrans[((q) * NTRANS + (t)) * G + gl])
#else
#define TR(q, t) vtrans[((q) * NTRANS + (t)) * G + gl]
#endif

#ifdef KERNEL_VITERBI
extern "C" __global__ void __launch_bounds__(256)
viterbi_filter(const uint8_t *__restrict__ residues, const long long *__restrict__ offsets,
               const int *__restrict__ order_all, const int *__restrict__ jobs,
               const short *__restrict__ vemis_all,      /* [job][KP][W][G]     */
               const int *__restrict__ vtrans_all,       /* [job][W][NTRANS][G] */
               const short *__restrict__ move_by_len,
               int *__restrict__ counters, int *__restrict__ out_all)
{
    /* this block's model (jobs.cuh) */
    const int *order; int n; int *out; int *work_counter;
    const int *p = take_job(jobs, order_all, out_all, counters, order, n, out, work_counter);
    const int e_move = p[0], e_loop = p[1], base_w = p[2], ddbound = p[3];
    const short *vemis_global = vemis_all + (long long)blockIdx.y * (KP * W * G);
    const int *vtrans_global = vtrans_all + (long long)blockIdx.y * (W * NTRANS * G);

    /* Scalar int32 transition loads: measured faster than 16-byte loads of
       int32 {BM MM IM DM}, {MD MI II DD}, and (with two sequences a group)
       than one 16-byte load of the eight as int16 (docs/benchmarks.md) */
    const int *vtrans;
    const short *vemis;
    viterbi_profile(vtrans_global, vemis_global, vtrans, vemis);

    const int lane = threadIdx.x & 31;
    const int gl = lane & (G - 1);
    const unsigned gmask = group_mask(lane);
#if TRANS_REGS > 0
    /* the transitions of the lane's first TRANS_REGS nodes held in registers
       for the kernel's life (q is a compile-time constant in every use) */
    int tr[TRANS_REGS][NTRANS];
#pragma unroll
    for (int q = 0; q < TRANS_REGS; q++)
#pragma unroll
        for (int t = 0; t < NTRANS; t++) tr[q][t] = vtrans[(q * NTRANS + t) * G + gl];
#endif
    /* Lazy-F's max-plus scan across the lanes adds, at step j, the D->D costs
       summed over the 2^j lanes up to this one: the same every row, so summed
       once here (the scan then shuffles one value a step, not two) */
    int dd_sum[5];
    {
        int run = 0;
#pragma unroll
        for (int q = 0; q < W; q++) run += TR(q, T_DD);
#pragma unroll
        for (int j = 0, d = 1; d < G; d *= 2, j++) {
            dd_sum[j] = run;
            const int before = __shfl_up_sync(gmask, run, d, G);
            if (gl >= d) run += before;
        }
    }

    for (int first = next_work(work_counter, lane, GROUPS_PER_WARP * SEQS); first < n;
         first = next_work(work_counter, lane, GROUPS_PER_WARP * SEQS)) {
        const int item0 = first + (lane / G) * SEQS;
        if (item0 >= n) continue;

        ViterbiGroup g;                                /* its SEQS sequences */
        start_group(g, item0, n, order, offsets, residues, move_by_len, base_w);
        int M[SEQS][W], I[SEQS][W], D[SEQS][W];
#pragma unroll
        for (int s = 0; s < SEQS; s++)
#pragma unroll
            for (int q = 0; q < W; q++) { M[s][q] = NEG_W; I[s][q] = NEG_W; D[s][q] = NEG_W; }

        for (int i = 0; i < g.Lmax; i++) {
            /* a sequence that ended or overflowed is computed on (residue 0)
               but its special states no longer change */
            bool live[SEQS];
            bool any_live = false;
            const short *e[SEQS];
            int m_in[SEQS], i_in[SEQS], d_in[SEQS], xE[SEQS], Dmax[SEQS], d_last[SEQS];
#pragma unroll
            for (int s = 0; s < SEQS; s++) {
                live[s] = i < g.L[s] && !g.stopped[s];
                any_live |= live[s];
                /* this row's residue was read one row ahead (its load latency hidden) */
                e[s] = vemis + g.x_next[s] * (W * G) + gl;
                g.x_next[s] = (i + 1 < g.L[s]) ? g.dsq[s][i + 1] : 0;
                /* row i-1 at node k-1 for this lane's first node */
                m_in[s] = __shfl_up_sync(gmask, M[s][W - 1], 1, G);
                i_in[s] = __shfl_up_sync(gmask, I[s][W - 1], 1, G);
                d_in[s] = __shfl_up_sync(gmask, D[s][W - 1], 1, G);
                xE[s] = -(1 << 30);
                Dmax[s] = -(1 << 30);
                d_last[s] = 0;                         /* M->D out of this lane's last node */
            }
            if (!any_live) break;
#pragma unroll
            for (int q = W - 1; q >= 0; q--) {
                /* this node's transitions, one load each, for all SEQS sequences */
                const int t_bm = TR(q, T_BM), t_mm = TR(q, T_MM), t_im = TR(q, T_IM), t_dm = TR(q, T_DM);
                const int t_mi = TR(q, T_MI), t_ii = TR(q, T_II), t_md = TR(q, T_MD);
#pragma unroll
                for (int s = 0; s < SEQS; s++) {
                    const int mpv = (q > 0) ? M[s][q - 1] : (gl == 0 ? NEG_W : m_in[s]);
                    const int ipv = (q > 0) ? I[s][q - 1] : (gl == 0 ? NEG_W : i_in[s]);
                    const int dpv = (q > 0) ? D[s][q - 1] : (gl == 0 ? NEG_W : d_in[s]);
                    int sv = g.xB[s] + t_bm;
                    sv = __viaddmax_s32(mpv, t_mm, sv);
                    sv = __viaddmax_s32(ipv, t_im, sv);
                    sv = __viaddmax_s32(dpv, t_dm, sv);
                    sv += e[s][q * G];
                    xE[s] = max(xE[s], sv);
                    /* I(i,k) from row i-1 at node k (M, I still hold row i-1 here) */
                    I[s][q] = __viaddmax_s32(I[s][q], t_ii, M[s][q] + t_mi);
                    M[s][q] = sv;
                    /* M->D into node k+1: D[q+1] of row i-1 was used at step q+2 */
                    const int dcv = sv + t_md;
                    Dmax[s] = max(Dmax[s], dcv);
                    if (q < W - 1) D[s][q + 1] = dcv; else d_last[s] = dcv;
                }
            }
#pragma unroll
            for (int s = 0; s < SEQS; s++) {
                /* D(i,k) of this lane's first node: M->D from the previous lane's last node */
                const int d_first = __shfl_up_sync(gmask, d_last[s], 1, G);
                D[s][0] = (gl == 0) ? NEG_W : d_first;

                xE[s] = group_max(gmask, xE[s]);
                if (live[s]) {
                    if (xE[s] >= 32767) {
                        g.stopped[s] = true;                   /* HMMER's overflow: score +inf */
                    } else {
                        g.xC[s] = max(g.xC[s], xE[s] + e_move);
                        g.xJ[s] = max(g.xJ[s], xE[s] + e_loop);
                        g.xB[s] = max(g.xJ[s] + g.move[s], base_w + g.move[s]);
                    }
                }

                /* Lazy-F: D->D paths can change the next row only if some lane
                   of the group has max D + ddbound > xB (a vote, no shuffles) */
                const bool lazy = live[s] && !g.stopped[s] &&
                                  (__ballot_sync(gmask, Dmax[s] + ddbound > g.xB[s]) & gmask) != 0;
#ifdef LAZY_STATS
                if (gl == 0 && live[s] && !g.stopped[s]) {
                    atomicAdd(&lazy_stats[0], 1ull);
                    if (lazy) atomicAdd(&lazy_stats[1], 1ull);
                }
#endif
                if (lazy) {
                    /* within the lane: chain D->D over its W nodes, from -inf */
                    int local = NEG_W;
#pragma unroll
                    for (int q = 0; q < W; q++) {
                        if (q > 0) local = max(D[s][q], local + TR(q - 1, T_DD));
                        else local = D[s][0];
                    }
                    /* out of the lane: f(c) = max(a, c + run) with a = chain end + last DD,
                       run = the lane's D->D costs summed; an inclusive max-plus scan */
                    int a = local + TR(W - 1, T_DD);
#pragma unroll
                    for (int j = 0, d = 1; d < G; d *= 2, j++) {
                        const int pa = __shfl_up_sync(gmask, a, d, G);
                        if (gl >= d) a = max(a, pa + dd_sum[j]);
                    }
                    int carry = __shfl_up_sync(gmask, a, 1, G);  /* D entering this lane */
                    if (gl == 0) carry = NEG_W;
                    int c = carry;
#pragma unroll
                    for (int q = 0; q < W; q++) {
                        D[s][q] = max(D[s][q], c);
                        c = D[s][q] + TR(q, T_DD);
                    }
                }
            }
        }
        if (gl == 0) {
#pragma unroll
            for (int s = 0; s < SEQS; s++)
                if (item0 + s < n) out[item0 + s] = g.stopped[s] ? OVERFLOW_W : g.xC[s];
        }
    }
}
#endif /* KERNEL_VITERBI */

/* --- 4. Viterbi filter, two nodes a 32-bit word --------------------------------- *
 *
 * The same recurrences as viterbi_filter on 16-bit halves, so that one DPX
 * instruction (__viaddmax_s16x2_relu: max(a + b, c, 0) per half) updates two
 * cells: half the instructions and half the DP registers a node.  The halves
 * of word q of lane l are nodes k = l*W + q + 1 (low) and (G + l)*W + q + 1
 * (high): 2G "virtual lanes" of W nodes each.
 *
 * Why it is exact.  A cell is stored as v - off, and every update floors it at
 * 0 (the relu), i.e. at the true value off.  The host picks off so that the
 * B->M path, xB + tBM(k) >= base_w + move(L) + min tBM, is never below it for
 * any sequence of the database (viterbi16_bounds).  Then a cell held at the
 * floor can only offer a path of at most off + t <= off (every transition is
 * <= 0), which the B->M path into the same M cell matches or beats before the
 * emission is added, so every M cell is max(its true value, off): I and D
 * cells too.  A row's xE is then max(true xE, off).  Where it is above off it
 * is exact, and one at off leaves xJ and xB as they are (off + e_loop + move
 * <= base_w + move), so only xC can differ: a sequence whose every row lies
 * at or below the floor ends with xC = off + e_move exactly, and the host
 * scores those again (viterbi16_again).  Above, a half must never pass
 * 32767: every cell is at most max(xE so far, xB) + the largest emission, so
 * a sequence whose xE goes past `ceiling` stops with RESCORE_W and the host
 * scores it again with viterbi_filter (strong hits only; the ceiling is at
 * most 32766, so HMMER's own overflow at 32767 is always among them).
 */

#define RESCORE_W 0x7ffffffe

__device__ __forceinline__ int lo16(unsigned v) { return (short)(v & 0xffffu); }
__device__ __forceinline__ int hi16(unsigned v) { return (short)(v >> 16); }
__device__ __forceinline__ unsigned pair16(int lo, int hi) { return (lo & 0xffffu) | ((unsigned)hi << 16); }

/* Word W-1 of the previous virtual lane, for this lane's word 0: lane l-1's
   word (both halves); lane 0's high half continues from lane G-1's low half,
   its low half (node 1) has no node before it (the floor). */
__device__ __forceinline__ unsigned from_previous_lane(unsigned gmask, int gl, unsigned last)
{
    const unsigned v = __shfl_sync(gmask, last, (gl + G - 1) & (G - 1), G);
    return (gl == 0) ? (v << 16) : v;
}

#ifdef KERNEL_VITERBI16
extern "C" __global__ void __launch_bounds__(256)
viterbi_filter16(const uint8_t *__restrict__ residues, const long long *__restrict__ offsets,
                 const int *__restrict__ order_all, const int *__restrict__ jobs,
                 const unsigned *__restrict__ vemis_all,      /* [job][KP][W][G]     */
                 const unsigned *__restrict__ vtrans_all,     /* [job][W][NTRANS][G] */
                 const short *__restrict__ move_by_len,
                 int *__restrict__ counters, int *__restrict__ out_all)
{
    /* this block's model (jobs.cuh); off and ceiling: its 16-bit floor and ceiling */
    const int *order; int n; int *out; int *work_counter;
    const int *p = take_job(jobs, order_all, out_all, counters, order, n, out, work_counter);
    const int e_move = p[0], e_loop = p[1], base_w = p[2], ddbound = p[3], off = p[4], ceiling = p[5];
    const unsigned *vemis_global = vemis_all + (long long)blockIdx.y * (KP * W * G);
    const unsigned *vtrans_global = vtrans_all + (long long)blockIdx.y * (W * NTRANS * G);

    const unsigned *vtrans;
    const unsigned *vemis;
    viterbi_profile(vtrans_global, vemis_global, vtrans, vemis);

    const int lane = threadIdx.x & 31;
    const int gl = lane & (G - 1);
    const unsigned gmask = group_mask(lane);
#if TRANS_REGS > 0
    unsigned tr[TRANS_REGS][NTRANS];
#pragma unroll
    for (int q = 0; q < TRANS_REGS; q++)
#pragma unroll
        for (int t = 0; t < NTRANS; t++) tr[q][t] = vtrans[(q * NTRANS + t) * G + gl];
#endif
    /* Lazy-F's scan sums (as in viterbi_filter), both halves in a word, each
       held at -32768 at least: a cell (0..32767) plus such a sum then floors
       at 0 exactly when it would with the true sum.  hi_after_lo: the high
       halves' D->D costs summed over lanes 0..this one, for the carry from
       the low half of lane G-1 into the high half of lane 0. */
    unsigned dd_sum[5], hi_after_lo;
    {
        int run_lo = 0, run_hi = 0;
#pragma unroll
        for (int q = 0; q < W; q++) { run_lo += lo16(TR(q, T_DD)); run_hi += hi16(TR(q, T_DD)); }
#pragma unroll
        for (int j = 0, d = 1; d < G; d *= 2, j++) {
            dd_sum[j] = pair16(max(run_lo, -32768), max(run_hi, -32768));
            const int before_lo = __shfl_up_sync(gmask, run_lo, d, G);
            const int before_hi = __shfl_up_sync(gmask, run_hi, d, G);
            if (gl >= d) { run_lo += before_lo; run_hi += before_hi; }
        }
        hi_after_lo = pair16(-32768, max(run_hi, -32768));
    }

    for (int first = next_work(work_counter, lane, GROUPS_PER_WARP * SEQS); first < n;
         first = next_work(work_counter, lane, GROUPS_PER_WARP * SEQS)) {
        const int item0 = first + (lane / G) * SEQS;
        if (item0 >= n) continue;

        ViterbiGroup g;
        start_group(g, item0, n, order, offsets, residues, move_by_len, base_w);
        unsigned M[SEQS][W], I[SEQS][W], D[SEQS][W];   /* 0: the floor (minus infinity) */
#pragma unroll
        for (int s = 0; s < SEQS; s++)
#pragma unroll
            for (int q = 0; q < W; q++) { M[s][q] = 0u; I[s][q] = 0u; D[s][q] = 0u; }

        for (int i = 0; i < g.Lmax; i++) {
            bool live[SEQS];
            bool any_live = false;
            const unsigned *e[SEQS];
            unsigned m_in[SEQS], i_in[SEQS], d_in[SEQS], xBv[SEQS], xE[SEQS], Dmax[SEQS], d_last[SEQS];
#pragma unroll
            for (int s = 0; s < SEQS; s++) {
                live[s] = i < g.L[s] && !g.stopped[s];
                any_live |= live[s];
                e[s] = vemis + g.x_next[s] * (W * G) + gl;
                g.x_next[s] = (i + 1 < g.L[s]) ? g.dsq[s][i + 1] : 0;
                m_in[s] = from_previous_lane(gmask, gl, M[s][W - 1]);
                i_in[s] = from_previous_lane(gmask, gl, I[s][W - 1]);
                d_in[s] = from_previous_lane(gmask, gl, D[s][W - 1]);
                xBv[s] = (unsigned)(g.xB[s] - off) * 0x10001u;  /* >= 0 and < 32768 (host's bounds) */
                xE[s] = 0u; Dmax[s] = 0u; d_last[s] = 0u;
            }
            if (!any_live) break;
#pragma unroll
            for (int q = W - 1; q >= 0; q--) {
                const unsigned t_bm = TR(q, T_BM), t_mm = TR(q, T_MM), t_im = TR(q, T_IM), t_dm = TR(q, T_DM);
                const unsigned t_mi = TR(q, T_MI), t_ii = TR(q, T_II), t_md = TR(q, T_MD);
#pragma unroll
                for (int s = 0; s < SEQS; s++) {
                    const unsigned mpv = (q > 0) ? M[s][q - 1] : m_in[s];
                    const unsigned ipv = (q > 0) ? I[s][q - 1] : i_in[s];
                    const unsigned dpv = (q > 0) ? D[s][q - 1] : d_in[s];
                    unsigned sv = __viaddmax_s16x2_relu(xBv[s], t_bm, 0u);
                    sv = __viaddmax_s16x2_relu(mpv, t_mm, sv);
                    sv = __viaddmax_s16x2_relu(ipv, t_im, sv);
                    sv = __viaddmax_s16x2_relu(dpv, t_dm, sv);
                    sv = __viaddmax_s16x2_relu(sv, e[s][q * G], 0u);
                    xE[s] = __vimax_s16x2_relu(xE[s], sv);
                    I[s][q] = __viaddmax_s16x2_relu(I[s][q], t_ii, __viaddmax_s16x2_relu(M[s][q], t_mi, 0u));
                    M[s][q] = sv;
                    const unsigned dcv = __viaddmax_s16x2_relu(sv, t_md, 0u);
                    Dmax[s] = __vimax_s16x2_relu(Dmax[s], dcv);
                    if (q < W - 1) D[s][q + 1] = dcv; else d_last[s] = dcv;
                }
            }
#pragma unroll
            for (int s = 0; s < SEQS; s++) {
                D[s][0] = from_previous_lane(gmask, gl, d_last[s]);

                const int xe = group_max(gmask, max(lo16(xE[s]), hi16(xE[s]))) + off;
                if (live[s]) {
                    if (xe > ceiling) {
                        g.stopped[s] = true;            /* a half could pass 32767 next: score in int32 */
                    } else {
                        g.xC[s] = max(g.xC[s], xe + e_move);
                        g.xJ[s] = max(g.xJ[s], xe + e_loop);
                        g.xB[s] = max(g.xJ[s] + g.move[s], base_w + g.move[s]);
                    }
                }

                const int dmax = max(lo16(Dmax[s]), hi16(Dmax[s])) + off;
                const bool lazy = live[s] && !g.stopped[s] &&
                                  (__ballot_sync(gmask, dmax + ddbound > g.xB[s]) & gmask) != 0;
                if (lazy) {
                    /* within the lane, both halves at once: the D->D chain over its W nodes */
                    unsigned local = D[s][0];
#pragma unroll
                    for (int q = 1; q < W; q++) local = __viaddmax_s16x2_relu(local, TR(q - 1, T_DD), D[s][q]);
                    /* across the 2G virtual lanes: f(c) = max(a, c + run), an inclusive
                       max-plus scan of both halves at once; then the high halves take the
                       carry out of the low half of lane G-1, which enters lane 0's */
                    unsigned a = __viaddmax_s16x2_relu(local, TR(W - 1, T_DD), 0u);
#pragma unroll
                    for (int j = 0, d = 1; d < G; d *= 2, j++) {
                        const unsigned pa = __shfl_up_sync(gmask, a, d, G);
                        if (gl >= d) a = __viaddmax_s16x2_relu(pa, dd_sum[j], a);
                    }
                    const unsigned lo_exit = __shfl_sync(gmask, a, G - 1, G) << 16;
                    a = __viaddmax_s16x2_relu(lo_exit, hi_after_lo, a);
                    unsigned c = from_previous_lane(gmask, gl, a);     /* D entering this lane */
#pragma unroll
                    for (int q = 0; q < W; q++) {
                        D[s][q] = __vimax_s16x2_relu(D[s][q], c);
                        c = __viaddmax_s16x2_relu(D[s][q], TR(q, T_DD), 0u);
                    }
                }
            }
        }
        if (gl == 0) {
#pragma unroll
            for (int s = 0; s < SEQS; s++)
                if (item0 + s < n) out[item0 + s] = g.stopped[s] ? RESCORE_W : g.xC[s];
        }
    }
}
#endif /* KERNEL_VITERBI16 */
