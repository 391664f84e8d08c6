#!/usr/bin/env bash
# bench/gpu_bench.sh - graft's Vulkan measurements on a GPU machine, from a
# folder made by bench/gpu_bundle.sh (run it from inside that folder's parent
# or pass the folder). Writes to RESULTS (default ./gpu-results):
#   devices.json   `graft devices --json` (card, driver, subgroup size)
#   tests.txt      graft_VulkanKernelsTest on this device (fast and exact
#                  kernels against the reference interpreter)
#   sweep.txt      the q4gsw / dq8ca GEMVs (M = 1 shapes of BM_VkLinear*:
#                  4096x4096, 4096x14336, 2048x8192 and the 1B model's
#                  2048x2048, 2048x512, 8192x2048) under each GPU GEMV tiling
#                  (GRAFT_VK_LINEAR_TILING; `default`: the shape-aware
#                  choice), console table with counters
#   bench.json     every Vulkan kernel benchmark (graft_bench, JSON; the
#                  console table goes to stderr)
#   models.jsonl   per quantization (MODELS="4w 8da4w"; MODELS= skips them),
#                  a Llama-3.2-1B-shaped model: `graft run --bench` of the
#                  program without a KV cache, and `graft run --generate` of
#                  the KV-cache export (--kv-cache custom), one JSON per line
#
#   BUNDLE=.gpubundle RESULTS=$OUT bench/gpu_bench.sh
#
# Each step has its own time limit (STEP_SECONDS, default 150) so one slow
# step cannot eat the whole lease; a step that fails is reported and the
# rest still run; the test steps take TEST_SECONDS (default 120 or STEP_SECONDS,
# the larger). For a short lease: TESTS (gtest filter of the kernel tests,
# default all; empty skips them and the KV-cache tests), SWEEP_FILTER (the
# sweep's benchmarks), MIN_TIME (--benchmark_min_time, default 0.1),
# BENCH_FILTER (the full run's), GENERATE (tokens; 0 skips the KV-cache
# export). The kernel benchmarks record 16 launches per submission on a GPU
# (VulkanBench.cpp, counter "batch"); UNBATCHED="TILING ..." adds a sweep of
# those tilings at one launch per submission (GRAFT_BENCH_BATCH=1), the way
# runs before 2026-11-28 measured; GEMM_TILINGS (default "gpu_gemm
# gpu_gemm_tiled") sweeps the M = 32 GEMMs.
set -uo pipefail
BUNDLE=${BUNDLE:-$(cd "$(dirname "$0")" && pwd)}
RESULTS=${RESULTS:-$PWD/gpu-results}
STEP_SECONDS=${STEP_SECONDS:-150}
# The kernel tests compile many shader variants on the host first: on the
# H200 of 2026-11-28 a filtered run did not finish in 40 s.
TEST_SECONDS=${TEST_SECONDS:-$((STEP_SECONDS > 120 ? STEP_SECONDS : 120))}
MODELS=${MODELS-4w 8da4w}
TESTS=${TESTS-*}
MIN_TIME=${MIN_TIME:-0.1}
SWEEP_FILTER=${SWEEP_FILTER:-BM_VkStream|BM_VkLinear.*/M:1/.*/exact:0}
BENCH_FILTER=${BENCH_FILTER:-BM_Vk|BM_HostMemcpy}
GENERATE=${GENERATE:-32}
UNBATCHED=${UNBATCHED-}
GEMM_TILINGS=${GEMM_TILINGS-gpu_gemm gpu_gemm_tiled}
TILINGS=${TILINGS:-default gpu_gemv gpu_gemv_sg gpu_gemv_sg_n4 gpu_gemv_lanes gpu_gemv_lanes_sg
  gpu_gemv_splitk gpu_gemv_splitk_sg gpu_gemv_splitk_wg_sg gpu_gemv_splitk_n4_sg
  gpu_gemv_splitk_n8_sg}
mkdir -p "$RESULTS"
export LD_LIBRARY_PATH=$BUNDLE/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
step() { # name, command... (the limit: LIMIT, else STEP_SECONDS)
  local name=$1
  shift
  local t0=$SECONDS
  timeout "${LIMIT:-$STEP_SECONDS}" "$@"
  echo "[gpu_bench] $name: exit $? in $((SECONDS - t0)) s" >&2
}

