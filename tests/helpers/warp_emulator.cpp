// CUDA kernels run on the CPU, warp intrinsics included, so that the CPU-only test suite
// checks the kernel code itself.  Built with -DGAPPED_CU="path/to/gapped.cu" (blastp's
// preliminary gapped kernels; tests/helpers/gapped_host.py, tests/kernels/test_blast_gapped_kernel.py) or
// -DFILTERS_CU="path/to/filters.cu" (HMMER's MSV and Viterbi filters, with the kernel's
// compile-time constants G, W, SEQS, ...; with -DBIAS_CU="path/to/bias.cu" also the bias filter;
// tests/kernels/test_filters_emulated.py) or -DTRACEBACK_CU="path/to/traceback.cu" (blastp's
// traceback kernels; tests/kernels/test_blast_traceback_kernel.py) or
// -DUNGAPPED_CU="path/to/ungapped.cu" (blastp's hit detection, two-hit filter and ungapped
// extension, its `extern __shared__` turned into `extern` by the caller, see
// tests/kernels/test_blast_ungapped_emulated.py; with -DORDER_CU="path/to/order.cu" also the kernels
// that put its rows in BLAST's order) or -DFWDBACK_CU="path/to/fwdback.cu" (HMMER's Forward and
// Backward parsers; tests/kernels/test_fwdback_emulated.py).
//
// Each of a block's threads (up to 512, whole warps) is a ucontext fiber.  A fiber runs until
// its next warp intrinsic (__shfl_sync, __shfl_up_sync, __shfl_xor_sync, __ballot_sync,
// __reduce_max_sync, __syncwarp) or __syncthreads, where the lanes named in its mask (the whole
// block at __syncthreads) meet: the emulator checks that every one of them waits at the same
// call (same source line, same mask and width: no divergence inside the mask, no lane gone, no
// lane read outside the mask), computes the results and runs them on.  Lanes of other masks
// (the sub-warp groups of filters.cu, the windows of ungapped.cu) meet apart and may be
// elsewhere; threads that can never meet are reported.  Between meetings the threads run one
// after the other, in a random order (a lane reading what another writes without a __syncwarp
// shows up as a wrong result); one warp starts late after each __syncthreads (see run_block);
// blocks run in a random order; shared memory is filled with garbage before each block.
// What a plain build cannot show (a GPU can): lost updates of a plain read-modify-write that
// should have been atomic (a fiber runs alone between meetings), and a write another lane reads
// after a shuffle or ballot without a __syncwarp (every meeting acts as a memory barrier here).
// Built with -fsanitize=thread -DEMU_TSAN (tests/helpers/emulator_build.py, tests/kernels/test_kernels_tsan.py),
// ThreadSanitizer reports both.
// (Written for the review of the warp kernel, then adopted as a test.)
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <type_traits>
#include <vector>

// --- the CUDA constructs the kernels use, for the CPU ---
#define __CUDACC__ 1
#define __device__
#define __global__
#define __forceinline__ inline
#define __restrict__ __restrict
#define __launch_bounds__(...)
#ifdef FILTERS_CU
// only `extern __shared__` arrays there, defined below (GCC allows no section attribute on a
// block-scope declaration).  Beware: a block-scope `__shared__` variable added to these
// kernels would become a thread's own here; the gapped and ungapped builds keep them static.
#define __shared__
#define __CUDA_ARCH__ 900                // the sm_90 code paths (REDUX)
#else
#define __shared__ static __attribute__((section("emushm")))     // one copy: the block's
#endif
struct EmuDim { unsigned x, y, z; };
static int g_lane, g_block, g_block_y, g_block_dim;
// EMU_TSAN (built with -fsanitize=thread): ThreadSanitizer sees each thread as a fiber of its
// own, and only __syncwarp and __syncthreads order memory between them (shuffles and ballots do
// not, as on a GPU); atomicAdd is a real atomic.  A plain read-modify-write that two threads make
// without a barrier between them, or a value read after a shuffle without a __syncwarp, is then
// reported.  The emulator's own bookkeeping is left out of its view.
#ifdef EMU_TSAN
#include <sanitizer/tsan_interface.h>
#define EMU_INTERNAL __attribute__((no_sanitize("thread"), noinline))
#else
#define EMU_INTERNAL
#endif
EMU_INTERNAL static unsigned emu_lane() { return (unsigned)g_lane; }
EMU_INTERNAL static unsigned emu_block() { return (unsigned)g_block; }
EMU_INTERNAL static unsigned emu_block_y() { return (unsigned)g_block_y; }
EMU_INTERNAL static unsigned emu_block_dim() { return (unsigned)g_block_dim; }
enum { K_NONE, K_SHFL, K_SHFL_UP, K_SHFL_XOR, K_BALLOT, K_REDUX_MAX, K_SYNCWARP, K_SYNCTHREADS };
static long long meet(int kind, int site, unsigned mask, long long val, int arg, int width);
#define threadIdx (EmuDim{emu_lane(), 0, 0})
#define blockIdx (EmuDim{emu_block(), emu_block_y(), 0})
#define blockDim (EmuDim{emu_block_dim(), 1, 1})

