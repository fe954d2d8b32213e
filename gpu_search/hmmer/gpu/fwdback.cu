/* HMMER 3.4's Forward and Backward parsers (p7_ForwardParser, p7_BackwardParser,
 * impl_sse/fwdback.c) and its domain definition (p7_DomainDecoding, the regions of
 * p7_domaindef_ByPosteriorHeuristics, and rescore_isolated_domain's stages for an envelope)
 * as CUDA kernels, bit for bit: HMMER's finishing on the GPU (launched by domaindef.py).
 *
 * What they compute
 *   forward_parser: for each (model, sequence) pair, the raw Forward score in nats (float32)
 *   that p7_ForwardParser returns for the model configured to the sequence's length, local
 *   multihit, as p7_Pipeline calls it after the Viterbi filter; where asked, the special
 *   states' rows 0..L (E N J B C and the row's scale, as P7_OMX's xmx holds them).
 *   backward_parser: the same pairs' Backward rows and score (p7_BackwardParser after the
 *   Forward parser, with its scale factors), what HMMER's domain definition starts from.
 *   Both also run as p7_Forward and p7_Backward do inside HMMER's domain definition: over a
 *   segment of the sequence (a region or an envelope) with the model configured to the whole
 *   sequence's length, multihit or unihit (the job's scalars), keeping the whole matrix.
 *   posterior_decoding: p7_Decoding's posterior probabilities from a segment's two matrices.
 *   optimal_accuracy: p7_OptimalAccuracy's matrix and score from those posteriors;
 *   oa_trace: p7_OATrace's alignment from them.
 *   null2_by_expectation: p7_Null2_ByExpectation's null2 odds from the posteriors, each
 *   residue's logf of them (glibc's logf carried over) and the domain's correction;
 *   sequence_null2_sum: a sequence's Kahan sum of those over its envelopes.
 *   domain_regions: from both parsers' rows, the posteriors of p7_DomainDecoding, the
 *   expected number of domains, and the regions HMMER then evaluates, each flagged where
 *   HMMER resolves it by stochastic traces (is_multidomain_region).
 *   region_traces, trace_clusters: such a region's 200 stochastic traces from its Forward
 *   matrix (p7_StochasticTrace with Easel's generator), their null2 (p7_Null2_ByTrace) and
 *   the clusters of their domains (p7_spensemble_Cluster), HMMER's envelopes of the region.
 *
 * Why they are exact
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
 *   infinite) are NaN too.  The rows take no log: they are HMMER's whatever the scores.
 *
 * Layout (packing.pack_fwdback_profiles): a model's block of floats at model_at[job]:
 *   tfv[8*Q][4]: for each q the 7 vectors BM MM IM DM MD MI II (the first four into node k,
 *   rotated as HMMER stores them), then Q vectors of DD; rfv[KP][Q][4] match odds ratios.
 *   Exactly HMMER's P7_OPROFILE tfv and rfv, lane z at [..][z].
 *
 * FORWARD_PARSER_ONLY: the file holds forward_parser alone (the filter cascade's Forward
 *   stage, which launches nothing else: compiled in a fraction of the whole file's time, the
 *   first model's wait on a host with no cubin yet).
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

/* HMMER's special-state row (p7X_E, N, J, B, C, SCALE), as P7_OMX's xmx holds it */
enum { X_E, X_N, X_J, X_B, X_C, X_SCALE, X_CELLS };

__device__ __forceinline__ void store_specials(float *row, float xE, float xN, float xJ, float xB, float xC,
                                               float scale)
{
    row[X_E] = xE;
    row[X_N] = xN;
    row[X_J] = xJ;
    row[X_B] = xB;
    row[X_C] = xC;
    row[X_SCALE] = scale;
}

/* HMMER's sparse rescaling of a row by its factor: N, J, B, C divided by it (E apart: the Forward
   sets it to 1, the Backward divides it too), the lane's cells multiplied by (float)(1 / factor) */
__device__ __forceinline__ void rescale_row(float factor, float &xN, float &xJ, float &xB, float &xC, float *mmx,
                                            float *dmx, float *imx, int Q)
{
    xN = __fdiv_rn(xN, factor);
    xJ = __fdiv_rn(xJ, factor);
    xB = __fdiv_rn(xB, factor);
    xC = __fdiv_rn(xC, factor);
    const float inv = __double2float_rn(1.0 / (double)factor);
    for (int q = 0; q < Q; q++) {
        mmx[q] = __fmul_rn(mmx[q], inv);
        dmx[q] = __fmul_rn(dmx[q], inv);
        imx[q] = __fmul_rn(imx[q], inv);
    }
}

/* a lane's row i of the whole matrix, as P7_OMX's dpf[i] holds it: Q vectors of M, D, I */
__device__ __forceinline__ void store_row(float *mx, int i, int Q, int z, const float *mmx, const float *dmx,
                                          const float *imx)
{
    float *row = mx + (long long)i * Q * 3 * 4;
    for (int q = 0; q < Q; q++) {
        row[(q * 3 + 0) * 4 + z] = mmx[q];
        row[(q * 3 + 1) * 4 + z] = dmx[q];
        row[(q * 3 + 2) * 4 + z] = imx[q];
    }
}

/* (float)((double) acc + log((double) x)), as C evaluates HMMER's float += log(),
   and whether the C library's log might make it another float */
__device__ __forceinline__ float add_log(float acc, float x, bool &unsure)
{
    const double r = log((double)x);
    const double d = fabs(r) * LOG_GUARD;
    unsure = unsure || __double2float_rn((double)acc + (r - d)) != __double2float_rn((double)acc + (r + d));
    return __double2float_rn((double)acc + r);
}

/* esl_sse_rightshift_ps(v, fill): lane z takes lane z-1's value, lane 0 the fill (zero but in
   the optimal accuracy's -inf) */
__device__ __forceinline__ float right_shift_fill(float v, float fill, unsigned mask, int z)
{
    const float from = __shfl_up_sync(mask, v, 1, 4);
    return z == 0 ? fill : from;
}

__device__ __forceinline__ float right_shift(float v, unsigned mask, int z)
{
    return right_shift_fill(v, 0.0f, mask, z);
}

/* the SSE horizontal sum HMMER uses: (v0 + v1) + (v2 + v3), the same in every lane */
__device__ __forceinline__ float lanes_sum(float v, unsigned mask)
{
    const float v0 = __shfl_sync(mask, v, 0, 4), v1 = __shfl_sync(mask, v, 1, 4);
    const float v2 = __shfl_sync(mask, v, 2, 4), v3 = __shfl_sync(mask, v, 3, 4);
    return __fadd_rn(__fadd_rn(v0, v1), __fadd_rn(v2, v3));
}

/* What a group of four threads knows of its pair (this block's job, jobs.cuh; the job's
   sequences longest first, four threads each): the model and its configuration (scalars M,
   nj, E->C, E->J; N, C, J move and loop for the length L, p7_oprofile_ReconfigRestLength in
   float), and the rows: the whole sequence, or a segment of it (first residue, length) as
   HMMER's domain definition runs the DP over a region or an envelope. */
struct Pair {
    int item, out, z, M, Q, L, Lr, first;    /* first: the segment's first residue in the sequence (1 if whole) */
    unsigned mask;                    /* the group's lanes */
    float nj, e_move, e_loop, pmove, ploop;
    const float *tfv, *rfv;           /* the model's profile (packing.pack_fwdback_profiles) */
    const uint8_t *dsq;               /* dsq[1..Lr] */
};

__device__ __forceinline__ bool take_pair(const int *jobs, const int *order_all, const long long *offsets,
                                          const uint8_t *residues, const int *segments, const long long *model_at,
                                          const float *profiles, Pair &p, int group = 4)
{
    /* group: threads a pair (4, 8, 16 or 32), its first four working: a kernel whose pairs
       branch apart at every step gives each its own warp */
    const int *job = jobs + blockIdx.y * JOB_INTS;
    const int lane = threadIdx.x & 31;
    if ((lane & (group - 1)) >= 4) return false;
    p.item = (int)((blockIdx.x * blockDim.x + threadIdx.x) / group);
    if (p.item >= job[JOB_N]) return false;      /* a group's four threads leave together */
    p.z = lane & 3;
    p.mask = 0xFu << (lane & ~(group - 1));
    p.out = job[JOB_OUT] + p.item;
    const int s = order_all[job[JOB_ORDER] + p.item];
    p.M = job[JOB_P];
    p.nj = __int_as_float(job[JOB_P + 1]);
    p.e_move = __int_as_float(job[JOB_P + 2]);
    p.e_loop = __int_as_float(job[JOB_P + 3]);
    p.Q = p.M <= 8 ? 2 : (p.M - 1) / 4 + 1;      /* p7O_NQF */
    p.tfv = profiles ? profiles + model_at[blockIdx.y] : nullptr;
    p.rfv = profiles ? p.tfv + 8 * p.Q * 4 : nullptr;
    const long long start = offsets[s];
    p.L = (int)(offsets[s + 1] - start);
    const int *seg = segments ? segments + 2 * (job[JOB_ORDER] + p.item) : nullptr;
    p.Lr = seg ? seg[1] : p.L;
    p.first = seg ? seg[0] : 1;
    p.dsq = residues ? residues + start - 1 + (seg ? seg[0] - 1 : 0) : nullptr;
    p.pmove = __fdiv_rn(__fadd_rn(2.0f, p.nj), __fadd_rn(__fadd_rn((float)p.L, 2.0f), p.nj));
    p.ploop = __fsub_rn(1.0f, p.pmove);
    return true;
}

