#!/usr/bin/env python3
"""Checks a `kjit --trace` file against the Chrome trace-event format (the JSON object form that
Perfetto and chrome://tracing load: traceEvents of complete "X" events with name, ph, ts, dur,
pid, tid, and "M" name metadata) and prints where the time went: per thread, the time of each
span name summed (nested spans are counted within their parents too, so the lines overlap).

usage: trace_summary.py TRACE.json"""
import collections, json, sys

trace = json.load(open(sys.argv[1]))
events = trace["traceEvents"]
names = {}
spans = []
for e in events:
    assert e["ph"] in ("X", "M"), e
    assert isinstance(e["pid"], int), e
    if e["ph"] == "M":
        assert e["name"] in ("process_name", "thread_name") and "name" in e["args"], e
        if e["name"] == "thread_name":
            names[(e["pid"], e["tid"])] = e["args"]["name"]
        continue
    assert isinstance(e["name"], str) and isinstance(e["tid"], int), e
    assert e["ts"] >= 0 and e["dur"] >= 0, e
    spans.append(e)
print(f"{sys.argv[1]}: {len(events)} events, {len(spans)} spans on {len({(e['pid'], e['tid']) for e in spans})} threads: "
      "valid trace-event JSON (object form)")
start = min(e["ts"] for e in spans)
end = max(e["ts"] + e["dur"] for e in spans)
print(f"timeline {1e-3 * (end - start):.1f} ms")
by_thread = collections.defaultdict(lambda: collections.defaultdict(lambda: [0, 0.0]))
for e in spans:
    cell = by_thread[names.get((e["pid"], e["tid"]), f"tid {e['tid']}")][e["name"].split(" ")[0] if e["name"].startswith("point ") else e["name"]]
    cell[0] += 1
    cell[1] += e["dur"] * 1e-3
for thread, totals in sorted(by_thread.items()):
    print(f"  thread {thread}:")
    for name, (count, ms) in sorted(totals.items(), key=lambda kv: -kv[1][1])[:14]:
        print(f"    {name:36} {count:5d} x  {ms:10.1f} ms")
