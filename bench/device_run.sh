#!/usr/bin/env bash
# One call on the GPU host: set up the carried wheels, run the GPU tests, run the benchmark.
# Usage (from the repository root, on the device):
#   bash bench/device_run.sh [tests|bench|all|multi|vit|blast|blast-tests|blast-bench|blast-others|blast-profile|blast-gil|blast-ab] [pytest args]
#   bash bench/device_run.sh matrix [bench/hmmsearch_matrix.py options]
#   bash bench/device_run.sh blast-matrix [bench/blastp_matrix.py options]
#   bash bench/device_run.sh hmm-profile [bench/probes/hmmsearch_profile.py options]
# (GPU tests: `pytest -m gpu tests -k "not blast"` for hmmsearch, `-k blast` for blastp; a -k among the
# pytest args replaces that selection)
# (.whl/: filled by bench/device_bundle.sh, copied to the GPU host beside the working tree)
set -uo pipefail
what=${1:-all}; shift || true
export PYTHONUNBUFFERED=1
mkdir -p /tmp/site
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>&1 | tail -2
if ! python3 -c "import llvmlite" 2>/dev/null && [ -f .whl/llvmlite-stripped.tar.xz ]; then
    tar -C /tmp/site -xJf .whl/llvmlite-stripped.tar.xz
fi
export PYTHONPATH=/tmp/site:$PWD${PYTHONPATH:+:$PYTHONPATH}
# bytecode compiled once, as pip leaves an installation: the GPU host sets
# PYTHONDONTWRITEBYTECODE=1, and its site-packages and the wheels above (--no-compile) have
# none, so every command compiled numpy's, pyhmmer's and our sources again (about 0.4 s of a
# 3 s hmmsearch run, py-spy)
python3 -m compileall -q -j 0 /tmp/site gpu_search \
    "$(python3 -c 'import numpy, os; print(os.path.dirname(os.path.dirname(numpy.__file__)))')" > /dev/null 2>&1 || true