extern "C" __global__ void __launch_bounds__(128)
forward_parser(const uint8_t *__restrict__ residues, const long long *__restrict__ offsets,
               const int *__restrict__ order_all, const int *__restrict__ jobs,
               const long long *__restrict__ model_at, const float *__restrict__ profiles,
               const int *__restrict__ segments, const long long *__restrict__ rows_at,
               float *__restrict__ rows_all, const long long *__restrict__ matrix_at,
               float *__restrict__ matrix_all, float *__restrict__ out_all)
{
    Pair p;
    if (!take_pair(jobs, order_all, offsets, residues, segments, model_at, profiles, p)) return;
    const int z = p.z, Q = p.Q, M = p.M, Lr = p.Lr;
    const unsigned mask = p.mask;
    const float *tfv = p.tfv, *rfv = p.rfv;
    const uint8_t *dsq = p.dsq;
    const float pmove = p.pmove, ploop = p.ploop, e_move = p.e_move, e_loop = p.e_loop;
    /* where asked for: the special states' rows (X_CELLS floats a row, rows 0..Lr), and the
       whole matrix as p7_Forward keeps it (rows 0..Lr of Q vectors of M, D, I; lane z at [z]) */
    float *xmx = rows_all ? rows_all + rows_at[p.out] : nullptr;
    float *mx = matrix_all ? matrix_all + matrix_at[p.out] : nullptr;

    float mmx[QMAX], dmx[QMAX], imx[QMAX];       /* this lane of the row (i-1, then i) */
    for (int q = 0; q < Q; q++) mmx[q] = dmx[q] = imx[q] = 0.0f;
    float xE = 0.0f, xN = 1.0f, xJ = 0.0f, xB = pmove, xC = 0.0f;
    float totscale = 0.0f;
    bool unsure = false;
    if (xmx && z == 0) store_specials(xmx, xE, xN, xJ, xB, xC, 1.0f);
    if (mx) store_row(mx, 0, Q, z, mmx, dmx, imx);

#define TF(q, t) tfv[((q) * 7 + (t)) * 4 + z]
#define TDD(q) tfv[(7 * Q + (q)) * 4 + z]
    for (int i = 1; i <= Lr; i++) {
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

        float scale_i = 1.0f;
        if (xE > 1.0e4f) {                       /* sparse rescaling */
            scale_i = xE;
            rescale_row(xE, xN, xJ, xB, xC, mmx, dmx, imx, Q);
            totscale = add_log(totscale, scale_i, unsure);
            xE = 1.0f;
        }
        if (xmx && z == 0) store_specials(xmx + i * X_CELLS, xE, xN, xJ, xB, xC, scale_i);
        if (mx) store_row(mx, i, Q, z, mmx, dmx, imx);
    }
#undef TF
#undef TDD

    /* C->T; HMMER's range errors (NaN, underflow to 0, overflow) left to the CPU */
    if (z != 0) return;
    const bool range_error = isnan(xC) || (Lr > 0 && xC == 0.0f) || isinf(xC);
    const float score = add_log(totscale, __fmul_rn(xC, pmove), unsure);
    out_all[p.out] = (unsure || range_error) ? __int_as_float(0x7fc00000) : score;
}

#ifndef FORWARD_PARSER_ONLY
/* HMMER's left shift (_mm_move_ss to 0, then a rotation): lane z takes lane z+1's value, lane 3
   a zero */
__device__ __forceinline__ float left_shift(float v, unsigned mask, int z)
{
    const float from = __shfl_sync(mask, v, (z + 1) & 3, 4);
    return z == 3 ? 0.0f : from;
}

/* HMMER 3.4's Backward parser (p7_BackwardParser, backward_engine with one row), bit for bit, as
 * forward_parser transcribes the Forward: one thread per SSE lane, each row from L down to 1
 * (the specials B, C, J, N, E; the D->D paths in one pass that carries xE and three that extend
 * only the D->D chain; the M->D paths last), then row 0.  Each row is scaled by the Forward's
 * factor for that row (fwd_rows), unless B passes 1e16, from where HMMER takes its own factors
 * (B where it exceeds 1e4) for the rest of the sequence.  Writes the special states' rows
 * (bck_rows: X_CELLS floats a row, rows 0..L), whether it took its own factors (own_scales:
 * P7_OMX's has_own_scales, which the decoding needs) and the Backward score (out; NaN as
 * forward_parser).
 */
extern "C" __global__ void __launch_bounds__(128)
backward_parser(const uint8_t *__restrict__ residues, const long long *__restrict__ offsets,
                const int *__restrict__ order_all, const int *__restrict__ jobs,
                const long long *__restrict__ model_at, const float *__restrict__ profiles,
                const int *__restrict__ segments, const long long *__restrict__ rows_at,
                const float *__restrict__ fwd_rows_all, float *__restrict__ bck_rows_all,
                const long long *__restrict__ matrix_at, float *__restrict__ matrix_all,
                int *__restrict__ own_scales_all, float *__restrict__ out_all)
{
    Pair p;
    if (!take_pair(jobs, order_all, offsets, residues, segments, model_at, profiles, p)) return;
    const int z = p.z, Q = p.Q, Lr = p.Lr;
    const unsigned mask = p.mask;
    const float *tfv = p.tfv, *rfv = p.rfv;
    const uint8_t *dsq = p.dsq;
    const float pmove = p.pmove, ploop = p.ploop, e_move = p.e_move, e_loop = p.e_loop;
    const float *fwd = fwd_rows_all + rows_at[p.out];
    float *bck = bck_rows_all + rows_at[p.out];
    float *mx = matrix_all ? matrix_all + matrix_at[p.out] : nullptr;

#define TF(q, t) tfv[((q) * 7 + (t)) * 4 + z]
#define TDD(q) tfv[(7 * Q + (q)) * 4 + z]
#define RF(x, q) rfv[((long long)(x) * Q + (q)) * 4 + z]
    float mmx[QMAX], dmx[QMAX], imx[QMAX];
    bool unsure = false;

    /* row L */
    float xJ = 0.0f, xB = 0.0f, xN = 0.0f;
    float xC = pmove;                            /* C->T */
    float xE = __fmul_rn(xC, e_move);            /* E->C, no tail */
    for (int q = 0; q < Q; q++) {
        mmx[q] = dmx[q] = xE;
        imx[q] = 0.0f;
    }
    float dpv = left_shift(dmx[Q - 1], mask, z), dcv = 0.0f;
    for (int q = Q - 1; q >= 0; q--) {           /* D->D, the first pass taking xE along */
        dcv = __fmul_rn(dpv, TDD(q));
        dmx[q] = __fadd_rn(dmx[q], dcv);
        dpv = dmx[q];
    }
    for (int j = 1; j < 4; j++) {                /* three more, extending the chain only */
        dcv = left_shift(dcv, mask, z);
        for (int q = Q - 1; q >= 0; q--) {
            dcv = __fmul_rn(dcv, TDD(q));
            dmx[q] = __fadd_rn(dmx[q], dcv);
        }
    }
    dcv = left_shift(dmx[0], mask, z);           /* M->D */
    for (int q = Q - 1; q >= 0; q--) {
        mmx[q] = __fadd_rn(mmx[q], __fmul_rn(dcv, TF(q, T_MD)));
        dcv = dmx[q];
    }
    float totscale = 0.0f;
    {
        const float scale = fwd[Lr * X_CELLS + X_SCALE];
        if (scale > 1.0f) {
            xE = __fdiv_rn(xE, scale);
            rescale_row(scale, xN, xJ, xB, xC, mmx, dmx, imx, Q);
        }
        totscale = add_log(0.0f, scale, unsure);
        if (z == 0) store_specials(bck + Lr * X_CELLS, xE, xN, xJ, xB, xC, scale);
        if (mx) store_row(mx, Lr, Q, z, mmx, dmx, imx);
    }

    /* rows L-1 .. 1 */
    bool own_scales = false;
    for (int i = Lr - 1; i >= 1; i--) {
        const int x = dsq[i + 1];
        /* 1. I(i), and M(i), D(i) without their paths to D and E; B(i) gathered */
        float tmmv = left_shift(TF(0, T_MM), mask, z);
        float timv = left_shift(TF(0, T_IM), mask, z);
        float tdmv = left_shift(TF(0, T_DM), mask, z);
        float mpv = left_shift(__fmul_rn(mmx[0], RF(x, 0)), mask, z);
        float xBv = 0.0f;
        for (int q = Q - 1; q >= 0; q--) {
            const float ipv = imx[q];
            imx[q] = __fadd_rn(__fmul_rn(ipv, TF(q, T_II)), __fmul_rn(mpv, timv));
            dmx[q] = __fmul_rn(mpv, tdmv);
            const float mcv = __fadd_rn(__fmul_rn(ipv, TF(q, T_MI)), __fmul_rn(mpv, tmmv));
            mpv = __fmul_rn(mmx[q], RF(x, q));
            mmx[q] = mcv;
            tdmv = TF(q, T_DM);
            timv = TF(q, T_IM);
            tmmv = TF(q, T_MM);
            xBv = __fadd_rn(xBv, __fmul_rn(mpv, TF(q, T_BM)));
        }
        /* 2. the specials */
        xB = lanes_sum(xBv, mask);
        xC = __fmul_rn(xC, ploop);
        xJ = __fadd_rn(__fmul_rn(xB, pmove), __fmul_rn(xJ, ploop));
        xN = __fadd_rn(__fmul_rn(xB, pmove), __fmul_rn(xN, ploop));
        xE = __fadd_rn(__fmul_rn(xC, e_move), __fmul_rn(xJ, e_loop));
        /* 3. {M,D}->E and one D->D pass */
        dpv = left_shift(__fadd_rn(dmx[0], xE), mask, z);
        for (int q = Q - 1; q >= 0; q--) {
            dcv = __fmul_rn(dpv, TDD(q));
            dmx[q] = __fadd_rn(dmx[q], __fadd_rn(dcv, xE));
            dpv = dmx[q];
            mmx[q] = __fadd_rn(mmx[q], xE);
        }
        /* 4. three more D->D passes */
        for (int j = 1; j < 4; j++) {
            dcv = left_shift(dcv, mask, z);
            for (int q = Q - 1; q >= 0; q--) {
                dcv = __fmul_rn(dcv, TDD(q));
                dmx[q] = __fadd_rn(dmx[q], dcv);
            }
        }
        /* 5. M->D */
        dcv = left_shift(dmx[0], mask, z);
        for (int q = Q - 1; q >= 0; q--) {
            mmx[q] = __fadd_rn(mmx[q], __fmul_rn(dcv, TF(q, T_MD)));
            dcv = dmx[q];
        }
        /* sparse rescaling: the Forward's factors, or from B > 1e16 on HMMER's own */
        if ((double)xB > 1.0e16) own_scales = true;   /* (1e16 is no float: compared in double, as C does) */
        const float scale = own_scales ? (xB > 1.0e4f ? xB : 1.0f) : fwd[i * X_CELLS + X_SCALE];
        if (scale > 1.0f) {
            xE = __fdiv_rn(xE, scale);
            rescale_row(scale, xN, xJ, xB, xC, mmx, dmx, imx, Q);
            totscale = add_log(totscale, scale, unsure);
        }
        if (z == 0) store_specials(bck + i * X_CELLS, xE, xN, xJ, xB, xC, scale);
        if (mx) store_row(mx, i, Q, z, mmx, dmx, imx);
    }

    /* row 0: only N and B */
    {
        const int x = dsq[1];
        float xBv = 0.0f;
        for (int q = 0; q < Q; q++)
            xBv = __fadd_rn(xBv, __fmul_rn(__fmul_rn(mmx[q], RF(x, q)), TF(q, T_BM)));
        xB = lanes_sum(xBv, mask);
        xN = __fadd_rn(__fmul_rn(xB, pmove), __fmul_rn(xN, ploop));
    }
#undef TF
#undef TDD
#undef RF
    if (z != 0) return;
    store_specials(bck, 0.0f, xN, 0.0f, xB, 0.0f, 1.0f);
    own_scales_all[p.out] = own_scales;
    const bool range_error = isnan(xN) || (Lr > 0 && xN == 0.0f) || isinf(xN);
    const float score = add_log(totscale, xN, unsure);
    out_all[p.out] = (unsure || range_error) ? __int_as_float(0x7fc00000) : score;
}

