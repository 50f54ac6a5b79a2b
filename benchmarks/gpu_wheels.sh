#!/usr/bin/env bash
# Download, on a machine with the package registries, the wheels that the GPU machine lacks (it has no
# network), into .whl/ for benchmarks/run_gpu_checks.sh to install there: flash-linear-attention (the
# optional `backend="fla"` kernels) and pytorch-forecasting (the speed peers of bench_training.py).
# The GPU image already holds torch, triton, transformers, lightning, pandas and scikit-learn.
#   benchmarks/gpu_wheels.sh && echo /.whl/ >> .git/info/exclude   # then carry ".whl" in the device call
set -eu
mkdir -p .whl
python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux2014_x86_64 --platform any -d .whl \
  flash-linear-attention==0.6.0 fla-core==0.6.0 pytorch-forecasting==1.8.0 scikit-base
ls .whl
