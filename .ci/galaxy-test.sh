#!/usr/bin/env bash
# Galaxy CI: test the Galaxy tool (top-level tool.xml, else the stand-in
# tests/galaxy/stand-in/tool.xml) in a real Galaxy 26.1.2 on 127.0.0.1.
#
# Phases, in order (each one timed):
#   install   .galaxy-venv/ (Galaxy 26.1.2 + planemo 0.75.47), .galaxy-tool-venv/ (this
#             checkout, editable: the `gpu-search` that Galaxy jobs run), Debian chromium
#             (each skipped when already there)
#   start     write .galaxy-run/server/{galaxy.yml,tool_conf.xml}, start galaxy-web on a
#             free port, wait for /api/version, create the test user and its API key
#   lint      planemo lint --fail_level error (warnings are printed, errors fail)
#   test      galaxy-tool-test: every <test> of the tool must pass
#   browser   tests/galaxy/browser_test.py: the tool form in headless Chromium; screenshots
#             in .galaxy-run/screenshots/, copied to docs/galaxy/
#   negative  (only with --negative) a copy of the tool whose first test has a wrong
#             expected file: galaxy-tool-test must report it failed
# install and start stop the script when they fail; lint, test, browser and negative all
# run, and the script exits non-zero at the end if any of them failed.  The server is
# always stopped on exit (unless --keep-running).
#
# Usage: bash .ci/galaxy-test.sh [--until PHASE] [--skip PHASE]... [--negative] [--keep-running]
#   --until PHASE    stop after PHASE (also GALAXY_TEST_UNTIL=PHASE), e.g. --until install
#   --skip PHASE     leave out lint, test, browser or negative (also GALAXY_TEST_SKIP="lint browser")
#   --negative       also run the negative check (also GALAXY_TEST_NEGATIVE=1);
#                    tests/galaxy/negative_check.sh runs only that
#   --keep-running   leave Galaxy running at the end and print its URL, login, keys and PID
# Environment: GALAXY_TEST_TOOL=path/to/tool.xml to test another tool file;
#   GPU_SEARCH_BIN=/path/to/gpu-search to use an existing gpu-search instead of the tool venv;
#   GALAXY_TEST_VENV, GALAXY_TEST_TOOL_VENV, GALAXY_TEST_RUN: other folders than the three above
#   (`rm -rf .galaxy-venv .galaxy-tool-venv .galaxy-run` undoes everything but chromium).
# Needs: python3 (3.11) with venv, network to PyPI and Debian, root or sudo for apt-get.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

GALAXY_VERSION=26.1.2
PLANEMO_VERSION=0.75.47
PHASES=(install start lint test browser negative)

UNTIL=${GALAXY_TEST_UNTIL:-}
SKIP=" ${GALAXY_TEST_SKIP:-} "
NEGATIVE=${GALAXY_TEST_NEGATIVE:-0}
KEEP=0
while [ $# -gt 0 ]; do
    case "$1" in
        --until) UNTIL=$2; shift 2 ;;
        --until=*) UNTIL=${1#*=}; shift ;;
        --skip) SKIP="$SKIP $2 "; shift 2 ;;
        --skip=*) SKIP="$SKIP ${1#*=} "; shift ;;
        --negative) NEGATIVE=1; shift ;;
        --keep-running) KEEP=1; shift ;;
        -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "galaxy-test: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
done
if [ -n "$UNTIL" ] && [[ " ${PHASES[*]} " != *" $UNTIL "* ]]; then
    echo "galaxy-test: --until must be one of: ${PHASES[*]}" >&2; exit 2
fi
for p in $SKIP; do
    case "$p" in lint|test|browser|negative) ;; *) echo "galaxy-test: cannot skip $p" >&2; exit 2 ;; esac
done
[ "$NEGATIVE" = 1 ] || SKIP="$SKIP negative "

