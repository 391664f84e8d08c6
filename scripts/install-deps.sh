#!/usr/bin/env bash
# Installs the Debian 12 packages graft builds with, when they are missing.
# Usage: scripts/install-deps.sh [extra-package ...]
set -euo pipefail

packages=(
  cmake ninja-build g++ make pkg-config
  tao-pegtl-dev libyaml-cpp-dev nlohmann-json3-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libvulkan-dev mesa-vulkan-drivers glslang-dev zlib1g-dev
  vulkan-validationlayers  # synchronization validation of the barriers (the *_sync_validated tests)
  graphviz  # dot: pictures in HTML coverage reports (tested when present)
  python3   # scripts/check-layering.py: the Layering.* tests
  # The Python package (python/, docs/python.md) and its tests (Python.*).
  python3-dev pybind11-dev python3-numpy python3-pytest python3-torch
  "$@"
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "graft: installing missing packages: ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then
    SUDO="sudo"
  else
    echo "graft: error: need root (or sudo) to install: ${missing[*]}" >&2
    exit 1
  fi
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