/* HMMER's domain-definition thresholds (p7_domaindef_Create's defaults) */
#define RT1 0.25f             /* a residue this likely in a domain opens a region */
#define RT2 0.10f             /* a region runs while mocc minus the B (E) posterior stays above this */
#define RT3 0.20f             /* a region of at least this many expected E-before-B is multidomain */

/* is_multidomain_region(): max over z of min(E before z, B after z) >= rt3; post as
   domain_regions lays it out (mocc, btot, etot in a row of X_CELLS) */
__device__ __forceinline__ bool multidomain(const float *post, int i, int j)
{
#define BTOT(i) post[(i) * X_CELLS + 1]
#define ETOT(i) post[(i) * X_CELLS + 2]
    float max = -1.0f;
    for (int z = i; z <= j; z++) {
        const float e = __fsub_rn(ETOT(z), ETOT(i - 1)), b = __fsub_rn(BTOT(j), BTOT(z - 1));
        const float expected = e < b ? e : b;
        max = max > expected ? max : expected;
    }
    return max >= RT3;
#undef BTOT
#undef ETOT
}

/* HMMER's p7_DomainDecoding and the region loop of p7_domaindef_ByPosteriorHeuristics, one
 * thread a pair, from the two parsers' rows: the posterior of each residue being in a domain
 * (mocc) and the cumulative expected B and E counts (btot, etot), in HMMER's float order; then
 * the regions HMMER evaluates, left to right.
 *
 * Writes at rows_at (rows 0..L, as the parsers' rows): post[i] = (mocc, btot, etot) in three
 * of a row's X_CELLS floats; regions[0..3n) = (i, j, multidomain) for n regions, n in
 * n_regions; nexpected (btot[L], HMMER's expected number of domains).  own_scales: the
 * Backward's flag per pair (backward_parser).
 */
extern "C" __global__ void __launch_bounds__(128)
domain_regions(const int *__restrict__ jobs, const long long *__restrict__ offsets,
               const int *__restrict__ order_all, const long long *__restrict__ rows_at,
               const float *__restrict__ fwd_rows_all, const float *__restrict__ bck_rows_all,
               const int *__restrict__ own_scales_all, float *__restrict__ post_all,
               int *__restrict__ regions_all, int *__restrict__ n_regions_all, float *__restrict__ nexpected_all)
{
    const int *job = jobs + blockIdx.y * JOB_INTS;
    const int item = (int)(blockIdx.x * blockDim.x + threadIdx.x);
    if (item >= job[JOB_N]) return;
    const int s = order_all[job[JOB_ORDER] + item];
    const int L = (int)(offsets[s + 1] - offsets[s]);
    const int out = job[JOB_OUT] + item;
    const float nj = __int_as_float(job[JOB_P + 1]);
    const float pmove = __fdiv_rn(__fadd_rn(2.0f, nj), __fadd_rn(__fadd_rn((float)L, 2.0f), nj));
    const float ploop = __fsub_rn(1.0f, pmove);
    const long long at = rows_at[out];
    const float *f = fwd_rows_all + at, *b = bck_rows_all + at;
    float *post = post_all + at;
    int *regions = regions_all + at;
    const bool own = own_scales_all[out] != 0;
#define F(i, c) f[(i) * X_CELLS + (c)]
#define B(i, c) b[(i) * X_CELLS + (c)]
#define MOCC(i) post[(i) * X_CELLS + 0]
#define BTOT(i) post[(i) * X_CELLS + 1]
#define ETOT(i) post[(i) * X_CELLS + 2]

    /* p7_DomainDecoding */
    float scaleproduct = __double2float_rn(1.0 / (double)B(0, X_N));
    MOCC(0) = BTOT(0) = ETOT(0) = 0.0f;
    for (int i = 1; i <= L; i++) {
        BTOT(i) = __fadd_rn(BTOT(i - 1), __fmul_rn(__fmul_rn(__fmul_rn(F(i - 1, X_B), B(i - 1, X_B)),
                                                             F(i - 1, X_SCALE)), scaleproduct));
        if (own) scaleproduct = __fmul_rn(scaleproduct, __fdiv_rn(F(i - 1, X_SCALE), B(i - 1, X_SCALE)));
        ETOT(i) = __fadd_rn(ETOT(i - 1), __fmul_rn(__fmul_rn(__fmul_rn(F(i, X_E), B(i, X_E)), F(i, X_SCALE)),
                                                   scaleproduct));
        float njcp = __fmul_rn(__fmul_rn(__fmul_rn(F(i - 1, X_N), B(i, X_N)), ploop), scaleproduct);
        njcp = __fadd_rn(njcp, __fmul_rn(__fmul_rn(__fmul_rn(F(i - 1, X_J), B(i, X_J)), ploop), scaleproduct));
        njcp = __fadd_rn(njcp, __fmul_rn(__fmul_rn(__fmul_rn(F(i - 1, X_C), B(i, X_C)), ploop), scaleproduct));
        MOCC(i) = __double2float_rn(1.0 - (double)njcp);
    }
    nexpected_all[out] = BTOT(L);

    /* the regions: opened where mocc reaches rt1, from the last residue before it where
       mocc minus the B posterior fell below rt2; closed where mocc minus the E posterior does */
    int n = 0, i = -1;
    bool triggered = false;
    for (int j = 1; j <= L; j++) {
        if (!triggered) {
            if (__fsub_rn(MOCC(j), __fsub_rn(BTOT(j), BTOT(j - 1))) < RT2) i = j;
            else if (i == -1) i = j;
            if (MOCC(j) >= RT1) triggered = true;
        } else if (__fsub_rn(MOCC(j), __fsub_rn(ETOT(j), ETOT(j - 1))) < RT2) {
            regions[3 * n] = i;
            regions[3 * n + 1] = j;
            regions[3 * n + 2] = multidomain(post, i, j);
            n++;
            i = -1;
            triggered = false;
        }
    }
    n_regions_all[out] = n;
#undef F
#undef B
#undef MOCC
#undef BTOT
#undef ETOT
}

/* HMMER's p7_Decoding: the posterior probability of each cell from a segment's whole Forward
 * and Backward matrices (forward_parser and backward_parser with segments and matrices), in
 * place of the Backward's as HMMER's envelope rescoring does it: M and I the product of the
 * two matrices' cells times the row's total scale, D zero; the special states' rows N, J, C
 * (E, B zero).  Four threads a pair, lane z each.  range[out] is 1
 * where HMMER's scale product overflows (p7_Decoding's eslERANGE: HMMER drops the domain).
 */
extern "C" __global__ void __launch_bounds__(128)
posterior_decoding(const int *__restrict__ jobs, const long long *__restrict__ offsets,
                   const int *__restrict__ order_all, const int *__restrict__ segments,
                   const long long *__restrict__ rows_at, const float *__restrict__ fwd_rows_all,
                   float *__restrict__ bck_rows_all, const long long *__restrict__ matrix_at,
                   const float *__restrict__ fwd_mx_all, float *__restrict__ bck_mx_all,
                   const int *__restrict__ own_scales_all, int *__restrict__ range_all)
{
    Pair p;
    if (!take_pair(jobs, order_all, offsets, nullptr, segments, nullptr, nullptr, p)) return;
    const int z = p.z, Q = p.Q, Lr = p.Lr, out = p.out;
    const float ploop = p.ploop;
    const float *f = fwd_rows_all + rows_at[out];
    float *b = bck_rows_all + rows_at[out];
    const float *fmx = fwd_mx_all + matrix_at[out];
    float *pmx = bck_mx_all + matrix_at[out];     /* the Backward's matrix becomes the posteriors */
    const bool own = own_scales_all[out] != 0;
#define F(i, c) f[(i) * X_CELLS + (c)]
#define B(i, c) b[(i) * X_CELLS + (c)]
#define CELL(mx, i, q, st) mx[(((long long)(i) * Q + (q)) * 3 + (st)) * 4 + z]

    float scaleproduct = __double2float_rn(1.0 / (double)B(0, X_N));
    __syncwarp(p.mask);                          /* every lane has read row 0 before lane 0 clears it */
    for (int q = 0; q < Q; q++) CELL(pmx, 0, q, 0) = CELL(pmx, 0, q, 1) = CELL(pmx, 0, q, 2) = 0.0f;
    for (int i = 1; i <= Lr; i++) {
        const float totr = __fmul_rn(scaleproduct, F(i, X_SCALE));
        for (int q = 0; q < Q; q++) {
            CELL(pmx, i, q, 0) = __fmul_rn(__fmul_rn(CELL(fmx, i, q, 0), CELL(pmx, i, q, 0)), totr);
            CELL(pmx, i, q, 1) = 0.0f;
            CELL(pmx, i, q, 2) = __fmul_rn(__fmul_rn(CELL(fmx, i, q, 2), CELL(pmx, i, q, 2)), totr);
        }
        if (z == 0) {   /* each row's specials from row i-1 of the Forward and row i of the Backward */
            const float n = __fmul_rn(__fmul_rn(__fmul_rn(F(i - 1, X_N), B(i, X_N)), ploop), scaleproduct);
            const float j = __fmul_rn(__fmul_rn(__fmul_rn(F(i - 1, X_J), B(i, X_J)), ploop), scaleproduct);
            const float c = __fmul_rn(__fmul_rn(__fmul_rn(F(i - 1, X_C), B(i, X_C)), ploop), scaleproduct);
            if (own) scaleproduct = __fmul_rn(scaleproduct, __fdiv_rn(F(i, X_SCALE), B(i, X_SCALE)));
            B(i, X_E) = 0.0f;
            B(i, X_N) = n;
            B(i, X_J) = j;
            B(i, X_C) = c;
            B(i, X_B) = 0.0f;
        } else if (own) {
            scaleproduct = __fmul_rn(scaleproduct, __fdiv_rn(F(i, X_SCALE), B(i, X_SCALE)));
        }
    }
    if (z == 0) {
        B(0, X_E) = B(0, X_N) = B(0, X_J) = B(0, X_C) = B(0, X_B) = 0.0f;
        range_all[out] = isinf(scaleproduct) ? 1 : 0;
    }
#undef F
#undef B
#undef CELL
}

/* _mm_max_ps's lane rule: a > b ? a : b (b on a tie) */
__device__ __forceinline__ float sse_max(float a, float b) { return a > b ? a : b; }

/* esl_sse_hmax_ps: max(max(v0, v1), max(v2, v3)) by _mm_max_ps's rule, the same in every lane */
__device__ __forceinline__ float lanes_max(float v, unsigned mask)
{
    const float v0 = __shfl_sync(mask, v, 0, 4), v1 = __shfl_sync(mask, v, 1, 4);
    const float v2 = __shfl_sync(mask, v, 2, 4), v3 = __shfl_sync(mask, v, 3, 4);
    return sse_max(sse_max(v0, v1), sse_max(v2, v3));
}

