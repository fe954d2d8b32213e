#!/usr/bin/env bash
# Show that the Galaxy harness catches a failing tool test: start Galaxy as
# .ci/galaxy-test.sh does, with a copy of the tool whose first test compares
# an output with a wrong expected file (tests/galaxy/galaxy_api.py negative),
# and require galaxy-tool-test to report that test as failed.  Exits 0 when
# the failure is detected, non-zero otherwise.  Extra arguments go to
# .ci/galaxy-test.sh (e.g. --keep-running).
set -euo pipefail
cd "$(dirname "$0")/../.."
exec bash .ci/galaxy-test.sh --negative --skip lint --skip test --skip browser "$@"
