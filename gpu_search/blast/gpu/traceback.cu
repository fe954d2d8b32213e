// blastp's traceback stage on the GPU: the X-drop DP with traceback (ALIGN_EX of
// blast_gapalign.c, BLAST+ 2.12) of the final HSPs' alignments, one job per
// direction of one HSP (BLAST_GappedAlignmentWithTraceback aligns left of the
// start point, the start pair included, then right of it), a warp per job
// (align_ex_warp, the default) or a thread (align_ex).
//
// Each replays traceback.py's align_ex for its job:
//
//   1. the DP row by row, its two rows (best, best_gap) over the live band
//      [first_b_index, b_size) kept in the thread's int scratch (N + 2 cells,
//      indexed by column as BLAST's arrays are), each cell's operation and its
//      two gap-extension bits written to the thread's traceback bytes, one
//      stretch per row (row_start, row_first say where);
//   2. the walk back from the best cell, writing one step (OP_SUB, OP_DEL or
//      OP_INS) per alignment column in traceback order.
//
// The host (traceback.py's _traceback_kernel, in the worker processes) then
// does what depends on other HSPs: the containment test against HSPs already
// traced, the joining of the two directions, the statistics, the purge.  It
// runs the jobs on the CPU whose traceback bytes outgrew the thread's share
// (status OVERFLOW): same result.
//
// Tests without a GPU: the thread kernel's per-job code builds as C++ for the host
// (no __CUDACC__; align_ex_host below), and both CUDA kernels run on the CPU through
// tests/helpers/warp_emulator.cpp.
//
// Jobs: int64 rows of JOB_FIELDS (J_* below).  Letters: query letter a (1..M)
// is queries[q_at + q0 + dir * a]; subject letter b + 1 (b = 0..N) is
// residues[s_at + s0 + dir * b] where 0 <= s0 + dir * b < s_length, else BLAST's
// sentinel 0 (the DP reads one letter past the end, never using it).  Output
// per job: OUT_FIELDS ints (status, best score, a_offset, b_offset, steps)
// and its steps from steps[step_at].

#define ALPHABET 28                 // NCBIstdaa: matrix rows are 28 scores wide
#define MININT (-(1 << 30))         // INT4_MIN / 2 in blast_gapalign.c
#define OP_DEL 0                    // eGapAlignDel: a subject letter against a gap
#define OP_SUB 3                    // eGapAlignSub
#define OP_INS 6                    // eGapAlignIns: a query letter against a gap
#define SCRIPT_OP_MASK 0x07
#define SCRIPT_EXTEND_GAP_A 0x10
#define SCRIPT_EXTEND_GAP_B 0x40
#define STATUS_DONE 0
#define STATUS_OVERFLOW 1

// job fields
#define J_Q_AT 0        // the query's first letter in queries[]
#define J_Q0 1          // query letter a is at q_at + q0 + dir * a
#define J_DIR 2         // -1: left of the start point, +1: right of it
#define J_M 3           // query letters to align
#define J_N 4           // subject letters to align
#define J_S_AT 5        // the (windowed) subject's first letter in residues[]
#define J_S0 6          // subject letter b + 1 is at s_at + s0 + dir * b
#define J_S_LENGTH 7    // the (windowed) subject's length
#define J_X_DROP 8      // the final X-drop, raw
#define J_INT_AT 9      // the job's int scratch: 2 (N + 2) + 2 (M + 1) ints
#define J_TB_AT 10      // the job's traceback bytes
#define J_TB_CAP 11     // and their number
#define J_STEP_AT 12    // the job's steps (M + N bytes)
#define J_ROWS 13       // the rows it is expected to take (the preliminary HSP's): the launch's order
#define JOB_FIELDS 14
#define OUT_FIELDS 5

#ifdef __CUDACC__
#define HD __device__ __forceinline__
#else
#define HD inline
#endif

typedef long long i64;