/* HMMER's p7_OptimalAccuracy over a segment's posteriors (posterior_decoding's matrix and
 * rows): the max-sum alignment of posterior probabilities, HMMER's transitions used only as
 * masks (a path counts where the model's odds ratio for it is above 0; a masked path adds
 * +0.0), the match cell from B, then M, I, D of the row before, one D->D pass inside the row
 * and always three more carrying the chain, E the lanes' maximum, and J, C, N, B as HMMER
 * sets them from which special transitions are zero.  Writes the OA matrix and rows (the
 * trace reads them) and the score (C of the last row) in oasc.  Four threads a pair.
 */
extern "C" __global__ void __launch_bounds__(128)
optimal_accuracy(const int *__restrict__ jobs, const long long *__restrict__ offsets,
                 const int *__restrict__ order_all, const int *__restrict__ segments,
                 const long long *__restrict__ model_at, const float *__restrict__ profiles,
                 const long long *__restrict__ rows_at, const float *__restrict__ pp_rows_all,
                 float *__restrict__ oa_rows_all, const long long *__restrict__ matrix_at,
                 const float *__restrict__ pp_mx_all, float *__restrict__ oa_mx_all, float *__restrict__ oasc_all)
{
    Pair p;
    if (!take_pair(jobs, order_all, offsets, nullptr, segments, model_at, profiles, p)) return;
    const int z = p.z, Q = p.Q, Lr = p.Lr;
    const unsigned mask = p.mask;
    const float *tfv = p.tfv;
    const float *pp = pp_rows_all + rows_at[p.out];
    float *oa = oa_rows_all + rows_at[p.out];
    const float *pmx = pp_mx_all + matrix_at[p.out];
    float *omx = oa_mx_all + matrix_at[p.out];
    const float ninf = -__int_as_float(0x7f800000);
    /* which special transitions are zero: N, C, J loop and move from the length (ploop,
       pmove), E's from the job (unihit: E->C 1, E->J 0) */
    const bool loop0 = p.ploop == 0.0f, move0 = p.pmove == 0.0f;
    const bool e_loop0 = p.e_loop == 0.0f, e_move0 = p.e_move == 0.0f;
#define TF(q, t) tfv[((q) * 7 + (t)) * 4 + z]
#define TDD(q) tfv[(7 * Q + (q)) * 4 + z]
#define ON(t, v) ((t) > 0.0f ? (v) : 0.0f)
#define PP(i, q, st) pmx[(((long long)(i) * Q + (q)) * 3 + (st)) * 4 + z]
#define X(r, i, c) r[(i) * X_CELLS + (c)]

    float mmx[QMAX], dmx[QMAX], imx[QMAX];
    for (int q = 0; q < Q; q++) mmx[q] = dmx[q] = imx[q] = ninf;
    store_row(omx, 0, Q, z, mmx, dmx, imx);
    float xE = ninf, xN = 0.0f, xJ = ninf, xB = 0.0f, xC = ninf;
    if (z == 0) store_specials(oa, xE, xN, xJ, xB, xC, 1.0f);
    for (int i = 1; i <= Lr; i++) {
        float dcv = ninf, xEv = ninf;
        float mpv = right_shift_fill(mmx[Q - 1], ninf, mask, z);
        float dpv = right_shift_fill(dmx[Q - 1], ninf, mask, z);
        float ipv = right_shift_fill(imx[Q - 1], ninf, mask, z);
        for (int q = 0; q < Q; q++) {
            float sv = ON(TF(q, T_BM), xB);
            sv = sse_max(sv, ON(TF(q, T_MM), mpv));
            sv = sse_max(sv, ON(TF(q, T_IM), ipv));
            sv = sse_max(sv, ON(TF(q, T_DM), dpv));
            sv = __fadd_rn(sv, PP(i, q, 0));
            xEv = sse_max(xEv, sv);
            mpv = mmx[q];
            dpv = dmx[q];
            ipv = imx[q];
            mmx[q] = sv;
            dmx[q] = dcv;
            dcv = ON(TF(q, T_MD), sv);
            const float s2 = sse_max(ON(TF(q, T_MI), mpv), ON(TF(q, T_II), ipv));
            imx[q] = __fadd_rn(s2, PP(i, q, 2));
        }
        dcv = right_shift_fill(dcv, ninf, mask, z);
        for (int q = 0; q < Q; q++) {
            dmx[q] = sse_max(dcv, dmx[q]);
            dcv = ON(TDD(q), dmx[q]);
        }
        for (int j = 1; j < 4; j++) {
            dcv = right_shift_fill(dcv, ninf, mask, z);
            for (int q = 0; q < Q; q++) {
                dmx[q] = sse_max(dcv, dmx[q]);
                dcv = ON(TDD(q), dcv);
            }
        }
        for (int q = 0; q < Q; q++) xEv = sse_max(xEv, dmx[q]);
        xE = lanes_max(xEv, mask);
        const float jp = loop0 ? 0.0f : __fadd_rn(xJ, X(pp, i, X_J));
        xJ = sse_max(jp, e_loop0 ? 0.0f : xE);
        const float cp = loop0 ? 0.0f : __fadd_rn(xC, X(pp, i, X_C));
        xC = sse_max(cp, e_move0 ? 0.0f : xE);
        xN = loop0 ? 0.0f : __fadd_rn(xN, X(pp, i, X_N));
        xB = sse_max(move0 ? 0.0f : xN, move0 ? 0.0f : xJ);
        store_row(omx, i, Q, z, mmx, dmx, imx);
        if (z == 0) store_specials(oa + i * X_CELLS, xE, xN, xJ, xB, xC, 1.0f);
    }
#undef TF
#undef TDD
#undef ON
#undef PP
#undef X
    if (z == 0) oasc_all[p.out] = xC;
}

/* P7_TRACE's state codes (hmmer.h) */
enum { T_ST_M = 1, T_ST_D = 2, T_ST_I = 3, T_ST_S = 4, T_ST_N = 5, T_ST_B = 6, T_ST_E = 7, T_ST_C = 8, T_ST_T = 9,
       T_ST_J = 10 };

/* A trace as p7_trace_AppendWithPP grows it: N, C, J keep their residue and posterior only
   when they repeat the state before them; D keeps its node; M, I keep all three. */
struct Trace {
    int *st, *k, *i;
    float *pp;
    int n, cap;
    __device__ bool append(int s, int kk, int ii, float p)
    {
        if (n >= cap) return false;
        const bool loop = (s == T_ST_N || s == T_ST_C || s == T_ST_J) && n > 0 && st[n - 1] == s;
        const bool emits = s == T_ST_M || s == T_ST_I;
        st[n] = s;
        k[n] = (s == T_ST_M || s == T_ST_I || s == T_ST_D) ? kk : 0;
        i[n] = (emits || loop) ? ii : 0;
        pp[n] = (emits || loop) ? p : 0.0f;
        n++;
        return true;
    }
};

/* HMMER's p7_OATrace: the optimal accuracy alignment traced back through the OA matrix
 * (optimal_accuracy) and the posteriors (posterior_decoding), one thread a pair, with HMMER's
 * choices and their ties exactly (no tolerance: a match cell's predecessors M > I > D > B by
 * esl_vec_FArgMax, D and I taking M on a tie, C and J taking E, B taking N only if strictly
 * above J, E's cell the last M of the highest value in HMMER's scan, D only if strictly above),
 * then p7_trace_Reverse (each run of N, C, J's residues moved back by one, the trace reversed).
 * Writes the trace at trace_at (st, k, i, pp: its coordinates in the segment, 1..Lr) and its
 * length in trace_n (-1 if it would pass trace_cap[out] states).
 */
