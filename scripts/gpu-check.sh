#!/usr/bin/env bash
# The GPU job, for the lent H200 machines (../shared/device/README.md): each PART writes its logs
# and records to $OUT (default ./gpu-results); parts run in the order given.
#   build       configure and build with the staged header-only deps in .deps
#   tests       every CTest label, gpu included, then the gpu tests again for their figures
#   runs        every shipped config in a fresh process, empty cache then warm; the default at larger n
#   sweeps      configs/sweep_hidden_layer.json: cold on GPU 0, warm on GPU 0, warm on all GPUs
#   first-call  kjit first-call on the default config
#   peers       bench/compare.py: kjit beside Numba, CuPy and PyTorch, cold and warm, n = 1M and 16M
#   launch      configs/sweep_launch.json on all GPUs
set -uo pipefail
out=${OUT:-$PWD/gpu-results}
mkdir -p "$out"
build=build-gpu
kjit=$PWD/$build/kjit
export KJIT_CACHE_DIR=/tmp/kjit-gpu-cache
{ date -u +%Y-%m-%dT%H:%M:%SZ; nvidia-smi --query-gpu=index,name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv; nproc; } > "$out/env.txt" 2>&1
status=0

run() {  # run LABEL ARGS...: one fresh `kjit run` process; its table and wall time go to runs.log
    local label=$1; shift
    local start=$EPOCHREALTIME
    "$kjit" run "$@" --json "$records/$label.json" >> "$out/runs.log" 2>&1 || status=1
    local end=$EPOCHREALTIME
    echo "== $label: process wall $(awk "BEGIN { print $end - $start }") s" >> "$out/runs.log"
}

sweep() {  # sweep LABEL ARGS...
    local label=$1; shift
    echo "== kjit sweep $* ($label)" >> "$out/sweeps.log"
    local start=$EPOCHREALTIME
    "$kjit" sweep configs/sweep_hidden_layer.json --quiet "$@" --json "$out/sweep_$label.json" >> "$out/sweeps.log" 2>&1 || status=1
    echo "== $label: process wall $(awk "BEGIN { print $EPOCHREALTIME - $start }") s" >> "$out/sweeps.log"
}

for part in "$@"; do
    echo "---- $part ($(date -u +%T))"
    case $part in
    build)
        { cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$PWD/.deps/usr" &&
          cmake --build "$build" -j "$(nproc)"; } > /tmp/build.log 2>&1 || { tail -40 /tmp/build.log; exit 1; } ;;
    tests)
        ctest --test-dir "$build" --output-on-failure > "$out/tests.log" 2>&1 || status=1
        "$build/tests/gpu_tests" >> "$out/tests.log" 2>&1 || status=1
        tail -4 "$out/tests.log" ;;
    runs)
        records=$(mktemp -d)
        "$kjit" devices > "$out/runs.log" 2>&1
        for cfg in configs/hidden_layer.json configs/seed_vectorize.json configs/hidden_layer_f64.json; do
            name=$(basename "$cfg" .json)
            "$kjit" cache clear > /dev/null
            run "$name-cold" "$cfg"
            run "$name-warm" "$cfg"
        done
        for n in 16777216 268435456; do
            run "hidden_layer-n$n" --set n=$n
            run "hidden_layer-separate-n$n" --set n=$n --set fusion=separate
            run "hidden_layer-f64-n$n" --set n=$n --set dtype=float64
        done
        "$kjit" merge "$records"/*.json --json "$out/runs.json" > /dev/null ;;
    sweeps)
        "$kjit" cache clear > /dev/null
        sweep cold --devices 0
        sweep warm --devices 0
        sweep all --devices all
        grep -E "^(==|[0-9]+ points)" "$out/sweeps.log" ;;
    first-call)
        "$kjit" first-call --repeat 5 --json "$out/first_call.json" > "$out/first_call.log" 2>&1 || status=1
        tail -8 "$out/first_call.log" ;;
    peers)
        python3 bench/compare.py --kjit "$kjit" --out "$out" > "$out/compare.log" 2>&1 || status=1
        tail -32 "$out/compare.log" ;;
    launch)
        "$kjit" sweep configs/sweep_launch.json --devices all --quiet --json "$out/launch.json" > "$out/launch.log" 2>&1 || status=1
        head -12 "$out/launch.log"; tail -2 "$out/launch.log" ;;
    *) echo "unknown part $part"; exit 2 ;;
    esac
done
exit $status
