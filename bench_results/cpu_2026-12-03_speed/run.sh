#!/bin/sh
# The commands behind this folder's figures, run in this order on the 2-core development machine
# (PyTorch 2.13.0+cpu installed with `pip install torch==2.13.0`; nothing else running).
set -e
D=bench_results/cpu_2026-12-03_speed
python -m mini_transformer.evaluation.bench --under-load --configs workbook --json > $D/under_load.json
python -m mini_transformer.evaluation.bench --under-load --configs workbook
for i in 1 2 3 4; do
  python -m mini_transformer.evaluation.bench --configs workbook larger long --json > $D/bench_$i.json
done