extern "C" __global__ void __launch_bounds__(128)
oa_trace(const int *__restrict__ jobs, const long long *__restrict__ offsets, const int *__restrict__ order_all,
         const int *__restrict__ segments, const long long *__restrict__ model_at,
         const float *__restrict__ profiles, const long long *__restrict__ rows_at,
         const float *__restrict__ pp_rows_all, const float *__restrict__ oa_rows_all,
         const long long *__restrict__ matrix_at, const float *__restrict__ pp_mx_all,
         const float *__restrict__ oa_mx_all, const long long *__restrict__ trace_at,
         const int *__restrict__ trace_cap, int *__restrict__ st_all, int *__restrict__ k_all,
         int *__restrict__ i_all, float *__restrict__ tpp_all, int *__restrict__ trace_n)
{
    /* one thread a pair: the jobs' pairs as take_pair numbers them, four to a group */
    const int *job = jobs + blockIdx.y * JOB_INTS;
    const int item = (int)(blockIdx.x * blockDim.x + threadIdx.x);
    if (item >= job[JOB_N]) return;
    const int out = job[JOB_OUT] + item;
    const int M = job[JOB_P];
    const int Q = M <= 8 ? 2 : (M - 1) / 4 + 1;
    const float nj = __int_as_float(job[JOB_P + 1]);
    const float e_move = __int_as_float(job[JOB_P + 2]), e_loop = __int_as_float(job[JOB_P + 3]);
    const int s = order_all[job[JOB_ORDER] + item];
    const int L = (int)(offsets[s + 1] - offsets[s]);
    const int Lr = segments[2 * (job[JOB_ORDER] + item) + 1];
    const float pmove = __fdiv_rn(__fadd_rn(2.0f, nj), __fadd_rn(__fadd_rn((float)L, 2.0f), nj));
    const float ploop = __fsub_rn(1.0f, pmove);
    const float *tfv = profiles + model_at[blockIdx.y];
    const float *pp = pp_rows_all + rows_at[out], *oa = oa_rows_all + rows_at[out];
    const float *pmx = pp_mx_all + matrix_at[out], *omx = oa_mx_all + matrix_at[out];
    const float ninf = -__int_as_float(0x7f800000);
    Trace tr{st_all + trace_at[out], k_all + trace_at[out], i_all + trace_at[out], tpp_all + trace_at[out], 0,
             trace_cap[out]};
#define TFV(q, t, r) tfv[((q) * 7 + (t)) * 4 + (r)]
#define TDDV(q, r) tfv[(7 * Q + (q)) * 4 + (r)]
#define CELL(mx, i, q, st, r) mx[(((long long)(i) * Q + (q)) * 3 + (st)) * 4 + (r)]
#define X(rows, i, c) rows[(i) * X_CELLS + (c)]
    /* a cell of row i at (q-1, r), or the right-shifted vector's lane r where q = 0 (zero in lane 0) */
#define BEFORE(mx, i, q, st, r) \
    ((q) > 0 ? CELL(mx, i, (q) - 1, st, r) : ((r) > 0 ? CELL(mx, i, Q - 1, st, (r) - 1) : 0.0f))

    int i = Lr, k = 0;
    bool ok = tr.append(T_ST_T, 0, i, 0.0f) && tr.append(T_ST_C, 0, i, 0.0f);
    int s0 = T_ST_C;
    while (ok && s0 != T_ST_S) {
        int s1;
        const int q = (k - 1) % Q, r = (k - 1) / Q;     /* the current cell of M, D, I (k >= 1 there) */
        if (s0 == T_ST_M) {
            float path[4];
            path[3] = TFV(q, T_BM, r) == 0.0f ? ninf : X(oa, i - 1, X_B);
            path[0] = TFV(q, T_MM, r) == 0.0f ? ninf : BEFORE(omx, i - 1, q, 0, r);
            path[1] = TFV(q, T_IM, r) == 0.0f ? ninf : BEFORE(omx, i - 1, q, 2, r);
            path[2] = TFV(q, T_DM, r) == 0.0f ? ninf : BEFORE(omx, i - 1, q, 1, r);
            int best = 0;
            for (int c = 1; c < 4; c++)
                if (path[c] > path[best]) best = c;
            const int choice[4] = {T_ST_M, T_ST_I, T_ST_D, T_ST_B};
            s1 = choice[best];
            k--;
            i--;
        } else if (s0 == T_ST_D) {
            const float tmd = q > 0 ? TFV(q - 1, T_MD, r) : (r > 0 ? TFV(Q - 1, T_MD, r - 1) : 0.0f);
            const float tdd = q > 0 ? TDDV(q - 1, r) : (r > 0 ? TDDV(Q - 1, r - 1) : 0.0f);
            const float p0 = tmd == 0.0f ? ninf : BEFORE(omx, i, q, 0, r);
            const float p1 = tdd == 0.0f ? ninf : BEFORE(omx, i, q, 1, r);
            s1 = p0 >= p1 ? T_ST_M : T_ST_D;
            k--;
        } else if (s0 == T_ST_I) {
            const float p0 = TFV(q, T_MI, r) == 0.0f ? ninf : CELL(omx, i - 1, q, 0, r);
            const float p1 = TFV(q, T_II, r) == 0.0f ? ninf : CELL(omx, i - 1, q, 2, r);
            s1 = p0 >= p1 ? T_ST_M : T_ST_I;
            i--;
        } else if (s0 == T_ST_N) {
            s1 = i == 0 ? T_ST_S : T_ST_N;
        } else if (s0 == T_ST_C || s0 == T_ST_J) {
            const int c = s0 == T_ST_C ? X_C : X_J;
            const float loop = ploop, e = s0 == T_ST_C ? e_move : e_loop;
            const float p0 = loop == 0.0f ? ninf : __fadd_rn(X(oa, i - 1, c), X(pp, i, c));
            const float p1 = e == 0.0f ? ninf : X(oa, i, X_E);
            s1 = p0 > p1 ? s0 : T_ST_E;
        } else if (s0 == T_ST_E) {
            float max = ninf;
            int smax = T_ST_M, kmax = 1;
            for (int qq = 0; qq < Q; qq++) {
                for (int rr = 0; rr < 4; rr++)          /* M takes ties: the later one */
                    if (CELL(omx, i, qq, 0, rr) >= max) {
                        max = CELL(omx, i, qq, 0, rr);
                        smax = T_ST_M;
                        kmax = rr * Q + qq + 1;
                    }
                for (int rr = 0; rr < 4; rr++)          /* D only strictly above */
                    if (CELL(omx, i, qq, 1, rr) > max) {
                        max = CELL(omx, i, qq, 1, rr);
                        smax = T_ST_D;
                        kmax = rr * Q + qq + 1;
                    }
            }
            s1 = smax;
            k = kmax;
        } else {                                         /* B */
            const float p0 = pmove == 0.0f ? ninf : X(oa, i, X_N);
            const float p1 = pmove == 0.0f ? ninf : X(oa, i, X_J);
            s1 = p0 > p1 ? T_ST_N : T_ST_J;
        }
        /* get_postprob, with the k and i after the step */
        float post = 0.0f;
        if (s1 == T_ST_M || s1 == T_ST_I) {
            const int q1 = (k - 1) % Q, r1 = (k - 1) / Q;
            post = CELL(pmx, i, q1, s1 == T_ST_M ? 0 : 2, r1);
        } else if ((s1 == T_ST_N || s1 == T_ST_C || s1 == T_ST_J) && s1 == s0) {
            post = X(pp, i, s1 == T_ST_N ? X_N : s1 == T_ST_C ? X_C : X_J);
        }
        ok = tr.append(s1, k, i, post);
        if ((s1 == T_ST_N || s1 == T_ST_J || s1 == T_ST_C) && s1 == s0) i--;
        s0 = s1;
    }
#undef TFV
#undef TDDV
#undef CELL
#undef X
#undef BEFORE
    if (!ok) {
        trace_n[out] = -1;
        return;
    }
    /* p7_trace_Reverse */
    const int n = tr.n;
    for (int z = 0; z + 1 < n; z++) {
        const int a = tr.st[z];
        if ((a == T_ST_N || a == T_ST_C || a == T_ST_J) && tr.st[z + 1] == a && tr.i[z] == 0 && tr.i[z + 1] > 0) {
            tr.i[z] = tr.i[z + 1];
            tr.i[z + 1] = 0;
            tr.pp[z] = tr.pp[z + 1];
            tr.pp[z + 1] = 0.0f;
        }
    }
    for (int z = 0; z < n / 2; z++) {
        const int y = n - z - 1;
        int t = tr.st[y]; tr.st[y] = tr.st[z]; tr.st[z] = t;
        t = tr.k[y]; tr.k[y] = tr.k[z]; tr.k[z] = t;
        t = tr.i[y]; tr.i[y] = tr.i[z]; tr.i[z] = t;
        const float f = tr.pp[y]; tr.pp[y] = tr.pp[z]; tr.pp[z] = f;
    }
    trace_n[out] = n;
}

/* glibc's logf (since glibc 2.27: sysdeps/ieee754/flt-32/e_logf.c, ARM's optimized-routines
 * algorithm), which HMMER's null2 takes from the C library at run time: log(x) = k ln2 + log(c)
 * + log1p(r), c from a 16-entry table by the mantissa's top bits, r = z/c - 1 through a
 * tabulated 1/c, log1p(r) a polynomial of degree 4, all in double and rounded once to float.
 * It is not correctly rounded (0.82 ulp), so neither CUDA's logf nor (float) log((double) x)
 * gives its floats.  Products and sums unfused (glibc's FMA build gives the same floats).
 * The table is __logf_data's: 1/c and log(c) for each entry, as the bits of the doubles. */
__device__ const unsigned long long LOGF_TABLE[32] = {
    0x3ff661ec79f8f3beULL, 0xbfd57bf7808caadeULL, 0x3ff571ed4aaf883dULL, 0xbfd2bef0a7c06ddbULL,
    0x3ff49539f0f010b0ULL, 0xbfd01eae7f513a67ULL, 0x3ff3c995b0b80385ULL, 0xbfcb31d8a68224e9ULL,
    0x3ff30d190c8864a5ULL, 0xbfc6574f0ac07758ULL, 0x3ff25e227b0b8ea0ULL, 0xbfc1aa2bc79c8100ULL,
    0x3ff1bb4a4a1a343fULL, 0xbfba4e76ce8c0e5eULL, 0x3ff12358f08ae5baULL, 0xbfb1973c5a611cccULL,
    0x3ff0953f419900a7ULL, 0xbfa252f438e10c1eULL, 0x3ff0000000000000ULL, 0x0000000000000000ULL,
    0x3fee608cfd9a47acULL, 0x3faaa5aa5df25984ULL, 0x3feca4b31f026aa0ULL, 0x3fbc5e53aa362eb4ULL,
    0x3feb2036576afce6ULL, 0x3fc526e57720db08ULL, 0x3fe9c2d163a1aa2dULL, 0x3fcbc2860d224770ULL,
    0x3fe886e6037841edULL, 0x3fd1058bc8a07ee1ULL, 0x3fe767dcf5534862ULL, 0x3fd4043057b6ee09ULL};
#define LOGF_LN2 0x3fe62e42fefa39efULL                 /* ln 2 */
#define LOGF_A0 0xbfd00ea348b88334ULL                  /* the polynomial's r^4, r^3, r^2 terms */
#define LOGF_A1 0x3fd5575b0be00b6aULL
#define LOGF_A2 0xbfdffffef20a4123ULL

__device__ __forceinline__ float glibc_logf(float x)
{
    unsigned ix = __float_as_uint(x);
    if (ix == 0x3f800000u) return 0.0f;
    if (ix - 0x00800000u >= 0x7f000000u) {                       /* zero, subnormal, inf, NaN or negative */
        if (ix * 2u == 0u) return -__int_as_float(0x7f800000);
        if (ix == 0x7f800000u) return x;
        if ((ix & 0x80000000u) || ix * 2u >= 0xff000000u) return __int_as_float(0x7fc00000);
        ix = __float_as_uint(__fmul_rn(x, 8388608.0f)) - (23u << 23);   /* a subnormal, normalised */
    }
    const unsigned tmp = ix - 0x3f330000u;                        /* the subinterval around 1/c */
    const int i = (int)((tmp >> 19) % 16u);
    const int k = (int)tmp >> 23;
    const unsigned iz = ix - (tmp & (0x1ffu << 23));
    const double invc = __longlong_as_double((long long)LOGF_TABLE[2 * i]);
    const double logc = __longlong_as_double((long long)LOGF_TABLE[2 * i + 1]);
    const double zd = (double)__uint_as_float(iz);
    const double r = __dsub_rn(__dmul_rn(zd, invc), 1.0);
    const double y0 = __dadd_rn(logc, __dmul_rn((double)k, __longlong_as_double((long long)LOGF_LN2)));
    const double r2 = __dmul_rn(r, r);
    double y = __dadd_rn(__dmul_rn(__longlong_as_double((long long)LOGF_A1), r),
                         __longlong_as_double((long long)LOGF_A2));
    y = __dadd_rn(__dmul_rn(__longlong_as_double((long long)LOGF_A0), r2), y);
    y = __dadd_rn(__dmul_rn(y, r2), __dadd_rn(y0, r));
    return __double2float_rn(y);
}

#ifndef K_RES
#define K_RES 20                  /* the alphabet's canonical residues; codes K_RES+1 .. KP-3 degenerate */
#endif

/* null2's odds of the codes past the canonical residues, as HMMER ends its null2 functions:
   esl_abc_FAvgScVec (a degenerate code the float mean of its residues': degenerate[x], bit y
   for residue y), then gap, '*' and '~' 1 */
__device__ __forceinline__ void null2_other_codes(float *null2, const unsigned *degenerate)
{
    for (int x = K_RES + 1; x < KP - 2; x++) {
        float sum = 0.0f;
        int n = 0;
        for (int y = 0; y < K_RES; y++)
            if ((degenerate[x] >> y) & 1u) {
                sum = __fadd_rn(sum, null2[y]);
                n++;
            }
        null2[x] = __fdiv_rn(sum, (float)n);
    }
    null2[K_RES] = null2[KP - 2] = null2[KP - 1] = 1.0f;
}

