// BLAST's order of one query's init HSPs, on the GPU (ungapped.blast_order on the host):
// by subject, then the triggering hit's subject offset, then the hit's rank in its lookup
// cell (Lookup.query_rank of its query offset).  The kernel ungapped.cu writes its rows in
// no particular order; sorting them here, before they are copied back, spares the host a
// sort of up to ~10^5 rows a query.
//
// Rows: int32 x 7 = subject, q_off, s_off, q_start, s_start, length, score
// (INIT_HSP_DTYPE).  The host checks that subject, s_off and rank fit the 63 bits.

// A row's 63-bit key: subject << (s_bits + r_bits) | s_off << r_bits | rank.
__device__ __forceinline__ long long row_key(const int *row, const int *__restrict__ query_rank, int s_bits,
                                             int r_bits)
{
    return ((long long)row[0] << (s_bits + r_bits)) | ((long long)row[2] << r_bits)
           | (long long)query_rank[row[1]];
}

// One key per row.
extern "C" __global__ void blast_order_keys(const int *__restrict__ rows, int n_rows,
                                            const int *__restrict__ query_rank,
                                            int s_bits, int r_bits, long long *__restrict__ keys)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n_rows) return;
    keys[i] = row_key(rows + 7 * (long long)i, query_rank, s_bits, r_bits);
}

// out[k] = rows[order[k]], a thread per field.
extern "C" __global__ void gather_rows(const int *__restrict__ rows, const long long *__restrict__ order,
                                       int n_rows, int *__restrict__ out)
{
    long long f = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (f >= 7LL * n_rows) return;
    long long k = f / 7;
    out[f] = rows[7 * order[k] + (f - 7 * k)];
}

// Several queries' rows at once, after one launch each against a chunk (ungapped.py's batch of
// queries, each query's rows in a region of its own): the rows of query j of the batch are
// rows[region[j] * 7 ...] and go to packed[first[j] * 7 ...] (first: the rows' running count,
// n_queries + 1 values), each with its query's key above the row's own (j << q_shift), so that
// one sort puts every query's rows in BLAST's order, query after query.  rank: the queries'
// Lookup.query_rank arrays, query j's from rank[rank_at[j]].
extern "C" __global__ void blast_order_keys_many(const int *__restrict__ rows,
                                                 const long long *__restrict__ region,
                                                 const long long *__restrict__ first, int n_queries,
                                                 const int *__restrict__ rank,
                                                 const long long *__restrict__ rank_at,
                                                 int s_bits, int r_bits, int q_shift,
                                                 long long *__restrict__ keys, int *__restrict__ packed)
{
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i >= first[n_queries]) return;
    int lo = 0, hi = n_queries;          // the query j with first[j] <= i < first[j + 1]
    while (hi - lo > 1) {
        const int mid = (lo + hi) / 2;
        if (first[mid] <= i) lo = mid; else hi = mid;
    }
    const int *row = rows + 7 * (region[lo] + i - first[lo]);
    int *to = packed + 7 * i;
    for (int f = 0; f < 7; ++f) to[f] = row[f];
    keys[i] = ((long long)lo << q_shift) | row_key(row, rank + rank_at[lo], s_bits, r_bits);
}
