/* HMMER 3.4's Viterbi filter with two sequences in each 32-bit register.
 *
 * What it computes
 *   viterbi_filter16: the final C state xC of p7_ViterbiFilter
 *   (impl_sse/vitfilter.c) for each sequence, OVERFLOW_W where HMMER
 *   overflows, or NEEDS_EXACT where this kernel cannot promise HMMER's number
 *   (the host then scores that sequence with filters.cu's int32 kernel).
 *
 * Why two cells a register
 *   filters.cu's viterbi_filter keeps one cell per int32 register and is bound
 *   by instruction issue (docs/gpu-design.md).  Here each register holds the
 *   same node of two neighbouring sequences of the length-sorted database as
 *   signed 16-bit halves, and every update is one Hopper DPX instruction for
 *   both (__viaddmax_s16x2: max(a + b, c) per half; the transitions are
 *   stored twice, once per half).  2*PAIRS sequences per group of G lanes.
 *
 * Exactness (HMMER saturates 16-bit words; DPX adds wrap around)
 *   Stored value = HMMER word - OFF, never below FLOOR_S: every update ends in
 *   max(., FLOOR_S).  With all transitions in [TMIN, 0], emissions of the
 *   codes used in [EMIN, OFF] and stored values in [FLOOR_S, OVERFLOW_S),
 *   no sum wraps.  The stored value is max(HMMER's, FLOOR_S), and the floor
 *   never changes a result, because the host accepts only sequences whose
 *   B->M entry alone stays above it (xB + tBM(k) >= floor for every node;
 *   argument xb_needed), and a row whose xE sits at the floor (maybe clamped)
 *   sends the sequence to the int32 kernel, as does a residue code with
 *   emissions outside [EMIN, OFF] (argument unsafe_codes).  Gaps, '*' and '~'
 *   score -infinity (-32768) at every node (argument deep_codes): stored as
 *   EMIN and added twice, each add clamped, which gives max(HMMER's, floor).  HMMER's
 *   "-infinity" transitions lead only to or from states that do not exist
 *   (the host checks where they are) and are stored as TMIN.  The Lazy-F test
 *   may run the D->D pass where HMMER skips it (one vote for both halves, and
 *   D values at the floor); HMMER's ddbound argument says such D->D paths
 *   never win a B->M entry, so the M states, xE and xC are unchanged.
 *   tests/test_gpu.py checks all this against the numpy reference and
 *   HMMER's own filter.
 *
 * Memory layout (shared memory when it fits)
 *   vemis[x][q][lane] int16 (HMMER's word; pads EMIN), vtrans[q][t][lane]
 *   uint32 = the int16 transition in both halves, t in BM MM IM DM MD MI II DD;
 *   node k = lane*W + q + 1, as filters.cu's int32 kernel.
 */

#include "groups.cuh"

#ifndef PAIRS
#define PAIRS 1
#endif
#define NS (2 * PAIRS)                       /* sequences per group */
#define OFF 4096                             /* stored = HMMER word - OFF */
#define FLOOR_S (-16384)
#define FLOOR2 0xC000C000u                   /* FLOOR_S in both halves */
#define OVERFLOW_S (32767 - OFF)             /* HMMER's overflow: xE >= 32767 */
#define OVERFLOW_W 0x7fffffff
#define NEEDS_EXACT 0x7ffffffe

enum { T_BM, T_MM, T_IM, T_DM, T_MD, T_MI, T_II, T_DD, NTRANS };

__device__ __forceinline__ int lo16(unsigned v) { return (int)(short)(v & 0xffffu); }
__device__ __forceinline__ int hi16(unsigned v) { return (int)v >> 16; }
__device__ __forceinline__ unsigned pack16(int lo, int hi) { return __byte_perm((unsigned)lo, (unsigned)hi, 0x5410); }

