#!/usr/bin/env python3
"""bench/results/README.md: one line per dated folder of GPU results, its title (the first line
of its own README) and the pages of docs/ and the README that quote it. Written from the folders
themselves, so it is never out of date once run; --check says whether the committed one is.

    scripts/results_index.py [--check]
"""
import argparse
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"


def index():
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    texts = {page: page.read_text() for page in pages}
    lines = ["# GPU results, one folder per session's calls",
             "",
             "Every figure kjit's pages quote comes from one of these folders: each holds the commands that",
             "made it, what the GPU printed, and a README saying what it shows. Written by",
             "`scripts/results_index.py` from the folders themselves.",
             "",
             "| folder | what it holds | quoted by |",
             "|---|---|---|"]
    for folder in sorted(p for p in RESULTS.iterdir() if p.is_dir()):
        readme = folder / "README.md"
        title = readme.read_text().splitlines()[0].lstrip("# ").strip() if readme.exists() else "(no README)"
        named = re.compile(re.escape(folder.name) + r"(?![\w-])")  # not a longer folder's name
        quoted = [page.relative_to(ROOT).as_posix() for page, text in texts.items() if named.search(text)]
        lines.append(f"| [`{folder.name}`]({folder.name}/) | {title.replace('|', '/')} | {', '.join(quoted) or '-'} |")
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if bench/results/README.md is not what it would write")
    args = parser.parse_args()
    text, target = index(), RESULTS / "README.md"
    if args.check:
        if not target.exists() or target.read_text() != text:
            print(f"{target.relative_to(ROOT)} is out of date: run scripts/results_index.py", file=sys.stderr)
            return 1
        return 0
    target.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