// One job's fields and its share of the scratch space.
struct Job {
    int dir, M, N, s0, s_length, x_drop;
    const unsigned char* q;         // query letter a at q[dir * a]
    const unsigned char* s;         // the (windowed) subject
    int *best, *best_gap, *row_start, *row_first;
    unsigned char* buf;             // traceback bytes
    i64 cap;
    unsigned char* steps;

    HD Job(const i64* job, const unsigned char* queries, const unsigned char* residues, int gap_open_extend,
           int* ints, unsigned char* tb_all, unsigned char* steps_all)
    {
        dir = (int)job[J_DIR];
        M = (int)job[J_M];
        N = (int)job[J_N];
        q = queries + job[J_Q_AT] + job[J_Q0];
        s = residues + job[J_S_AT];
        s0 = (int)job[J_S0];
        s_length = (int)job[J_S_LENGTH];
        x_drop = (int)job[J_X_DROP];
        if (x_drop < gap_open_extend) x_drop = gap_open_extend;     // as Blast_SemiGappedAlign
        best = ints + job[J_INT_AT];
        best_gap = best + (N + 2);
        row_start = best_gap + (N + 2);
        row_first = row_start + (M + 1);
        buf = tb_all + job[J_TB_AT];
        cap = job[J_TB_CAP];
        steps = steps_all + job[J_STEP_AT];
    }

    // subject letter b + 1 (BLAST's sentinel 0 past either end)
    HD int letter(int b) const
    {
        const int at = s0 + dir * b;
        return (at >= 0 && at < s_length) ? s[at] : 0;
    }
};

// ALIGN_EX's walk back from the best cell (a_offset, b_offset): one step per alignment
// column into job.steps, in traceback order.  Returns the number of steps.
HD int walk_back(const Job& job, int a_offset, int b_offset)
{
    int n = 0;
    int a_index = a_offset, b_index = b_offset;
    int script = OP_SUB;
    while (a_index > 0 || b_index > 0) {
        const int next_script = job.buf[job.row_start[a_index] + b_index - job.row_first[a_index]];
        if (script == OP_DEL) {
            script = next_script & SCRIPT_OP_MASK;
            if (next_script & SCRIPT_EXTEND_GAP_A) script = OP_DEL;
        } else if (script == OP_INS) {
            script = next_script & SCRIPT_OP_MASK;
            if (next_script & SCRIPT_EXTEND_GAP_B) script = OP_INS;
        } else {
            script = next_script & SCRIPT_OP_MASK;
        }
        if (script == OP_DEL) {
            b_index--;
        } else if (script == OP_INS) {
            a_index--;
        } else {
            a_index--;
            b_index--;
        }
        job.steps[n++] = (unsigned char)script;
    }
    return n;
}

