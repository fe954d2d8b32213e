// Running maxima along a DP row, 32 cells at a time: what lets a warp compute one row of
// BLAST's X-drop DP together (the row gap is a max-plus scan along the row, the X-drop
// test a running maximum).  Included by the warp kernels of gapped.cu and traceback.cu,
// which define MININT (BLAST's INT4_MIN / 2) before.
#pragma once

#define LANES 32
#define WARP_MASK 0xffffffffu
#define NEG_SCAN (MININT - (1 << 28))   // below every cell value: the scans' "nothing yet"

__device__ __forceinline__ int warp_max_inclusive(int v, int lane)
{
#pragma unroll
    for (int d = 1; d < LANES; d *= 2) {
        const int o = __shfl_up_sync(WARP_MASK, v, d);
        if (lane >= d) v = v > o ? v : o;
    }
    return v;
}

// The maximum of `carry` and of v over the lanes before this one (a running
// maximum along a row, 32 cells a call); `carry` moves on to include all 32.
__device__ __forceinline__ int warp_max_before(int v, int lane, int& carry)
{
    int incl = warp_max_inclusive(v, lane);
    incl = incl > carry ? incl : carry;
    int excl = __shfl_up_sync(WARP_MASK, incl, 1);
    if (lane == 0) excl = carry;
    carry = __shfl_sync(WARP_MASK, incl, LANES - 1);
    return excl;
}
