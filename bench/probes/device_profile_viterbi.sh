#!/usr/bin/env bash
# On the GPU host: the Viterbi-filter variant sweep, then ncu on two variants.
# Usage: bash bench/probes/device_profile_viterbi.sh [sweep|ncu|all]
set -o pipefail
what=${1:-all}
bash bench/device_run.sh none > /dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
if [ "$what" != ncu ]; then
    timeout 420 python3 bench/probes/viterbi_sweep.py ${BENCH_ARGS:-} 2>&1 | tee "$OUT/viterbi-sweep.log" | grep -v "^[A-Za-z0-9_-]* *M=[0-9]* *G=" 
fi
if [ "$what" != sweep ]; then
    python3 bench/probes/viterbi_sweep.py --copies 5 --one LuxC,16,25,1 > /dev/null 2>&1   # builds the small db
    for v in ${NCU_VARIANTS:-LuxC,16,25,1 LuxC,32,13,2 LuxC,32,13,2,ROW_PREFETCH,XB_LAST}; do
        echo "== ncu $v"
        timeout 120 ncu --clock-control none -k viterbi_filter --launch-skip 1 --launch-count 1 \
            --section SpeedOfLight --section Occupancy --section WarpStateStats --section SchedulerStats \
            --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis_Tables \
            python3 bench/probes/viterbi_sweep.py --copies 5 --one "$v" 2>&1 | grep -v '^==PROF==' \
            | grep -E 'GCUPS|Duration|Throughput|Occupancy|Registers|Issued|Eligible|Stall|Warp Cycles|Active Warps|Pipe|Shared|Bank|wavefront|No Eligible|One or More' | head -40
    done
fi
