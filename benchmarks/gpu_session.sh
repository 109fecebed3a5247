#!/usr/bin/env bash
# One lease of the GPU machine (see benchmarks/README.md): after DALI is installed into
# /tmp/site by ../shared/gpu/prepare-dali-wheels.sh's parts, install augjax and augjax-contrib
# from the wheels in .whl/aug and run part 1 (GPU tests, GPU demo) or part 2 (benchmarks,
# crossing anatomy, multi-GPU example, soak). Results go to $OUT (or ./gpu-out).
set -uo pipefail
part=${1:-1}
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 XLA_PYTHON_CLIENT_MEM_FRACTION=0.4
python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target /tmp/site .whl/aug/*.whl 2>&1 | tail -2
log="$OUT/session$part.log"
run() {  # run LIMIT_S NAME CMD...
  local limit=$1 name=$2; shift 2
  echo "=== $name ($(date +%T), limit ${limit}s)" | tee -a "$log"
  timeout "$limit" "$@" 2>&1 | tee -a "$log" | tail -n 60
  echo "=== $name: exit ${PIPESTATUS[0]}" | tee -a "$log"
}
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv | tee -a "$log"
python3 -c "import jax, nvidia.dali, augjax; print('jax', jax.__version__, jax.devices(), 'dali', nvidia.dali.__version__, 'augjax', augjax.__version__, len(augjax.list_ops()), 'ops')" | tee -a "$log"
if [ "$part" = 1 ]; then
  run 330 "pytest -m gpu" env AUGJAX_GPU_REPORT="$OUT/gpu_parity.json" \
    python3 -m pytest -m gpu -q -rs -p no:cacheprovider tests
  run 150 "augjax demo --device gpu" python3 -m augjax.cli.main demo --device gpu \
    --out /tmp/demo-gpu --no-progress
  cp /tmp/demo-gpu/demo.json "$OUT/demo_gpu.json" 2>/dev/null
elif [ "$part" = 4 ]; then
  for flags in "" "--xla_gpu_deterministic_ops=true"; do
    run 60 "dump 1 GPU [$flags]" env XLA_FLAGS="$flags" CUDA_VISIBLE_DEVICES=0 \
      python3 examples/multi_gpu.py --iters 4 --dump /tmp/one.npz
    run 60 "dump 2 GPUs [$flags]" env XLA_FLAGS="$flags" python3 examples/multi_gpu.py \
      --iters 4 --dump /tmp/all.npz
    run 60 "compare [$flags]" python3 examples/multi_gpu.py --compare /tmp/one.npz /tmp/all.npz
    run 60 "dump 1 GPU again [$flags]" env XLA_FLAGS="$flags" CUDA_VISIBLE_DEVICES=0 \
      python3 examples/multi_gpu.py --iters 4 --dump /tmp/one2.npz
    run 60 "compare 1 GPU runs [$flags]" python3 examples/multi_gpu.py --compare /tmp/one.npz /tmp/one2.npz
  done
elif [ "$part" = 5 ]; then
  run 200 "4-op chain: one crossing vs four" python3 benchmarks/pipeline_bench.py --device gpu \
    --batch 32 256 1024 --iters 50 --reps 3 --only "4 crossings" "mixup + normalize" \
    --machine "H200" --out "$OUT/chain_gpu.json"
elif [ "$part" = 3 ]; then
  ngpu=$(nvidia-smi -L | wc -l)
  run 60 "multi-GPU dump, 1 GPU" env CUDA_VISIBLE_DEVICES=0 python3 examples/multi_gpu.py \
    --iters 6 --dump /tmp/one.npz
  run 60 "multi-GPU dump, $ngpu GPUs" python3 examples/multi_gpu.py --iters 6 --dump /tmp/all.npz
  run 90 "multi-GPU compare" python3 examples/multi_gpu.py --compare /tmp/one.npz /tmp/all.npz
  for gb in 64 256; do
    for g in 1 $ngpu; do
      run 60 "multi-GPU throughput, $g GPU(s), global batch $((gb * g))" \
        env CUDA_VISIBLE_DEVICES=$(seq -s, 0 $((g - 1))) \
        python3 examples/multi_gpu.py --iters 40 --global-batch $((gb * g))
    done
  done
  run 200 "pytest -m gpu (ops after the fill change)" env AUGJAX_GPU_REPORT="$OUT/gpu_parity.json" \
    python3 -m pytest -m gpu -q -rs -p no:cacheprovider tests/dali/test_gpu.py tests/catalog/test_geometry.py \
    tests/catalog/test_crop.py tests/catalog/test_mix.py tests/compose/test_chain.py
else
  run 240 "pipeline_bench" python3 benchmarks/pipeline_bench.py --device gpu \
    --batch 32 256 1024 --iters 50 --reps 3 --machine "H200 ($(nproc) cores)" --out "$OUT/bench_gpu.json"
  run 40 "jitter A/B" python3 benchmarks/jitter_ab.py --device gpu --batch 256 \
    --out "$OUT/jitter_ab_gpu.json"
  run 60 "crossing anatomy" python3 benchmarks/crossing_anatomy.py --device gpu --batch 256 \
    --iters 100 --out "$OUT/anatomy_gpu.json"
  ngpu=$(nvidia-smi -L | wc -l)
  run 45 "multi-GPU dump, 1 GPU" env CUDA_VISIBLE_DEVICES=0 python3 examples/multi_gpu.py \
    --iters 6 --dump /tmp/one.npz
  if [ "$ngpu" -ge 2 ]; then
    run 45 "multi-GPU dump, $ngpu GPUs" python3 examples/multi_gpu.py --iters 6 --dump /tmp/all.npz
    run 30 "multi-GPU compare" python3 examples/multi_gpu.py --compare /tmp/one.npz /tmp/all.npz
    for g in 1 $ngpu; do
      vis=$(seq -s, 0 $((g - 1)))
      run 45 "multi-GPU throughput, $g GPU(s)" env CUDA_VISIBLE_DEVICES=$vis \
        python3 examples/multi_gpu.py --iters 60 --global-batch $((256 * g))
    done
  fi
  [ "${SOAK:-1}" = 1 ] && run 90 "soak GPU" python3 benchmarks/soak_gpu.py --batches 2000 --json "$OUT/soak_gpu.json"
fi
echo "done part $part $(date +%T)" | tee -a "$log"
