/* HMMER 3.4's Forward parser (p7_ForwardParser, impl_sse/fwdback.c) as a CUDA kernel, bit for
 * bit: the first stage of HMMER's finishing (Forward, Backward, domain definition) on the GPU.
 *
 * What it computes
 *   forward_parser: for each (model, sequence) pair, the raw Forward score in nats (float32)
 *   that p7_ForwardParser returns for the model configured to the sequence's length, local
 *   multihit, as p7_Pipeline calls it after the Viterbi filter.
 *
 * Why it is exact
 *   HMMER's striped SSE code is transcribed with one thread per SSE lane: a group of four
 *   threads per pair, thread z holding lane z of every vector, i.e. nodes k = z*Q + q + 1
 *   (Q = p7O_NQF(M) vectors a row).  Within a lane each float operation comes in HMMER's
 *   order; what crosses lanes does too: the right shift of the previous row's last vector,
 *   the D->D passes (the first pass inside the row, then three more, or fewer for M >= 100
 *   when a pass changes no D cell: HMMER's early exit), and the horizontal sum of E,
 *   (v0 + v1) + (v2 + v3).  The __f*_rn intrinsics keep NVRTC from fusing products and sums
 *   into FMAs.  Each sparse rescaling (xE > 1e4) adds (float)((double) totscale + log(xE))
 *   as HMMER's float totscale does, and the score is totscale + log(xC * C->T) the same way.
 *
 *   CUDA's double log() may differ from the C library's in its last bit; wherever a float
 *   rounding boundary lies within LOG_GUARD of CUDA's value the pair's score is NaN and the
 *   host finishes that pair on the CPU (as bias.cu).  HMMER's range errors (xC NaN, zero or
 *   infinite) are NaN too.
 *
 * Layout (packing.pack_fwdback_profiles): a model's block of floats at model_at[job]:
 *   tfv[8*Q][4]: for each q the 7 vectors BM MM IM DM MD MI II (the first four into node k,
 *   rotated as HMMER stores them), then Q vectors of DD; rfv[KP][Q][4] match odds ratios.
 *   Exactly HMMER's P7_OPROFILE tfv and rfv, lane z at [..][z].
 *
 * Design: several models a launch, a row of blocks each (jobs.cuh; scalars M, nj, E->C,
 *   E->J); a pair's row lives in its threads' local memory (QMAX vectors of M, D and I a
 *   lane); a model's sequences come longest first, so that a warp's eight pairs share a
 *   profile (broadcast reads) and end together.
 */

#ifndef KP
#define KP 29
#endif
#ifndef QMAX
#define QMAX 400                  /* models up to M = 4 * QMAX; longer ones stay on the CPU */
#endif

#include "jobs.cuh"

typedef unsigned char uint8_t;

/* 2^-48 (16 double ulps of the value, at least), as bias.cu; the tests raise it to flag every pair */
#ifndef LOG_GUARD
#define LOG_GUARD 3.552713678800501e-15
#endif

enum { T_BM, T_MM, T_IM, T_DM, T_MD, T_MI, T_II };

/* (float)((double) acc + log((double) x)), as C evaluates HMMER's float += log(),
   and whether the C library's log might make it another float */
__device__ __forceinline__ float add_log(float acc, float x, bool &unsure)
{
    const double r = log((double)x);
    const double d = fabs(r) * LOG_GUARD;
    unsure = unsure || __double2float_rn((double)acc + (r - d)) != __double2float_rn((double)acc + (r + d));
    return __double2float_rn((double)acc + r);
}

/* esl_sse_rightshift_ps(v, 0): lane z takes lane z-1's value, lane 0 a zero */
__device__ __forceinline__ float right_shift(float v, unsigned mask, int z)
{
    const float from = __shfl_up_sync(mask, v, 1, 4);
    return z == 0 ? 0.0f : from;
}

/* the SSE horizontal sum HMMER uses: (v0 + v1) + (v2 + v3), the same in every lane */
__device__ __forceinline__ float lanes_sum(float v, unsigned mask)
{
    const float v0 = __shfl_sync(mask, v, 0, 4), v1 = __shfl_sync(mask, v, 1, 4);
    const float v2 = __shfl_sync(mask, v, 2, 4), v3 = __shfl_sync(mask, v, 3, 4);
    return __fadd_rn(__fadd_rn(v0, v1), __fadd_rn(v2, v3));
}

