#!/bin/sh
# The commands behind this folder's figures, run in this order on the 2-core development machine
# (PyTorch 2.13.0+cpu installed with `pip install torch==2.13.0`; nothing else running).
set -e
D=bench_results/cpu_2026-12-03_after
for i in 1 2 3 4; do
  python -m mini_transformer.evaluation.bench --configs workbook larger long --json > $D/bench_$i.json
done
python -m mini_transformer.evaluation.bench --under-load --configs workbook --json > $D/under_load.json
python -m mini_transformer.evaluation.profile_ops --configs workbook larger long --steps 20 --out $D/profile_after.md
# The paired trials in README.md (what was tried and did not pay, and the linear kernel against the reference's)
export OPENBLAS_THREAD_TIMEOUT=22 PYTHONPATH=.
python $D/ab.py workbook 300 reflinear:linear=mini_transformer.engine.functional.linear \
  threshold64k:@mini_transformer.engine.kernels.threads.MIN_PARALLEL_WORK=65536 \
  qkv1:qkv_projection=qkv_one_product.qkv_projection > $D/ab_workbook.txt
python $D/ab.py larger 40 reflinear:linear=mini_transformer.engine.functional.linear \
  blocks16:@mini_transformer.engine.kernels.threads._BLOCKS_PER_THREAD=16 \
  qkv1:qkv_projection=qkv_one_product.qkv_projection > $D/ab_larger.txt
python -m mini_transformer.evaluation.bench --configs workbook larger long --check > $D/bench_text.txt   # the bench as it prints
# Blocked attention: each tile only for the queries that see its keys; where blocks start to pay, and their size
B=@mini_transformer.engine.kernels.blocked_attention
python $D/ab.py long 30 everyrow:attention=git:f495730^:mini_transformer/engine/kernels/blocked_attention.py:attention > $D/ab_blocked_long.txt
python $D/ab.py long 20 "block64:$B.BLOCK=64" "block256:$B.BLOCK=256" >> $D/ab_blocked_long.txt
python $D/ab.py long,T=384,batch=4 20 "whole:$B.BLOCKED_FROM=512" > $D/ab_blocked_from.txt
python $D/ab.py long,T=256,batch=8 20 "whole:$B.BLOCKED_FROM=512" "block64:$B.BLOCK=64" >> $D/ab_blocked_from.txt
python $D/ab.py long,T=192,batch=8 20 "blocked:$B.BLOCKED_FROM=192" "blocked64:$B.BLOCKED_FROM=192+$B.BLOCK=64" >> $D/ab_blocked_from.txt
python $D/ab.py larger 16 "blocked64:$B.BLOCKED_FROM=128+$B.BLOCK=64" "blocked32:$B.BLOCKED_FROM=128+$B.BLOCK=32" >> $D/ab_blocked_from.txt

python $D/ab.py long 24 threaded:attention=blocked_attention_threaded.attention > $D/ab_blocked_threaded.txt
python $D/ab.py long,T=256,batch=8 16 threaded:attention=blocked_attention_threaded.attention >> $D/ab_blocked_threaded.txt

python $D/ab.py larger 16 qblocks:attention=causal_query_blocks.attention > $D/ab_query_blocks.txt
python $D/ab.py workbook 200 qblocks:attention=causal_query_blocks.attention >> $D/ab_query_blocks.txt
