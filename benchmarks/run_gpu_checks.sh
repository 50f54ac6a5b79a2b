#!/usr/bin/env bash
# The checks that need a CUDA device, in one command of a few minutes on one GPU machine:
#   1. training speed and peak GPU memory (benchmarks/bench_gpu.py), alone on the GPU;
#   2. then, side by side: the GPU-marked tests (pytest -m gpu) and the long-horizon suite at the
#      benchmark defaults (benchmarks/ltsf.py --accelerator gpu, one worker process per cell).
# Everything it writes goes to $OUT (default gpu-checks/): environment.txt, bench_gpu.log,
# gpu_speed.csv, gpu_tests.log, ltsf_gpu.log, ltsf_gpu.csv, ltsf_runs.jsonl. The ETT CSVs are read
# from $TSRSA_DATA_DIR. Whatever is still running when the budget (first argument, seconds; default
# 540) is spent is interrupted; the suite keeps the cells that finished.
#
#   OUT=gpu-checks TSRSA_DATA_DIR=/path/to/datasets benchmarks/run_gpu_checks.sh 540 [DATASETS] [JOBS]
# Narrower runs: BENCH_ARGS (bench_gpu.py's arguments), TESTS (pytest -k expression), SEEDS (of the suite).
# Wheels in .whl/ (benchmarks/gpu_wheels.sh) are installed first; with them PEERS=1 also times
# pytorch-forecasting beside the library (bench_training.py --accelerator gpu, into training_speed.csv),
# and the `fla` kernel tests run instead of skipping.
set -u
budget=${1:-540}
datasets=${2:-ETTh1,ETTh2}
jobs=${3:-8}
OUT=${OUT:-gpu-checks}
mkdir -p "$OUT"
start=$(date +%s)
PY=${PYTHON:-python3}
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
elapsed() { echo $(( $(date +%s) - start )); }

if ls .whl/*.whl > /dev/null 2>&1; then
  $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl \
    && export PYTHONPATH="$PYTHONPATH:/tmp/site"
fi
{
  nvidia-smi -L
  $PY -c "import sys, torch, numpy, pandas, scipy, sklearn, statsmodels; print(sys.version.split()[0], 'torch', torch.__version__, 'cuda', torch.version.cuda, torch.cuda.get_device_name(0), 'numpy', numpy.__version__, 'pandas', pandas.__version__, 'statsmodels', statsmodels.__version__)"
  $PY -c "import tsrsa; print('tsrsa', tsrsa.__version__)"
} > "$OUT/environment.txt" 2>&1
status=$?
cat "$OUT/environment.txt"
[ $status -eq 0 ] || { echo "the environment check failed: nothing run"; exit 3; }

# 1. speed, with nothing else on the GPU
timeout -k 15 -s INT 170 $PY benchmarks/bench_gpu.py ${BENCH_ARGS:---deadline 110} --out "$OUT/gpu_speed.csv" > "$OUT/bench_gpu.log" 2>&1
echo "bench_gpu: exit $? at $(elapsed) s"
if [ -n "${PEERS:-}" ]; then
  timeout -k 15 -s INT 180 $PY benchmarks/bench_training.py --only speed --accelerator gpu --dataset ETTm1 \
    --models LSTM,Transformer,RSA --repeats 1 >> "$OUT/bench_gpu.log" 2>&1
  echo "bench_training: exit $? at $(elapsed) s"
  cp benchmarks/results/training_speed.csv "$OUT/" 2>/dev/null
fi

# 2. the tests and the suite, side by side, until the budget is spent
left=$(( budget - $(elapsed) - 15 ))
timeout -k 15 -s INT $left $PY -m pytest -m gpu -p no:cacheprovider -n 4 -q -rfEs ${TESTS:+-k "$TESTS"} \
  tests/test_gpu.py tests/test_attention_kinds.py tests/test_persistence.py tests/test_examples.py \
  tests/test_fast_weights.py > "$OUT/gpu_tests.log" 2>&1 &
tests=$!
timeout -k 15 -s INT $left $PY benchmarks/ltsf.py --dataset "$datasets" --models RSA,Transformer --seeds "${SEEDS:-0}" \
  --jobs "$jobs" --num-threads 1 --accelerator gpu --results "$OUT/ltsf_gpu.csv" \
  --results-md benchmarks/RESULTS.md > "$OUT/ltsf_gpu.log" 2>&1 &
suite=$!
wait $tests; echo "gpu tests: exit $? at $(elapsed) s"
wait $suite; echo "suite: exit $? at $(elapsed) s"
tail -n 25 "$OUT/gpu_tests.log"
tail -n 40 "$OUT/bench_gpu.log"
cat "$OUT/ltsf_gpu.csv" 2>/dev/null | cut -d, -f1-11
