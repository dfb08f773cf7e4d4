#!/usr/bin/env python3
"""One line of a kjit run's record for a GPU call's log:

    python3 bench/record_line.py FILE FIELD...

prints FIELD of FILE's record (its first, where FILE holds a list), for each FIELD, as `FIELD
value`, leaving out fields the record lacks or holds empty. A FIELD is a key of the record, or one
of the short forms below; exit 1 where FILE holds no record (the caller then shows the run's own
last lines: a config error, a timeout)."""
import json
import sys

# Short forms a call's log reads more easily: a name and how it is computed from the record.
SHORT = {
    "cold_ms": lambda r: r.get("kernel_cold_median_ms"),
    "cold_us": lambda r: None if r.get("kernel_cold_median_ms") is None else round(1000 * r["kernel_cold_median_ms"], 1),
    "tflops": lambda r: None if r.get("tflops") is None else round(r["tflops"]),
    "regs": lambda r: r.get("registers"),
    "of_copy": lambda r: r.get("percent_of_ceiling"),
}


def line(record, fields):
    parts = []
    for field in fields:
        value = SHORT[field](record) if field in SHORT else record.get(field)
        if value is not None and value != "":
            parts.append(f"{field} {value}")
    return " ".join(parts)


def main(argv):
    try:
        with open(argv[1]) as file:
            record = json.load(file)
        record = record[0] if isinstance(record, list) else record
    except (OSError, ValueError, IndexError):
        return 1
    print(line(record, argv[2:]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
