#!/usr/bin/env bash
# Fill .whl/ (ignored by git) with what the GPU host lacks, to be copied there beside the
# working tree and unpacked by bench/device_run.sh:
#   * pyhmmer's wheel for the host's Python 3.12 (its image has CuPy, numpy, numba and click); py-spy's;
#   * Debian 12's HMMER and BLAST+ (hmmsearch 3.3.2, blastp 2.12), the baselines;
#   * Debian 12's DIAMOND 2.1 and the AVX2 build of MMseqs2 14 (bench/blastp_others.py), the
#     latter alone and xz-compressed: the whole package, five SIMD builds, is 24 MB.
# The GPU host takes at most 64 MiB of .whl/ and working tree together; this prints the total.
#   bash bench/device_bundle.sh
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .whl/deb .whl/bin
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
    -d .whl pyhmmer==0.12.3
# py-spy (a static binary in a wheel): bench/probes/gil_profile.py, who holds the GIL in a blastp run
python3 -m pip download -q --no-deps --only-binary=:all: -d .whl py-spy==0.4.3
(cd .whl/deb && apt-get download -qq hmmer libdivsufsort3 ncbi-blast+ ncbi-data liblmdb0 libmbedcrypto7 \
    libmbedtls14 libmbedx509-1 libpcre3 diamond-aligner libgzstream0 2>&1 | grep -v "^W: " || true)
if [ ! -f .whl/bin/mmseqs-avx2.xz ]; then
    tmp=$(mktemp -d)
    (cd "$tmp" && apt-get download -qq mmseqs2 2>&1 | grep -v "^W: " || true)
    dpkg -x "$tmp"/mmseqs2_*.deb "$tmp/x"
    xz -9 -T0 -c "$tmp/x/usr/bin/mmseqs-avx2" > .whl/bin/mmseqs-avx2.xz
    rm -rf "$tmp"
fi
tree=$(git ls-files -z | xargs -0 du -cb 2>/dev/null | tail -1 | cut -f1)
whl=$(du -sb .whl | cut -f1)
echo "carried: .whl $((whl / 1048576)) MiB + working tree $((tree / 1048576)) MiB (limit 64 MiB)"
[ $((whl + tree)) -lt $((64 * 1048576)) ] || { echo "over the GPU host's 64 MiB limit" >&2; exit 1; }
