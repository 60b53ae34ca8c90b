#!/usr/bin/env bash
# Run the GPU tests and the benchmark on the CuPy backend, in one go.
# Needs only Python, numpy, cupy and pytest (the GPU machine has no network):
#   bash scripts/gpu_check.sh
set -uo pipefail
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
python - <<'PY'
import cupy
n = cupy.cuda.runtime.getDeviceCount()
print(f"cupy {cupy.__version__}, {n} GPU(s):", cupy.cuda.runtime.getDeviceProperties(0)["name"].decode())
PY
echo "== GPU tests (marker gpu) and the engine and model tests on the CuPy backend =="
python -m pytest -q -p no:cacheprovider -m gpu tests/
MT_BACKEND=cupy python -m pytest -q -p no:cacheprovider tests/test_autograd.py tests/test_nn_optim.py \
    tests/test_model.py tests/test_positional_models.py tests/test_streaming.py 2>&1 | tail -15
echo "== benchmark: CuPy =="
MT_BACKEND=cupy python -m mini_transformer.bench --no-torch --json > "${OUT:-.}/bench_cupy.json"; cat "${OUT:-.}/bench_cupy.json"
echo "== benchmark: NumPy on this machine's CPU =="
MT_BACKEND=numpy python -m mini_transformer.bench --no-torch --json > "${OUT:-.}/bench_numpy.json"; cat "${OUT:-.}/bench_numpy.json"
python - "${OUT:-.}" <<'PY'
import json, sys
d = sys.argv[1]
g, c = json.load(open(f"{d}/bench_cupy.json")), json.load(open(f"{d}/bench_numpy.json"))
for name in g["configs"]:
    print(f"{name}: CuPy {g['configs'][name]['ms_per_step']:.2f} ms/step, NumPy CPU {c['configs'][name]['ms_per_step']:.2f} "
          f"ms/step, GPU speed-up {c['configs'][name]['ms_per_step'] / g['configs'][name]['ms_per_step']:.1f}x")
PY
