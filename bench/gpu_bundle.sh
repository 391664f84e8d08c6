#!/usr/bin/env bash
# bench/gpu_bundle.sh - pack what bench/gpu_bench.sh runs into one folder, so
# the measurements can run on another x86-64 Linux machine with a GPU and a
# Vulkan driver but none of graft's build dependencies (a CUDA image, say).
#
#   bench/gpu_bundle.sh [BUNDLE_DIR]      # default .gpubundle
#
# Copies stripped graft, graft_bench, graft_VulkanKernelsTest and
# graft_VulkanKvCacheTest from build/
# and every shared library they load that is not part of glibc, the
# compiler's runtime or the Vulkan loader (the GPU machine brings its own
# loader and driver): yaml-cpp, Google Benchmark and their dependencies.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-$ROOT/build}
OUT=${1:-$ROOT/.gpubundle}
rm -rf "$OUT"
mkdir -p "$OUT/lib"
bins=("$BUILD/tools/graft" "$BUILD/bench/graft_bench" "$BUILD/tests/graft_VulkanKernelsTest"
  "$BUILD/tests/graft_VulkanKvCacheTest")
for b in "${bins[@]}"; do
  [[ -x $b ]] || { echo "gpu_bundle.sh: $b is not built" >&2; exit 1; }
  strip -o "$OUT/$(basename "$b")" "$b"
done
# Libraries outside glibc / libstdc++ / libgcc / the Vulkan loader.
skip='^(linux-vdso|ld-linux|libc\.|libm\.|libdl\.|libpthread\.|librt\.|libstdc\+\+|libgcc_s|libvulkan)'
for b in "${bins[@]}"; do
  ldd "$b" | awk '/=> \//{print $1, $3}' | while read -r name path; do
    [[ $name =~ $skip ]] && continue
    cp -L "$path" "$OUT/lib/$name"
  done
done
cp "$ROOT/bench/gpu_bench.sh" "$OUT/"
du -sh "$OUT"
