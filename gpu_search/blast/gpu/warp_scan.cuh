// Running maxima along a DP row, 32 cells at a time: what lets a warp compute one row of
// BLAST's X-drop DP together (the row gap is a max-plus scan along the row, the X-drop
// test a running maximum), and the X-drop test of 32 cells.  Included by the warp kernels
// of gapped.cu and traceback.cu, which define MININT (BLAST's INT4_MIN / 2) before.
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

// The X-drop test of the 32 cells b0 + lane of row a, each cell's score h (valid: the cell is
// in the row): a cell survives where it is within x_drop of the best before it (the row's
// earlier cells included, `best_run`).  The row's survivors widen [first_survivor,
// last_survivor]; the last cell to improve on the best so far is the row's first maximum, and
// becomes the best (best_score at a_offset, b_offset).  Returns whether this lane's cell survives.
__device__ __forceinline__ bool warp_xdrop_cells(int h, bool valid, int lane, int a, int b0, int x_drop,
                                                 int& best_run, int& first_survivor, int& last_survivor,
                                                 int& best_score, int& a_offset, int& b_offset)
{
    const int hexcl = warp_max_before(valid ? h : NEG_SCAN, lane, best_run);
    const bool survive = valid && hexcl - h <= x_drop;
    const unsigned survivors = __ballot_sync(WARP_MASK, survive);
    const unsigned better = __ballot_sync(WARP_MASK, valid && h > hexcl);
    if (survivors) {
        if (first_survivor < 0) first_survivor = b0 + __ffs(survivors) - 1;
        last_survivor = b0 + 31 - __clz(survivors);
    }
    if (better) {
        const int k = 31 - __clz(better);
        best_score = __shfl_sync(WARP_MASK, h, k);
        a_offset = a;
        b_offset = b0 + k;
    }
    return survive;
}
