#!/bin/sh
# First rows of the long-horizon table on CPU: TransformerForecaster and LSTMForecaster on ETTh1
# and ETTh2, horizons 96/192/336/720, seeds 0/1/2, the "default" variants of
# benchmarks/configs/{Transformer,LSTM}.json, one torch thread per process.
#
#   nohup nice -n 15 sh benchmarks/run_first_rows.sh > /tmp/tsrsa-ltsf/first_rows.log 2>&1 &
#
# Each run appends its row to benchmarks/results/ltsf.csv as soon as it finishes (an interrupted
# script keeps what it finished; re-running a cell replaces its row in the tables), and every
# ltsf.py call regenerates benchmarks/RESULTS.md. Takes about 8 hours on 2 shared CPU cores.
cd "$(dirname "$0")/.." || exit 1
PY=${PYTHON:-.venv/bin/python}
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
status=0
for model in Transformer LSTM; do
    for dataset in ETTh1 ETTh2; do
        echo "== $(date -Iseconds) $model $dataset"
        "$PY" benchmarks/ltsf.py --dataset "$dataset" --models "$model" --seeds 0,1,2 --num-threads 1 || status=1
    done
done
"$PY" benchmarks/ltsf.py --tables-only || status=1
echo "== $(date -Iseconds) done (status $status)"
exit $status
