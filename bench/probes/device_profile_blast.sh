#!/usr/bin/env bash
# On the GPU host: compute-sanitizer (racecheck, memcheck) and ncu on the blastp kernel,
# then the kernel's time by block size.
# Usage: bash bench/probes/device_profile_blast.sh [checks|blocks|all]
set -o pipefail
what=${1:-all}
bash bench/device_run.sh none > /dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD PATH=/tmp/deb/usr/bin:$PATH
if [ "$what" != blocks ]; then
    echo "== racecheck (proteome only, 127 aa)"
    timeout 150 compute-sanitizer --tool racecheck --print-limit 5 python3 bench/blastp_profile.py --copies 0 --lengths 127 2>&1 | tail -3
    echo "== memcheck"
    timeout 100 compute-sanitizer --tool memcheck --print-limit 5 python3 bench/blastp_profile.py --copies 0 --lengths 127,1054 2>&1 | tail -3
    echo "== ncu"
    for L in 127 1054; do
        timeout 150 ncu --clock-control none -k two_hit_ungapped --launch-skip 1 --launch-count 1 \
            --section SpeedOfLight --section Occupancy --section WarpStateStats --section MemoryWorkloadAnalysis \
            python3 bench/blastp_profile.py --copies 20 --lengths "$L" 2>&1 | grep -v '^==PROF==' \
            | grep -E 'query|Duration|Throughput|Occupancy|Issued|Eligible|L1/TEX Hit|L2 Hit' | head -20
    done
fi
if [ "$what" != checks ]; then
    echo "== block sizes (199 copies: 136M residues)"
    timeout 300 python3 bench/blastp_profile.py --copies 199 --lengths 127,517,1054,2627 ${BLOCKS:---blocks 64,128,256,512} \
        --extensions ${EXTENSIONS:-diagonal,window4,window8,window16,window32}
fi