# Everything installed or written goes to three folders ignored by git (/.galaxy*/ in .gitignore)
VENV=${GALAXY_TEST_VENV:-$ROOT/.galaxy-venv}                 # Galaxy + planemo (~1.6 GB)
TOOL_VENV=${GALAXY_TEST_TOOL_VENV:-$ROOT/.galaxy-tool-venv}  # gpu-search, for Galaxy's jobs (~340 MB)
RUN=${GALAXY_TEST_RUN:-$ROOT/.galaxy-run}                    # config, database, logs, reports, screenshots
SERVER=$RUN/server
SHOTS=$RUN/screenshots
mkdir -p "$RUN"
export TMPDIR=$RUN/tmp             # Galaxy's runners and pip leave files in TMPDIR
mkdir -p "$TMPDIR"
export PIP_DISABLE_PIP_VERSION_CHECK=1

if [ -n "${GALAXY_TEST_TOOL:-}" ]; then
    TOOL_XML=$(realpath "$GALAXY_TEST_TOOL")
elif [ -f "$ROOT/tool.xml" ]; then
    TOOL_XML=$ROOT/tool.xml
else
    TOOL_XML=$ROOT/tests/galaxy/stand-in/tool.xml
    echo "galaxy-test: no top-level tool.xml: using the stand-in $TOOL_XML"
fi

