#!/usr/bin/env python3
"""Measures `kjit run --watch` from the outside: saves a config the way editors do (write a new
file, rename it over the old) and reads how long kjit took from the save to the printed result.

Edits, in turn: a launch change (the binary is cached and the host data kept: the fast path), a
compile option that forces a fresh compile, a bad edit (an error, then waiting), and the fix.
Prints kjit's own "save → result" figure and this script's (rename → line read) per edit, with
medians per kind; exits 1 if a result is missing or kjit does not leave cleanly on SIGINT.

usage: watch_latency.py KJIT CONFIG [ROUNDS]"""
import os, re, signal, statistics, subprocess, sys, tempfile, time

kjit, source = sys.argv[1], sys.argv[2]
rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 5
base = open(source).read()
folder = tempfile.mkdtemp(prefix="kjit-watch-")
config = os.path.join(folder, "watched.json")


def save(text):
    temp = config + ".new"
    with open(temp, "w") as f:
        f.write(text)
    os.rename(temp, config)
    return time.monotonic()


def variant(block=256, define=None):
    text = base.replace('"block": 256', f'"block": {block}')
    if define is not None:
        text = text.replace('"options": []', f'"options": ["-DKJIT_WATCH_EDIT={define}"]')
    return text


save(variant())
proc = subprocess.Popen([kjit, "run", "--watch", "--skip-ceiling", config], stdout=subprocess.PIPE,
                        stderr=subprocess.STDOUT, text=True, bufsize=1)
log = []


def read_until(pattern):
    """Lines until one matches `pattern`; returns (match, monotonic time it was read)."""
    for line in proc.stdout:
        log.append(line)
        found = re.search(pattern, line)
        if found:
            return found, time.monotonic()
    raise SystemExit("kjit --watch ended early:\n" + "".join(log[-30:]))


def as_ms(number, unit):
    return float(number) * {"s": 1e3, "ms": 1.0, "µs": 1e-3}[unit]


read_until(r"^watching ")  # the first run is done
results = {"cached": [], "compile": []}
for r in range(rounds):
    for kind, text in (("cached", variant(block=128 if r % 2 == 0 else 256)), ("compile", variant(define=r))):
        saved = save(text)
        found, seen = read_until(r"save → result\s+([0-9.]+) (s|ms|µs)")
        read_until(r"^watching ")
        results[kind].append((as_ms(*found.groups()), (seen - saved) * 1e3))

save(base.replace('"n": 1000000', '"n": 1000000,,'))  # a bad edit: an error, and the loop waits
read_until(r"^kjit: ")
saved = save(variant())
found, seen = read_until(r"save → result\s+([0-9.]+) (s|ms|µs)")
read_until(r"^watching ")
proc.send_signal(signal.SIGINT)
rest, _ = proc.communicate(timeout=30)
log.append(rest)

print("".join(log[-60:]))
print(f"{'edit':10} {'kjit: save → result (ms)':48} {'outside: rename → line read (ms)':48}")
for kind, pairs in results.items():
    inside = [p[0] for p in pairs]
    outside = [p[1] for p in pairs]
    print(f"{kind:10} median {statistics.median(inside):6.1f} of {' '.join(f'{x:.1f}' for x in inside):34}"
          f" median {statistics.median(outside):6.1f} of {' '.join(f'{x:.1f}' for x in outside)}")
print(f"after a bad edit and its fix: {as_ms(*found.groups()):.1f} ms; exit code on SIGINT {proc.returncode}; "
      f"{'stopped watching' if 'stopped watching' in rest else 'no goodbye line'}")
sys.exit(0 if proc.returncode == 0 and "stopped watching" in rest else 1)
