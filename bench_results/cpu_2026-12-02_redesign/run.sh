#!/bin/bash
. /tmp/venv/bin/activate
for i in 1 2 3 4; do
  (cd <worktree at bd21479> && PYTHONPATH=/work/wt/before python -m mini_transformer.bench --configs workbook larger --json > /tmp/bench/before_$i.json 2>/tmp/bench/before_$i.err)
  (cd <this repository> && PYTHONPATH=/work/main python -m mini_transformer.evaluation.bench --configs workbook larger --json > /tmp/bench/after_$i.json 2>/tmp/bench/after_$i.err)
done
echo finished > /tmp/bench/done
