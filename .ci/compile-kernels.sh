#!/usr/bin/env bash
# Compile every CUDA kernel file for sm_90 with nvcc, in the variants the
# package builds at run time (compile-time sizes), so a kernel that does not
# build fails CI even on a machine without a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v nvcc >/dev/null; then
    echo "compile-kernels: nvcc not found, skipping"
    exit 0
fi
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
n=0
for cu in $(git ls-files '*.cu'); do
    case "$cu" in
        gpu_search/hmmer/gpu/filters.cu)
            # G lanes per sequence, W words per lane, profile in shared or global memory,
            # SEQS sequences per Viterbi group, REDUX row maximum, TRANS_REGS nodes (viterbi_filter16: words) with
            # transitions in registers; W = 39 is viterbi_filter16's M = 2,485; KERNEL_*: one kernel alone, as
            # the package compiles them
            variants=("-DG=1 -DW=4" "-DG=4 -DW=24" "-DG=8 -DW=16" "-DG=16 -DW=28" "-DG=32 -DW=64"
                      "-DG=32 -DW=80 -DPROFILE_IN_SMEM=0" "-DG=16 -DW=12 -DSEQS=2" "-DG=32 -DW=16 -DSEQS=2" "-DG=8 -DW=18 -DSEQS=2"
                      "-DG=32 -DW=3 -DSEQS=2 -DREDUX=1 -DTRANS_REGS=3" "-DG=32 -DW=12 -DREDUX=1 -DTRANS_REGS=12"
                      "-DG=32 -DW=13 -DREDUX=1 -DTRANS_REGS=8" "-DG=32 -DW=32 -DREDUX=1 -DTRANS_REGS=16"
                      "-DG=32 -DW=40 -DREDUX=1 -DTRANS_REGS=12" "-DG=32 -DW=48 -DREDUX=1 -DTRANS_REGS=8"
                      "-DG=32 -DW=2 -DSEQS=2 -DREDUX=1 -DTRANS_REGS=2" "-DG=32 -DW=24 -DREDUX=1 -DTRANS_REGS=16"
                      "-DG=32 -DW=39" "-DG=8 -DW=16 -DKERNEL_MSV" "-DG=32 -DW=12 -DKERNEL_VITERBI16 -DSEQS=2") ;;
        gpu_search/blast/gpu/ungapped.cu)
            # BLAST's word size W, threads a block, WIN lanes a window (window-based extension),
            # the matrix in shared memory, the bins that cannot trigger struck off first
            variants=("-DWORD_SIZE=2 -DBLOCK=128" "-DWORD_SIZE=3 -DBLOCK=128" "-DWORD_SIZE=3 -DBLOCK=256"
                      "-DWORD_SIZE=3 -DBLOCK=512" "-DWORD_SIZE=4 -DBLOCK=64"
                      "-DWORD_SIZE=3 -DBLOCK=128 -DWIN=8" "-DWORD_SIZE=2 -DBLOCK=256 -DWIN=32 -DMATRIX_SMEM=1"
                      "-DWORD_SIZE=3 -DBLOCK=512 -DMATRIX_SMEM=1"
                      "-DWORD_SIZE=3 -DBLOCK=128 -DWIN=8 -DPREFILTER=1" "-DWORD_SIZE=4 -DBLOCK=512 -DWIN=16 -DPREFILTER=1 -DMATRIX_SMEM=1"
                      "-DWORD_SIZE=4 -DBLOCK=128 -DWIN=4 -DPREFILTER=1") ;;
        gpu_search/blast/gpu/gapped.cu)
            # BAND: DP ring cells per row; the shape blastp runs with (gapped.py's kernel_options)
            variants=("-DBAND=256" "-DBAND=16" "-DBAND=256 -DCELL_BUDGET=262144 -DWARPS=4") ;;
        gpu_search/hmmer/gpu/fwdback.cu)
            # whole (the GPU's finishing), and the Forward parser alone (the filter cascade's Forward stage)
            variants=("" "-DFORWARD_PARSER_ONLY") ;;
        *) variants=("") ;;
    esac
    for v in "${variants[@]}"; do
        # shellcheck disable=SC2086
        nvcc -arch=sm_90 -cubin -std=c++17 $v -o "$tmp/k.cubin" "$cu"
        n=$((n + 1))
    done
done
echo "compile-kernels: $n kernel builds for sm_90 OK"
