#!/usr/bin/env bash
# bench/run_all.sh - run every graft benchmark and regenerate docs/benchmarks.md.
#
# `make bench` builds and then runs this. Steps:
#   1. the machine (CPU, cores, RAM, OS, compiler, Vulkan devices, GPUs) and the load average;
#   2. `graft synth llama` writes an 8B-parameter-shaped int4 (4w) .pt2 (Llama-3-8B dims), timed;
#   3. graft_bench (Google Benchmark, JSON) - foundation, .pt2 open, Vulkan kernels, memcpy,
#      int4 repack, rewrite engine; the .pt2 benchmark reuses the archive of step 2;
#   4. `graft compile --json` of that archive under /usr/bin/time -v (wall, CPU, peak RSS);
#   5. bench/gen_benchmarks.py rewrites the generated blocks of docs/benchmarks.md
#      (between <!-- graft-bench:NAME --> markers); hand-written text outside them stays;
#   6. the big files (~9 GB .pt2, the .vkprog) are deleted unless GRAFT_BENCH_KEEP=1.
#
# Environment (all optional):
#   BUILD_DIR              build tree with tools/graft and bench/graft_bench (default build)
#   BENCH_OUT              where results go (default $BUILD_DIR/bench-results)
#   GRAFT_BENCH_DIR        where the big model files go (default $BENCH_OUT/data; ~20 GB free needed)
#   BENCH_FILTER           --benchmark_filter regex for graft_bench (default: all)
#   BENCH_REPETITIONS      Google Benchmark repetitions, medians reported (default 1)
#   BENCH_COMPILE_LAYERS   layers of the compiled model (default 32, the 8B shape)
#   BENCH_COMPILE_TIMEOUT  seconds before the compile benchmark is abandoned (default 3600)
#   BENCH_SKIP_COMPILE=1   skip steps 2 and 4 (and the 8B .pt2 benchmarks synthesize their own)
#   BENCH_NO_DOC=1         do not touch docs/benchmarks.md
#   GRAFT_BENCH_KEEP=1     keep the synthesized .pt2 and the .vkprog
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
BUILD_DIR=${BUILD_DIR:-build}
OUT=${BENCH_OUT:-$BUILD_DIR/bench-results}
DATA=${GRAFT_BENCH_DIR:-$OUT/data}
FILTER=${BENCH_FILTER:-.}
REPS=${BENCH_REPETITIONS:-1}
LAYERS=${BENCH_COMPILE_LAYERS:-32}
COMPILE_TIMEOUT=${BENCH_COMPILE_TIMEOUT:-3600}
GRAFT=$BUILD_DIR/tools/graft
BENCH=$BUILD_DIR/bench/graft_bench

for exe in "$GRAFT" "$BENCH"; do
  [[ -x $exe ]] || { echo "run_all.sh: $exe not built (run 'make bench')" >&2; exit 1; }
done
[[ -x /usr/bin/time ]] || { echo "run_all.sh: /usr/bin/time missing (apt-get install time)" >&2; exit 1; }
mkdir -p "$OUT" "$DATA"
OUT=$(cd "$OUT" && pwd)
DATA=$(cd "$DATA" && pwd)
rm -f "$OUT"/*.json "$OUT"/*.txt "$OUT"/*.time

# The archive name graft_bench's Pt2Bench looks for in $GRAFT_BENCH_DIR (same shape).
PT2=$DATA/graft_bench_llama${LAYERS}l_4w.pt2
VKPROG=$DATA/graft_bench_llama${LAYERS}l_4w.vkprog
cleanup() {
  if [[ ${GRAFT_BENCH_KEEP:-0} != 1 ]]; then
    rm -f "$VKPROG" "$DATA"/graft_bench_llama*l_4w.pt2 "$DATA"/.graft_bench_llama*
  fi
}
trap cleanup EXIT

# 1. The machine.
{
  echo "date=$(date -u '+%Y-%m-%d %H:%M UTC')"
  echo "cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
  echo "cores=$(nproc)"
  echo "l3=$(lscpu 2>/dev/null | sed -n 's/^L3 cache: *//p')"
  echo "hypervisor=$(lscpu 2>/dev/null | sed -n 's/^Hypervisor vendor: *//p')"
  echo "mem_kib=$(awk '/MemTotal/ {print $2}' /proc/meminfo)"
  echo "os=$(. /etc/os-release 2>/dev/null && echo "$PRETTY_NAME")"
  echo "kernel=$(uname -r)"
  echo "compiler=$(c++ --version 2>/dev/null | head -1)"
  echo "build_type=$(sed -n 's/^CMAKE_BUILD_TYPE:STRING=//p' "$BUILD_DIR/CMakeCache.txt")"
  echo "git=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD 2>/dev/null || echo ' (uncommitted changes)')"
  echo "vulkan=$("$GRAFT" devices 2>/dev/null | grep -E '^[0-9]+:' | sed 's/^[0-9]*: //' | paste -sd ';' -)"
  if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then
    echo "gpus=$(nvidia-smi -L | paste -sd ';' -)"
  else
    echo "gpus=none"
  fi
  echo "load_before=$(cut -d' ' -f1-3 /proc/loadavg)"
} >"$OUT/machine.txt"
cat "$OUT/machine.txt"