command -v nvidia-smi >/dev/null &&
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv >&2
step devices "$BUNDLE/graft" devices --json >"$RESULTS/devices.json"
if [[ -n $TESTS ]]; then
  LIMIT=$TEST_SECONDS step tests "$BUNDLE/graft_VulkanKernelsTest" --gtest_brief=1 \
    --gtest_filter="$TESTS" >"$RESULTS/tests.txt" 2>&1
  [[ -x $BUNDLE/graft_VulkanKvCacheTest ]] &&
    LIMIT=$TEST_SECONDS step kv-tests "$BUNDLE/graft_VulkanKvCacheTest" --gtest_brief=1 \
      >>"$RESULTS/tests.txt" 2>&1
  grep -E "PASSED|FAILED" "$RESULTS/tests.txt" >&2
fi
: >"$RESULTS/sweep.txt"
for t in $TILINGS; do
  echo "## GRAFT_VK_LINEAR_TILING=$t" >>"$RESULTS/sweep.txt"
  # `default` leaves the variable empty: Linear.cpp's choice by shape.
  GRAFT_VK_LINEAR_TILING=${t#default} step "sweep $t" "$BUNDLE/graft_bench" \
    --benchmark_filter="$SWEEP_FILTER" --benchmark_min_time="$MIN_TIME" \
    >>"$RESULTS/sweep.txt" 2>&1
done
for t in $GEMM_TILINGS; do # the prefill GEMMs (M = 32) under each GPU GEMM tiling
  echo "## GRAFT_VK_LINEAR_TILING=$t (GEMM)" >>"$RESULTS/sweep.txt"
  GRAFT_VK_LINEAR_TILING=$t step "gemm $t" "$BUNDLE/graft_bench" \
    --benchmark_filter='BM_VkLinearQ4gsw/M:32/.*/exact:0' --benchmark_min_time="$MIN_TIME" \
    >>"$RESULTS/sweep.txt" 2>&1
done
for t in $UNBATCHED; do
  echo "## GRAFT_VK_LINEAR_TILING=$t GRAFT_BENCH_BATCH=1" >>"$RESULTS/sweep.txt"
  GRAFT_BENCH_BATCH=1 GRAFT_VK_LINEAR_TILING=${t#default} step "unbatched $t" \
    "$BUNDLE/graft_bench" --benchmark_filter="$SWEEP_FILTER" --benchmark_min_time="$MIN_TIME" \
    >>"$RESULTS/sweep.txt" 2>&1
done
step bench "$BUNDLE/graft_bench" --benchmark_filter="$BENCH_FILTER" \
  --benchmark_min_time="$MIN_TIME" --benchmark_out="$RESULTS/bench.json" \
  --benchmark_out_format=json --benchmark_format=console >&2
# One JSON object per line: {"name": ..., "result": <graft's --json>}.
record() { python3 -c 'import json,sys; print(json.dumps({"name": sys.argv[1], "result": json.load(open(sys.argv[2]))}))' "$1" "$2" >>"$RESULTS/models.jsonl" || true; }
: >"$RESULTS/models.jsonl"
shape=(--layers 16 --dim 2048 --heads 32 --kv-heads 8 --hidden 8192 --vocab 128256 --group-size 32
  --max-seq-len 128 --tied-embeddings --dynamic-seq)
for q in $MODELS; do
  m=/tmp/llama1b_$q
  step "synth $q" "$BUNDLE/graft" synth llama "${shape[@]}" --quant "$q" -o "$m.pt2" >/dev/null
  step "compile $q" "$BUNDLE/graft" compile "$m.pt2" -o "$m.vkprog" --json >"$m.compile.json"
  step "run $q" "$BUNDLE/graft" run "$m.vkprog" --bench 5 --warmup 2 --json >"$m.run.json" &&
    record "bench $q" "$m.run.json"
  ((GENERATE > 0)) || continue
  step "synth kv $q" "$BUNDLE/graft" synth llama "${shape[@]}" --quant "$q" --kv-cache custom \
    -o "$m.kv.pt2" >/dev/null
  step "compile kv $q" "$BUNDLE/graft" compile "$m.kv.pt2" -o "$m.kv.vkprog" --json >"$m.kvc.json"
  step "generate kv $q" "$BUNDLE/graft" run "$m.kv.vkprog" --generate "$GENERATE" --warmup 1 \
    --inputs 'tokens=[1,2,3,4,5,6,7,8]' --json >"$m.gen.json" && record "generate $q" "$m.gen.json"
  rm -f "$m.pt2" "$m.vkprog" "$m.kv.pt2" "$m.kv.vkprog"
done
ls -la "$RESULTS" >&2
