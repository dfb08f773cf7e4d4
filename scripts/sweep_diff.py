#!/usr/bin/env python3
"""Two runs of one sweep, point by point: the ratio B/A of each kernel time column (cold, batch,
graph medians), summarised as median, min and max over the points. Used to check that making host
data ahead (a busy CPU) does not move the GPU figures.
    scripts/sweep_diff.py A.json B.json"""
import json
import statistics
import sys

COLUMNS = ["kernel_cold_median_ms", "kernel_batch_median_ms", "kernel_graph_median_ms"]


def by_point(path):
    return {row["sweep_index"]: row for row in json.load(open(path))}


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    a, b = by_point(sys.argv[1]), by_point(sys.argv[2])
    points = sorted(a.keys() & b.keys())
    if not points:
        sys.exit("no point is in both files")
    print(f"{len(points)} points, B = {sys.argv[2]} over A = {sys.argv[1]}")
    for column in COLUMNS:
        ratios = [b[i][column] / a[i][column] for i in points if a[i].get(column) and b[i].get(column)]
        if ratios:
            print(f"  {column:24} median {statistics.median(ratios):.3f}  min {min(ratios):.3f}  max {max(ratios):.3f}")


if __name__ == "__main__":
    main()