/* HMMER's p7_Null2_ByExpectation and the domain's null2 correction, as its envelope rescoring
 * (rescore_isolated_domain) computes them from an envelope's posteriors (posterior_decoding):
 * the expected uses of each M and I state and of N, C, J over the segment (rows 1..Lr summed
 * in order, times (float)(1.0 / Lr)); each residue's null2 odds the lanes' sums over q of M
 * times the match odds plus I, the horizontal sum (v0 + v1) + (v2 + v3), plus (N + C) + J;
 * a degenerate code the float mean of its residues' (degenerate[x]: bit y for residue y), gap,
 * '*' and '~' 1.  Then n2sc[i] = logf(null2[dsq[i]]) for the segment's residues (glibc's logf)
 * and their float sum in order, the domain's correction.  Four threads a pair; writes
 * null2_all[out * KP + x] (if not null), n2sc at n2sc_all + rows_at[out] / X_CELLS (one
 * float a row: [1..Lr]) and domcorrection_all[out].
 */
extern "C" __global__ void __launch_bounds__(128)
null2_by_expectation(const uint8_t *__restrict__ residues, const long long *__restrict__ offsets,
                     const int *__restrict__ order_all, const int *__restrict__ jobs,
                     const int *__restrict__ segments, const long long *__restrict__ model_at,
                     const float *__restrict__ profiles, const unsigned *__restrict__ degenerate,
                     const long long *__restrict__ rows_at, const float *__restrict__ pp_rows_all,
                     const long long *__restrict__ matrix_at, const float *__restrict__ pp_mx_all,
                     float *__restrict__ null2_all, float *__restrict__ n2sc_all,
                     float *__restrict__ domcorrection_all)
{
    Pair p;
    if (!take_pair(jobs, order_all, offsets, residues, segments, model_at, profiles, p)) return;
    const int z = p.z, Q = p.Q, Lr = p.Lr;
    const float *rfv = p.rfv;
    const float *pp = pp_rows_all + rows_at[p.out];
    const float *pmx = pp_mx_all + matrix_at[p.out];
#define RF(x, q) rfv[((long long)(x) * Q + (q)) * 4 + z]
#define PP(i, q, st) pmx[(((long long)(i) * Q + (q)) * 3 + (st)) * 4 + z]
#define X(i, c) pp[(i) * X_CELLS + (c)]

    float m0[QMAX], i0[QMAX];
    for (int q = 0; q < Q; q++) {
        m0[q] = PP(1, q, 0);
        i0[q] = PP(1, q, 2);
    }
    float xN = X(1, X_N), xC = X(1, X_C), xJ = X(1, X_J);
    for (int i = 2; i <= Lr; i++) {
        for (int q = 0; q < Q; q++) {
            m0[q] = __fadd_rn(PP(i, q, 0), m0[q]);
            i0[q] = __fadd_rn(PP(i, q, 2), i0[q]);
        }
        xN = __fadd_rn(xN, X(i, X_N));
        xC = __fadd_rn(xC, X(i, X_C));
        xJ = __fadd_rn(xJ, X(i, X_J));
    }
    const float norm = __double2float_rn(__ddiv_rn(1.0, (double)(float)Lr));   /* HMMER's float norm = 1.0 / Ld */
    for (int q = 0; q < Q; q++) {
        m0[q] = __fmul_rn(m0[q], norm);
        i0[q] = __fmul_rn(i0[q], norm);
    }
    const float xfactor = __fadd_rn(__fadd_rn(__fmul_rn(xN, norm), __fmul_rn(xC, norm)), __fmul_rn(xJ, norm));
    float null2[KP];
    for (int x = 0; x < K_RES; x++) {
        float sv = 0.0f;
        for (int q = 0; q < Q; q++) {
            sv = __fadd_rn(sv, __fmul_rn(m0[q], RF(x, q)));
            sv = __fadd_rn(sv, i0[q]);
        }
        null2[x] = __fadd_rn(lanes_sum(sv, p.mask), xfactor);
    }
#undef RF
#undef PP
#undef X
    null2_other_codes(null2, degenerate);
    if (z != 0) return;
    if (null2_all)
        for (int x = 0; x < KP; x++) null2_all[(long long)p.out * KP + x] = null2[x];
    float *n2sc = n2sc_all + rows_at[p.out] / X_CELLS;
    float domcorrection = 0.0f;
    for (int i = 1; i <= Lr; i++) {
        n2sc[i] = glibc_logf(null2[p.dsq[i]]);
        domcorrection = __fadd_rn(domcorrection, n2sc[i]);
    }
    domcorrection_all[p.out] = domcorrection;
}

/* The sequence's null2 bias before its log, as p7_Pipeline takes it: esl_vec_FSum over n2sc[0..L]
 * of the whole sequence (each envelope's residues their n2sc, every other position 0), Easel's
 * Kahan sum in float, in order.  One thread a pair: pair p's envelopes are env_start[p] ..
 * env_start[p+1]-1, left to right, envelope e over residues env_i[e] .. env_j[e] with its
 * n2sc at n2sc[n2sc_start[e]] on.
 */
extern "C" __global__ void __launch_bounds__(128)
sequence_null2_sum(const long long *__restrict__ offsets, const int *__restrict__ seq_of_pair, int n_pairs,
                   const long long *__restrict__ env_start, const int *__restrict__ env_i,
                   const int *__restrict__ env_j, const long long *__restrict__ n2sc_start,
                   const float *__restrict__ n2sc, float *__restrict__ sum_out)
{
    const int p = (int)(blockIdx.x * blockDim.x + threadIdx.x);
    if (p >= n_pairs) return;
    const int s = seq_of_pair[p];
    const int L = (int)(offsets[s + 1] - offsets[s]);
    long long e = env_start[p];
    const long long e_end = env_start[p + 1];
    float sum = 0.0f, c = 0.0f;
    for (int pos = 0; pos <= L; pos++) {
        float v = 0.0f;
        if (e < e_end && pos >= env_i[e]) {
            v = n2sc[n2sc_start[e] + (pos - env_i[e])];
            if (pos == env_j[e]) e++;
        }
        const float y = __fsub_rn(v, c);
        const float t = __fadd_rn(sum, y);
        c = __fsub_rn(__fsub_rn(t, sum), y);
        sum = t;
    }
    sum_out[p] = sum;
}
/* ---- Regions HMMER resolves by stochastic traces (region_trace_ensemble, p7_domaindef.c) ---- */

#define N_TRACES 200                  /* P7_DOMAINDEF's nsamples */
#define SAMPLE_INTS 5                 /* a sampled domain: trace, i, j (sequence), k, m (model) */
/* Easel's fast generator as p7_domaindef_Create seeds it (42) and region_trace_ensemble reseeds
   it at every region: x = 69069 x + 1 on 32 bits from esl_mix3(42, 87654321, 12345678), each
   draw x / 2^32 in double */
#define TRACE_SEED 1265258399u

__device__ __forceinline__ int imin(int a, int b) { return a < b ? a : b; }
__device__ __forceinline__ int imax(int a, int b) { return a > b ? a : b; }

/* (x / 2^32 in double: the product by 2^-32 is the same number, exactly, without a division) */
__device__ __forceinline__ double esl_draw(unsigned &x)
{
    x = x * 69069u + 1u;
    return __dmul_rn((double)x, 2.3283064365386962890625e-10);
}

/* threads a region in region_traces (domaindef.py's THREADS_PER_PAIR): a warp a region, as its
   walks branch apart at every step (one region's E step or domain's end would hold the
   others of its warp) */
#ifndef TRACE_GROUP
#define TRACE_GROUP 32
#endif

/* 2^-50: a product within this of the roll decides nothing, the division then does */
#define CHOOSE_MARGIN 8.8817841970012523e-16

/* esl_vec_FNorm (Easel's float Kahan sum; a zero sum gives 1/n each) then esl_rnd_FChoose (the
   roll against the running sum over the double total, in double): which of n paths.
   roll < RN(acc / norm) is decided without the division where acc is more than 2^-50 (relative)
   away from roll x norm: above it the quotient is past roll's next double, below it at most
   roll (three roundings of 2^-53 each cannot bridge 2^-50); within it (about once in 10^14
   draws), and for NaN or infinite sums, by the division as Easel makes it */
__device__ __forceinline__ int esl_choose(unsigned &x, float *path, int n)
{
    float sum = 0.0f, c = 0.0f;
    for (int a = 0; a < n; a++) {
        const float y = __fsub_rn(path[a], c);
        const float t = __fadd_rn(sum, y);
        c = __fsub_rn(__fsub_rn(t, sum), y);
        sum = t;
    }
    for (int a = 0; a < n; a++) path[a] = sum != 0.0f ? __fdiv_rn(path[a], sum) : __fdiv_rn(1.0f, (float)n);
    const double roll = esl_draw(x);
    double norm = 0.0, acc = 0.0;
    for (int a = 0; a < n; a++) norm = __dadd_rn(norm, (double)path[a]);
    const double at = __dmul_rn(roll, norm);
    const double above = __dmul_rn(at, 1.0 + CHOOSE_MARGIN), below = __dmul_rn(at, 1.0 - CHOOSE_MARGIN);
    for (int a = 0; a < n; a++) {
        acc = __dadd_rn(acc, (double)path[a]);
        if (acc > above) return a;
        if (acc >= below && roll < __ddiv_rn(acc, norm)) return a;
    }
    return n - 1;                     /* (not reached: the last ratio is 1) */
}

/* HMMER's p7_StochasticTrace (impl_sse/stotrace.c) from a region's Forward matrix, 200 times,
 * with what region_trace_ensemble takes from each trace: its domains (p7_trace_Index: from the
 * first to the last M after each B), each domain's null2 odds by p7_Null2_ByTrace (the M and I
 * states' uses counted at their node, times (float)(1 / Ld); each residue's odds the lanes' sums
 * over q of count times match odds, (v0 + v1) + (v2 + v3)), and each residue's sum over the
 * traces: the domain's null2 odds for a residue of a domain after its first, 1.0 for the first
 * and for every residue outside domains (the float adds in trace order).  Then the region's
 * n2sc = logf(sum / 200) (glibc's logf).
 *
 * A trace step draws once (N none): M, D, I, C, J and B from their paths (float products of the
 * matrix and the model's transitions, in HMMER's order) by esl_choose; E from the row's M and D
 * cells of each q times (float)(1 / E), summed in double, restarting at q = 0 without resetting
 * the sum.  The Forward matrix and rows: forward_parser's over the region (segments), the model
 * multihit for the whole sequence's length.
 *
 * Four threads a region (its lanes, as the parsers; the first four of its TRACE_GROUP threads, a
 * warp, the other 28 idle): all four walk each trace alike, each counts the nodes of its lane
 * and owns the residues pos = z (mod 4).  Writes the sampled domains
 * (SAMPLE_INTS each, trace by trace, each trace's left to right, in the sequence's coordinates)
 * at samples_at[out] (at most sample_cap[out]) and their number, n2sc at rows_at[out] / X_CELLS
 * ([1..Lr]), and status[out]: 0, or 1 where the domains overflowed their buffer, 2 where a trace
 * failed (HMMER would stop with an error): the host leaves those pairs to the CPU.
 */