// a shuffled value travels as the bits of a 4-byte float or as an integer
template <class T> static inline long long to_val(T v)
{
    static_assert(sizeof(T) <= 4, "4-byte shuffles only");
    if constexpr (std::is_floating_point_v<T>) { uint32_t u; memcpy(&u, &v, 4); return u; }
    else return (long long)v;
}
template <class T> static inline T from_val(long long b)
{
    if constexpr (std::is_floating_point_v<T>) { uint32_t u = (uint32_t)b; T v; memcpy(&v, &u, 4); return v; }
    else return (T)b;
}
template <class T> static inline T emu_shfl(int kind, int site, unsigned mask, T v, int arg, int width = 32)
{
    return from_val<T>(meet(kind, site, mask, to_val(v), arg, width));
}
#define __shfl_sync(m, v, ...) emu_shfl(K_SHFL, __LINE__, (m), (v), __VA_ARGS__)
#define __shfl_up_sync(m, v, ...) emu_shfl(K_SHFL_UP, __LINE__, (m), (v), __VA_ARGS__)
#define __shfl_xor_sync(m, v, ...) emu_shfl(K_SHFL_XOR, __LINE__, (m), (v), __VA_ARGS__)
#define __ballot_sync(m, p) ((unsigned)meet(K_BALLOT, __LINE__, (m), (p) ? 1 : 0, 0, 32))
#define __reduce_max_sync(m, v) ((int)meet(K_REDUX_MAX, __LINE__, (m), (long long)(int)(v), 0, 32))
// (__builtin_LINE() as a default argument: the caller's line)
static inline void __syncwarp(unsigned mask = 0xffffffffu, int site = __builtin_LINE())
{
    meet(K_SYNCWARP, site, mask, 0, 0, 32);
}
#define __syncthreads() meet(K_SYNCTHREADS, __LINE__, 0xffffffffu, 0, 0, 32)
static inline int __ffs(unsigned x) { return x ? __builtin_ctz(x) + 1 : 0; }
static inline int __clz(unsigned x) { return x ? __builtin_clz(x) : 32; }
static inline int __popc(unsigned x) { return __builtin_popcount(x); }
static inline float __int_as_float(int x) { float f; memcpy(&f, &x, 4); return f; }
// (real atomics, so that ThreadSanitizer tells them from plain read-modify-writes)
static inline int atomicAdd(int* p, int v) { return __atomic_fetch_add(p, v, __ATOMIC_RELAXED); }
static inline unsigned long long atomicAdd(unsigned long long* p, unsigned long long v)
{
    return __atomic_fetch_add(p, v, __ATOMIC_RELAXED);
}

#if defined(FILTERS_CU) || defined(UNGAPPED_CU)
// CUDA's integer max/min and read-only load
static inline int max(int a, int b) { return a > b ? a : b; }
static inline int min(int a, int b) { return a < b ? a : b; }
template <class T> static inline T __ldg(const T* p) { return *p; }
#endif
// the kernels' dynamic shared memory (`extern __shared__`), as large as an H100 lends a block
#define EMU_SMEM_BYTES (227 * 1024)
#define EMU_SHARED __attribute__((section("emushm")))

#ifdef FILTERS_CU
// the Hopper DPX instructions filters.cu uses, as the CUDA Math API documents them (16-bit
// halves signed; the halves' sums wrap as 16-bit integers)
struct uint4 { unsigned x, y, z, w; };
static inline int half_of(unsigned v, int h) { return (int16_t)(uint16_t)(v >> (16 * h)); }
static inline unsigned halves(int lo, int hi) { return (unsigned)(uint16_t)lo | ((unsigned)(uint16_t)hi << 16); }
static inline int __viaddmax_s32(int a, int b, int c) { return max(a + b, c); }
static inline unsigned __vimax_s16x2_relu(unsigned a, unsigned b)
{
    int r[2];
    for (int h = 0; h < 2; h++) r[h] = max(max(half_of(a, h), half_of(b, h)), 0);
    return halves(r[0], r[1]);
}
static inline unsigned __viaddmax_s16x2_relu(unsigned a, unsigned b, unsigned c)
{
    int r[2];
    for (int h = 0; h < 2; h++) r[h] = max(max((int)(int16_t)(half_of(a, h) + half_of(b, h)), half_of(c, h)), 0);
    return halves(r[0], r[1]);
}
#include FILTERS_CU
#ifdef BIAS_CU                           // the bias filter (bias.cu): IEEE float operations, the C
#include <cmath>                         // library's double log (CUDA's may round a last bit apart)
static inline float __fadd_rn(float a, float b) { return a + b; }
static inline float __fsub_rn(float a, float b) { return a - b; }
static inline float __fmul_rn(float a, float b) { return a * b; }
static inline float __fdiv_rn(float a, float b) { return a / b; }
static inline float __double2float_rn(double x) { return (float)x; }
using std::fabs;
#include BIAS_CU
#endif
EMU_SHARED uint4 emis[EMU_SMEM_BYTES / 16];
EMU_SHARED uint4 vsmem[EMU_SMEM_BYTES / 16];
#elif defined(UNGAPPED_CU)
#include UNGAPPED_CU
EMU_SHARED int smem[EMU_SMEM_BYTES / 4];
#ifdef ORDER_CU
#include ORDER_CU
#endif
#elif defined(FWDBACK_CU)
// HMMER's Forward and Backward (fwdback.cu): IEEE float operations, the C library's double log
#include <cmath>
using std::fabs;
using std::isinf;
using std::isnan;
static inline float __fadd_rn(float a, float b) { return a + b; }
static inline float __fsub_rn(float a, float b) { return a - b; }
static inline float __fmul_rn(float a, float b) { return a * b; }
static inline float __fdiv_rn(float a, float b) { return a / b; }
static inline float __double2float_rn(double x) { return (float)x; }
static inline double __dadd_rn(double a, double b) { return a + b; }
static inline double __dsub_rn(double a, double b) { return a - b; }
static inline double __dmul_rn(double a, double b) { return a * b; }
static inline double __ddiv_rn(double a, double b) { return a / b; }
static inline unsigned __float_as_uint(float x) { unsigned u; memcpy(&u, &x, 4); return u; }
static inline float __uint_as_float(unsigned u) { float f; memcpy(&f, &u, 4); return f; }
static inline double __longlong_as_double(long long u) { double d; memcpy(&d, &u, 8); return d; }
#include FWDBACK_CU
EMU_SHARED int no_shared_memory[1];     // (the kernel has none; the section must exist)
#elif defined(TRACEBACK_CU)
#include TRACEBACK_CU
#else
#include GAPPED_CU
#endif
// every block's shared memory, static and dynamic, lies in the section: garbage before a block
extern "C" char __start_emushm[], __stop_emushm[];
static void garbage_in_shared_memory() { memset(__start_emushm, 0x5A, __stop_emushm - __start_emushm); }

