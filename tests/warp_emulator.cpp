// gapped.cu's CUDA kernels run on the CPU, warp intrinsics included, so that the CPU-only
// test suite checks the kernel code itself (tests/gapped_host.py builds this file with
// -DGAPPED_CU="path/to/gapped.cu"; tests/test_blast_gapped_kernel.py runs it).
//
// Each of a block's threads is a ucontext fiber.  A fiber runs until its next warp
// intrinsic (__shfl_sync, __shfl_up_sync, __ballot_sync, __syncwarp, __syncthreads),
// where all of them meet: the emulator checks that every lane waits at the same call
// (same source line, full mask: no divergence, no lane gone), computes the results and
// runs them on.  Between meetings the lanes run one after the other, in a random order
// (a lane reading what another writes without a __syncwarp shows up as a wrong result),
// and shared memory is filled with garbage before each block.
// (Written for the review of the warp kernel, then adopted as a test.)
#include <ucontext.h>
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <vector>

// --- the CUDA constructs gapped.cu uses, for the CPU ---
#define __CUDACC__ 1
#define __device__
#define __global__
#define __forceinline__ inline
#define __restrict__ __restrict
#define __launch_bounds__(...)
#define __shared__ static __attribute__((section("emushm")))     // one copy: the block's
struct EmuDim { unsigned x, y, z; };
static int g_lane, g_block, g_block_dim;
enum { K_NONE, K_SHFL, K_SHFL_UP, K_BALLOT, K_SYNCWARP, K_SYNCTHREADS };
static int meet(int kind, int site, unsigned mask, int val, int arg);
#define threadIdx (EmuDim{(unsigned)g_lane, 0, 0})
#define blockIdx (EmuDim{(unsigned)g_block, 0, 0})
#define blockDim (EmuDim{(unsigned)g_block_dim, 1, 1})
#define __shfl_sync(m, v, s) meet(K_SHFL, __LINE__, (m), (v), (s))
#define __shfl_up_sync(m, v, d) meet(K_SHFL_UP, __LINE__, (m), (v), (d))
#define __ballot_sync(m, p) ((unsigned)meet(K_BALLOT, __LINE__, (m), (p) ? 1 : 0, 0))
#define __syncwarp(...) meet(K_SYNCWARP, __LINE__, 0xffffffffu, 0, 0)
#define __syncthreads() meet(K_SYNCTHREADS, __LINE__, 0xffffffffu, 0, 0)
static inline int __ffs(unsigned x) { return x ? __builtin_ctz(x) + 1 : 0; }
static inline int __clz(unsigned x) { return x ? __builtin_clz(x) : 32; }

#include GAPPED_CU

// --- the emulator ---
extern "C" char __start_emushm[], __stop_emushm[];
struct Lane { ucontext_t ctx; int done, kind, site, val, arg, result; unsigned mask; };
static Lane lanes[32];
static ucontext_t scheduler;
static std::vector<char> stacks[32];
static std::function<void()> g_kernel;
static std::mt19937 g_rng;
static char g_error[512];

static int meet(int kind, int site, unsigned mask, int val, int arg)
{
    Lane& l = lanes[g_lane];
    l.kind = kind; l.site = site; l.mask = mask; l.val = val; l.arg = arg;
    swapcontext(&l.ctx, &scheduler);
    return l.result;
}

static void lane_main() { g_kernel(); lanes[g_lane].done = 1; lanes[g_lane].kind = K_NONE; }

