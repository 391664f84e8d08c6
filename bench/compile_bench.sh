#!/usr/bin/env bash
# bench/compile_bench.sh - `graft compile` end to end, per phase, by model size.
#
# Synthesizes int4 (4w) Llamas of 16, 64 and 128 layers (dim 256, 4 heads,
# vocab 512: the 128-layer one has ~9k nodes before fusion, ~6.8k after, and
# 2,954 weights), compiles each REPEAT times with `graft compile --json`, and
# prints the median seconds of every phase the compiler reports
# (phase_seconds), load + partition + write, and the total, one row per model,
# as a Markdown table headed by the machine, the date and the commit.
# Per-layer times show whether each phase is linear in the graph's size: the
# row for 128 layers should cost 8x the row for 16, not 64x.
#
# With BASELINE=path/to/another/graft, both binaries compile each model in
# turn (interleaved, so machine noise hits both alike) and a second table
# gives the baseline's medians and the speed-up of load + partition + write.
#
# Environment (all optional):
#   GRAFT      the graft binary (default build/tools/graft)
#   BASELINE   a second graft binary to compare with (default: none)
#   LAYERS     model sizes (default "16 64 128")
#   REPEAT     compiles per model and binary (default 7)
#   WORK       where the models and programs go (default a temporary directory)
#   EXTRA      extra `graft synth llama` flags (e.g. --tied-embeddings)
#   FLAGS      extra `graft compile` flags for both binaries; FLAGS=--no-default-rules
#              compiles the unfused graph, which measures the code alone (the
#              fused graph's size depends on each binary's rules)
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
GRAFT=${GRAFT:-$ROOT/build/tools/graft}
BASELINE=${BASELINE:-}
LAYERS=${LAYERS:-16 64 128}
REPEAT=${REPEAT:-7}
EXTRA=${EXTRA:-}
FLAGS=${FLAGS:-}
WORK=${WORK:-$(mktemp -d)}
mkdir -p "$WORK"

for exe in "$GRAFT" ${BASELINE:+"$BASELINE"}; do
  [[ -x $exe ]] || { echo "compile_bench.sh: $exe is not an executable" >&2; exit 1; }
done

cpu=$(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -1)
echo "machine: ${cpu:-unknown CPU}, $(nproc) cores, $(free -g 2>/dev/null | awk '/^Mem:/{print $2}') GiB;" \
  "$(uname -sr); load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "date: $(date -u +%Y-%m-%dT%H:%MZ); commit: $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)"
echo "graft: $GRAFT${BASELINE:+; baseline: $BASELINE}; $REPEAT runs per model, medians${FLAGS:+; compile flags: $FLAGS}"
echo

results=$WORK/results.jsonl
: >"$results"
for layers in $LAYERS; do
  model=$WORK/llama_l${layers}.pt2
  if [[ ! -f $model ]]; then
    # shellcheck disable=SC2086 # EXTRA is a list of flags
    "$GRAFT" synth llama --layers "$layers" --dim 256 --heads 4 --vocab 512 --quant 4w $EXTRA \
      -o "$model" >/dev/null 2>&1
  fi
  for ((r = 0; r < REPEAT; ++r)); do
    for which in graft ${BASELINE:+baseline}; do
      exe=$GRAFT
      [[ $which == baseline ]] && exe=$BASELINE
      # shellcheck disable=SC2086 # FLAGS is a list of flags
      out=$("$exe" compile "$model" -o "$WORK/out_$which.vkprog" --json $FLAGS)
      python3 -c 'import json,sys; d=json.loads(sys.argv[1]); print(json.dumps({"which":sys.argv[2],"layers":int(sys.argv[3]),"nodes_in":d["nodes_in"],"nodes_out":d["nodes_out"],"phases":d["phase_seconds"],"total":d["total_seconds"]}))' \
        "$out" "$which" "$layers" >>"$results"
    done
  done
done

python3 - "$results" <<'EOF'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
def med(xs): return statistics.median(xs)
phases = []
for r in rows:
    for p in r["phases"]:
        if p not in phases:
            phases.append(p)
key = ("load", "partition", "write")
def table(which):
    sel = [r for r in rows if r["which"] == which]
    if not sel:
        return {}
    print(f"**{which}** (seconds, median)\n")
    print("| layers | nodes in / out | " + " | ".join(phases) + " | load+partition+write | per layer (ms) | total |")
    print("|---|---|" + "---|" * len(phases) + "---|---|---|")
    out = {}
    for layers in sorted({r["layers"] for r in sel}):
        rs = [r for r in sel if r["layers"] == layers]
        cells = [f'{med([r["phases"].get(p, 0.0) for r in rs]):.4f}' for p in phases]
        lpw = med([sum(r["phases"].get(p, 0.0) for p in key) for r in rs])
        out[layers] = lpw
        print(f'| {layers} | {rs[0]["nodes_in"]} / {rs[0]["nodes_out"]} | ' + " | ".join(cells) +
              f' | {lpw:.4f} | {1000 * lpw / layers:.2f} | {med([r["total"] for r in rs]):.4f} |')
    print()
    return out
mine = table("graft")
base = table("baseline")
if base:
    print("| layers | load+partition+write, baseline | graft | speed-up |")
    print("|---|---|---|---|")
    for layers in sorted(mine):
        print(f"| {layers} | {base[layers]:.4f} | {mine[layers]:.4f} | {base[layers] / mine[layers]:.1f}x |")
EOF