extern "C" __global__ void __launch_bounds__(128)
region_traces(const uint8_t *__restrict__ residues, const long long *__restrict__ offsets,
              const int *__restrict__ order_all, const int *__restrict__ jobs,
              const long long *__restrict__ model_at, const float *__restrict__ profiles,
              const int *__restrict__ segments, const unsigned *__restrict__ degenerate,
              const long long *__restrict__ rows_at, const float *__restrict__ fwd_rows_all,
              const long long *__restrict__ matrix_at, const float *__restrict__ fwd_mx_all,
              const long long *__restrict__ samples_at, const int *__restrict__ sample_cap,
              int *__restrict__ samples_all, int *__restrict__ n_samples_all, float *__restrict__ n2sc_all,
              int *__restrict__ status_all)
{
    Pair p;
    if (!take_pair(jobs, order_all, offsets, residues, segments, model_at, profiles, p, TRACE_GROUP)) return;
    const int z = p.z, Q = p.Q, Lr = p.Lr;
    const float *tfv = p.tfv, *rfv = p.rfv;
    const uint8_t *dsq = p.dsq;
    const float *xmx = fwd_rows_all + rows_at[p.out];
    const float *mx = fwd_mx_all + matrix_at[p.out];
    int *samples = samples_all + (long long)SAMPLE_INTS * samples_at[p.out];
    const int cap = sample_cap[p.out];
    float *n2sc = n2sc_all + rows_at[p.out] / X_CELLS;
#define CELL(i, q, st, r) mx[(((long long)(i) * Q + (q)) * 3 + (st)) * 4 + (r)]
#define XM(i, c) xmx[(i) * X_CELLS + (c)]
#define TFV(q, t, r) tfv[((q) * 7 + (t)) * 4 + (r)]
#define TDDV(q, r) tfv[(7 * Q + (q)) * 4 + (r)]
#define RF(x, q) rfv[((long long)(x) * Q + (q)) * 4 + z]

    for (int pos = 1; pos <= Lr; pos++)
        if ((pos & 3) == z) n2sc[pos] = 0.0f;
    float count[QMAX];                       /* this lane's nodes' uses in the domain being traced */
    for (int q = 0; q < Q; q++) count[q] = 0.0f;
    /* an M step's operands, node k = r * Q + q + 1 at row i: B(i-1), M, I, D(i-1,k-1) (zero at
       node 1: the right shift's), then the transitions B->M, M->M, I->M, D->M into node k */
#define M_OPERANDS(o, ii, qq, rr) do {                                                            \
        const int qp_ = (qq) > 0 ? (qq) - 1 : Q - 1, rp_ = (qq) > 0 ? (rr) : (rr) - 1;            \
        const bool none_ = rp_ < 0;                                                               \
        o[0] = XM((ii) - 1, X_B);                                                                 \
        o[1] = none_ ? 0.0f : CELL((ii) - 1, qp_, 0, rp_);                                        \
        o[2] = none_ ? 0.0f : CELL((ii) - 1, qp_, 2, rp_);                                        \
        o[3] = none_ ? 0.0f : CELL((ii) - 1, qp_, 1, rp_);                                        \
        o[4] = TFV(qq, T_BM, rr);                                                                 \
        o[5] = TFV(qq, T_MM, rr);                                                                 \
        o[6] = TFV(qq, T_IM, rr);                                                                 \
        o[7] = TFV(qq, T_DM, rr);                                                                 \
    } while (0)
    float ahead[8];                          /* M(ahead_i, ahead_k)'s operands, loaded a step early */
    int ahead_i = -1, ahead_k = -1;
    unsigned x = TRACE_SEED;
    int n = 0, status = 0;
    for (int t = 0; t < N_TRACES && status == 0; t++) {
        const int trace_first = n;
        int i = Lr, k = 0, s0 = T_ST_C;
        int sqfrom = 0, sqto = 0, hmmfrom = 0, hmmto = 0, Ld = 0;
        while (s0 != T_ST_S) {
            int s1 = -1;
            if ((s0 == T_ST_M || s0 == T_ST_I || s0 == T_ST_C || s0 == T_ST_J) && i < 1) break;   /* (no path) */
            if (s0 == T_ST_M) {             /* M(i,k) from B(i-1), M, I, D(i-1,k-1) */
                float op[8];
                if (ahead_i == i && ahead_k == k) {
                    for (int c = 0; c < 8; c++) op[c] = ahead[c];
                } else {
                    M_OPERANDS(op, i, (k - 1) % Q, (k - 1) / Q);
                }
                /* the likeliest next step is M(i-1,k-1) (a walk mostly follows the diagonal): its
                   operands loaded now, in flight while this step's draw is made */
                if (i >= 2 && k >= 2) {
                    M_OPERANDS(ahead, i - 1, (k - 2) % Q, (k - 2) / Q);
                    ahead_i = i - 1;
                    ahead_k = k - 1;
                }
                float path[4] = {__fmul_rn(op[0], op[4]), __fmul_rn(op[1], op[5]), __fmul_rn(op[2], op[6]),
                                 __fmul_rn(op[3], op[7])};
                const int states[4] = {T_ST_B, T_ST_M, T_ST_I, T_ST_D};
                s1 = states[esl_choose(x, path, 4)];
                k--;
                i--;
            } else if (s0 == T_ST_D) {      /* D(i,k) from M, D(i,k-1) */
                const int q = (k - 1) % Q, r = (k - 1) / Q;
                const int qp = q > 0 ? q - 1 : Q - 1, rp = q > 0 ? r : r - 1;
                const bool none = rp < 0;
                float path[2] = {none ? 0.0f : __fmul_rn(CELL(i, qp, 0, rp), TFV(qp, T_MD, rp)),
                                 none ? 0.0f : __fmul_rn(CELL(i, qp, 1, rp), TDDV(qp, rp))};
                s1 = esl_choose(x, path, 2) == 0 ? T_ST_M : T_ST_D;
                k--;
            } else if (s0 == T_ST_I) {      /* I(i,k) from M, I(i-1,k) */
                const int q = (k - 1) % Q, r = (k - 1) / Q;
                float path[2] = {__fmul_rn(CELL(i - 1, q, 0, r), TFV(q, T_MI, r)),
                                 __fmul_rn(CELL(i - 1, q, 2, r), TFV(q, T_II, r))};
                s1 = esl_choose(x, path, 2) == 0 ? T_ST_M : T_ST_I;
                i--;
            } else if (s0 == T_ST_N) {
                s1 = i == 0 ? T_ST_S : T_ST_N;
            } else if (s0 == T_ST_C || s0 == T_ST_J) {   /* C(i), J(i) from themselves at i-1, or E(i) */
                const int c = s0 == T_ST_C ? X_C : X_J;
                float path[2] = {__fmul_rn(XM(i - 1, c), p.ploop),
                                 __fmul_rn(__fmul_rn(XM(i, X_E), s0 == T_ST_C ? p.e_move : p.e_loop),
                                           XM(i, X_SCALE))};
                s1 = esl_choose(x, path, 2) == 0 ? s0 : T_ST_E;
            } else if (s0 == T_ST_E) {      /* E(i) from M(i,k) or D(i,k): the row scanned in order */
                const double roll = esl_draw(x);
                const float norm = __fdiv_rn(1.0f, XM(i, X_E));
                double sum = 0.0;
                const float *row = &CELL(i, 0, 0, 0);    /* q's M then D cells, lanes 0..3: row[12 q ..] */
                for (int pass = 0; pass < 3 && s1 < 0; pass++) {
                    float next[8];                       /* (the next q's cells loaded while q's are added) */
                    for (int c = 0; c < 8; c++) next[c] = row[c];
                    for (int q = 0; q < Q && s1 < 0; q++) {
                        float cur[8];
                        for (int c = 0; c < 8; c++) cur[c] = next[c];
                        if (q + 1 < Q)
                            for (int c = 0; c < 8; c++) next[c] = row[12 * (q + 1) + c];
                        for (int c = 0; c < 8; c++) {
                            sum = __dadd_rn(sum, (double)__fmul_rn(cur[c], norm));
                            if (roll < sum) {
                                k = (c & 3) * Q + q + 1;
                                s1 = c < 4 ? T_ST_M : T_ST_D;
                                break;
                            }
                        }
                    }
                    if (s1 < 0 && sum < 0.99) break;           /* (HMMER: not normalized, an error) */
                }
                sqto = 0;                   /* a domain, traced from its end */
                Ld = 0;
            } else if (s0 == T_ST_B) {      /* B(i) from N(i) or J(i) */
                float path[2] = {__fmul_rn(XM(i, X_N), p.pmove), __fmul_rn(XM(i, X_J), p.pmove)};
                s1 = esl_choose(x, path, 2) == 0 ? T_ST_N : T_ST_J;
            }
            if (s1 < 0) break;

            /* what the state appended as (s1, k, i) adds to region_trace_ensemble's tallies */
            if (s1 == T_ST_M || s1 == T_ST_I) {         /* p7_Null2_ByTrace's use of node k */
                Ld++;
                if ((k - 1) / Q == z) count[(k - 1) % Q] = __fadd_rn(count[(k - 1) % Q], 1.0f);
            }
            if (s1 == T_ST_M) {
                if (sqto == 0) {
                    sqto = i;
                    hmmto = k;
                }
                sqfrom = i;
                hmmfrom = k;
            }
            if (s1 == T_ST_B) {             /* the domain is whole: its null2, its residues' sums */
                const float norm = __fdiv_rn(1.0f, (float)Ld);
                float null2[KP];
                /* (each residue's sum over q in order; the residues' sums side by side, in registers) */
                float sv[K_RES];
#pragma unroll
                for (int y = 0; y < K_RES; y++) sv[y] = 0.0f;
                for (int q = 0; q < Q; q++) {
                    const float c = __fmul_rn(count[q], norm);
#pragma unroll
                    for (int y = 0; y < K_RES; y++) sv[y] = __fadd_rn(sv[y], __fmul_rn(c, RF(y, q)));
                }
#pragma unroll
                for (int y = 0; y < K_RES; y++)
                    null2[y] = lanes_sum(sv[y], p.mask);   /* (+ the I and N, C, J terms: all zero here) */
                null2_other_codes(null2, degenerate);
                for (int q = 0; q < Q; q++) count[q] = 0.0f;
                for (int pos = sqfrom + ((z - sqfrom) & 3); pos <= sqto; pos += 4)    /* (this lane's) */
                    n2sc[pos] = __fadd_rn(n2sc[pos], pos == sqfrom ? 1.0f : null2[dsq[pos]]);
                if (n >= cap) {
                    status = 1;
                    break;
                }
                if (z == 0) {
                    int *h = samples + SAMPLE_INTS * n;
                    h[0] = t;
                    h[1] = sqfrom + p.first - 1;
                    h[2] = sqto + p.first - 1;
                    h[3] = hmmfrom;
                    h[4] = hmmto;
                }
                n++;
            }
            if ((s1 == T_ST_N || s1 == T_ST_J || s1 == T_ST_C) && s1 == s0) {   /* a residue outside domains */
                if ((i & 3) == z) n2sc[i] = __fadd_rn(n2sc[i], 1.0f);
                i--;
            }
            s0 = s1;
        }
        if (status == 0 && s0 != T_ST_S) status = 2;
        if (z == 0)                         /* the trace's domains, traced right to left, put left to right */
            for (int a = trace_first, b = n - 1; a < b; a++, b--)
                for (int c = 0; c < SAMPLE_INTS; c++) {
                    const int keep = samples[SAMPLE_INTS * a + c];
                    samples[SAMPLE_INTS * a + c] = samples[SAMPLE_INTS * b + c];
                    samples[SAMPLE_INTS * b + c] = keep;
                }
    }
