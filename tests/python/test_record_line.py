"""bench/record_line.py, the one line a GPU call's log shows for each kjit run: the fields asked
for, in order, short forms computed from the record, empty ones left out, and exit 1 where the
run left no record."""
import json
import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(os.environ.get("KJIT_SOURCE_DIR", pathlib.Path(__file__).parents[2]))
SCRIPT = ROOT / "bench" / "record_line.py"


def record_line(path, *fields):
    return subprocess.run([sys.executable, str(SCRIPT), str(path), *fields], capture_output=True, text=True)


def test_fields_come_in_order_with_short_forms_and_empty_ones_left_out(tmp_path):
    path = tmp_path / "run.json"
    path.write_text(json.dumps([{"status": "PASS", "mismatches": 0, "kernel_cold_median_ms": 0.19463,
                                 "tflops": 654.6, "registers": 168, "first_bad": None, "error": ""}]))
    done = record_line(path, "status", "mismatches", "cold_us", "cold_ms", "tflops", "regs", "first_bad", "error")
    assert done.returncode == 0
    assert done.stdout == "status PASS mismatches 0 cold_us 194.6 cold_ms 0.19463 tflops 655 regs 168\n"


def test_a_run_that_left_no_record_exits_1(tmp_path):
    assert record_line(tmp_path / "absent.json", "status").returncode == 1
    (tmp_path / "empty.json").write_text("[]")
    assert record_line(tmp_path / "empty.json", "status").returncode == 1
