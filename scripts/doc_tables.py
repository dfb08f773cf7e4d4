#!/usr/bin/env python3
"""The pages' generated tables, made again from the runs they name:

    python3 scripts/doc_tables.py [--check]

A table that a script makes from a committed run follows a line

    <!-- table: scripts/NAME.py bench/results/RUN [ARGS…] -->

and is the block of lines starting with "|" right after it. Each is replaced by what the command
prints now, run from the repository's root; with --check nothing is written, and each table that
differs is named (exit 1). So a page's figures are a run's, not a copy edited by hand.
"""
import argparse
import pathlib
import re
import shlex
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
MARKER = re.compile(r"^<!-- table: (scripts/\S+\.py .+?) -->$")


def pages():
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def generated(command):
    done = subprocess.run([sys.executable, *shlex.split(command)], cwd=ROOT, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"doc_tables: `{command}` exited {done.returncode}: {done.stderr.strip()}")
    return done.stdout.strip("\n").splitlines()


def remade(lines, page):
    """The page's lines with each marked table made again, and the commands whose tables changed."""
    out, changed, i = [], [], 0
    while i < len(lines):
        out.append(lines[i])
        marker = MARKER.match(lines[i])
        i += 1
        if not marker:
            continue
        end = i
        while end < len(lines) and lines[end].startswith("|"):
            end += 1
        if end == i:
            sys.exit(f"doc_tables: {page.relative_to(ROOT)}:{i}: no table follows the marker")
        table = generated(marker.group(1))
        if table != lines[i:end]:
            changed.append(marker.group(1))
        out.extend(table)
        i = end
    return out, changed


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 where a table differs")
    args = parser.parse_args()
    stale, tables = [], 0
    for page in pages():
        text = page.read_text()
        lines, changed = remade(text.splitlines(), page)
        tables += sum(1 for line in text.splitlines() if MARKER.match(line))
        stale += [f"{page.relative_to(ROOT)}: {command}" for command in changed]
        if changed and not args.check:
            page.write_text("\n".join(lines) + "\n")
    if args.check and stale:
        sys.exit("doc_tables: these tables are not what their run gives now (scripts/doc_tables.py remakes them):\n  " +
                 "\n  ".join(stale))
    print(f"doc_tables: {tables} tables, {len(stale)} {'differ' if args.check else 'remade'}")


if __name__ == "__main__":
    main()