extern "C" __global__ void __launch_bounds__(256)
viterbi_filter16(const uint8_t *__restrict__ residues, const long long *__restrict__ offsets,
                 const int *__restrict__ order, int n,
                 const short *__restrict__ vemis_global,      /* [KP][W][G]     */
                 const unsigned *__restrict__ vtrans_global,  /* [W][NTRANS][G] */
                 const short *__restrict__ move_by_len,
                 int e_move, int e_loop, int base_w, int ddbound,
                 int xb_needed, unsigned unsafe_codes, unsigned deep_codes,
                 int *__restrict__ work_counter, int *__restrict__ out)
{
#if PROFILE_IN_SMEM
    extern __shared__ uint4 vsmem[];
    unsigned *vtrans = (unsigned *)vsmem;
    short *vemis = (short *)(vtrans + W * NTRANS * G);
    for (int i = threadIdx.x; i < W * NTRANS * G; i += blockDim.x) vtrans[i] = vtrans_global[i];
    for (int i = threadIdx.x; i < KP * W * G; i += blockDim.x) vemis[i] = vemis_global[i];
    __syncthreads();
#else
    const unsigned *vtrans = vtrans_global;
    const short *vemis = vemis_global;
#endif

    const int lane = threadIdx.x & 31;
    const int gl = lane & (G - 1);
    const unsigned gmask = group_mask(lane);
#define TR(q, t) vtrans[((q) * NTRANS + (t)) * G + gl]

    /* Lazy-F's scan across lanes composes f(c) = max(a, c + s) per lane, s the
       sum of this lane's D->D costs: the s of each scan step do not depend on
       the row, so they are computed once (int32: the sums exceed 16 bits). */
    int scan_s[5];
    {
        int s = 0;
#pragma unroll
        for (int q = 0; q < W; q++) s += lo16(TR(q, T_DD));
#pragma unroll
        for (int k = 0, d = 1; d < G; d *= 2, k++) {
            scan_s[k] = s;
            const int ps = __shfl_up_sync(gmask, s, d, G);
            if (gl >= d) s += ps;
        }
    }

    for (int first = next_work(work_counter, lane, GROUPS_PER_WARP * NS); first < n;
         first = next_work(work_counter, lane, GROUPS_PER_WARP * NS)) {
        const int item0 = first + (lane / G) * NS;
        if (item0 >= n) continue;

        /* per sequence s: residues, length, special states (HMMER words, int32) */
        enum { LIVE, OVERFLOWED, NOT_SAFE };
        const uint8_t *dsq[NS];
        int L[NS], move[NS], xB[NS], xJ[NS], xC[NS], state[NS], x_next[NS];
        int Lmax = 0;
#pragma unroll
        for (int s = 0; s < NS; s++) {
            L[s] = 0; dsq[s] = residues;              /* past the end of the work: no sequence */
            if (item0 + s < n) {
                const int seq = order[item0 + s];
                const long long off = offsets[seq];
                L[s] = (int)(offsets[seq + 1] - off);
                dsq[s] = residues + off;
            }
            Lmax = max(Lmax, L[s]);
            move[s] = move_by_len[L[s]];
            xB[s] = base_w + move[s];                 /* xN + move */
            xJ[s] = -32768; xC[s] = -32768;
            state[s] = (xB[s] >= xb_needed) ? LIVE : NOT_SAFE;
            x_next[s] = L[s] > 0 ? dsq[s][0] : 0;
        }
        unsigned M[PAIRS][W], I[PAIRS][W], D[PAIRS][W];
#pragma unroll
        for (int p = 0; p < PAIRS; p++)
#pragma unroll
            for (int q = 0; q < W; q++) { M[p][q] = FLOOR2; I[p][q] = FLOOR2; D[p][q] = FLOOR2; }

        for (int i = 0; i < Lmax; i++) {
            /* a sequence that ended, overflowed or met an unsafe residue is
               computed on, in its own half, but its special states are frozen */
            bool live[NS];
            bool any_live = false;
            const short *e[NS];
            bool deep[NS];
#pragma unroll
            for (int s = 0; s < NS; s++) {
                const int x = x_next[s];
                if (i < L[s] && state[s] == LIVE && ((unsafe_codes >> x) & 1u)) state[s] = NOT_SAFE;
                deep[s] = (deep_codes >> x) & 1u;
                live[s] = i < L[s] && state[s] == LIVE;
                any_live |= live[s];
                e[s] = vemis + x * (W * G) + gl;
                x_next[s] = (i + 1 < L[s]) ? dsq[s][i + 1] : 0;   /* read a row ahead */
            }
            if (!any_live) break;

            unsigned m_in[PAIRS], i_in[PAIRS], d_in[PAIRS], xBv[PAIRS], xE[PAIRS], Dmax[PAIRS], d_last[PAIRS];
            unsigned deep_e[PAIRS];    /* a -inf emission is stored as EMIN: add EMIN again */
            bool any_deep[PAIRS];
#pragma unroll
            for (int p = 0; p < PAIRS; p++) {
                /* row i-1 at node k-1 for this lane's first node */
                m_in[p] = __shfl_up_sync(gmask, M[p][W - 1], 1, G);
                i_in[p] = __shfl_up_sync(gmask, I[p][W - 1], 1, G);
                d_in[p] = __shfl_up_sync(gmask, D[p][W - 1], 1, G);
                xBv[p] = pack16(xB[2 * p] - OFF, xB[2 * p + 1] - OFF);
                xE[p] = FLOOR2;
                Dmax[p] = FLOOR2;
                d_last[p] = FLOOR2;
                deep_e[p] = pack16(deep[2 * p] ? FLOOR_S : 0, deep[2 * p + 1] ? FLOOR_S : 0);
                any_deep[p] = deep[2 * p] || deep[2 * p + 1];
            }
#pragma unroll
            for (int q = W - 1; q >= 0; q--) {
                const unsigned t_bm = TR(q, T_BM), t_mm = TR(q, T_MM), t_im = TR(q, T_IM), t_dm = TR(q, T_DM);
                const unsigned t_mi = TR(q, T_MI), t_ii = TR(q, T_II), t_md = TR(q, T_MD);
#pragma unroll
                for (int p = 0; p < PAIRS; p++) {
                    const unsigned mpv = (q > 0) ? M[p][q - 1] : (gl == 0 ? FLOOR2 : m_in[p]);
                    const unsigned ipv = (q > 0) ? I[p][q - 1] : (gl == 0 ? FLOOR2 : i_in[p]);
                    const unsigned dpv = (q > 0) ? D[p][q - 1] : (gl == 0 ? FLOOR2 : d_in[p]);
                    const unsigned ev = pack16(e[2 * p][q * G], e[2 * p + 1][q * G]);
                    unsigned sv = __vadd2(xBv[p], t_bm);
                    sv = __viaddmax_s16x2(mpv, t_mm, sv);
                    sv = __viaddmax_s16x2(ipv, t_im, sv);
                    sv = __viaddmax_s16x2(dpv, t_dm, sv);
                    sv = __viaddmax_s16x2(sv, ev, FLOOR2);
                    if (any_deep[p]) sv = __viaddmax_s16x2(sv, deep_e[p], FLOOR2);
                    xE[p] = __vmaxs2(xE[p], sv);
                    /* I(i,k) from row i-1 at node k (M, I still hold row i-1 here) */
                    I[p][q] = __viaddmax_s16x2(I[p][q], t_ii, __viaddmax_s16x2(M[p][q], t_mi, FLOOR2));
                    M[p][q] = sv;
                    /* M->D into node k+1: D[q+1] of row i-1 was used at step q+2 */
                    const unsigned dcv = __viaddmax_s16x2(sv, t_md, FLOOR2);
                    Dmax[p] = __vmaxs2(Dmax[p], dcv);
                    if (q < W - 1) D[p][q + 1] = dcv; else d_last[p] = dcv;
                }
            }
#pragma unroll
            for (int p = 0; p < PAIRS; p++) {
                /* D(i,k) of this lane's first node: M->D from the previous lane's last node */
                const unsigned d_first = __shfl_up_sync(gmask, d_last[p], 1, G);
                D[p][0] = (gl == 0) ? FLOOR2 : d_first;

#pragma unroll
                for (int d = G / 2; d >= 1; d /= 2) xE[p] = __vmaxs2(xE[p], __shfl_xor_sync(gmask, xE[p], d, G));
                bool lazy_lane = false;
#pragma unroll
                for (int h = 0; h < 2; h++) {
                    const int s = 2 * p + h;
                    const int xe = (h ? hi16(xE[p]) : lo16(xE[p])) + OFF;
                    if (live[s]) {
                        if (xe >= OVERFLOW_S + OFF) {
                            state[s] = OVERFLOWED;            /* HMMER's overflow: score +inf */
                        } else if (xe == FLOOR_S + OFF) {
                            state[s] = NOT_SAFE;              /* xE may be HMMER's or below the floor */
                        } else {
                            xC[s] = max(xC[s], xe + e_move);
                            xJ[s] = max(xJ[s], xe + e_loop);
                            xB[s] = max(xJ[s] + move[s], base_w + move[s]);
                            const int dmax = (h ? hi16(Dmax[p]) : lo16(Dmax[p])) + OFF;
                            lazy_lane |= dmax + ddbound > xB[s];
                        }
                    }
                }
                /* Lazy-F: one vote for both halves (exact either way, see above) */
                if ((__ballot_sync(gmask, lazy_lane) & gmask) != 0) {
                    /* within the lane: chain D->D over its W nodes */
                    unsigned local = D[p][0];
#pragma unroll
                    for (int q = 1; q < W; q++) local = __viaddmax_s16x2(local, TR(q - 1, T_DD), D[p][q]);
                    const unsigned a2 = __vadd2(local, TR(W - 1, T_DD));
                    /* out of the lane: inclusive max-plus scan, int32 */
                    int a0 = lo16(a2), a1 = hi16(a2);
#pragma unroll
                    for (int k = 0, d = 1; d < G; d *= 2, k++) {
                        const int pa0 = __shfl_up_sync(gmask, a0, d, G);
                        const int pa1 = __shfl_up_sync(gmask, a1, d, G);
                        if (gl >= d) { a0 = max(a0, pa0 + scan_s[k]); a1 = max(a1, pa1 + scan_s[k]); }
                    }
                    int c0 = __shfl_up_sync(gmask, a0, 1, G);   /* D entering this lane */
                    int c1 = __shfl_up_sync(gmask, a1, 1, G);
                    unsigned c = (gl == 0) ? FLOOR2 : pack16(max(c0, FLOOR_S), max(c1, FLOOR_S));
#pragma unroll
                    for (int q = 0; q < W; q++) {
                        D[p][q] = __vmaxs2(D[p][q], c);
                        c = __vadd2(D[p][q], TR(q, T_DD));
                    }
                }
            }
        }
        if (gl == 0) {
#pragma unroll
            for (int s = 0; s < NS; s++)
                if (item0 + s < n)
                    out[item0 + s] = state[s] == OVERFLOWED ? OVERFLOW_W : state[s] == NOT_SAFE ? NEEDS_EXACT : xC[s];
        }
    }
#undef TR
}