// One block of n threads (n <= 32).  Returns 0, or 1 with g_error set.
static int run_block(int n)
{
    for (int l = 0; l < n; l++) {
        if (stacks[l].empty()) stacks[l].resize(1 << 20);
        getcontext(&lanes[l].ctx);
        lanes[l].ctx.uc_stack.ss_sp = stacks[l].data();
        lanes[l].ctx.uc_stack.ss_size = stacks[l].size();
        lanes[l].ctx.uc_link = &scheduler;
        makecontext(&lanes[l].ctx, lane_main, 0);
        lanes[l].done = 0; lanes[l].kind = K_NONE;
    }
    std::vector<int> order(n);
    for (int l = 0; l < n; l++) order[l] = l;
    for (;;) {
        std::shuffle(order.begin(), order.end(), g_rng);
        for (int l : order) {
            if (lanes[l].done) continue;
            g_lane = l;
            swapcontext(&scheduler, &lanes[l].ctx);
        }
        int n_done = 0, w = -1;
        for (int l = 0; l < n; l++) {
            if (lanes[l].done) n_done++;
            else if (w < 0) w = l;
        }
        if (n_done == n) return 0;
        const int kind = lanes[w].kind, site = lanes[w].site;
        for (int l = 0; l < n; l++) {
            if (lanes[l].done) {
                snprintf(g_error, sizeof g_error, "block %d: lane %d ended while lane %d waits at line %d",
                         g_block, l, w, site);
                return 1;
            }
            if (lanes[l].kind != kind || lanes[l].site != site || lanes[l].mask != 0xffffffffu) {
                snprintf(g_error, sizeof g_error, "block %d: divergence: lane %d at line %d, lane %d at line %d",
                         g_block, w, site, l, lanes[l].site);
                return 1;
            }
        }
        if (n != 32 && kind != K_SYNCTHREADS) {
            snprintf(g_error, sizeof g_error, "a warp intrinsic in a block of %d threads", n);
            return 1;
        }
        unsigned ballot = 0;
        int vals[32];
        for (int l = 0; l < n; l++) {
            vals[l] = lanes[l].val;
            if (kind == K_BALLOT && lanes[l].val) ballot |= 1u << l;
        }
        for (int l = 0; l < n; l++) {
            Lane& x = lanes[l];
            x.result = kind == K_SHFL ? vals[x.arg & 31]
                     : kind == K_SHFL_UP ? (l >= x.arg ? vals[l - x.arg] : vals[l])
                     : kind == K_BALLOT ? (int)ballot : 0;
        }
    }
}

extern "C" const char* emulator_error() { return g_error; }

// prelim_gapped_warp (which = 0; WARPS must be 1: a block is one warp) or prelim_gapped
// (which = 1, 32 threads a block) over jobs[0, n_jobs), the kernels' arguments otherwise.
// Returns 0, or 1 (emulator_error() says why).
extern "C" int emulate_prelim(int which, unsigned seed, const int* jobs, int n_jobs, const int* group_start,
                              const int* group_subject, const int* group_query, const int* init_q_start,
                              const int* init_s_start, const int* init_length, const int* init_score,
                              const unsigned char* queries, const int* query_start, const int* params,
                              const unsigned char* residues, const long long* offsets, const int* matrix_g,
                              int gap_open, int gap_extend, int* order, int* tree, int* out, int* count,
                              int* status)
{
    static_assert(WARPS == 1, "the emulator runs one warp a block");
    g_rng.seed(seed);
    g_error[0] = 0;
    if (which == 0)
        g_kernel = [=] { prelim_gapped_warp(jobs, n_jobs, group_start, group_subject, group_query, init_q_start,
                                            init_s_start, init_length, init_score, queries, query_start, params,
                                            residues, offsets, matrix_g, gap_open, gap_extend, order, tree, out,
                                            count, status); };
    else
        g_kernel = [=] { prelim_gapped(jobs, n_jobs, group_start, group_subject, group_query, init_q_start,
                                       init_s_start, init_length, init_score, queries, query_start, params,
                                       residues, offsets, matrix_g, gap_open, gap_extend, order, tree, out,
                                       count, status); };
    const int per_block = which == 0 ? WARPS : 32;
    g_block_dim = which == 0 ? 32 * WARPS : 32;
    for (int b = 0; b * per_block < n_jobs; b++) {
        memset(__start_emushm, 0x5A, __stop_emushm - __start_emushm);      // shared memory: garbage
        g_block = b;
        if (run_block(g_block_dim)) return 1;
    }
    return 0;
}