# 2. The 8B-shaped 4w archive (Llama-3-8B dims; FFN 14336, GQA 8 KV heads).
if [[ ${BENCH_SKIP_COMPILE:-0} != 1 ]]; then
  echo "== graft synth llama ($LAYERS layers) -> $PT2"
  /usr/bin/time -v -o "$OUT/synth.time" "$GRAFT" synth llama --layers "$LAYERS" --dim 4096 \
    --heads 32 --kv-heads 8 --vocab 128256 --hidden 14336 --group-size 32 --max-seq-len 2048 \
    --dynamic-seq --quant 4w -o "$PT2" | tee "$OUT/synth.txt"
  stat -c %s "$PT2" >"$OUT/synth_bytes.txt"
fi

# 3. graft_bench.
echo "== graft_bench (filter '$FILTER', $REPS repetition(s))"
GRAFT_BENCH_DIR=$DATA "$BENCH" --benchmark_filter="$FILTER" --benchmark_repetitions="$REPS" \
  --benchmark_report_aggregates_only="$([[ $REPS -gt 1 ]] && echo true || echo false)" \
  --benchmark_format=json --benchmark_out="$OUT/bench.json" --benchmark_out_format=json \
  >/dev/null

# 4. graft compile of the archive.
if [[ ${BENCH_SKIP_COMPILE:-0} != 1 ]]; then
  echo "== graft compile ($LAYERS layers) -> $VKPROG"
  set +e
  /usr/bin/time -v -o "$OUT/compile.time" timeout "$COMPILE_TIMEOUT" \
    "$GRAFT" compile "$PT2" -o "$VKPROG" --json >"$OUT/compile.json" 2>"$OUT/compile.err" &
  tpid=$!
  # ru_maxrss counts the mapped weights' file pages too (page cache the kernel can drop);
  # sample the anonymous part (graft's own heap) and the file part separately.
  peak_anon=0 peak_file=0 peak_total=0
  while kill -0 "$tpid" 2>/dev/null; do
    for tmo in $(pgrep -P "$tpid"); do
      for gp in $(pgrep -P "$tmo"); do
        read -r a f < <(awk '/^RssAnon/ {a=$2} /^RssFile/ {f=$2} END {print a+0, f+0}' \
          "/proc/$gp/status" 2>/dev/null || echo "0 0")
        ((a > peak_anon)) && peak_anon=$a
        ((f > peak_file)) && peak_file=$f
        ((a + f > peak_total)) && peak_total=$((a + f))
      done
    done
    sleep 0.5
  done
  wait "$tpid"
  echo "rc=$?" >"$OUT/compile_rc.txt"
  printf 'peak_anon_kib=%s\npeak_file_kib=%s\npeak_total_kib=%s\n' \
    "$peak_anon" "$peak_file" "$peak_total" >"$OUT/compile_rss.txt"
  set -e
  [[ -f $VKPROG ]] && stat -c %s "$VKPROG" >"$OUT/compile_bytes.txt"
  cat "$OUT/compile_rc.txt"
fi

echo "load_after=$(cut -d' ' -f1-3 /proc/loadavg)" >>"$OUT/machine.txt"

# 5. The document.
if [[ ${BENCH_NO_DOC:-0} != 1 ]]; then
  python3 bench/gen_benchmarks.py "$OUT" docs/benchmarks.md
  echo "== docs/benchmarks.md regenerated (results in $OUT)"
fi
