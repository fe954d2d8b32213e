#!/usr/bin/env bash
# Rebuild the expected outputs of test-data/ with HMMER 3.4 itself (see README.md).
set -euo pipefail
cd "$(dirname "$0")/.."
exe=$(python3 -c "import sys; sys.path.insert(0, 'tests'); from oracle.build import build; print(build('hmmsearch_oracle'))")
"$exe" --tblout test-data/four-models.tblout --domtblout test-data/four-models.domtblout \
       --pfamtblout test-data/four-models.pfamtblout -o test-data/four-models.out \
       test-data/four-models.hmm test-data/proteome.faa
