#!/usr/bin/env bash
# Checks that the generated CUDA in tests/golden is stable under kernel_templates/.clang-format:
# clang-format leaves every golden source as it is. Prints what it would change, and exits 1 if
# anything; exits 2 if clang-format is missing (scripts/setup.sh installs it; $CLANG_FORMAT names
# another).
set -uo pipefail
cd "$(dirname "$0")/.."
format=${CLANG_FORMAT:-$(command -v clang-format-14 || command -v clang-format)}
if [ -z "$format" ] || ! command -v "$format" > /dev/null; then
    echo "check-generated-format: no clang-format found${format:+ at $format} (scripts/setup.sh installs it)" >&2
    exit 2
fi
changed=0
for source in tests/golden/*.cu; do
    if ! "$format" --style=file:kernel_templates/.clang-format "$source" | diff -u "$source" -; then
        changed=$((changed + 1))
    fi
done
echo "check-generated-format: $changed of $(ls tests/golden/*.cu | wc -l) golden sources would change under kernel_templates/.clang-format"
[ "$changed" -eq 0 ]
