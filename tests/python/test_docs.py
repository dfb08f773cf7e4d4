"""The repository's generated pages are what their scripts write now: bench/results/README.md
(scripts/results_index.py), so that every results folder is listed with the pages quoting it."""
import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(os.environ.get("KJIT_SOURCE_DIR", pathlib.Path(__file__).parents[2]))


def test_the_results_index_lists_every_folder_as_it_is_now():
    done = subprocess.run([sys.executable, ROOT / "scripts" / "results_index.py", "--check"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    index = (ROOT / "bench" / "results" / "README.md").read_text()
    for folder in (ROOT / "bench" / "results").iterdir():
        if folder.is_dir():
            assert f"[`{folder.name}`]({folder.name}/)" in index
