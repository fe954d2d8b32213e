#!/usr/bin/env bash
# On a host with two GPUs: one blastp cell of bench/blastp_matrix.py (default 500 queries x 68 M
# residues, many homologs) on one GPU (--gpus 0) and on two (--gpus 0,1), runs alternated after an
# untimed first run of each, all cores for every tool, and BLAST+ once, rows compared; then the
# GPU tests that need two GPUs.
#   bash bench/probes/blastp_two_gpus.sh [QUERIES DB HOMOLOGS CBS]     (REPS: runs of each, default 2)
set -uo pipefail
n=${1:-500}; db=${2:-68m}; hom=${3:-many}; cbs=${4:-0}
source bench/probes/blastp_cell.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
ours=(python3 -m gpu_search blastp -comp_based_stats $cbs -num_threads $(nproc) -outfmt 6 --device gpu
      -query "$Q" -db "$G" --quiet)
"${ours[@]}" --gpus 0 -out $OUT/one.tsv; "${ours[@]}" --gpus 0,1 -out $OUT/two.tsv     # first runs, untimed
for k in $(seq "${REPS:-2}"); do
    for g in 0 0,1; do
        t0=$(date +%s.%N)
        "${ours[@]}" --gpus $g -out $OUT/gpus-$g.tsv
        echo "--gpus $g: $(python3 -c "import time; print(round(time.time() - $t0, 2))") s"
    done
done
/usr/bin/time -f "BLAST+ %e s" blastp -comp_based_stats $cbs -num_threads $(nproc) -outfmt 6 -query "$Q" -db "$B" \
    -out $OUT/blast.tsv 2>&1 | tail -1
for g in 0 0,1; do
    cmp -s $OUT/gpus-$g.tsv $OUT/blast.tsv && echo "--gpus $g: rows identical to BLAST+'s ($(wc -l < $OUT/blast.tsv))" \
        || echo "--gpus $g: ROWS DIFFER from BLAST+'s"
done
timeout 200 python3 -m pytest -q -m gpu tests/blast/test_blast_gpu.py -k two_gpus -p no:cacheprovider 2>&1 | tail -3
