#!/usr/bin/env bash
# Writes tests/golden/*.cu again from the current templates and families (after an intended change
# to the generated CUDA), then shows what changed: review that diff before committing it.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake --build build --target unit_tests > /dev/null
KJIT_UPDATE_GOLDENS=1 build/tests/unit_tests -tc='golden: every*,golden: the record*' > /dev/null
git status --short tests/golden
git --no-pager diff --stat tests/golden
