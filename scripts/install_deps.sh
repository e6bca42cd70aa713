#!/usr/bin/env bash
# Installs every build and test dependency of chakraflow from Debian packages (nothing else is downloaded).
set -euo pipefail
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
pkgs=(build-essential cmake ninja-build pkg-config
      libtbb-dev libsimdjson-dev libprotobuf-dev protobuf-compiler libfmt-dev libyaml-cpp-dev
      libgtest-dev libgmock-dev libbenchmark-dev zlib1g-dev libisal-dev
      # the Python module (python/) and its tests: pybind11, Debian's python3, pytest, pandas
      python3-dev pybind11-dev python3-pytest python3-pandas
      # clang and its libFuzzer: scripts/test.sh's Sanitize pass, the fuzz targets (scripts/fuzz.sh)
      clang libclang-rt-14-dev
      # clang-format 14: scripts/check_format.sh, run first by scripts/test.sh
      clang-format
      # optional: `mpirun -n K chakraflow run` (the build works without it)
      libopenmpi-dev openmpi-bin)
missing=()
for p in "${pkgs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
