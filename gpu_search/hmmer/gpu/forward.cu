/* HMMER 3.4's Forward filter score (p7_ForwardParser) as a CUDA kernel: a prefilter.
 *
 * What it computes
 *   forward_filter: the Forward score in nats of each sequence (impl_sse/fwdback.c,
 *   forward_engine), in float32 probability space with HMMER's recursion: M, I and
 *   D states, every D->D path, D states feeding E, sparse rescaling when xE > 1e4.
 *   The summation order differs from HMMER's striped SSE code, so the score is
 *   not bit-exact: measured within 4e-5 nats of HMMER's.  The host therefore uses
 *   it only to drop sequences that fail HMMER's F3 threshold by a wide margin
 *   (1 bit, about 17,000 times the largest error seen); every sequence near or
 *   above the threshold is scored again by HMMER itself (pyhmmer).
 *   Non-finite results (HMMER's range errors) are returned as NaN: kept.
 *
 * Design: as viterbi_filter in filters.cu: a group of G lanes per sequence,
 *   node k = lane*W + q + 1, W cells per lane in registers (compile-time G, W),
 *   the D->D chain done exactly by a scan of affine maps c -> a + c*s across the
 *   group's lanes, row sum of E by shuffles, persistent grid over a length-sorted
 *   database.
 *
 * Memory layout: femis[x][q][lane] float odds ratios; ftrans[q][t][lane] float
 *   probabilities, t in BM MM IM DM MD MI II DD (BM MM IM DM into node k, the rest
 *   out of node k); padding nodes have zero emission and transitions.
 */

#include "groups.cuh"

enum { F_BM, F_MM, F_IM, F_DM, F_MD, F_MI, F_II, F_DD, F_NTRANS };

extern "C" __global__ void __launch_bounds__(256)
forward_filter(const uint8_t *__restrict__ residues, const long long *__restrict__ offsets,
               const int *__restrict__ order_all, const int *__restrict__ jobs,
               const float *__restrict__ femis_all,        /* [job][KP][W][G] */
               const float *__restrict__ ftrans_all,       /* [job][W][F_NTRANS][G] */
               float nj, int *__restrict__ counters, double *__restrict__ out_all)
{
    /* this block's model (jobs.cuh) */
    const int *order; int n; double *out; int *work_counter;
    const int *p = take_job(jobs, order_all, out_all, counters, order, n, out, work_counter);
    const float e_move = __int_as_float(p[0]), e_loop = __int_as_float(p[1]);
    const float *femis_global = femis_all + (long long)blockIdx.y * (KP * W * G);
    const float *ftrans_global = ftrans_all + (long long)blockIdx.y * (W * F_NTRANS * G);

#if PROFILE_IN_SMEM
    extern __shared__ float fsmem[];
    float *ftrans = fsmem;                          /* W*F_NTRANS*G */
    float *femis = fsmem + W * F_NTRANS * G;        /* KP*W*G */
    for (int i = threadIdx.x; i < W * F_NTRANS * G; i += blockDim.x) ftrans[i] = ftrans_global[i];
    for (int i = threadIdx.x; i < KP * W * G; i += blockDim.x) femis[i] = femis_global[i];
    __syncthreads();
#else
    const float *ftrans = ftrans_global;            /* large models: through L1/L2 */
    const float *femis = femis_global;
#endif

    const int lane = threadIdx.x & 31;
    const int gl = lane & (G - 1);
    const unsigned gmask = group_mask(lane);
#define FT(q, t) ftrans[((q) * F_NTRANS + (t)) * G + gl]

    for (int first = next_work(work_counter, lane, GROUPS_PER_WARP); first < n;
         first = next_work(work_counter, lane, GROUPS_PER_WARP)) {
        const int item = first + lane / G;
        if (item >= n) continue;
        const int s = order[item];
        const long long off = offsets[s];
        const int L = (int)(offsets[s + 1] - off);
        const uint8_t *dsq = residues + off;

        /* p7_oprofile_ReconfigRestLength: N, C, J move and loop probabilities */
        const float pmove = (2.0f + nj) / ((float)L + 2.0f + nj);
        const float ploop = 1.0f - pmove;
        float xN = 1.0f, xJ = 0.0f, xC = 0.0f, xB = pmove;
        double totscale = 0.0;
        float M[W], I[W], D[W];
#pragma unroll
        for (int q = 0; q < W; q++) { M[q] = 0.0f; I[q] = 0.0f; D[q] = 0.0f; }

        for (int i = 0; i < L; i++) {
            const float *e = femis + dsq[i] * (W * G) + gl;
            const float m_in = __shfl_up_sync(gmask, M[W - 1], 1, G);
            const float i_in = __shfl_up_sync(gmask, I[W - 1], 1, G);
            const float d_in = __shfl_up_sync(gmask, D[W - 1], 1, G);
            float xE = 0.0f;
            float d_last = 0.0f;
#pragma unroll
            for (int q = W - 1; q >= 0; q--) {
                const float mpv = (q > 0) ? M[q - 1] : (gl == 0 ? 0.0f : m_in);
                const float ipv = (q > 0) ? I[q - 1] : (gl == 0 ? 0.0f : i_in);
                const float dpv = (q > 0) ? D[q - 1] : (gl == 0 ? 0.0f : d_in);
                float sv = xB * FT(q, F_BM) + mpv * FT(q, F_MM) + ipv * FT(q, F_IM) + dpv * FT(q, F_DM);
                sv *= e[q * G];
                xE += sv;
                I[q] = M[q] * FT(q, F_MI) + I[q] * FT(q, F_II);   /* row i-1 at node k */
                M[q] = sv;
                const float dcv = sv * FT(q, F_MD);               /* M->D into node k+1 */
                if (q < W - 1) D[q + 1] = dcv; else d_last = dcv;
            }
            const float d_first = __shfl_up_sync(gmask, d_last, 1, G);
            D[0] = (gl == 0) ? 0.0f : d_first;

            /* D->D paths in full: within the lane from 0, then the carry from the
               lanes before, an affine map c -> a + c*s composed by a scan */
            float a = 0.0f, sprod = 1.0f;
#pragma unroll
            for (int q = 0; q < W; q++) {
                a = (D[q] + a) * FT(q, F_DD);
                sprod *= FT(q, F_DD);
            }
#pragma unroll
            for (int d = 1; d < G; d *= 2) {
                const float pa = __shfl_up_sync(gmask, a, d, G);
                const float ps = __shfl_up_sync(gmask, sprod, d, G);
                if (gl >= d) { a = a + pa * sprod; sprod *= ps; }
            }
            float c = __shfl_up_sync(gmask, a, 1, G);
            if (gl == 0) c = 0.0f;
#pragma unroll
            for (int q = 0; q < W; q++) {
                D[q] += c;
                c = D[q] * FT(q, F_DD);
                xE += D[q];
            }
            xE = group_sum(gmask, xE);

            xN = xN * ploop;
            xC = xC * ploop + xE * e_move;
            xJ = xJ * ploop + xE * e_loop;
            xB = xJ * pmove + xN * pmove;
            if (xE > 1.0e4f) {                    /* sparse rescaling, as HMMER */
                const float r = 1.0f / xE;
                xN *= r; xC *= r; xJ *= r; xB *= r;
#pragma unroll
                for (int q = 0; q < W; q++) { M[q] *= r; I[q] *= r; D[q] *= r; }
                totscale += log((double)xE);
            }
        }
        if (gl == 0) {
            const double sc = totscale + log((double)xC * (double)pmove);
            out[item] = (isfinite(sc) && xC > 0.0f) ? sc : nan("");
        }
    }
#undef FT
}