// --- the emulator ---
#define MAX_THREADS 512
#define STACK_BYTES (1 << 20)       // (mapped, not touched: pages come as the fibers use them)
struct Lane { ucontext_t ctx; int done, kind, site, arg, width; long long val, result; unsigned mask; void* fiber; };
static Lane lanes[MAX_THREADS];
static ucontext_t scheduler;
static char* stacks[MAX_THREADS];
static std::function<void()> g_kernel;
static std::mt19937 g_rng;
static char g_error[512];

#ifdef EMU_TSAN
static void* g_scheduler_fiber;
// What TSan synchronises on.  A thread resuming from a barrier must see what the others wrote
// before *this* barrier, not what a thread that ran ahead wrote before the next one: each
// barrier releases and acquires on its own address, by parity of the barriers a thread has
// passed (no thread gets two barriers ahead of another), per block for __syncthreads and per
// mask (its first lane) for __syncwarp.
static char g_block_start, g_block_end, g_sync_block[2], g_sync_warp[MAX_THREADS][2];
static int g_passed_block[MAX_THREADS], g_passed_warp[MAX_THREADS];
EMU_INTERNAL static char* barrier_address(int kind, int t, unsigned mask)
{
    if (kind == K_SYNCTHREADS) return &g_sync_block[g_passed_block[t] & 1];
    return &g_sync_warp[(t & ~31) + __builtin_ctz(mask)][g_passed_warp[t] & 1];
}
#endif

// A thread's barrier: what it wrote before is seen by the others after (TSan's view).
EMU_INTERNAL static void barrier_release(int kind, int t, unsigned mask)
{
#ifdef EMU_TSAN
    if (kind == K_SYNCTHREADS || kind == K_SYNCWARP) __tsan_release(barrier_address(kind, t, mask));
#endif
}
EMU_INTERNAL static void barrier_acquire(int kind, int t, unsigned mask)
{
#ifdef EMU_TSAN
    if (kind == K_SYNCTHREADS || kind == K_SYNCWARP) {
        __tsan_acquire(barrier_address(kind, t, mask));
        (kind == K_SYNCTHREADS ? g_passed_block : g_passed_warp)[t]++;
    }
#endif
}

EMU_INTERNAL static void to_scheduler(ucontext_t* from)
{
#ifdef EMU_TSAN
    __tsan_switch_to_fiber(g_scheduler_fiber, __tsan_switch_to_fiber_no_sync);
#endif
    swapcontext(from, &scheduler);
}

EMU_INTERNAL static long long meet(int kind, int site, unsigned mask, long long val, int arg, int width)
{
    const int t = g_lane;
    Lane& l = lanes[t];
    l.kind = kind; l.site = site; l.mask = mask; l.val = val; l.arg = arg; l.width = width;
    barrier_release(kind, t, mask);
    to_scheduler(&l.ctx);
    barrier_acquire(kind, t, mask);
    return l.result;
}

EMU_INTERNAL static void lane_main()
{
#ifdef EMU_TSAN
    __tsan_acquire(&g_block_start);                // the block's shared memory as the scheduler left it
#endif
    g_kernel();
#ifdef EMU_TSAN
    __tsan_release(&g_block_end);                  // and back to it once the block is done
#endif
    lanes[g_lane].done = 1;
    lanes[g_lane].kind = K_NONE;
#ifdef EMU_TSAN
    __tsan_switch_to_fiber(g_scheduler_fiber, __tsan_switch_to_fiber_no_sync);   // (uc_link returns there)
#endif
}

