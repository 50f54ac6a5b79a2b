#!/usr/bin/env bash
# The long-horizon rows at the defaults that the 2-core CPU cannot afford, in one command of at most ten minutes
# on one GPU machine: RSA and its twin at the horizons of each part, every (model, horizon, seed) cell a worker
# process of its own (benchmarks/ltsf.py --jobs), the parts side by side. A part is
# DATASET:SEEDS[:INPUT[:JOBS[:HORIZONS]]] (input 96, 4 workers and the four horizons unless given); PARTS lists
# them, space-separated:
#   PARTS="weather:0::4:96,192"          the set with no row at the defaults, its two shorter horizons (default)
#   PARTS="weather:0::4:336,720"         its two longer ones
#   PARTS="ETTm1:1::2 ETTm1:0:1440:2"    an ETTm1 seed and a look-back of 1,440 steps
# Side-by-side fits progress together and finish together, so a part's workers are sized for its cells to end
# within the budget: on an H200 (2026-11-30) twelve ETTm2 and weather fits side by side (8 + 4 workers) ran 545 s
# and one finished (the twin at ETTm2 H336, in 490 s), where the H100's 32 ETTh fits, 15 at a time, took 7
# minutes; by those rates an ETTm-size fit (four times ETTh's windows) ends inside ten minutes with about 4 workers
# in all, across the parts (an estimate); a weather fit has three times ETTm2's windows, hence four weather cells
# by default.
# Rows go to $OUT/ltsf_gpu_long.csv (the CSV format of benchmarks/results/ltsf.csv: append them there to publish
# them), logs to $OUT, the GPU's load every 10 s to $OUT/dmon.txt. The CSVs are read from $TSRSA_DATA_DIR
# (DATASET.csv, or DATASET.csv.gz unpacked into a temporary folder). Whatever is still running when the budget
# (first argument, seconds; default 540) is spent is interrupted; the cells that finished keep their rows.
#
#   OUT=gpu-long TSRSA_DATA_DIR=/path/to/datasets benchmarks/run_gpu_long_horizon.sh 540
# ACCELERATOR (default gpu) and EXTRA (more ltsf.py arguments, e.g. "--max-windows 64 --max-epochs 1
# --horizons 96") make a short rehearsal of the same command on the CPU.
set -u
budget=${1:-540}
PARTS=${PARTS:-"weather:0::4:96,192"}
OUT=${OUT:-gpu-long}
ACCELERATOR=${ACCELERATOR:-gpu}
mkdir -p "$OUT"
start=$(date +%s)
PY=${PYTHON:-python3}
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
elapsed() { echo $(( $(date +%s) - start )); }
data=${TSRSA_DATA_DIR:?set TSRSA_DATA_DIR to the folder of the CSV files}
if ls "$data"/*.csv.gz > /dev/null 2>&1; then  # packed to travel: unpacked into a temporary folder
  unpacked=$(mktemp -d)
  trap 'rm -rf "$unpacked"' EXIT
  for f in "$data"/*.csv.gz; do gunzip -c "$f" > "$unpacked/$(basename "$f" .gz)"; done
  data=$unpacked
fi
$PY -c "import torch, pandas, statsmodels, tsrsa; print('tsrsa', tsrsa.__version__, 'torch', torch.__version__, 'cuda', torch.cuda.is_available(), 'pandas', pandas.__version__, 'statsmodels', statsmodels.__version__)" \
  > "$OUT/environment.txt" 2>&1 || { cat "$OUT/environment.txt"; echo "the environment check failed: nothing run"; exit 3; }
cat "$OUT/environment.txt"
if command -v nvidia-smi > /dev/null; then nvidia-smi dmon -s u -d 10 > "$OUT/dmon.txt" 2>&1 & dmon=$!; fi

left=$(( budget - $(elapsed) - 15 ))
parts=($PARTS) pids=()
for part in "${parts[@]}"; do
  IFS=: read -r dataset seeds input jobs horizons <<< "$part"
  timeout -k 15 -s INT $left $PY benchmarks/ltsf.py --dataset "$dataset" --models RSA,Transformer --seeds "$seeds" \
    ${input:+--input-size "$input"} ${horizons:+--horizons "$horizons"} --jobs "${jobs:-4}" --num-threads 1 \
    --accelerator "$ACCELERATOR" \
    --data-dir "$data" --results "$OUT/ltsf_gpu_long.csv" --results-md "$OUT/RESULTS.md" ${EXTRA:-} \
    > "$OUT/${dataset}_${seeds//,/-}_${input:-96}${horizons:+_${horizons//,/-}}.log" 2>&1 &
  pids+=($!)
done
for i in "${!parts[@]}"; do wait "${pids[$i]}"; echo "${parts[$i]}: exit $? at $(elapsed) s"; done
[ -n "${dmon:-}" ] && kill "$dmon"
cut -d, -f1-12 "$OUT/ltsf_gpu_long.csv" 2>/dev/null