extern "C" __global__ void __launch_bounds__(128)
forward_parser(const uint8_t *__restrict__ residues, const long long *__restrict__ offsets,
               const int *__restrict__ order_all, const int *__restrict__ jobs,
               const long long *__restrict__ model_at, const float *__restrict__ profiles,
               float *__restrict__ out_all)
{
    /* this block's model (jobs.cuh): its sequences, longest first, four threads each */
    const int *job = jobs + blockIdx.y * JOB_INTS;
    const int item = (int)((blockIdx.x * blockDim.x + threadIdx.x) >> 2);
    if (item >= job[JOB_N]) return;              /* a group's four threads leave together */
    const int lane = threadIdx.x & 31;
    const int z = lane & 3;
    const unsigned mask = 0xFu << (lane & ~3);
    const int s = order_all[job[JOB_ORDER] + item];
    float *out = out_all + job[JOB_OUT];
    const int M = job[JOB_P];
    const float nj = __int_as_float(job[JOB_P + 1]);
    const float e_move = __int_as_float(job[JOB_P + 2]), e_loop = __int_as_float(job[JOB_P + 3]);
    const int Q = M <= 8 ? 2 : (M - 1) / 4 + 1;  /* p7O_NQF */
    const float *tfv = profiles + model_at[blockIdx.y];
    const float *rfv = tfv + 8 * Q * 4;
    const long long start = offsets[s];
    const int L = (int)(offsets[s + 1] - start);
    const uint8_t *dsq = residues + start - 1;   /* dsq[1..L] */

    /* p7_oprofile_ReconfigRestLength: N, C, J loop and move, in float */
    const float pmove = __fdiv_rn(__fadd_rn(2.0f, nj), __fadd_rn(__fadd_rn((float)L, 2.0f), nj));
    const float ploop = __fsub_rn(1.0f, pmove);

    float mmx[QMAX], dmx[QMAX], imx[QMAX];       /* this lane of the row (i-1, then i) */
    for (int q = 0; q < Q; q++) mmx[q] = dmx[q] = imx[q] = 0.0f;
    float xE = 0.0f, xN = 1.0f, xJ = 0.0f, xB = pmove, xC = 0.0f;
    float totscale = 0.0f;
    bool unsure = false;

#define TF(q, t) tfv[((q) * 7 + (t)) * 4 + z]
#define TDD(q) tfv[(7 * Q + (q)) * 4 + z]
    for (int i = 1; i <= L; i++) {
        const float *rp = rfv + (long long)dsq[i] * Q * 4 + z;
        float dcv = 0.0f, xEv = 0.0f;
        float mpv = right_shift(mmx[Q - 1], mask, z);
        float dpv = right_shift(dmx[Q - 1], mask, z);
        float ipv = right_shift(imx[Q - 1], mask, z);
        for (int q = 0; q < Q; q++) {
            float sv = __fmul_rn(xB, TF(q, T_BM));
            sv = __fadd_rn(sv, __fmul_rn(mpv, TF(q, T_MM)));
            sv = __fadd_rn(sv, __fmul_rn(ipv, TF(q, T_IM)));
            sv = __fadd_rn(sv, __fmul_rn(dpv, TF(q, T_DM)));
            sv = __fmul_rn(sv, rp[q * 4]);
            xEv = __fadd_rn(xEv, sv);
            mpv = mmx[q];
            dpv = dmx[q];
            ipv = imx[q];
            mmx[q] = sv;
            dmx[q] = dcv;                        /* M(q-1) -> D(q) within the lane */
            dcv = __fmul_rn(sv, TF(q, T_MD));
            imx[q] = __fadd_rn(__fmul_rn(mpv, TF(q, T_MI)), __fmul_rn(ipv, TF(q, T_II)));
        }

        /* the D->D paths: one pass carrying M->D and D->D from the lane before ... */
        dcv = right_shift(dcv, mask, z);
        dmx[0] = 0.0f;
        for (int q = 0; q < Q; q++) {
            dmx[q] = __fadd_rn(dcv, dmx[q]);
            dcv = __fmul_rn(dmx[q], TDD(q));
        }
        /* ... then up to three passes extending only the carried D->D path */
        for (int j = 1; j < 4; j++) {
            dcv = right_shift(dcv, mask, z);
            bool changed = false;
            for (int q = 0; q < Q; q++) {
                const float sv = __fadd_rn(dcv, dmx[q]);
                changed = changed || sv > dmx[q];
                dmx[q] = sv;
                dcv = __fmul_rn(dcv, TDD(q));
            }
            /* HMMER serialises fully below M = 100; from 100 it stops at a pass that
               changed no D cell in any lane */
            if (M >= 100 && !(__ballot_sync(mask, changed) & mask)) break;
        }
        for (int q = 0; q < Q; q++) xEv = __fadd_rn(dmx[q], xEv);
        xE = lanes_sum(xEv, mask);

        xN = __fmul_rn(xN, ploop);
        xC = __fadd_rn(__fmul_rn(xC, ploop), __fmul_rn(xE, e_move));
        xJ = __fadd_rn(__fmul_rn(xJ, ploop), __fmul_rn(xE, e_loop));
        xB = __fadd_rn(__fmul_rn(xJ, pmove), __fmul_rn(xN, pmove));

        if (xE > 1.0e4f) {                       /* sparse rescaling */
            xN = __fdiv_rn(xN, xE);
            xC = __fdiv_rn(xC, xE);
            xJ = __fdiv_rn(xJ, xE);
            xB = __fdiv_rn(xB, xE);
            const float scale = __double2float_rn(1.0 / (double)xE);
            for (int q = 0; q < Q; q++) {
                mmx[q] = __fmul_rn(mmx[q], scale);
                dmx[q] = __fmul_rn(dmx[q], scale);
                imx[q] = __fmul_rn(imx[q], scale);
            }
            totscale = add_log(totscale, xE, unsure);
            xE = 1.0f;
        }
    }
#undef TF
#undef TDD

    /* C->T; HMMER's range errors (NaN, underflow to 0, overflow) left to the CPU */
    if (z != 0) return;
    const bool range_error = isnan(xC) || (L > 0 && xC == 0.0f) || isinf(xC);
    const float score = add_log(totscale, __fmul_rn(xC, pmove), unsure);
    out[item] = (unsure || range_error) ? __int_as_float(0x7fc00000) : score;
}
