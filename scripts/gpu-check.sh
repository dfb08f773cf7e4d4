#!/usr/bin/env bash
# The whole GPU job in one command, for the lent H200 (see ../shared/device/README.md): build with
# the staged header-only deps in .deps, run every test label (gpu included), then `kjit run` every
# shipped config with an empty cache (cold) and again (warm), each in a fresh process, plus the
# default pipeline at larger n. Logs and records go to $OUT (default ./gpu-results).
set -uo pipefail
out=${OUT:-$PWD/gpu-results}
mkdir -p "$out"
build=build-gpu
export KJIT_CACHE_DIR=/tmp/kjit-gpu-cache
{ date -u +%Y-%m-%dT%H:%M:%SZ; nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv; nproc; } > "$out/env.txt" 2>&1

{ cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$PWD/.deps/usr" -DKJIT_WERROR=OFF &&
  cmake --build "$build" -j "$(nproc)"; } > "$out/build.log" 2>&1 || { tail -40 "$out/build.log"; exit 1; }
kjit=$PWD/$build/kjit

ctest --test-dir "$build" --output-on-failure > "$out/ctest.log" 2>&1
ctest_rc=$?
"$build/tests/gpu_tests" > "$out/gpu_tests.log" 2>&1  # again, for its MESSAGE lines with the figures

records=$(mktemp -d)
run() {  # run LABEL ARGS...: one fresh process, its wall time and table appended to runs.log
    local label=$1; shift
    local start=$EPOCHREALTIME
    "$kjit" run "$@" --json "$records/$label.json" >> "$out/runs.log" 2>&1
    local rc=$? end=$EPOCHREALTIME
    echo "== $label: exit $rc, process wall $(awk "BEGIN { print $end - $start }") s" >> "$out/runs.log"
}
"$kjit" devices > "$out/runs.log" 2>&1
for cfg in configs/*.json; do
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
python3 - "$records" "$out/runs.json" <<'PY'
import json, pathlib, sys
rows = []
for f in sorted(pathlib.Path(sys.argv[1]).glob("*.json")):
    for r in json.loads(f.read_text()):
        r["run_label"] = f.stem
        rows.append(r)
pathlib.Path(sys.argv[2]).write_text(json.dumps(rows, indent=1))
print(f"{'run':34} {'cache':6} {'nvrtc':>8} {'ptx2cubin':>9} {'load':>8} {'first':>8} {'cold med':>9} {'batch':>8} {'GB/s':>7} {'%ceil':>6} status")
for r in rows:
    ms = lambda k: f"{r[k]:.3f}" if r.get(k) is not None else "-"
    us = lambda k: f"{r[k]*1e3:.2f}" if r.get(k) is not None else "-"
    print(f"{r['run_label']:34} {r['cache']:6} {ms('nvrtc_ms'):>8} {ms('ptx_to_cubin_ms'):>9} {ms('module_load_ms'):>8} "
          f"{ms('first_launch_ms'):>8} {us('kernel_cold_median_ms'):>9} {us('kernel_batch_median_ms'):>8} "
          f"{(r['effective_gbps'] or 0):7.0f} {(r['percent_of_ceiling'] or 0):6.1f} {r['status']}")
PY
echo "ctest exit $ctest_rc"; tail -5 "$out/ctest.log"; grep -E "MESSAGE|copy ceiling|warm module|cold median|NaN" "$out/gpu_tests.log" | head -20
exit $ctest_rc