#undef M_OPERANDS
#undef CELL
#undef XM
#undef TFV
#undef TDDV
#undef RF
    for (int pos = 1; pos <= Lr; pos++)
        if ((pos & 3) == z) n2sc[pos] = glibc_logf(__fdiv_rn(n2sc[pos], (float)N_TRACES));
    if (z != 0) return;
    n_samples_all[p.out] = n;
    status_all[p.out] = status;
}

/* link_spsamples with P7_DOMAINDEF's defaults: two sampled domains link where they overlap by
   0.8 of the shorter in the sequence and in the model (the model's overlap without HMMER's +1),
   and their start or end diagonals differ by at most 4 */
__device__ __forceinline__ bool samples_linked(const int *h1, const int *h2)
{
    int nov = imin(h1[2], h2[2]) - imax(h1[1], h2[1]) + 1;
    int n = imin(h1[2] - h1[1] + 1, h2[2] - h2[1] + 1);
    if (__fdiv_rn((float)nov, (float)n) < 0.8f) return false;
    nov = imin(h1[4], h2[4]) - imax(h1[3], h2[3]);
    n = imin(h1[4] - h1[3] + 1, h2[4] - h2[3] + 1);
    if (__fdiv_rn((float)nov, (float)n) < 0.8f) return false;
    if (abs((h1[1] - h1[3]) - (h2[1] - h2[3])) <= 4) return true;
    return abs((h1[2] - h1[4]) - (h2[2] - h2[4])) <= 4;
}

/* esl_vec_IArgMax: the first index of the largest */
__device__ __forceinline__ int first_argmax(const int *v, int n)
{
    int best = 0;
    for (int a = 1; a < n; a++)
        if (v[a] > v[best]) best = a;
    return best;
}

#define CLUSTER_INTS 7                /* i, j, k, m, cluster, probability's bits, dominated */

__device__ __forceinline__ int warp_min(int v)
{
    for (int d = 16; d > 0; d >>= 1) v = imin(v, __shfl_xor_sync(0xffffffffu, v, d));
    return v;
}

__device__ __forceinline__ int warp_max(int v)
{
    for (int d = 16; d > 0; d >>= 1) v = imax(v, __shfl_xor_sync(0xffffffffu, v, d));
    return v;
}

/* The end of region_trace_ensemble: p7_spensemble_Cluster of a region's sampled domains
 * (region_traces) with P7_DOMAINDEF's defaults, then the dominated clusters dropped.
 *   - Easel's single linkage (esl_cluster_SingleLinkage: its two stacks, vertices taken from
 *     the end of the unlinked one, deleted by swapping in its last), clusters numbered as found;
 *   - a cluster counts where the traces holding one of its samples (counted as HMMER does, a
 *     trace again only after another's sample) are at least 0.25 of the 200; its ends the
 *     leftmost start and rightmost end that at least ceilf(0.02 x those traces) samples share
 *     (the most shared if none), each coordinate apart; dropped if they cross;
 *   - the clusters sorted by start (stably, as glibc's qsort merges), then for each pair whose
 *     sequence overlap is 0.8 of the shorter the less probable marked dominated (the earlier on
 *     a tie), the pass over later clusters stopping at an overlap of exactly 0.
 * A warp a region: the links of a vertex to 32 unlinked ones tested at once, the deletions then
 * made by lane 0 in the stack's order (a test reads no slot a deletion before it writes: those
 * lie above it), so the stacks and numbers are Easel's; the counts and ends over the samples
 * by all lanes; the sort and the dominance (a few clusters) by lane 0.  work: 3 n +
 * CLUSTER_INTS n + width ints at work_at[g] (n: the region's samples, width: its length or its
 * model's, the larger, plus 1).  Writes the clusters kept, (i, j) each in the sequence's
 * coordinates, at clusters_at[g] and their number (-1 where more than cluster_cap[g]).
 */
extern "C" __global__ void __launch_bounds__(128)
trace_clusters(int n_regions, const long long *__restrict__ samples_at, const int *__restrict__ n_samples_all,
               const int *__restrict__ samples_all, const long long *__restrict__ work_at, int *__restrict__ work_all,
               const long long *__restrict__ clusters_at, const int *__restrict__ cluster_cap,
               int *__restrict__ clusters_all, int *__restrict__ n_clusters_all)
{
    const int g = (int)((blockIdx.x * blockDim.x + threadIdx.x) >> 5);
    const int lane = (int)(threadIdx.x & 31);
    if (g >= n_regions) return;               /* (a whole warp: blocks of whole warps) */
    const int n = n_samples_all[g];
    const int *sp = samples_all + (long long)SAMPLE_INTS * samples_at[g];
    int *a = work_all + work_at[g], *b = a + n, *c = b + n, *sig = c + n, *epc = sig + CLUSTER_INTS * n;
#define H(h) (sp + SAMPLE_INTS * (h))

    /* esl_cluster_SingleLinkage */
    for (int v = lane; v < n; v += 32) a[v] = n - v - 1;
    __syncwarp();
    int na = n, nb = 0, nc = 0;               /* (every lane keeps the stacks' sizes) */
    while (na > 0) {
        if (lane == 0) b[nb] = a[na - 1];
        nb++;
        na--;
        __syncwarp();
        while (nb > 0) {
            const int v = b[--nb];
            if (lane == 0) c[v] = nc;
            for (int top = na - 1; top >= 0; top -= 32) {     /* a[top], a[top - 1], ... as Easel scans */
                const int u = top - lane;
                const bool linked = u >= 0 && samples_linked(H(v), H(a[u]));
                const unsigned found = __ballot_sync(0xffffffffu, linked);
                __syncwarp();                 /* (every lane's reads of a[] before lane 0 moves its slots) */
                if (lane == 0) {
                    int m = na, o = nb;
                    for (unsigned f = found; f; f &= f - 1) {     /* (lane order: u downwards) */
                        const int at = top - (__ffs(f) - 1);
                        const int w = a[at];
                        a[at] = a[--m];
                        b[o++] = w;
                    }
                }
                na -= __popc(found);
                nb += __popc(found);
                __syncwarp();
            }
        }
        nc++;
    }
    /* each cluster's traces: a sample counts unless one before it of its trace is in its cluster
       (the samples come trace by trace) */
    int *ninc = a;                            /* (a reused) */
    for (int cl = lane; cl < nc; cl += 32) ninc[cl] = 0;
    __syncwarp();
    for (int h = lane; h < n; h += 32) {
        bool counts = true;
        for (int e = h - 1; e >= 0 && H(e)[0] == H(h)[0] && counts; e--) counts = c[e] != c[h];
        if (counts) atomicAdd(&ninc[c[h]], 1);
    }
    __syncwarp();
    int nsig = 0;
    for (int cl = 0; cl < nc; cl++) {
        if (__fdiv_rn((float)ninc[cl], (float)N_TRACES) < 0.25f) continue;
        const int field[4] = {1, 3, 2, 4};  /* a sample's i, k, j, m */
        const int threshold = (int)ceilf(__fmul_rn((float)ninc[cl], 0.02f));
        int best[4];
        for (int d = 0; d < 4; d++) {        /* i and k leftmost, j and m rightmost */
            int lo = 0x7fffffff, hi = -0x7fffffff;
            for (int h = lane; h < n; h += 32)
                if (c[h] == cl) {
                    lo = imin(lo, H(h)[field[d]]);
                    hi = imax(hi, H(h)[field[d]]);
                }
            lo = warp_min(lo);
            hi = warp_max(hi);
            const int width = hi - lo + 1;
            for (int w = lane; w < width; w += 32) epc[w] = 0;
            __syncwarp();
            for (int h = lane; h < n; h += 32)
                if (c[h] == cl) atomicAdd(&epc[H(h)[field[d]] - lo], 1);
            __syncwarp();
            int e;
            if (d < 2) {
                for (e = lo; e <= hi; e++)
                    if (epc[e - lo] >= threshold) break;
                if (e > hi) e = lo + first_argmax(epc, width);
            } else {
                for (e = hi; e >= lo; e--)
                    if (epc[e - lo] >= threshold) break;
                if (e < lo) e = lo + first_argmax(epc, width);
            }
            best[d] = e;
            __syncwarp();                     /* (epc read by all before the next coordinate's) */
        }
        if (best[0] > best[2] || best[1] > best[3]) continue;   /* (i > j or k > m) */
        if (lane == 0) {
            int *s = sig + CLUSTER_INTS * nsig;
            s[0] = best[0];
            s[1] = best[2];
            s[2] = best[1];
            s[3] = best[3];
            s[4] = cl;
            s[5] = (int)__float_as_uint(__fdiv_rn((float)ninc[cl], (float)N_TRACES));
            s[6] = 0;
        }
        nsig++;
    }
#undef H
    if (lane != 0) return;
    for (int d = 1; d < nsig; d++)          /* by start, stably */
        for (int e = d; e > 0 && sig[CLUSTER_INTS * (e - 1)] > sig[CLUSTER_INTS * e]; e--)
            for (int f = 0; f < CLUSTER_INTS; f++) {
                const int keep = sig[CLUSTER_INTS * e + f];
                sig[CLUSTER_INTS * e + f] = sig[CLUSTER_INTS * (e - 1) + f];
                sig[CLUSTER_INTS * (e - 1) + f] = keep;
            }
    for (int d = 0; d < nsig; d++) {         /* who dominates whom */
        int *s = sig + CLUSTER_INTS * d;
        for (int d2 = d + 1; d2 < nsig; d2++) {
            int *s2 = sig + CLUSTER_INTS * d2;
            const int nov = imin(s[1], s2[1]) - imax(s[0], s2[0]) + 1;
            if (nov == 0) break;
            const int len = imin(s[1] - s[0] + 1, s2[1] - s2[0] + 1);
            if (__fdiv_rn((float)nov, (float)len) >= 0.8f) {
                if (__uint_as_float((unsigned)s[5]) > __uint_as_float((unsigned)s2[5])) s2[6] = 1;
                else s[6] = 1;
            }
        }
    }
    int kept = 0;
    int *out = clusters_all + 2 * clusters_at[g];
    for (int d = 0; d < nsig; d++) {
        const int *s = sig + CLUSTER_INTS * d;
        if (s[6]) continue;
        if (kept < cluster_cap[g]) {
            out[2 * kept] = s[0];
            out[2 * kept + 1] = s[1];
        }
        kept++;
    }
    n_clusters_all[g] = kept <= cluster_cap[g] ? kept : -1;
}
#endif /* FORWARD_PARSER_ONLY */
