# Sourced by a GPU call's command.sh (bench/results/*/command.sh), first for the attention
# family's: the GPU and its driver into $OUT/env.txt, kjit built in build-gpu, and
#   point NAME SEQ DIM BATCH HEADS KV_HEADS SCORE [more kjit run options]
# which runs configs/attention.json at that point into $OUT/logs/NAME.json and prints one line:
# its status, mismatches, cold median, TFLOP/s and registers;
#   gpu_tests PATTERN [LIMIT]
# which builds tests/test_gpu.cpp and runs the test cases PATTERN names (doctest's -tc), each in a
# process of its own within LIMIT seconds (300), so that one that hangs is named and the rest still
# run (doctest prints nothing until a case ends), printing each one's summary and first failures
# into $OUT/gpu_tests.txt;
#   row NAME CONFIG ROWS COLS [more kjit run options]
# which runs a row config over bfloat16 rows and prints its status, cold median and share of the
# copy ceiling kjit measures beside it; `templates_with DIR PATCH` copies the templates to DIR
# with PATCH applied, for --templates. `pack` tars $OUT/logs into $OUT/data.tgz (early and
# often: a call cut short still brings back what it packed).
set -uo pipefail
export OUT=${OUT:-$PWD/gpu-results}
mkdir -p "$OUT/logs"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv > "$OUT/env.txt"
{ cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$PWD/.deps/usr" -DKJIT_PYTHON=OFF &&
  cmake --build build-gpu --target kjit -j "$(nproc)"; } > "$OUT/logs/build.log" 2>&1 || { tail -30 "$OUT/logs/build.log"; exit 1; }
export kjit=$PWD/build-gpu/kjit
export KJIT_CACHE_DIR=/tmp/kjit-cache
export record_line=$PWD/bench/record_line.py  # FILE FIELD…: a record's fields on one line
point() {
  local name=$1 seq=$2 dim=$3 batch=$4 heads=$5 kv=$6 score=$7; shift 7
  local rows=$((batch * heads * seq)) kv_rows=$((batch * kv * seq))
  timeout ${LIMIT:-40} "$kjit" run configs/attention.json --skip-ceiling --set "shape=[$rows,$dim]" \
    --set "inputs.k.shape=[$kv_rows,$dim]" --set "inputs.v.shape=[$kv_rows,$dim]" \
    --set "stages[0].batch=$batch" --set "stages[0].heads=$heads" --set "stages[0].kv_heads=$kv" \
    --set "stages[0].score=\"$score\"" "$@" --json "$OUT/logs/$name.json" > "$OUT/logs/$name.txt" 2>&1
  local rc=$?
  echo "$name: exit $rc $(python3 "$record_line" "$OUT/logs/$name.json" status mismatches compared cold_ms tflops regs first_bad error || tail -3 "$OUT/logs/$name.txt")"
  return $rc
}
gpu_tests() {
  cmake --build build-gpu --target gpu_tests -j "$(nproc)" >> "$OUT/logs/build.log" 2>&1 || { tail -30 "$OUT/logs/build.log"; return 1; }
  local name names outcome
  mapfile -t names < <(build-gpu/tests/gpu_tests -ltc -tc="$1" | grep -v '^\[doctest\]\|^====')
  for name in "${names[@]}"; do
    # (a comma in a filter separates two: `?` matches it)
    { echo "=== $name"; timeout "${2:-300}" build-gpu/tests/gpu_tests -tc="${name//,/?}" 2>&1; echo "exit $?"; } > "$OUT/logs/gpu_test.log"
    cat "$OUT/logs/gpu_test.log" >> "$OUT/logs/gpu_tests.log"
    outcome=$(tail -1 "$OUT/logs/gpu_test.log")  # "exit N"
    { echo "gpu_tests \"$name\": $outcome"; tail -4 "$OUT/logs/gpu_test.log" | head -3; grep -m5 -B8 -A12 "ERROR" "$OUT/logs/gpu_test.log"; } | tee -a "$OUT/gpu_tests.txt"
  done
}
row() {  # NAME CONFIG ROWS COLS [more kjit run options]: a bfloat16 row kernel's status, cold median, % of a copy
  local name=$1 config=$2 rows=$3 cols=$4; shift 4
  timeout ${LIMIT:-60} "$kjit" run "configs/$config" --set dtype=bfloat16 --set "shape=[$rows,$cols]" "$@" \
    --json "$OUT/logs/$name.json" > "$OUT/logs/$name.txt" 2>&1
  echo "$name: exit $? $(python3 "$record_line" "$OUT/logs/$name.json" status variant cold_us of_copy || tail -2 "$OUT/logs/$name.txt")"
}
templates_with() {  # DIR PATCH: a copy of kernel_templates in DIR with PATCH (a diff of kernel_templates/…) applied
  rm -rf "$1" && cp -r kernel_templates "$1" && sed 's#kernel_templates/##g' "$2" | (cd "$1" && patch -p1 > /dev/null) ||
    { echo "$2 did not apply to the templates"; return 1; }
}
pack() { (cd "$OUT/logs" && tar czf ../data.tgz .); }
export -f point
