#!/usr/bin/env python3
"""bench_compare.py — compares the variants of one scripts/tune.sh --bench log.

tune.sh runs each variant twice, interleaved (A B A B), and prints every run's table under a
"=== NAME, round R: ..." line. This prints, per row (N, dtype, method or op, timing), the
median time of each variant in each round and the ratio of the first variant to the second
per round, so that a difference can be told from the drift between rounds.

usage: scripts/bench_compare.py LOG [ROW_FILTER_REGEX]
"""
import re
import sys


def tables(path):
    runs = {}  # (variant, round) -> {key: us}
    cur = None
    for line in open(path):
        m = re.match(r"=== (\S+), round (\d+):", line)
        if m:
            cur = (m.group(1), int(m.group(2)))
            runs[cur] = {}
            continue
        if cur is None or not line.startswith("| ") or line.startswith("| N ") or "---" in line:
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 7 or not cells[6]:
            continue
        key = (int(cells[0]), cells[2], cells[3], cells[5])
        try:
            runs[cur][key] = float(cells[6])
        except ValueError:
            pass
    return runs


def main():
    runs = tables(sys.argv[1])
    rx = re.compile(sys.argv[2]) if len(sys.argv) > 2 else None
    variants = []
    for v, _ in runs:
        if v not in variants:
            variants.append(v)
    if len(variants) < 2:
        sys.exit("need two variants in the log")
    a, b = variants[:2]
    rounds = sorted({r for _, r in runs})
    keys = [k for k in runs[(a, rounds[0])] if all(k in runs.get((v, r), {}) for v in (a, b) for r in rounds)]
    print(f"| N | dtype | row | timing | " + " | ".join(f"{a} r{r} | {b} r{r} | {a}/{b} r{r}" for r in rounds) + " |")
    print("|" + "---|" * (4 + 3 * len(rounds)))
    for k in keys:
        label = f"{k[0]} {k[1]} {k[2]}"
        if rx and not rx.search(label):
            continue
        cells = []
        for r in rounds:
            x, y = runs[(a, r)][k], runs[(b, r)][k]
            cells += [f"{x:.2f}", f"{y:.2f}", f"{x / y:.3f}"]
        print(f"| {k[0]} | {k[1]} | {k[2]} | {k[3]} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
