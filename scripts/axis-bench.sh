#!/usr/bin/env bash
# axis-bench.sh — the GPU benchmark of reductions along an axis and over segments: the shapes
# docs/PERF.md tracks (float32 rows and columns, RMSNorm's bfloat16 shapes, random segments),
# each against the float4 read of the same bytes in the same call, and each float32 SUM of rows
# or segments against CUB's segmented sum (rows cub_segmented; columns have none); each call
# bounded to 90 s. torch's times on the same shapes: scripts/torch_baseline.py --axis-shapes.
# usage: scripts/axis-bench.sh   (after a build in build-gpu/, e.g. scripts/gpu-check.sh)
cd "$(dirname "$0")/.."
B=${BUILD:-build-gpu}/coopreduce
run() { echo "=== coopreduce bench $*"; timeout 90 $B bench "$@" --quick 2>/dev/null | grep '^|' | grep -v "^| N \|---"; }
for s in 1048576x256 65536x4096 4096x65536 256x1048576 16777216x16; do run --shape $s --axis 1 --op sum,max --dtype f32; done
for s in 4096x65536 65536x4096; do run --shape $s --axis 0 --op sum --dtype f32; done
for s in 16384x8192 128x8192; do run --shape $s --axis 1 --op sumsq,norm2 --dtype bf16; done
run --segments random:1:10000 --n 2^26 --op sum,max --dtype f32
