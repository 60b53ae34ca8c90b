#!/usr/bin/env bash
# Run the benchmark and the tests on the CuPy backend, in one go, on a machine with an NVIDIA GPU.
# Needs only Python, numpy, cupy, pytest and tqdm (a GPU machine may have no network):
#   bash scripts/gpu_check.sh
# Every stage has its own time limit, so a slow stage cannot hide the figures of the others.
# Results go to $OUT (or the current folder): bench_cupy.json, bench_numpy.json, bench_numpy_2threads.json.
set -uo pipefail
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
PY="${PYTHON:-$(command -v python3 || command -v python)}"
OUT_DIR="${OUT:-.}"
LIMIT="${STAGE_LIMIT:-240}"   # seconds for the long test stage

"$PY" - <<'PY'
import cupy, numpy, os
n = cupy.cuda.runtime.getDeviceCount()
print(f"cupy {cupy.__version__}, numpy {numpy.__version__}, {os.cpu_count()} CPU cores, {n} GPU(s):",
      cupy.cuda.runtime.getDeviceProperties(0)["name"].decode())
PY

echo "== benchmark: CuPy =="
MT_BACKEND=cupy timeout 180 "$PY" -m mini_transformer.evaluation.bench --configs workbook larger long --no-torch --json > "$OUT_DIR/bench_cupy.json"
echo "== benchmark: NumPy on this machine's CPU, all cores =="
MT_BACKEND=numpy timeout 180 "$PY" -m mini_transformer.evaluation.bench --configs workbook larger long --no-torch --json > "$OUT_DIR/bench_numpy.json"
echo "== benchmark: NumPy on this machine's CPU, 2 threads (as on the workbook's 2-core machine) =="
OMP_NUM_THREADS=2 OPENBLAS_NUM_THREADS=2 MKL_NUM_THREADS=2 MT_BACKEND=numpy \
    timeout 180 "$PY" -m mini_transformer.evaluation.bench --configs workbook larger long --no-torch --threads 2 --json > "$OUT_DIR/bench_numpy_2threads.json"
"$PY" - "$OUT_DIR" <<'PY'
import json, os, sys
d = sys.argv[1]
load = lambda f: json.load(open(os.path.join(d, f))) if os.path.getsize(os.path.join(d, f)) else None
g, c, c2 = load("bench_cupy.json"), load("bench_numpy.json"), load("bench_numpy_2threads.json")
for name in (g or {}).get("configs", {}):
    line = (f"{name}: CuPy fast {g['configs'][name]['ms_per_step']:.2f} ms/step, "
            f"reference {g['configs'][name]['reference_ms_per_step']:.2f}")
    for label, r in ((f"NumPy {c and c['threads']} threads", c), ("NumPy 2 threads", c2)):
        if r:
            ms = r["configs"][name]["ms_per_step"]
            line += f"; {label} {ms:.2f} ms/step (GPU {ms / g['configs'][name]['ms_per_step']:.1f}x faster)"
    print(line)
if g:
    print(f"CuPy float32 matmul ceiling {g['matmul_ceiling_flops'] / 1e12:.1f} TFLOP/s")
PY

# the notebook tests need Jupyter, which a GPU image may lack: leave them out there rather than fail collection
SKIP=()
"$PY" -c "import nbformat, jupytext" 2>/dev/null || SKIP=(--ignore=tests/grading/test_instructor.py --ignore=tests/chapters/test_notebooks.py)
echo "== tests marked gpu =="
timeout 120 "$PY" -m pytest -q -p no:cacheprovider -m gpu "${SKIP[@]}" tests/
echo "== the whole test suite on the CuPy backend (limit ${LIMIT}s) ${SKIP[*]} =="
MT_BACKEND=cupy timeout "$LIMIT" "$PY" -m pytest -q -p no:cacheprovider "${SKIP[@]}" tests/ 2>&1 \
    | tee "$OUT_DIR/tests_cupy.log" | tail -25
