#!/usr/bin/env bash
# The long-horizon rows that need a GPU, in one command of at most ten minutes on one GPU machine:
#   1. ETTm1, RSA and its twin at the defaults, seeds 1 and 2 (the CPU tables hold seed 0), input 96;
#   2. ETTm1, both at the defaults with a look-back of 1,440 steps, seed 0,
# every (model, horizon, seed) cell a worker process of its own (benchmarks/ltsf.py --jobs), both parts side by
# side. Rows go to $OUT/ltsf_gpu_long.csv (the CSV format of benchmarks/results/ltsf.csv: append them there to
# publish them), logs to $OUT. The ETT CSVs are read from $TSRSA_DATA_DIR. Whatever is still running when the
# budget (first argument, seconds; default 540) is spent is interrupted; the cells that finished keep their rows.
#
#   OUT=gpu-long TSRSA_DATA_DIR=/path/to/datasets benchmarks/run_gpu_long_horizon.sh 540 [JOBS]
# ACCELERATOR (default gpu) and EXTRA (more ltsf.py arguments, e.g. "--max-windows 64 --max-epochs 1
# --horizons 96") make a short rehearsal of the same command on the CPU.
set -u
budget=${1:-540}
jobs=${2:-8}
OUT=${OUT:-gpu-long}
ACCELERATOR=${ACCELERATOR:-gpu}
mkdir -p "$OUT"
start=$(date +%s)
PY=${PYTHON:-python3}
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
elapsed() { echo $(( $(date +%s) - start )); }
$PY -c "import torch, tsrsa; print('tsrsa', tsrsa.__version__, 'torch', torch.__version__, 'cuda', torch.cuda.is_available())" \
  > "$OUT/environment.txt" 2>&1 || { cat "$OUT/environment.txt"; echo "the environment check failed: nothing run"; exit 3; }
cat "$OUT/environment.txt"

left=$(( budget - 15 ))
half=$(( jobs / 2 > 0 ? jobs / 2 : 1 ))
timeout -k 15 -s INT $left $PY benchmarks/ltsf.py --dataset ETTm1 --models RSA,Transformer --seeds 1,2 \
  --jobs "$half" --num-threads 1 --accelerator "$ACCELERATOR" --results "$OUT/ltsf_gpu_long.csv" \
  --results-md "$OUT/RESULTS.md" ${EXTRA:-} > "$OUT/seeds.log" 2>&1 &
seeds=$!
timeout -k 15 -s INT $left $PY benchmarks/ltsf.py --dataset ETTm1 --models RSA,Transformer --seeds 0 --input-size 1440 \
  --jobs "$half" --num-threads 1 --accelerator "$ACCELERATOR" --results "$OUT/ltsf_gpu_long.csv" \
  --results-md "$OUT/RESULTS.md" ${EXTRA:-} > "$OUT/lookback.log" 2>&1 &
lookback=$!
wait $seeds; echo "ETTm1 seeds 1-2: exit $? at $(elapsed) s"
wait $lookback; echo "ETTm1 look-back 1440: exit $? at $(elapsed) s"
cut -d, -f1-12 "$OUT/ltsf_gpu_long.csv" 2>/dev/null
