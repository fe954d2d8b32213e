// BLAST's order of one query's init HSPs, on the GPU (ungapped.blast_order on the host):
// by subject, then the triggering hit's subject offset, then the hit's rank in its lookup
// cell (Lookup.query_rank of its query offset).  The kernel ungapped.cu writes its rows in
// no particular order; sorting them here, before they are copied back, spares the host a
// sort of up to ~10^5 rows a query.
//
// Rows: int32 x 7 = subject, q_off, s_off, q_start, s_start, length, score
// (INIT_HSP_DTYPE).  The host checks that subject, s_off and rank fit the 63 bits.

// One 63-bit key per row: subject << (s_bits + r_bits) | s_off << r_bits | rank.
extern "C" __global__ void blast_order_keys(const int *__restrict__ rows, int n_rows,
                                            const int *__restrict__ query_rank,
                                            int s_bits, int r_bits, long long *__restrict__ keys)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n_rows) return;
    const int *row = rows + 7 * (long long)i;
    keys[i] = ((long long)row[0] << (s_bits + r_bits)) | ((long long)row[2] << r_bits)
              | (long long)query_rank[row[1]];
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