if [ -d .whl/deb ]; then
    for f in .whl/deb/*.deb; do dpkg -x "$f" /tmp/deb; done
    if [ -f .whl/bin/mmseqs-avx2.xz ]; then       # (bench/device_bundle.sh: MMseqs2's AVX2 build alone)
        mkdir -p /tmp/deb/usr/bin && python3 -c "import lzma, sys; sys.stdout.buffer.write(lzma.open(sys.argv[1]).read())" \
            .whl/bin/mmseqs-avx2.xz > /tmp/deb/usr/bin/mmseqs-avx2
        chmod +x /tmp/deb/usr/bin/mmseqs-avx2
    fi
    export PATH=/tmp/deb/usr/bin:$PATH
    export LD_LIBRARY_PATH=/tmp/deb/usr/lib/x86_64-linux-gnu:/tmp/deb/lib/x86_64-linux-gnu:/tmp/deb/usr/lib/ncbi-blast+${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
python3 -c "import cupy, numpy, numba, pyhmmer; print('cupy', cupy.__version__, 'numpy', numpy.__version__, 'numba', numba.__version__, 'pyhmmer', pyhmmer.__version__)"
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
case "$what" in blast|blast-tests|blast-bench|blast-others|blast-gil)
    # the blastp benchmark's databases (~100 s on a fresh machine), built in the background while
    # the GPU tests run; the benchmark waits for them (prepare_databases holds a lock)
    (cd bench && nohup python3 -c 'from pathlib import Path; from blastp_bench import blast_programs, prepare_databases
prepare_databases(399, Path("/tmp/gsblastbench"), blast_programs()[1])' > /tmp/prepare-blast-db.log 2>&1 &) ;;
esac
rc=0
# GPU tests by marker and name, not by file (wherever under tests/ they live): the hmmsearch ones,
# and the blastp ones (their modules or folders are named blast)
HMM_K="not blast"; BLAST_K="blast"
if [ "$what" = tests ] || [ "$what" = all ]; then
    timeout 420 python3 -m pytest -m gpu tests -k "$HMM_K" -q -x -p no:cacheprovider "$@" 2>&1 | tee "$OUT/gpu-tests.log" | tail -25
    rc=${PIPESTATUS[0]}
fi
if [ "$what" = bench ] || [ "$what" = all ]; then
    timeout 540 python3 bench/hmmsearch_bench.py --cpus "$(nproc)" --out "$OUT" 2>&1 | tee "$OUT/bench.log" | tail -30
fi
if [ "$what" = blast-tests ] || [ "$what" = blast ]; then
    timeout 400 python3 -m pytest -m gpu tests -k "$BLAST_K" -q -x -p no:cacheprovider "$@" 2>&1 | tee "$OUT/blast-gpu-tests.log" | tail -25
    rc=${PIPESTATUS[0]}
fi
if [ "$what" = blast-bench ] || { [ "$what" = blast ] && [ $rc = 0 ]; }; then
    timeout 560 python3 bench/blastp_gpu_bench.py --threads "$(nproc)" --out "$OUT" ${BENCH_ARGS:-} 2>&1 | tee "$OUT/blast-bench.log" | tail -30
fi
if [ "$what" = blast-others ]; then   # DIAMOND and MMseqs2 beside BLAST+ and us (bench/blastp_others.py)
    timeout 580 python3 bench/blastp_gpu_bench.py --threads "$(nproc)" --out "$OUT" --others ${BENCH_ARGS:---sets 100} \
        2>&1 | tee "$OUT/blast-others.log" | tail -40
    rc=${PIPESTATUS[0]}
fi
if [ "$what" = blast-profile ]; then  # the ungapped kernel alone, e.g. BENCH_ARGS="--copies 99 --prefilter"
    timeout 580 python3 bench/blastp_profile.py ${BENCH_ARGS:---copies 99 --prefilter} 2>&1 | tee "$OUT/blast-profile.log" | tail -40
    rc=${PIPESTATUS[0]}
fi
if [ "$what" = blast-ab ]; then    # AB_OLD: a folder holding an older gpu_search (bench/probes/blastp_ab.py says how)
    timeout "${AB_S:-300}" python3 bench/probes/blastp_ab.py --old "${AB_OLD:?set AB_OLD}" --reps "${AB_REPS:-4}" 2>&1 \
        | tee "$OUT/blast-ab.log" | tail -30
    rc=${PIPESTATUS[0]}
fi
if [ "$what" = blast-gil ]; then   # who holds the GIL in a 100-query run (bench/probes/gil_profile.py; py-spy's wheel in .whl)
    if [ -n "${HMM_TESTS:-}" ]; then   # the hmmsearch GPU tests first, while the database is built
        timeout 300 python3 -m pytest -m gpu tests -k "$HMM_K" -q -x -p no:cacheprovider 2>&1 | tee "$OUT/gpu-tests.log" | tail -6
        rc=${PIPESTATUS[0]}
    fi
    PATH=/tmp/site/bin:$PATH timeout "${GIL_S:-400}" python3 bench/probes/gil_profile.py --out "$OUT" ${BENCH_ARGS:-} 2>&1 \
        | tee "$OUT/gil-profile.log" | tail -150
    [ "${PIPESTATUS[0]}" = 0 ] || rc=1
fi
if [ "$what" = vit ]; then
    # VIT_K: a pytest -k expression within the hmmsearch GPU tests (empty: all); VIT_TEST_S / VIT_SWEEP_S: time limits
    timeout "${VIT_TEST_S:-300}" python3 -m pytest -m gpu tests -k "$HMM_K${VIT_K:+ and ($VIT_K)}" -q -x -p no:cacheprovider 2>&1 | tee "$OUT/gpu-tests.log" | tail -15
    rc=${PIPESTATUS[0]}
    timeout "${VIT_SWEEP_S:-400}" python3 bench/probes/viterbi_sweep.py ${BENCH_ARGS:-} 2>&1 | tee "$OUT/viterbi-sweep.log" | tail -80
fi
if [ "$what" = matrix ]; then   # bench/hmmsearch_matrix.py, its options passed through; MATRIX_S: time limit
    timeout "${MATRIX_S:-570}" python3 bench/hmmsearch_matrix.py --out "$OUT" "$@" 2>&1 | tee "$OUT/matrix.log" | tail -60
    rc=${PIPESTATUS[0]}
fi
if [ "$what" = blast-matrix ]; then   # bench/blastp_matrix.py, its options passed through; MATRIX_S: time limit
    timeout "${MATRIX_S:-570}" python3 bench/blastp_matrix.py --out "$OUT" "$@" 2>&1 | tee "$OUT/blast-matrix.log" | tail -60
    rc=${PIPESTATUS[0]}
fi
if [ "$what" = hmm-profile ]; then   # bench/probes/hmmsearch_profile.py, its options passed through
    PATH=/tmp/site/bin:$PATH timeout "${PROFILE_S:-570}" python3 bench/probes/hmmsearch_profile.py --out "$OUT" "$@" 2>&1 \
        | tee "$OUT/hmm-profile.log" | tail -150
    rc=${PIPESTATUS[0]}
fi
if [ "$what" = multi ]; then
    timeout 540 python3 bench/multi_gpu.py 2>&1 | tee "$OUT/multi_gpu.log" | tail -20
fi
exit $rc
