#!/usr/bin/env python3
"""plot_bench.py — GB/s against N for every method of a `coopreduce bench --json` file.

usage: scripts/plot_bench.py BENCH.json OUT.png [--timing gpu_us|gpu_us_cold] [--title TEXT]

One panel per dtype; one line per coopreduce method; the float4 read kernel (the bandwidth
ceiling) and CUB DeviceReduce::Sum drawn as heavier reference lines. Needs matplotlib (optional
for the project: nothing else depends on this script).
"""
import argparse
import json
import sys
from collections import defaultdict

REFERENCES = {"float4_read": ("black", "float4 read (ceiling)"),
              "cub": ("tab:red", "CUB DeviceReduce::Sum")}
SKIP = {"empty_kernel", "d2d_copy"}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("bench_json")
    ap.add_argument("out_png")
    ap.add_argument("--timing", default="gpu_us")
    ap.add_argument("--title", default=None)
    args = ap.parse_args()
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        sys.exit("plot_bench.py: matplotlib is not installed (pip install matplotlib)")
    with open(args.bench_json) as f:
        data = json.load(f)
    # series[dtype][method] = [(n, GB/s)]
    series = defaultdict(lambda: defaultdict(list))
    for r in data["rows"]:
        if r["timing"] != args.timing or r["method"] in SKIP or r["bytes"] <= 0:
            continue
        series[r["dtype"]][r["method"]].append((r["n"], r["bytes"] / (r["median_us"] * 1e3)))
    if not series:
        sys.exit(f"plot_bench.py: no rows with timing '{args.timing}' in {args.bench_json}")
    dtypes = sorted(series)
    fig, axes = plt.subplots(len(dtypes), 1, figsize=(9, 5.2 * len(dtypes)), squeeze=False)
    # Colours for the other methods: none of them the blue of canonical or the red of CUB.
    palette = ["tab:orange", "tab:green", "tab:purple", "tab:brown", "tab:pink", "tab:gray",
               "tab:olive", "tab:cyan", "gold", "darkblue", "lime", "magenta", "teal"]
    for ax, dt in zip(axes[:, 0], dtypes):
        methods = [m for m in sorted(series[dt]) if m not in REFERENCES]
        for i, m in enumerate(methods):
            pts = sorted(series[dt][m])
            style = (dict(lw=2.8, color="tab:blue") if m == "canonical"
                     else dict(lw=1.2, color=palette[i % len(palette)]))
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", ms=3, label=m, **style)
        for m, (color, label) in REFERENCES.items():
            if m in series[dt]:
                pts = sorted(series[dt][m])
                ax.plot([p[0] for p in pts], [p[1] for p in pts], color=color, lw=2.2,
                        ls="--", label=label)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("N (elements)")
        ax.set_ylabel("GB/s (input bytes / time)")
        ax.set_title(f"{dt}, {args.timing}")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7, ncol=2, loc="lower right")
    fig.suptitle(args.title or f"coopreduce bench — {data.get('device_name') or data.get('device', '')}")
    fig.tight_layout()
    fig.savefig(args.out_png, dpi=80)
    print(f"wrote {args.out_png}")


if __name__ == "__main__":
    main()
