#!/usr/bin/env bash
# On the GPU host: HMMER's domain definition on the GPU, each kernel's GPU time against
# pyhmmer's finishing of the same pairs (domaindef_gpu.py), then ncu on one launch of each
# kernel named in NCU_KERNELS after the probe's warm-up call (--launch-skip 1), the probe run
# --gpu-only (what bounds it: occupancy, stalls, local memory traffic).
# Usage: bash bench/probes/device_profile_fwdback.sh [times|ncu|all]   (BENCH_ARGS: domaindef_gpu.py's)
set -o pipefail
what=${1:-all}
bash bench/device_run.sh none > /dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
args=${BENCH_ARGS:---models 200}
if [ "$what" != ncu ]; then
    # shellcheck disable=SC2086
    timeout 420 python3 bench/probes/domaindef_gpu.py $args 2>&1 | tee "$OUT/domaindef-times.log" | tail -20
fi
if [ "$what" != times ]; then
    for k in ${NCU_KERNELS:-forward_parser backward_parser posterior_decoding optimal_accuracy null2_by_expectation}; do
        echo "== ncu $k"
        # shellcheck disable=SC2086
        timeout 240 ncu --clock-control none -k "$k" --launch-skip 1 --launch-count 1 \
            --section SpeedOfLight --section Occupancy --section WarpStateStats --section LaunchStats \
            --section MemoryWorkloadAnalysis_Tables \
            python3 bench/probes/domaindef_gpu.py $args --gpu-only 2>&1 | grep -v '^==PROF==' \
            | grep -E 'Duration|Throughput|Occupancy|Registers|Local|Stall|Warp Cycles|Active Warps|Eligible|Issued|ERROR|Error' \
            | head -40
    done
fi
