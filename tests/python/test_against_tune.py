"""bench/defaults/against_tune.py, issue 40's "defaults within 5 % of the tune's best", driven by a
stand-in for kjit that writes the records a GPU run would: each case is tuned before it runs,
its default and "tuned" runs alternate, and the table compares the right records."""
import json
import os
import pathlib
import subprocess
import sys
import textwrap

ROOT = pathlib.Path(os.environ.get("KJIT_SOURCE_DIR", pathlib.Path(__file__).parents[2]))

# A stand-in kjit: `tune` writes an empty tune record, `run` a PASS record whose cold median is the
# shape's default time, or its tuned time where the run asks for launch "tuned".
FAKE_KJIT = textwrap.dedent("""\
    import json, sys
    times = {"[1024, 32000]": (0.050, 0.045), "[4096, 768]": (0.008, 0.008)}
    verb, args = sys.argv[1], sys.argv[2:]
    sets = [args[i + 1] for i, a in enumerate(args) if a == "--set"]
    out = args[args.index("--json") + 1]
    shape = next(s.split("=", 1)[1] for s in sets if s.startswith("shape="))
    tuned = 'launch="tuned"' in sets
    record = [] if verb == "tune" else {
        "status": "PASS", "variant": "fake", "kernel_cold_median_ms": times[shape][tuned],
        "tuned_launch": "the fake tune's best" if tuned else ""}
    json.dump(record, open(out, "w"))
""")


def test_each_case_is_tuned_then_its_default_and_tuned_runs_alternate(tmp_path):
    fake = tmp_path / "kjit.py"
    fake.write_text(FAKE_KJIT)
    kjit = tmp_path / "kjit"
    kjit.write_text(f"#!/bin/sh\nexec {sys.executable} {fake} \"$@\"\n")
    kjit.chmod(0o755)
    cases = {"gemm": [],
             "rows": [{"case": "softmax_32000", "config": "softmax.json", "rows": 1024, "cols": 32000}],
             "transpose": [{"case": "transpose_4096x768", "rows": 4096, "cols": 768}]}
    (tmp_path / "cases.json").write_text(json.dumps(cases))
    out = tmp_path / "out"
    done = subprocess.run([sys.executable, ROOT / "bench" / "defaults" / "against_tune.py", kjit, out,
                           "--cases", tmp_path / "cases.json"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    commands = [line.split() for line in (out / "against_tune.log").read_text().splitlines() if line.startswith("== ")]
    assert [words[2] for words in commands] == ["tune", "run", "run", "run", "run"] * 2  # "== KJIT VERB …"
    runs = [" ".join(words) for words in commands if words[2] == "run"]
    assert ['launch="tuned"' in line for line in runs] == [False, True, False, True] * 2
    assert '| softmax_32000 | 50.0 | 45.0 | 1.111 (over 1.05) | the fake tune\'s best |' in done.stdout
    assert '| transpose_4096x768 | 8.0 | 8.0 | 1.000 | the fake tune\'s best |' in done.stdout