// ALIGN_EX for one job.  A port of traceback.py's align_ex (itself checked against
// BLAST+'s rows): same loop, same order of comparisons, int scores as BLAST's Int4.
HD void align_ex_job(const i64* job_fields, const unsigned char* queries, const unsigned char* residues,
                     const int* matrix, int gap_open, int gap_extend, int* ints, unsigned char* tb_all,
                     unsigned char* steps_all, int* out)
{
    const int gap_open_extend = gap_open + gap_extend;
    const Job job(job_fields, queries, residues, gap_open_extend, ints, tb_all, steps_all);
    const int M = job.M, N = job.N, dir = job.dir, x_dropoff = job.x_drop;
    const unsigned char* q = job.q;
    int *best = job.best, *best_gap = job.best_gap, *row_start = job.row_start, *row_first = job.row_first;
    unsigned char* buf = job.buf;
    const i64 cap = job.cap;
    out[0] = STATUS_DONE;
    out[1] = out[2] = out[3] = out[4] = 0;
    if (N <= 0 || M <= 0) return;
    if (cap < (i64)N + 3) {                     // not even the first row fits
        out[0] = STATUS_OVERFLOW;
        return;
    }

    row_start[0] = 0;
    row_first[0] = 0;
    int score = -gap_open_extend;
    best[0] = 0;
    best_gap[0] = -gap_open_extend;
    int i = 1;
    while (i <= N) {
        if (score < -x_dropoff) break;
        best[i] = score;
        best_gap[i] = score - gap_open_extend;
        score -= gap_extend;
        buf[i] = OP_DEL;
        i++;
    }
    i64 cursor = i + 1;
    int b_size = i;
    int best_score = 0, a_offset = 0, b_offset = 0;
    int first_b_index = 0;

    for (int a_index = 1; a_index <= M; a_index++) {
        if (cursor + (N + 2 - first_b_index) + 1 > cap) {     // traceback.py grows its buffer here
            out[0] = STATUS_OVERFLOW;
            return;
        }
        row_start[a_index] = (int)cursor;
        row_first[a_index] = first_b_index;
        const int orig_b_index = first_b_index;
        const int* row = matrix + q[dir * a_index] * ALPHABET;
        score = MININT;
        int score_gap_row = MININT;
        int last_b_index = first_b_index;
        const int b_end = b_size;
        for (int b_index = first_b_index; b_index < b_end; b_index++) {
            int score_gap_col = best_gap[b_index];
            const int next_score = best[b_index] + row[job.letter(b_index)];
            int script = OP_SUB;
            if (score < score_gap_col) {
                script = OP_INS;
                score = score_gap_col;
            }
            if (score < score_gap_row) {
                script = OP_DEL;
                score = score_gap_row;
            }
            if (best_score - score > x_dropoff) {
                if (first_b_index == b_index)
                    first_b_index++;
                else
                    best[b_index] = MININT;
            } else {
                last_b_index = b_index;
                if (score > best_score) {
                    best_score = score;
                    a_offset = a_index;
                    b_offset = b_index;
                }
                score_gap_row -= gap_extend;
                score_gap_col -= gap_extend;
                if (score_gap_col < score - gap_open_extend) {
                    best_gap[b_index] = score - gap_open_extend;
                } else {
                    best_gap[b_index] = score_gap_col;
                    script += SCRIPT_EXTEND_GAP_B;
                }
                if (score_gap_row < score - gap_open_extend)
                    score_gap_row = score - gap_open_extend;
                else
                    script += SCRIPT_EXTEND_GAP_A;
                best[b_index] = score;
            }
            score = next_score;
            buf[cursor + b_index - orig_b_index] = (unsigned char)script;
        }

        if (first_b_index == b_size) break;

        if (last_b_index < b_size - 1) {
            b_size = last_b_index + 1;
        } else {
            while (score_gap_row >= best_score - x_dropoff && b_size <= N) {
                best[b_size] = score_gap_row;
                best_gap[b_size] = score_gap_row - gap_open_extend;
                score_gap_row -= gap_extend;
                buf[cursor + b_size - orig_b_index] = OP_DEL;
                b_size++;
            }
        }
        cursor += (b_end > b_size ? b_end : b_size) - orig_b_index + 1;

        if (b_size <= N) {
            best[b_size] = MININT;
            best_gap[b_size] = MININT;
            b_size++;
        }
    }

    out[4] = walk_back(job, a_offset, b_offset);
    out[1] = best_score;
    out[2] = a_offset;
    out[3] = b_offset;
}

#ifdef __CUDACC__

// --- One warp per job ------------------------------------------------------------------------
//
// The same DP, the 32 lanes of a warp computing each row 32 cells at a time, as
// gapped.cu's warp kernel does for the score-only DP (see "One warp per subject"
// there for why a row's cells can be computed together: the row gap gr is a
// max-plus scan along the row, the X-drop test a running maximum).  Here each cell
// also gets its traceback byte: the operation (BLAST's order of comparisons:
// OP_SUB unless d < gc, then OP_DEL if max(d, gc) < gr) and, in a surviving
// cell, the two gap-extension bits.  The scan's gr equals BLAST's in every
// surviving cell whose row gap the walk back can follow (a gap on the best path
// stays above the X-drop threshold), and the walk back visits surviving cells
// only, so the steps are align_ex's.  Dead cells keep best_gap as BLAST does.
// Lane 0 walks back.

#include "warp_scan.cuh"
#define WARPS 4                          // warps per block: one job each

