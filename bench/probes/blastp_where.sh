#!/usr/bin/env bash
# On the GPU host: where a blastp run's time goes, for one cell of bench/blastp_matrix.py
# (default 500 queries x 68 M residues, many homologs): an untimed first run, then a run with
# --timings and --timeline (bench/probes/timeline.py summarises it), one sampled by py-spy
# --gil (the thread holding the interpreter lock), and BLAST+ on all cores, rows compared.
#   bash bench/probes/blastp_where.sh [QUERIES DB HOMOLOGS CBS]
set -uo pipefail
n=${1:-500}; db=${2:-68m}; hom=${3:-many}; cbs=${4:-0}
source bench/probes/blastp_cell.sh
ours=(python3 -m gpu_search blastp -comp_based_stats $cbs -num_threads $(nproc) -outfmt 6 --device gpu
      -query "$Q" -db "$G")
/usr/bin/time -f "first run %e s" "${ours[@]}" -out $OUT/first.tsv 2>&1 | tail -2
/usr/bin/time -f "warm run %e s" "${ours[@]}" -out $OUT/ours.tsv --timings --timeline $OUT/timeline.json 2>&1 | tail -3
/usr/bin/time -f "warm run %e s" "${ours[@]}" -out $OUT/ours2.tsv 2>&1 | tail -1
if [ -z "${QUICK:-}" ]; then          # QUICK=1: no py-spy run, no BLAST+
py-spy record --gil --nonblocking --threads -r 500 -f raw -o $OUT/gil.txt -- "${ours[@]}" -out $OUT/spy.tsv > $OUT/spy.log 2>&1
tail -1 $OUT/spy.log
python3 bench/probes/timeline.py $OUT/timeline.json --step 1 > $OUT/timeline.txt; tail -12 $OUT/timeline.txt
/usr/bin/time -f "BLAST+ %e s" blastp -comp_based_stats $cbs -num_threads $(nproc) -outfmt 6 -query "$Q" -db "$B" \
    -out $OUT/blast.tsv 2>&1 | tail -1
wc -l $OUT/ours.tsv $OUT/blast.tsv | head -2
cmp -s $OUT/ours.tsv $OUT/blast.tsv && echo "rows identical" || echo "ROWS DIFFER: $(diff $OUT/ours.tsv $OUT/blast.tsv | grep -c '^[<>]') lines"
python3 -c "import sys; sys.path.insert(0, 'bench/probes'); from gil_profile import summarise
from pathlib import Path; summarise(Path('$OUT/gil.txt'), 1.0, 500, top=10)" 2>&1 | head -120
fi
if [ -n "${ALSO_CBS:-}" ]; then     # our warm run with another -comp_based_stats (BLAST+ not run again)
    /usr/bin/time -f "warm run, cbs $ALSO_CBS: %e s" "${ours[@]}" -comp_based_stats "$ALSO_CBS" --timings \
        -out $OUT/ours-cbs$ALSO_CBS.tsv 2>&1 | tail -3
fi
if [ -n "${AB_OLD:-}" ] && [ -z "${FIRST_AB:-}" ]; then   # an older gpu_search (git archive REV gpu_search | tar -x -C AB_OLD), runs alternated
    # the old runs start in AB_OLD: `python -m` puts the current folder first on sys.path, before
    # PYTHONPATH, so from the repository root they would run this checkout's gpu_search
    (cd "$AB_OLD" && PYTHONPATH=$AB_OLD:/tmp/site "${ours[@]}" -out $OUT/ab-old.tsv --quiet)   # (its own numba cache)
    for k in 1 2 3; do
        for v in old new; do
            if [ $v = old ]; then dir=$AB_OLD; pp=$AB_OLD:/tmp/site; else dir=$PWD; pp=/tmp/site:$PWD; fi
            t0=$(date +%s.%N)
            (cd "$dir" && PYTHONPATH=$pp "${ours[@]}" -out $OUT/ab-$v.tsv --quiet)
            echo "A/B $v $(python3 -c "import time; print(round(time.time() - $t0, 2))") s"
        done
    done
    cmp -s $OUT/ab-old.tsv $OUT/ab-new.tsv && echo "A/B rows identical" || echo "A/B ROWS DIFFER"
fi
if [ -n "${AB_OLD:-}" ] && [ -n "${FIRST_AB:-}" ]; then   # first runs (numba's and CuPy's caches empty), old and new alternated
    for k in $(seq "${FIRST_AB}"); do
        for v in old new; do
            if [ $v = old ]; then dir=$AB_OLD; pp=$AB_OLD:/tmp/site; else dir=$PWD; pp=/tmp/site:$PWD; fi
            caches=$(mktemp -d)
            for run in first second; do
                t0=$(date +%s.%N)
                (cd "$dir" && NUMBA_CACHE_DIR=$caches/numba CUPY_CACHE_DIR=$caches/cupy PYTHONPATH=$pp "${ours[@]}" \
                    -out $OUT/$run-$v.tsv --quiet)
                echo "$run run $v $(python3 -c "import time; print(round(time.time() - $t0, 2))") s"
            done
            rm -rf "$caches"
        done
    done
    cmp -s $OUT/first-old.tsv $OUT/first-new.tsv && cmp -s $OUT/first-new.tsv $OUT/ours.tsv && echo "first-run rows identical" \
        || echo "FIRST-RUN ROWS DIFFER"
fi
if [ -n "${AFTER_COMPILE:-}" ]; then   # `gpu-search compile` into empty caches (no cubins), then a first and a second run
    caches=$(mktemp -d); rm -rf gpu_search/gpu/compiled
    export NUMBA_CACHE_DIR=$caches/numba CUPY_CACHE_DIR=$caches/cupy
    /usr/bin/time -f "gpu-search compile --arch 90: %e s" python3 -m gpu_search compile --arch 90 2>&1 | tail -3
    for run in first second; do
        t0=$(date +%s.%N)
        NUMBA_DEBUG_CACHE=1 "${ours[@]}" -out $OUT/compiled-$run.tsv --quiet > $OUT/compiled-$run.log 2>&1
        echo "$run run after compile $(python3 -c "import time; print(round(time.time() - $t0, 2))") s;" \
            "numba loops loaded $(grep -c 'data loaded' $OUT/compiled-$run.log), compiled $(grep -c 'data saved' $OUT/compiled-$run.log)"
        grep 'data saved' $OUT/compiled-$run.log | head -5
    done
    cmp -s $OUT/compiled-first.tsv $OUT/ours.tsv && echo "rows identical" || echo "ROWS DIFFER"
    unset NUMBA_CACHE_DIR CUPY_CACHE_DIR; rm -rf "$caches"
fi
if [ -n "${SWEEP:-}" ]; then        # BlastSettings variants, ';'-separated JSON objects, runs alternated with the defaults
    IFS=';' read -ra variants <<< "{};$SWEEP"
    for k in $(seq "${REPS:-2}"); do
        for v in "${variants[@]}"; do
            t0=$(date +%s.%N)
            python3 bench/blastp_with_settings.py "$v" blastp -comp_based_stats $cbs -num_threads $(nproc) -outfmt 6 \
                --device gpu -query "$Q" -db "$G" -out $OUT/sweep.tsv --quiet
            echo "settings $v: $(python3 -c "import time; print(round(time.time() - $t0, 2))") s" \
                "$(cmp -s $OUT/sweep.tsv $OUT/ours.tsv && echo rows identical || echo ROWS DIFFER)"
        done
    done
fi
