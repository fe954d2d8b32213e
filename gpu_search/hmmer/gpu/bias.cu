/* HMMER 3.4's bias filter (p7_bg_FilterScore) as a CUDA kernel.
 *
 * What it computes
 *   bias_filter: for each sequence, the Forward log-likelihood (nats, float32) of the
 *   two-state filter HMM of p7_bg_SetFilter(): state 0 emits the background, state 1
 *   the model's composition.  A transcription of Easel's esl_hmm_Forward() line by
 *   line, as hmmer/_forward2.py is on the CPU: float32 products and sums in Easel's
 *   order (the __f*_rn intrinsics keep NVRTC from fusing them into FMAs), each row
 *   rescaled by its maximum, the row's scale added as (float) log((double) max).
 *   The host adds the length terms (L logf(p1) + logf(1 - p1)) as it does for the CPU
 *   score.
 *
 *   Exactness: each row's scale is the C library's
 *   (float) log((double) max), and CUDA's double log() may differ from the C library's
 *   in its last bit (each is within 1 ulp of the exact value).  Rounded to a float, the
 *   two agree unless a float rounding boundary lies within those ulps, about one row in
 *   2^24 with the guard below: wherever every double within LOG_GUARD (relative, 16
 *   ulps) of CUDA's log rounds to the same float, the C library's does too, and the
 *   score is bit for bit the CPU's; elsewhere the sequence's score is NaN, and the host
 *   scores it on the CPU (cascade.py: BiasScores).
 *
 * Design: one thread per sequence (the recursion is two states wide), the
 *   sequences longest first so that a warp's threads end together; the emission
 *   odds (KP x 2 floats) read through the L1 cache; several models a launch, a
 *   row of blocks each (jobs.cuh).
 */

#ifndef KP
#define KP 29
#endif

#include "jobs.cuh"

typedef unsigned char uint8_t;

/* 2^-48: 16 double ulps of the value (at least), against the 2 the two libraries' logs
   may differ by; the tests raise it to flag every row */
#ifndef LOG_GUARD
#define LOG_GUARD 3.552713678800501e-15
#endif

/* (float) log((double) x), and whether the C library's might round to another float */
__device__ __forceinline__ float scale_log(float x, bool &unsure)
{
    const double r = log((double)x);
    const double d = fabs(r) * LOG_GUARD;
    unsure = unsure || __double2float_rn(r - d) != __double2float_rn(r + d);
    return __double2float_rn(r);
}

extern "C" __global__ void __launch_bounds__(128)
bias_filter(const uint8_t *__restrict__ residues, const long long *__restrict__ offsets,
            const int *__restrict__ order_all, const int *__restrict__ jobs,
            const float *__restrict__ eo_all,        /* [job][KP][2] emission odds */
            float *__restrict__ out_all)
{
    /* this block's model (jobs.cuh); t10, t11: its state 1 -> 0 and 1 -> 1 */
    const int *job = jobs + blockIdx.y * JOB_INTS;
    const int item = blockIdx.x * blockDim.x + threadIdx.x;
    if (item >= job[JOB_N]) return;
    const int *order = order_all + job[JOB_ORDER];
    float *out = out_all + job[JOB_OUT];
    const float t10 = __int_as_float(job[JOB_P]), t11 = __int_as_float(job[JOB_P + 1]);
    const float *eo = eo_all + (long long)blockIdx.y * (KP * 2);
    const int s = order[item];
    const long long start = offsets[s];
    const int L = (int)(offsets[s + 1] - start);
    const uint8_t *seq = residues + start;

    /* p7_bg_SetLength: t[0][0] = p1 = L/(L+1), t[0][1] = 1 - p1 */
    const float t00 = __fdiv_rn((float)L, (float)(L + 1));
    const float t01 = __fsub_rn(1.0f, t00);

    int x = seq[0];
    float d0 = __fmul_rn(__ldg(&eo[x * 2 + 0]), 0.999f);          /* pi[0] */
    float d1 = __fmul_rn(__ldg(&eo[x * 2 + 1]), 0.001f);          /* pi[1] */
    float mx = 0.0f;
    mx = d0 > mx ? d0 : mx;
    mx = d1 > mx ? d1 : mx;
    d0 = __fdiv_rn(d0, mx);
    d1 = __fdiv_rn(d1, mx);
    bool unsure = false;
    float logsc = scale_log(mx, unsure);
    for (int i = 1; i < L; i++) {
        x = seq[i];
        float n0 = __fadd_rn(__fadd_rn(0.0f, __fmul_rn(d0, t00)), __fmul_rn(d1, t10));
        n0 = __fmul_rn(n0, __ldg(&eo[x * 2 + 0]));
        float n1 = __fadd_rn(__fadd_rn(0.0f, __fmul_rn(d0, t01)), __fmul_rn(d1, t11));
        n1 = __fmul_rn(n1, __ldg(&eo[x * 2 + 1]));
        mx = 0.0f;
        mx = n0 > mx ? n0 : mx;
        mx = n1 > mx ? n1 : mx;
        d0 = __fdiv_rn(n0, mx);
        d1 = __fdiv_rn(n1, mx);
        logsc = __fadd_rn(logsc, scale_log(mx, unsure));
    }
    /* both states end with t[k][E] = 1 */
    const float end = __fadd_rn(__fadd_rn(0.0f, __fmul_rn(d0, 1.0f)), __fmul_rn(d1, 1.0f));
    logsc = __fadd_rn(logsc, scale_log(end, unsure));
    out[item] = unsure ? __int_as_float(0x7fc00000) : logsc;     /* NaN: the host scores it */
}