__device__ void align_ex_warp_job(const i64* job_fields, const unsigned char* queries, const unsigned char* residues,
                                  const int* matrix, int gap_open, int gap_extend, int* ints, unsigned char* tb_all,
                                  unsigned char* steps_all, int* out, int lane)
{
    const int oe = gap_open + gap_extend;
    const Job job(job_fields, queries, residues, oe, ints, tb_all, steps_all);
    const int M = job.M, N = job.N, dir = job.dir, x_drop = job.x_drop;
    int *best = job.best, *best_gap = job.best_gap, *row_start = job.row_start, *row_first = job.row_first;
    unsigned char* buf = job.buf;
    if (lane == 0) {
        out[0] = STATUS_DONE;
        out[1] = out[2] = out[3] = out[4] = 0;
    }
    if (N <= 0 || M <= 0) return;
    if (job.cap < (i64)N + 3) {
        if (lane == 0) out[0] = STATUS_OVERFLOW;
        return;
    }
    // the first row: a gap in B from the start, while above -X
    int n1 = gap_extend > 0 ? (x_drop - oe) / gap_extend + 1 : N;
    if (n1 > N) n1 = N;
    for (int i = lane; i <= n1; i += LANES) {
        const int v = i == 0 ? 0 : -oe - (i - 1) * gap_extend;
        best[i] = v;
        best_gap[i] = v - oe;
        if (i > 0) buf[i] = OP_DEL;
    }
    if (lane == 0) {
        row_start[0] = 0;
        row_first[0] = 0;
    }
    i64 cursor = n1 + 2;
    int b_size = n1 + 1;
    int best_score = 0, a_offset = 0, b_offset = 0;
    int first_b = 0;
    __syncwarp();
    for (int a = 1; a <= M; a++) {
        if (cursor + (N + 2 - first_b) + 1 > job.cap) {
            if (lane == 0) out[0] = STATUS_OVERFLOW;
            return;
        }
        if (lane == 0) {
            row_start[a] = (int)cursor;
            row_first[a] = first_b;
        }
        const int* row = matrix + job.q[dir * a] * ALPHABET;
        const int row_b = first_b, b_end = b_size;
        unsigned char* row_buf = buf + cursor - row_b;
        int best_run = best_score;           // best so far: before the row, then its cells
        int v_run = NEG_SCAN;                // max of hd(b) + e (b - row_b) so far
        int diag_carry = MININT;             // the row above at the cell before this chunk
        int first_survivor = -1, last_survivor = -1;
        for (int b0 = row_b; b0 < b_end; b0 += LANES) {
            const int b = b0 + lane;
            const bool valid = b < b_end;
            const int prev = valid ? best[b] : MININT;
            const int prev_gap = valid ? best_gap[b] : MININT;
            int left = __shfl_up_sync(WARP_MASK, prev, 1);
            if (lane == 0) left = diag_carry;
            diag_carry = __shfl_sync(WARP_MASK, prev, LANES - 1);
            const int d = (valid && b != row_b) ? left + row[job.letter(b - 1)] : MININT;
            const int gc = prev_gap;
            const int hd = d > gc ? d : gc;
            const int before = warp_max_before(valid ? hd + gap_extend * (b - row_b) : NEG_SCAN, lane, v_run);
            const int gr = before - oe - gap_extend * (b - 1 - row_b);     // the row gap reaching b
            const int h = hd > gr ? hd : gr;
            const bool survive = warp_xdrop_cells(h, valid, lane, a, b0, x_drop, best_run, first_survivor,
                                                  last_survivor, best_score, a_offset, b_offset);
            if (valid) {
                int script = hd < gr ? OP_DEL : (d < gc ? OP_INS : OP_SUB);
                if (survive) {
                    if (gc - gap_extend < h - oe) {
                        best_gap[b] = h - oe;
                    } else {
                        best_gap[b] = gc - gap_extend;
                        script += SCRIPT_EXTEND_GAP_B;
                    }
                    if (gr - gap_extend >= h - oe) script += SCRIPT_EXTEND_GAP_A;
                    best[b] = h;
                } else {
                    best[b] = MININT;
                }
                row_buf[b] = (unsigned char)script;
            }
        }
        __syncwarp();
        if (first_survivor < 0) break;                       // no cell left: the extension is over
        first_b = first_survivor;
        if (last_survivor < b_size - 1) {
            b_size = last_survivor + 1;
        } else {                                             // the band grows right with the row gap
            const int gr = v_run - oe - gap_extend * (b_size - 1 - row_b);
            const int floor = best_score - x_drop;
            if (gr >= floor && b_size <= N) {
                const int room = N + 1 - b_size;
                int grow = gap_extend > 0 ? (gr - floor) / gap_extend + 1 : room;
                if (grow > room) grow = room;
                for (int k = lane; k < grow; k += LANES) {
                    best[b_size + k] = gr - k * gap_extend;
                    best_gap[b_size + k] = gr - k * gap_extend - oe;
                    row_buf[b_size + k] = OP_DEL;
                }
                b_size += grow;
            }
        }
        cursor += (b_end > b_size ? b_end : b_size) - row_b + 1;
        if (b_size <= N) {                                   // one dead cell past the band
            if (lane == 0) {
                best[b_size] = MININT;
                best_gap[b_size] = MININT;
            }
            b_size++;
        }
        __syncwarp();
    }
    __syncwarp();
    if (lane != 0) return;
    out[1] = best_score;            // (lane 0)
    out[2] = a_offset;
    out[3] = b_offset;
    out[4] = walk_back(job, a_offset, b_offset);
}

