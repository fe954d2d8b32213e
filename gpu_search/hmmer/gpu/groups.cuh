/* groups.cuh: what every filter kernel shares (included by filters.cu).
 *
 * A *group* of G lanes (G a power of two dividing 32) scores one sequence; a
 * warp holds 32/G groups.  Work comes from a global counter, one batch of
 * sequences per warp (persistent grid over a length-sorted database).
 * Compile-time constants: G, W (cells or words per lane), KP (alphabet size
 * with degenerate codes), PROFILE_IN_SMEM (profile in shared memory, or read
 * through L1 for models too large for it).
 */
#pragma once

#include "jobs.cuh"

#ifndef G
#error "G (lanes per sequence) must be defined"
#endif
#ifndef W
#error "W (cells or words per lane) must be defined"
#endif
#ifndef KP
#define KP 29
#endif
#ifndef REDUX
#define REDUX 0
#endif
#ifndef PROFILE_IN_SMEM
#define PROFILE_IN_SMEM 1
#endif

#define FULL_MASK 0xffffffffu
#define GROUPS_PER_WARP (32 / G)

typedef unsigned char uint8_t;

/* Next batch of `count` sequences for this warp (persistent grid). */
__device__ __forceinline__ int next_work(int *counter, int lane, int count)
{
    int base = 0;
    if (lane == 0) base = atomicAdd(counter, count);
    return __shfl_sync(FULL_MASK, base, 0);
}

/* The lanes of this lane's group, as a shuffle mask. */
__device__ __forceinline__ unsigned group_mask(int lane)
{
    return (G == 32) ? FULL_MASK : (((1u << G) - 1u) << ((lane / G) * G));
}

/* Maximum of a value over the lanes of a group. */
__device__ __forceinline__ int group_max(unsigned gmask, int v)
{
#if REDUX && __CUDA_ARCH__ >= 800
    return __reduce_max_sync(gmask, v);   /* one REDUX instruction (sm_80 and later) */
#else
#pragma unroll
    for (int d = G / 2; d >= 1; d /= 2) v = max(v, __shfl_xor_sync(gmask, v, d, G));
    return v;
#endif
}

/* Sum of a value over the lanes of a group. */
__device__ __forceinline__ float group_sum(unsigned gmask, float v)
{
#pragma unroll
    for (int d = G / 2; d >= 1; d /= 2) v += __shfl_xor_sync(gmask, v, d, G);
    return v;
}