# ---- timing, phases, failures -------------------------------------------------
declare -a TIMES=() FAILED=()
now_ms() { echo $(( $(date +%s%N) / 1000000 )); }
secs() { local ms=$(( $(now_ms) - $1 )); printf '%d.%d' $((ms / 1000)) $((ms % 1000 / 100)); }
T_ALL=$(now_ms)
T_PHASE=
CUR=
begin() {  # begin PHASE: returns 1 if the phase is skipped
    CUR=$1; T_PHASE=$(now_ms)
    if [[ "$SKIP" == *" $1 "* ]]; then
        TIMES+=("$(printf '%-9s %7s    (skipped)' "$1" -)"); CUR=; return 1
    fi
    echo "===== galaxy-test: $1 ($(date +%T))"
}
end() {  # end [STATUS]: record the phase's time; stop here if it is the --until phase
    TIMES+=("$(printf '%-9s %7s s  (%s)' "$CUR" "$(secs "$T_PHASE")" "${1:-ok}")")
    local done_phase=$CUR; CUR=
    if [ "$done_phase" = "$UNTIL" ]; then
        echo "galaxy-test: stopping after phase $UNTIL (--until)"; exit $(( ${#FAILED[@]} > 0 ))
    fi
}
check_phase() {  # check_phase PHASE FUNCTION: run a check; on failure note it and go on
    begin "$1" || return 0
    local rc=0
    set +e; ( set -e; "$2" ); rc=$?; set -e
    if [ $rc -eq 0 ]; then end ok; else FAILED+=("$1"); end "FAILED, exit $rc"; fi
}

GALAXY_PID=
cleanup() {
    local rc=$?
    if [ -n "$GALAXY_PID" ] && kill -0 "$GALAXY_PID" 2>/dev/null; then
        if [ "$KEEP" = 1 ]; then
            echo "galaxy-test: Galaxy left running at $URL (pid $GALAXY_PID)"
            echo "  login $USER_EMAIL / $USER_PASSWORD; user API key $USER_KEY; admin key $ADMIN_KEY"
            echo "  stop it with: kill -- -$GALAXY_PID"
        else
            # galaxy-web was started with setsid: its process group is its pid
            kill -TERM -- "-$GALAXY_PID" 2>/dev/null || true
            for _ in $(seq 30); do kill -0 "$GALAXY_PID" 2>/dev/null || break; sleep 1; done
            kill -KILL -- "-$GALAXY_PID" 2>/dev/null || true
            echo "galaxy-test: Galaxy stopped"
        fi
    fi
    [ -z "$CUR" ] || TIMES+=("$(printf '%-9s %7s s  (FAILED, exit %s)' "$CUR" "$(secs "$T_PHASE")" "$rc")")
    echo "galaxy-test: phase times (tool $TOOL_XML)"
    local l; for l in "${TIMES[@]}"; do echo "  $l"; done
    printf '  %-9s %7s s\n' total "$(secs "$T_ALL")"
    if [ $rc -ne 0 ]; then
        echo "galaxy-test: FAILED${CUR:+ in phase $CUR}${FAILED[*]:+ (failed: ${FAILED[*]})}"
        if [ "$CUR" = start ] && [ -f "$RUN/galaxy.log" ]; then
            echo "----- last lines of $RUN/galaxy.log"; tail -n 40 "$RUN/galaxy.log"
        fi
    else
        echo "galaxy-test: OK"
    fi
    exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---- install ----------------------------------------------------------------
LOG_INSTALL=$RUN/install.log
quiet() {  # quiet CMD...: run CMD with its output in $LOG_INSTALL, shown only if it fails
    echo "+ $*" >> "$LOG_INSTALL"
    "$@" >> "$LOG_INSTALL" 2>&1 || { local rc=$?; tail -n 60 "$LOG_INSTALL"; echo "failed: $*" >&2; return $rc; }
}

apt_install() {
    local SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
    # apt's sandbox user cannot write our private TMPDIR
    quiet $SUDO env -u TMPDIR apt-get update -qq
    quiet $SUDO env -u TMPDIR DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@"
}

install_galaxy() {
    local stamp=$VENV/.installed-galaxy-$GALAXY_VERSION-planemo-$PLANEMO_VERSION
    if [ -f "$stamp" ]; then echo "Galaxy venv: present ($VENV)"; return; fi
    echo "installing Galaxy $GALAXY_VERSION and planemo $PLANEMO_VERSION into $VENV (log $LOG_INSTALL)"
    rm -rf "$VENV"
    python3 -m venv "$VENV"
    quiet "$VENV/bin/python" -m pip install --upgrade pip wheel
    # `pip install galaxy==26.1.2` fails: the metapackage pins certifi==2026.10.19, which is not
    # on PyPI.  Install its pins (certifi unpinned), then the metapackage without dependencies.
    local dl=$RUN/galaxy-wheel; rm -rf "$dl"; mkdir -p "$dl"
    quiet "$VENV/bin/python" -m pip download --no-deps -d "$dl" "galaxy==$GALAXY_VERSION"
    "$VENV/bin/python" - "$dl" "$RUN/galaxy-requirements.txt" "$RUN/galaxy-constraints.txt" <<'EOF'
import glob, re, sys, zipfile
dl, req_out, con_out = sys.argv[1:]
whl = glob.glob(f"{dl}/galaxy-*.whl")[0]
with zipfile.ZipFile(whl) as z:
    meta = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
    lines = z.read(meta).decode().splitlines()
reqs = [l.split(":", 1)[1].strip() for l in lines if l.startswith("Requires-Dist:")]
reqs = [r for r in reqs if "extra ==" not in r]
def name(r): return re.split(r"[\s\[=<>!~;(]", r, 1)[0].lower().replace("_", "-")
reqs = ["certifi" if name(r) == "certifi" else r for r in reqs]
open(req_out, "w").write("\n".join(reqs) + "\n")
# constraints for planemo: the same pins, extras stripped, galaxy-* and certifi left out
cons = [re.sub(r"\[[^\]]*\]", "", r) for r in reqs if not name(r).startswith("galaxy") and name(r) != "certifi"]
open(con_out, "w").write("\n".join(cons) + "\n")
print(f"{whl.rsplit('/', 1)[1]}: {len(reqs)} pinned requirements")
EOF
    quiet "$VENV/bin/python" -m pip install -r "$RUN/galaxy-requirements.txt"
    quiet "$VENV/bin/python" -m pip install --no-deps "galaxy==$GALAXY_VERSION"
    quiet "$VENV/bin/python" -m pip install -c "$RUN/galaxy-constraints.txt" "planemo==$PLANEMO_VERSION"
    # pip check reports only the certifi pin (galaxy wants certifi==2026.10.19, not on PyPI)
    "$VENV/bin/python" -m pip check 2>&1 | grep -v '^WARNING' || true
    touch "$stamp"
}

install_tool() {
    if [ -n "${GPU_SEARCH_BIN:-}" ]; then
        echo "gpu-search for jobs: $GPU_SEARCH_EXE (GPU_SEARCH_BIN)"; return
    fi
    # editable install: the venv follows the checkout; reinstall only if pyproject.toml changed
    local stamp; stamp=$TOOL_VENV/.installed-$(sha1sum pyproject.toml | cut -c1-12)
    if [ -f "$stamp" ] && [ -x "$GPU_SEARCH_EXE" ]; then echo "gpu-search venv: present ($TOOL_VENV)"; return; fi
    echo "installing this checkout (editable) into $TOOL_VENV (log $LOG_INSTALL)"
    rm -rf "$TOOL_VENV"
    python3 -m venv "$TOOL_VENV"
    quiet "$TOOL_VENV/bin/python" -m pip install --upgrade pip
    quiet "$TOOL_VENV/bin/python" -m pip install -e "$ROOT"
    touch "$stamp"
}

if [ -n "${GPU_SEARCH_BIN:-}" ]; then
    GPU_SEARCH_EXE=$(realpath "$(command -v "$GPU_SEARCH_BIN")")
else
    GPU_SEARCH_EXE=$TOOL_VENV/bin/gpu-search
fi
begin install
install_galaxy
install_tool
"$GPU_SEARCH_EXE" --version
if [[ "$SKIP" != *" browser "* ]] && [ ! -x /usr/bin/chromium ]; then
    echo "installing Debian chromium (for the browser test; log $LOG_INSTALL)"
    apt_install chromium
fi
end

PY=$VENV/bin/python
API="$PY $ROOT/tests/galaxy/galaxy_api.py"
TOOL_ID=$($API tool-id "$TOOL_XML")
echo "tool: $TOOL_XML (id $TOOL_ID)"

# ---- start ------------------------------------------------------------------
ADMIN_KEY=admin-$(od -An -N8 -tx8 /dev/urandom | tr -d ' ')
USER_EMAIL=gpu-search-test@example.org
USER_PASSWORD=gpu-search-test-$(od -An -N4 -tx4 /dev/urandom | tr -d ' ')
USER_KEY=
URL=
NEG_ID=
begin start
rm -rf "$SERVER"; mkdir -p "$SERVER/data" "$SERVER/jobbin" "$SHOTS"
# the only program Galaxy's jobs get from us: gpu-search, first on their PATH (see job_config)
ln -s "$GPU_SEARCH_EXE" "$SERVER/jobbin/gpu-search"
NEG_TOOL_LINE=
if [[ "$SKIP" != *" negative "* ]]; then
    NEG_ID=$($API negative "$TOOL_XML" "$RUN/negative-tool")
    NEG_TOOL_LINE="<tool file=\"$RUN/negative-tool/tool.xml\" hidden=\"true\"/>"
fi
cat > "$SERVER/tool_conf.xml" <<EOF
<?xml version="1.0"?>
<toolbox monitor="false">
  <section id="gpu_search_section" name="gpu-search">
    <tool file="$TOOL_XML"/>
    $NEG_TOOL_LINE
  </section>
</toolbox>
EOF
# tool_dependency_dir none + no conda + no mulled containers: Galaxy resolves no requirement
# and pulls no container; jobs run with the local runner, gpu-search from jobbin/ on PATH.
# Job folders are kept (cleanup_job: never) for a look after a failure.
# the tool's test data tables (its BLAST database for the tests), where it has any
TABLES=$(dirname "$TOOL_XML")/tool_data_table_conf.xml.test
TABLES_LINE=
[ -f "$TABLES" ] && TABLES_LINE="tool_data_table_config_path: $TABLES"
cat > "$SERVER/galaxy.yml" <<EOF
galaxy:
  $TABLES_LINE
  data_dir: $SERVER/data
  database_connection: sqlite:///$SERVER/data/universe.sqlite?isolation_level=IMMEDIATE
  tool_config_file: $SERVER/tool_conf.xml
  tool_dependency_dir: none
  conda_auto_init: false
  conda_auto_install: false
  involucro_auto_init: false
  enable_mulled_containers: false
  admin_users: admin@example.org
  bootstrap_admin_api_key: $ADMIN_KEY
  watch_tools: 'false'
  cleanup_job: never
  job_config:
    runners:
      local:
        load: galaxy.jobs.runners.local:LocalJobRunner
        workers: 2
    execution:
      default: local
      environments:
        local:
          runner: local
          env:
            - name: PATH
              value: $SERVER/jobbin:\$PATH
EOF
PORT=$($API free-port)
URL=http://127.0.0.1:$PORT
# setsid: the server and its workers form one process group, stopped together by cleanup()
VIRTUAL_ENV=$VENV PATH=$VENV/bin:$PATH setsid "$VENV/bin/galaxy-web" -c "$SERVER/galaxy.yml" \
    -b "127.0.0.1:$PORT" > "$RUN/galaxy.log" 2>&1 < /dev/null &
GALAXY_PID=$!
echo "galaxy-web pid $GALAXY_PID at $URL (log $RUN/galaxy.log)"
$API wait "$URL" --pid "$GALAXY_PID" --timeout 600
USER_KEY=$($API create-user "$URL" --admin-key "$ADMIN_KEY" --email "$USER_EMAIL" \
    --password "$USER_PASSWORD" --username gpu-search-test)
echo "test user $USER_EMAIL created"
end

# ---- checks -----------------------------------------------------------------
phase_lint() {
    cd "$(dirname "$TOOL_XML")"
    "$VENV/bin/planemo" lint --fail_level error "$TOOL_XML"
}

run_tool_tests() {  # run_tool_tests TOOL_ID REPORT_BASENAME: galaxy-tool-test's exit status
    rm -rf "${RUN:?}/$2.json" "${RUN:?}/$2-outputs"
    # made here: with --parallel-tests, Galaxy's verify code checks for it and then creates it,
    # and two tests finishing together raced to "File exists" (a CI run of 5302f3f)
    mkdir -p "$RUN/$2-outputs"
    (cd "$RUN" && "$VENV/bin/galaxy-tool-test" -u "$URL" -k "$USER_KEY" -a "$USER_KEY" \
        -t "$1" -j "$RUN/$2.json" -o "$RUN/$2-outputs" --parallel-tests 2 --with-reference-data \
        > "$RUN/$2.log" 2>&1)
}

phase_test() {
    local rc=0
    run_tool_tests "$TOOL_ID" tool-test || rc=$?
    echo "galaxy-tool-test: exit $rc (report $RUN/tool-test.json, log $RUN/tool-test.log," \
         "outputs in $RUN/tool-test-outputs/, job folders in $SERVER/data/jobs_directory/)"
    [ -f "$RUN/tool-test.json" ] || { tail -n 40 "$RUN/tool-test.log"; return 1; }
    $API summarize "$RUN/tool-test.json"
    [ $rc -eq 0 ]
}

phase_browser() {
    "$PY" "$ROOT/tests/galaxy/browser_test.py" --url "$URL" --email "$USER_EMAIL" \
        --password "$USER_PASSWORD" --tool-xml "$TOOL_XML" --out "$SHOTS" --docs "$ROOT/docs/galaxy"
}

phase_negative() {
    local rc=0
    run_tool_tests "$NEG_ID" negative-test || rc=$?
    echo "galaxy-tool-test on $NEG_ID (a wrong expected file): exit $rc (log $RUN/negative-test.log)"
    [ -f "$RUN/negative-test.json" ] || { tail -n 40 "$RUN/negative-test.log"; return 1; }
    # the failure must be the comparison with the wrong file, not anything else
    if ! $API summarize "$RUN/negative-test.json" --expect-failure negative-check-wrong-expected.txt \
            || [ $rc -eq 0 ]; then
        echo "negative check FAILED: a test with a wrong expected file was not reported as failed"
        return 1
    fi
    echo "negative check OK: galaxy-tool-test reported the wrong expected file as a failure"
}

check_phase lint phase_lint
check_phase test phase_test
check_phase browser phase_browser
check_phase negative phase_negative

[ ${#FAILED[@]} -eq 0 ] || exit 1