// One warp per job, WARPS jobs a block; the score matrix in shared memory.
extern "C" __global__ void __launch_bounds__(WARPS * LANES)
align_ex_warp(const i64* jobs, int n_jobs, const unsigned char* queries, const unsigned char* residues,
              const int* matrix_g, int gap_open, int gap_extend, int* ints, unsigned char* tb, unsigned char* steps,
              int* out)
{
    __shared__ int matrix[ALPHABET * ALPHABET];
    for (int k = threadIdx.x; k < ALPHABET * ALPHABET; k += blockDim.x) matrix[k] = matrix_g[k];
    __syncthreads();
    const int warp = threadIdx.x / LANES, lane = threadIdx.x % LANES;
    const int j = blockIdx.x * WARPS + warp;
    if (j >= n_jobs) return;
    align_ex_warp_job(jobs + (i64)j * JOB_FIELDS, queries, residues, matrix, gap_open, gap_extend, ints, tb, steps,
                      out + (i64)j * OUT_FIELDS, lane);
}

// One thread per job; the score matrix in shared memory.
extern "C" __global__ void __launch_bounds__(128)
align_ex(const i64* jobs, int n_jobs, const unsigned char* queries, const unsigned char* residues,
         const int* matrix_g, int gap_open, int gap_extend, int* ints, unsigned char* tb, unsigned char* steps,
         int* out)
{
    __shared__ int matrix[ALPHABET * ALPHABET];
    for (int k = threadIdx.x; k < ALPHABET * ALPHABET; k += blockDim.x) matrix[k] = matrix_g[k];
    __syncthreads();
    const int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= n_jobs) return;
    align_ex_job(jobs + (i64)j * JOB_FIELDS, queries, residues, matrix, gap_open, gap_extend, ints, tb, steps,
                 out + (i64)j * OUT_FIELDS);
}

#else

// The host build (tests): every job in turn, the kernel's arguments.
extern "C" void align_ex_host(const i64* jobs, int n_jobs, const unsigned char* queries,
                              const unsigned char* residues, const int* matrix, int gap_open, int gap_extend,
                              int* ints, unsigned char* tb, unsigned char* steps, int* out)
{
    for (int j = 0; j < n_jobs; j++)
        align_ex_job(jobs + (i64)j * JOB_FIELDS, queries, residues, matrix, gap_open, gap_extend, ints, tb, steps,
                     out + (i64)j * OUT_FIELDS);
}

#endif
