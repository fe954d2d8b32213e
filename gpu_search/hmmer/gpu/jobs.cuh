/* jobs.cuh: several models in one launch (included by every filter kernel).
 *
 * A launch scores the models of a batch that share the kernel's compile-time
 * geometry: blockIdx.y is a model's *job*, a row of JOB_INTS ints
 * (packing.job_table lays them out on the host):
 *   JOB_ORDER  where the job's sequences start in `order` (the database
 *              positions to score, longest first),
 *   JOB_N      how many,
 *   JOB_OUT    where its results start in `out`,
 *   JOB_P + i  the kernel's i-th per-model scalar (floats as their bits).
 * Each job has its own work counter (counters[blockIdx.y]) and its profile at
 * blockIdx.y x the geometry's profile size in the profile arrays, so a block
 * loads one model's profile and serves that model only.  Many models a launch
 * hide the latency of the longest sequences' row-by-row chains, which bounds
 * a launch over a proteome-sized database or a few hundred candidates.
 */
#pragma once

#define JOB_INTS 12
enum { JOB_ORDER, JOB_N, JOB_OUT, JOB_P };

/* This block's job: its sequences (order, n), where its results go, its work counter;
   returns its scalars. */
template <typename Out>
__device__ __forceinline__ const int *take_job(const int *jobs, const int *order_all, Out *out_all, int *counters,
                                               const int *&order, int &n, Out *&out, int *&counter)
{
    const int *job = jobs + blockIdx.y * JOB_INTS;
    order = order_all + job[JOB_ORDER];
    n = job[JOB_N];
    out = out_all + job[JOB_OUT];
    counter = counters + blockIdx.y;
    return job + JOB_P;
}
