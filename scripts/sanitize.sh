#!/usr/bin/env bash
# The test suite built with AddressSanitizer + UndefinedBehaviorSanitizer (clang), then each
# libFuzzer target in fuzz/ for a fixed time from its checked-in seeds (fuzz/corpus/<target>, and
# configs/ for the config target). Any sanitizer report, crash or test failure fails the script;
# a fuzzer's crashing input is kept in build-sanitize/fuzz-findings/ to be added to the corpus.
#   scripts/sanitize.sh [SECONDS_PER_TARGET]      (default 60; CI runs it as part of .ci/run)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
dpkg -s clang libclang-rt-dev > /dev/null 2>&1 || {
    sudo=$([ "$(id -u)" = 0 ] || echo sudo)
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq clang libclang-rt-dev > /dev/null
}
CC=clang CXX=clang++ cmake -S . -B build-sanitize -G Ninja -DCUDAToolkit_ROOT=/usr/local/cuda -DKJIT_FUZZ=ON > /dev/null
cmake --build build-sanitize
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1
ctest --test-dir build-sanitize --output-on-failure -L 'unit|nvrtc'

findings=build-sanitize/fuzz-findings
mkdir -p "$findings"
for target in fuzz_config fuzz_set fuzz_expr; do
    scratch=$(mktemp -d)  # new inputs go here, not into the checked-in seeds
    seeds=(fuzz/corpus/$target)
    [ "$target" = fuzz_config ] && seeds+=(configs)
    echo "== $target: ${seconds} s"
    build-sanitize/fuzz/$target "$scratch" "${seeds[@]}" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=4096 \
        -max_len=1048576 -artifact_prefix="$findings/$target-" -print_final_stats=1 2>&1 | tail -n 12
    rm -rf "$scratch"
done