// Whether thread t takes part in the meeting thread w waits at: the lanes of w's warp named
// in its mask, or the whole block at __syncthreads.
EMU_INTERNAL static bool in_meeting(const Lane& a, int w, int t)
{
    if (a.kind == K_SYNCTHREADS) return true;
    return (t >> 5) == (w >> 5) && (a.mask >> (t & 31) & 1u);
}

// The thread whose value thread t reads at a shuffle (CUDA's rules, also for a width below 32),
// or -1 where it reads its own.
EMU_INTERNAL static int source_thread(const Lane& x, int t)
{
    const int l = t & 31, w = x.width, seg = l & ~(w - 1);
    int src = -1;
    switch (x.kind) {
    case K_SHFL: src = seg + (x.arg & (w - 1)); break;
    case K_SHFL_UP: src = (l - seg) >= x.arg ? l - x.arg : -1; break;
    case K_SHFL_XOR: { const int s = l ^ x.arg; src = s >= seg + w ? -1 : s; break; }
    default: break;
    }
    return src < 0 ? -1 : (t & ~31) + src;
}

// One block of n threads (n <= 32, or whole warps up to MAX_THREADS).  Each round, the threads
// of the warps run on to their next meeting, then every meeting whose threads are all there
// takes place.  One warp, picked at random, starts LAG_ROUNDS rounds late (or once the others
// wait for it), again after every __syncthreads, as a warp may on a GPU: a missing
// __syncthreads then shows up as garbage or stale values read from shared memory.
// Returns 0, or 1 with g_error set.
#define LAG_ROUNDS 64
EMU_INTERNAL static int run_block(int n)
{
    if (n > MAX_THREADS || (n > 32 && n % 32)) {
        snprintf(g_error, sizeof g_error, "a block of %d threads: whole warps, at most %d", n, MAX_THREADS);
        return 1;
    }
    const int n_warps = (n + 31) / 32;
    const unsigned warp_mask = n >= 32 ? 0xffffffffu : (1u << n) - 1u;
    int ready[MAX_THREADS];
    for (int t = 0; t < n; t++) {
        if (!stacks[t]) {                       // a fiber's stack, a guard page below it
            const long page = sysconf(_SC_PAGESIZE);
            void* m = mmap(nullptr, STACK_BYTES + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            if (m == MAP_FAILED) { snprintf(g_error, sizeof g_error, "no memory for a fiber's stack"); return 1; }
            mprotect(m, page, PROT_NONE);
            stacks[t] = (char*)m + page;
        }
        getcontext(&lanes[t].ctx);
        lanes[t].ctx.uc_stack.ss_sp = stacks[t];
        lanes[t].ctx.uc_stack.ss_size = STACK_BYTES;
        lanes[t].ctx.uc_link = &scheduler;
        makecontext(&lanes[t].ctx, lane_main, 0);
        lanes[t].done = 0; lanes[t].kind = K_NONE;
        ready[t] = 1;
#ifdef EMU_TSAN
        if (!lanes[t].fiber) lanes[t].fiber = __tsan_create_fiber(0);
        g_passed_block[t] = g_passed_warp[t] = 0;
#endif
    }
#ifdef EMU_TSAN
    g_scheduler_fiber = __tsan_get_current_fiber();
    __tsan_release(&g_block_start);             // shared memory's garbage, the kernel's arguments
#endif
    std::vector<int> order(n);
    for (int t = 0; t < n; t++) order[t] = t;
    int lagging = (int)(g_rng() % n_warps);
    int round = 0;
    for (;;) {
        // the ready threads of the warps run on to their next meeting (or their end); one warp
        // waits the first LAG_ROUNDS rounds, or until the others are stuck without it
        bool others_ready = false;
        for (int t = 0; t < n; t++) others_ready |= !lanes[t].done && ready[t] && (t >> 5) != lagging;
        bool active[MAX_THREADS / 32];
        for (int k = 0; k < n_warps; k++) active[k] = k != lagging || round >= LAG_ROUNDS || !others_ready;
        round++;
        std::shuffle(order.begin(), order.end(), g_rng);
        bool ran = false;
        for (int t : order) {
            if (lanes[t].done || !ready[t] || !active[t >> 5]) continue;
            g_lane = t;
#ifdef EMU_TSAN
            __tsan_switch_to_fiber(lanes[t].fiber, __tsan_switch_to_fiber_no_sync);
#endif
            swapcontext(&scheduler, &lanes[t].ctx);
            ready[t] = 0;
            ran = true;
        }
        int n_done = 0;
        for (int t = 0; t < n; t++) n_done += lanes[t].done;
        if (n_done == n) {
#ifdef EMU_TSAN
            __tsan_acquire(&g_block_end);
#endif
            return 0;
        }
        // every meeting whose threads are all waiting at it takes place
        bool progress = false;
        int seen[MAX_THREADS] = {0};          // threads whose meeting was looked at this round
        for (int w = 0; w < n; w++) {
            const Lane& a = lanes[w];
            if (a.done || ready[w] || seen[w]) continue;
            if (a.kind != K_SYNCTHREADS && ((a.mask & ~warp_mask) || !(a.mask >> (w & 31) & 1u))) {
                snprintf(g_error, sizeof g_error, "block %d: thread %d at line %d: mask %08x %s", g_block, w,
                         a.site, a.mask, (a.mask & ~warp_mask) ? "names lanes outside the block"
                                                               : "leaves out the lane itself");
                return 1;
            }
            bool complete = true;
            for (int t = 0; t < n; t++) {
                if (!in_meeting(a, w, t)) continue;
                if (lanes[t].done) {
                    snprintf(g_error, sizeof g_error, "block %d: thread %d ended while thread %d waits at line %d",
                             g_block, t, w, a.site);
                    return 1;
                }
                const Lane& b = lanes[t];
                if (ready[t] || b.kind != a.kind || b.site != a.site || b.mask != a.mask || b.width != a.width)
                    complete = false;
                else
                    seen[t] = 1;
            }
            if (!complete) continue;
            if (n < 32 && a.kind != K_SYNCTHREADS) {
                snprintf(g_error, sizeof g_error, "a warp intrinsic in a block of %d threads", n);
                return 1;
            }
            unsigned ballot = 0;
            int redux = INT32_MIN;
            for (int t = 0; t < n; t++) {
                if (!in_meeting(a, w, t)) continue;
                if (a.kind == K_BALLOT && lanes[t].val) ballot |= 1u << (t & 31);
                redux = std::max(redux, (int)lanes[t].val);
            }
            for (int t = 0; t < n; t++) {
                if (!in_meeting(a, w, t)) continue;
                Lane& x = lanes[t];
                const int src = source_thread(x, t);
                if (src >= 0 && !in_meeting(a, w, src)) {
                    snprintf(g_error, sizeof g_error, "block %d: thread %d reads lane %d, outside the mask %08x, "
                             "at line %d", g_block, t, src & 31, a.mask, x.site);
                    return 1;
                }
                x.result = (x.kind == K_SHFL || x.kind == K_SHFL_UP || x.kind == K_SHFL_XOR)
                               ? lanes[src >= 0 ? src : t].val
                         : x.kind == K_BALLOT ? (long long)ballot
                         : x.kind == K_REDUX_MAX ? (long long)redux : 0;
            }
            for (int t = 0; t < n; t++)
                if (in_meeting(a, w, t)) ready[t] = 1;
            if (a.kind == K_SYNCTHREADS) {      // past a barrier: another warp starts late
                lagging = (int)(g_rng() % n_warps);
                round = 0;
            }
            progress = true;
        }
        bool waiting_to_run = false;
        for (int t = 0; t < n; t++) waiting_to_run |= !lanes[t].done && ready[t];
        if (!progress && !ran && !waiting_to_run) {   // threads wait for threads that wait elsewhere
            for (int w = 0; w < n; w++) {
                const Lane& a = lanes[w];
                if (a.done) continue;
                for (int t = 0; t < n; t++)
                    if (in_meeting(a, w, t) && (lanes[t].site != a.site || lanes[t].mask != a.mask)) {
                        snprintf(g_error, sizeof g_error, "block %d: divergence: thread %d at line %d (mask %08x), "
                                 "thread %d at line %d (mask %08x)", g_block, w, a.site, a.mask, t, lanes[t].site,
                                 lanes[t].mask);
                        return 1;
                    }
            }
            snprintf(g_error, sizeof g_error, "block %d: the threads cannot meet", g_block);
            return 1;
        }
    }
}

extern "C" const char* emulator_error() { return g_error; }

// g_kernel over n_jobs jobs, per_block a block of block_dim threads, the blocks in turn,
// each with garbage in shared memory.  Returns 0, or 1 (emulator_error() says why).
static int run_blocks(int n_jobs, int per_block, int block_dim)
{
    g_block_dim = block_dim;
    for (int b = 0; b * per_block < n_jobs; b++) {
        garbage_in_shared_memory();
        g_block = b;
        if (run_block(g_block_dim)) return 1;
    }
    return 0;
}

#ifdef TRACEBACK_CU
// align_ex_warp (which = 0: WARPS jobs a block, a warp each) or align_ex (which = 1: 128 jobs a
// block, a thread each) over jobs[0, n_jobs), the kernels' arguments otherwise.  Returns 0, or 1
// (emulator_error() says why).
extern "C" int emulate_traceback(int which, unsigned seed, const long long* jobs, int n_jobs,
                                 const unsigned char* queries, const unsigned char* residues, const int* matrix_g,
                                 int gap_open, int gap_extend, int* ints, unsigned char* tb, unsigned char* steps,
                                 int* out)
{
    g_rng.seed(seed);
    g_error[0] = 0;
    if (which == 0)
        g_kernel = [=] { align_ex_warp(jobs, n_jobs, queries, residues, matrix_g, gap_open, gap_extend, ints, tb,
                                       steps, out); };
    else
        g_kernel = [=] { align_ex(jobs, n_jobs, queries, residues, matrix_g, gap_open, gap_extend, ints, tb, steps,
                                  out); };
    return run_blocks(n_jobs, which == 0 ? WARPS : 128, 128);
}
#endif

#ifdef GAPPED_CU
// prelim_gapped_warp (which = 0: WARPS jobs a block, a warp each) or prelim_gapped (which = 1:
// 32 x WARPS jobs a block, a thread each) over jobs[0, n_jobs), the kernels' arguments otherwise.
// Returns 0, or 1 (emulator_error() says why).
extern "C" int emulate_prelim(int which, unsigned seed, const int* jobs, int n_jobs, const int* group_start,
                              const int* group_subject, const int* group_query, const int* init_q_start,
                              const int* init_s_start, const int* init_length, const int* init_score,
                              const unsigned char* queries, const int* query_start, const int* params,
                              const unsigned char* residues, const long long* offsets, const int* matrix_g,
                              int gap_open, int gap_extend, int* order, int* tree, int* out, int* count,
                              int* status)
{
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
    return run_blocks(n_jobs, which == 0 ? WARPS : 32 * WARPS, 32 * WARPS);     // jobs a block, as gapped.py
}
#endif

#if defined(FILTERS_CU) || defined(UNGAPPED_CU) || defined(FWDBACK_CU)
// n_blocks x n_y blocks (a grid of n_y rows) of `threads` threads (whole warps) run one after
// the other, in a random order (the first one of a row to run takes all that row's work, in a
// persistent loop: other blocks' scratch used too)
static int run_blocks(unsigned seed, int n_blocks, int threads, int n_y = 1)
{
    g_error[0] = 0;
    g_rng.seed(seed);
    g_block_dim = threads;
    std::vector<int> blocks(n_blocks * n_y);
    for (int b = 0; b < n_blocks * n_y; b++) blocks[b] = b;
    std::shuffle(blocks.begin(), blocks.end(), g_rng);    // the first to run takes the work
    for (int b : blocks) {
        garbage_in_shared_memory();
        g_block = b % n_blocks;
        g_block_y = b / n_blocks;
        if (run_block(threads)) return 1;
    }
    g_block_y = 0;
    return 0;
}
#endif

#ifdef UNGAPPED_CU
// two_hit_ungapped with its own arguments, in n_blocks blocks of BLOCK threads (the first
// block's persistent loop takes every subject).  Returns 0, or 1 (emulator_error() says why).
extern "C" int emulate_ungapped(unsigned seed, int n_blocks, const unsigned char* residues,
                                const long long* offsets, const int* order, int n_order, const int* cell_start,
                                const int* cell_offsets, const int* pssm, const unsigned char* query,
                                const int* matrix, int qlen, int diag_mask, int window, int dropoff, int cutoff,
                                int* scratch, int cap, int* next_job, int* out, int out_cap, int* n_out,
                                int* overflow, int* n_overflow)
{
    g_kernel = [=] { two_hit_ungapped(residues, offsets, order, n_order, cell_start, cell_offsets, pssm,
                                      query, matrix, qlen, diag_mask, window, dropoff, cutoff, scratch, cap, next_job,
                                      out, out_cap, n_out, overflow, n_overflow); };
    return run_blocks(seed, n_blocks, BLOCK);
}

extern "C" int shared_memory_bytes() { return EMU_SMEM_BYTES; }

#ifdef ORDER_CU
// order.cu's kernels in blocks of 256 threads, as blast/gpu/ungapped.py launches them
extern "C" int emulate_order_keys(unsigned seed, const int* rows, int n_rows, const int* rank, int s_bits,
                                  int r_bits, long long* keys)
{
    g_kernel = [=] { blast_order_keys(rows, n_rows, rank, s_bits, r_bits, keys); };
    return run_blocks(seed, (n_rows + 255) / 256, 256);
}

extern "C" int emulate_gather_rows(unsigned seed, const int* rows, const long long* order, int n_rows, int* out)
{
    g_kernel = [=] { gather_rows(rows, order, n_rows, out); };
    return run_blocks(seed, (7 * n_rows + 255) / 256, 256);
}

extern "C" int emulate_order_keys_many(unsigned seed, const int* rows, const long long* region,
                                       const long long* first, int n_queries, const int* rank,
                                       const long long* rank_at, int s_bits, int r_bits, int q_shift,
                                       long long* keys, int* packed)
{
    g_kernel = [=] { blast_order_keys_many(rows, region, first, n_queries, rank, rank_at, s_bits, r_bits, q_shift,
                                           keys, packed); };
    return run_blocks(seed, (int)((first[n_queries] + 255) / 256), 256);
}
#endif
#endif

#ifdef FILTERS_CU
// msv_filter / viterbi_filter / ... with the kernels' own arguments: n_jobs models (jobs.cuh),
// each a row of n_blocks blocks of `threads` threads: the first block of a row to run takes
// all its model's work from the row's counter (a persistent grid), the others find none.
// Returns 0, or 1 (emulator_error() says why).
extern "C" int emulate_msv(unsigned seed, int n_blocks, int threads, const uint8_t* residues, const long long* offsets,
                           const int* order, const int* jobs, int n_jobs, const uint4* emis, const uint8_t* tjb_by_len,
                           short* out)
{
    std::vector<int> counters(n_jobs, 0);
    int* c = counters.data();
    g_kernel = [=] { msv_filter(residues, offsets, order, jobs, emis, tjb_by_len, c, out); };
    return run_blocks(seed, n_blocks, threads, n_jobs);
}

extern "C" int emulate_viterbi(unsigned seed, int n_blocks, int threads, const uint8_t* residues, const long long* offsets,
                               const int* order, const int* jobs, int n_jobs, const short* vemis, const int* vtrans,
                               const short* move_by_len, int* out)
{
    std::vector<int> counters(n_jobs, 0);
    int* c = counters.data();
    g_kernel = [=] { viterbi_filter(residues, offsets, order, jobs, vemis, vtrans, move_by_len, c, out); };
    return run_blocks(seed, n_blocks, threads, n_jobs);
}

extern "C" int emulate_viterbi16(unsigned seed, int n_blocks, int threads, const uint8_t* residues,
                                 const long long* offsets, const int* order, const int* jobs, int n_jobs,
                                 const unsigned* vemis, const unsigned* vtrans, const short* move_by_len, int* out)
{
    std::vector<int> counters(n_jobs, 0);
    int* c = counters.data();
    g_kernel = [=] { viterbi_filter16(residues, offsets, order, jobs, vemis, vtrans, move_by_len, c, out); };
    return run_blocks(seed, n_blocks, threads, n_jobs);
}

#ifdef BIAS_CU
extern "C" int emulate_bias(unsigned seed, int n_blocks, int threads, const uint8_t* residues,
                            const long long* offsets, const int* order, const int* jobs, int n_jobs, int most,
                            const float* eo, float* out)
{
    // one thread a sequence, not a persistent grid: a row of blocks for the most any job has
    // (n_blocks unused)
    g_kernel = [=] { bias_filter(residues, offsets, order, jobs, eo, out); };
    return run_blocks(seed, (most + threads - 1) / threads, threads, n_jobs);
}
#endif

extern "C" int shared_memory_bytes() { return EMU_SMEM_BYTES; }
#endif

#ifdef FWDBACK_CU
// forward_parser and backward_parser as the GPU tests launch them: n_jobs models
// (jobs.cuh), each a row of blocks of 128 threads, four a sequence, for the most sequences any
// job has; segments, the rows (for the Forward) and the whole matrices may be null
extern "C" int emulate_forward_parser(unsigned seed, const uint8_t* residues, const long long* offsets,
                                      const int* order, const int* jobs, int n_jobs, int most,
                                      const long long* model_at, const float* profiles, const int* segments,
                                      const long long* rows_at, float* rows, const long long* matrix_at,
                                      float* matrix, float* out)
{
    g_kernel = [=] { forward_parser(residues, offsets, order, jobs, model_at, profiles, segments, rows_at, rows,
                                    matrix_at, matrix, out); };
    return run_blocks(seed, (4 * most + 127) / 128, 128, n_jobs);
}

extern "C" int emulate_backward_parser(unsigned seed, const uint8_t* residues, const long long* offsets,
                                       const int* order, const int* jobs, int n_jobs, int most,
                                       const long long* model_at, const float* profiles, const int* segments,
                                       const long long* rows_at, const float* fwd_rows, float* bck_rows,
                                       const long long* matrix_at, float* matrix, int* own_scales, float* out)
{
    g_kernel = [=] { backward_parser(residues, offsets, order, jobs, model_at, profiles, segments, rows_at, fwd_rows,
                                     bck_rows, matrix_at, matrix, own_scales, out); };
    return run_blocks(seed, (4 * most + 127) / 128, 128, n_jobs);
}

// posterior_decoding: four threads a sequence, as the parsers
extern "C" int emulate_posterior_decoding(unsigned seed, const int* jobs, int n_jobs, int most,
                                          const long long* offsets, const int* order, const int* segments,
                                          const long long* rows_at, const float* fwd_rows, float* bck_rows,
                                          const long long* matrix_at, const float* fwd_mx, float* bck_mx,
                                          const int* own_scales, int* range)
{
    g_kernel = [=] { posterior_decoding(jobs, offsets, order, segments, rows_at, fwd_rows, bck_rows, matrix_at, fwd_mx,
                                        bck_mx, own_scales, range); };
    return run_blocks(seed, (4 * most + 127) / 128, 128, n_jobs);
}

// optimal_accuracy: four threads a sequence, as the parsers
extern "C" int emulate_optimal_accuracy(unsigned seed, const int* jobs, int n_jobs, int most, const long long* offsets,
                                        const int* order, const int* segments, const long long* model_at,
                                        const float* profiles, const long long* rows_at, const float* pp_rows,
                                        float* oa_rows, const long long* matrix_at, const float* pp_mx, float* oa_mx,
                                        float* oasc)
{
    g_kernel = [=] { optimal_accuracy(jobs, offsets, order, segments, model_at, profiles, rows_at, pp_rows, oa_rows,
                                      matrix_at, pp_mx, oa_mx, oasc); };
    return run_blocks(seed, (4 * most + 127) / 128, 128, n_jobs);
}

// oa_trace: one thread a sequence
extern "C" int emulate_oa_trace(unsigned seed, const int* jobs, int n_jobs, int most, const long long* offsets,
                                const int* order, const int* segments, const long long* model_at, const float* profiles,
                                const long long* rows_at, const float* pp_rows, const float* oa_rows,
                                const long long* matrix_at, const float* pp_mx, const float* oa_mx,
                                const long long* trace_at, const int* trace_cap, int* st, int* k, int* i, float* pp,
                                int* trace_n)
{
    g_kernel = [=] { oa_trace(jobs, offsets, order, segments, model_at, profiles, rows_at, pp_rows, oa_rows, matrix_at,
                              pp_mx, oa_mx, trace_at, trace_cap, st, k, i, pp, trace_n); };
    return run_blocks(seed, (most + 127) / 128, 128, n_jobs);
}

// null2_by_expectation: four threads a sequence, as the parsers
extern "C" int emulate_null2_by_expectation(unsigned seed, const uint8_t* residues, const long long* offsets,
                                            const int* order, const int* jobs, int n_jobs, int most,
                                            const int* segments, const long long* model_at, const float* profiles,
                                            const unsigned* degenerate, const long long* rows_at,
                                            const float* pp_rows, const long long* matrix_at, const float* pp_mx,
                                            float* null2, float* n2sc, float* domcorrection)
{
    g_kernel = [=] { null2_by_expectation(residues, offsets, order, jobs, segments, model_at, profiles, degenerate,
                                          rows_at, pp_rows, matrix_at, pp_mx, null2, n2sc, domcorrection); };
    return run_blocks(seed, (4 * most + 127) / 128, 128, n_jobs);
}

// sequence_null2_sum: one thread a pair, a row of blocks
extern "C" int emulate_sequence_null2_sum(unsigned seed, const long long* offsets, const int* seq_of_pair, int n_pairs,
                                          const long long* env_start, const int* env_i, const int* env_j,
                                          const long long* n2sc_start, const float* n2sc, float* sum_out)
{
    g_kernel = [=] { sequence_null2_sum(offsets, seq_of_pair, n_pairs, env_start, env_i, env_j, n2sc_start, n2sc,
                                        sum_out); };
    return run_blocks(seed, (n_pairs + 127) / 128, 128, 1);
}

// region_traces: four threads a region, the first of its TRACE_GROUP (a warp)
extern "C" int emulate_region_traces(unsigned seed, const uint8_t* residues, const long long* offsets,
                                     const int* order, const int* jobs, int n_jobs, int most,
                                     const long long* model_at, const float* profiles, const int* segments,
                                     const unsigned* degenerate, const long long* rows_at, const float* fwd_rows,
                                     const long long* matrix_at, const float* fwd_mx, const long long* samples_at,
                                     const int* sample_cap, int* samples, int* n_samples, float* n2sc, int* status)
{
    g_kernel = [=] { region_traces(residues, offsets, order, jobs, model_at, profiles, segments, degenerate, rows_at,
                                   fwd_rows, matrix_at, fwd_mx, samples_at, sample_cap, samples, n_samples, n2sc,
                                   status); };
    return run_blocks(seed, (TRACE_GROUP * most + 127) / 128, 128, n_jobs);
}

// trace_clusters: a warp a region, a row of blocks
extern "C" int emulate_trace_clusters(unsigned seed, int n_regions, const long long* samples_at, const int* n_samples,
                                      const int* samples, const long long* work_at, int* work,
                                      const long long* clusters_at, const int* cluster_cap, int* clusters,
                                      int* n_clusters)
{
    g_kernel = [=] { trace_clusters(n_regions, samples_at, n_samples, samples, work_at, work, clusters_at, cluster_cap,
                                    clusters, n_clusters); };
    return run_blocks(seed, (32 * n_regions + 127) / 128, 128, 1);
}

// fwdback.cu's port of glibc's logf, called directly (a device function, no kernel)
extern "C" void emulate_glibc_logf(const float* x, float* y, long n)
{
    for (long j = 0; j < n; j++) y[j] = glibc_logf(x[j]);
}

// domain_regions: one thread a sequence
extern "C" int emulate_domain_regions(unsigned seed, const int* jobs, int n_jobs, int most, const long long* offsets,
                                      const int* order, const long long* rows_at, const float* fwd_rows,
                                      const float* bck_rows, const int* own_scales, float* post, int* regions,
                                      int* n_regions, float* nexpected)
{
    g_kernel = [=] { domain_regions(jobs, offsets, order, rows_at, fwd_rows, bck_rows, own_scales, post, regions,
                                    n_regions, nexpected); };
    return run_blocks(seed, (most + 127) / 128, 128, n_jobs);
}
#endif
