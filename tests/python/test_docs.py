"""The repository's generated pages are what their scripts write now: bench/results/README.md
(scripts/results_index.py), so that every results folder is listed with the pages quoting it, and
each table a page marks as a run's (scripts/doc_tables.py), so that its figures are that run's."""
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


def test_every_marked_table_is_what_its_run_gives():
    done = subprocess.run([sys.executable, ROOT / "scripts" / "doc_tables.py", "--check"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "doc_tables: 41 tables, 0 differ" in done.stdout


def test_a_table_edited_by_hand_is_named(tmp_path):
    # The checker on a copy of the scripts, one page and the run its table names, one figure changed.
    import shutil
    run = "bench/results/2026-12-02-h200-seam/call2"
    shutil.copytree(ROOT / "scripts", tmp_path / "scripts")
    shutil.copytree(ROOT / run, tmp_path / run)
    (tmp_path / "docs").mkdir()
    for page in ("README.md", "docs/transpose.md"):
        shutil.copy(ROOT / page, tmp_path / page)
    page = tmp_path / "docs" / "transpose.md"
    page.write_text(page.read_text().replace("| 256.7 |", "| 250.0 |", 1))
    done = subprocess.run([sys.executable, tmp_path / "scripts" / "doc_tables.py", "--check"], capture_output=True, text=True)
    assert done.returncode == 1
    assert "docs/transpose.md: scripts/transpose_table.py" in done.stderr
