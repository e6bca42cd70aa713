#!/usr/bin/env bash
# Every test: install dependencies, check that every C++ source is formatted
# (scripts/check_format.sh), then build and run the whole suite twice: Release (GCC, warnings as
# errors) and Sanitize (clang, ASan + UBSan, with the libFuzzer targets), then check that
# scripts/tsan.sh configures. Golden tests read ../shared/data and skip loudly when it is absent.
# Set CHAKRAFLOW_SKIP_SANITIZE=1 to run the Release pass only.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install_deps.sh
jobs="$(nproc)"

# Formatting first (a second): every C++ source as .clang-format says, each one that is not named.
# The suite still runs; a format failure fails the command at the end.
format_rc=0
bash scripts/check_format.sh || format_rc=1

# The Release pass builds the Python module (required: ON) and runs its pytest suite as the ctest
# test python_module, with Debian's interpreter (pyenv's python3 may come first on PATH).
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCHAKRAFLOW_BUILD_BENCH=ON \
  -DCHAKRAFLOW_BUILD_PYTHON=ON -DPython3_EXECUTABLE=/usr/bin/python3
cmake --build build -j"$jobs"
(cd build && ctest -j"$jobs" --output-on-failure --timeout 600)

if [ "${CHAKRAFLOW_SKIP_SANITIZE:-0}" != 1 ]; then
  # Compiled by clang, where the Release pass is GCC's: the tree must build with both (each accepts
  # code the other rejects, with -Werror), and the fuzz targets of scripts/fuzz.sh (libFuzzer is
  # clang's) come out of this build, as fuzz.sh builds them, at the cost of a few small files;
  # ctest runs each over its seeds once (tests fuzz_<target>_seeds, `ctest -L fuzz`).
  # Without the Python module: an ASan-instrumented extension cannot be loaded by an
  # uninstrumented interpreter without LD_PRELOAD tricks; the Release pass tests it.
  cmake -S . -B build-asan -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=Sanitize \
    -DCHAKRAFLOW_FUZZ=ON -DCHAKRAFLOW_BUILD_BENCH=OFF -DCHAKRAFLOW_BUILD_PYTHON=OFF
  # The fuzz targets first, one at a time, so that the one that does not build is named.
  mapfile -t fuzz_targets < build-asan/tests/fuzz/targets.txt
  for target in "${fuzz_targets[@]}"; do
    cmake --build build-asan -j"$jobs" --target "$target" || {
      echo "scripts/test.sh: the fuzz target $target does not build (scripts/fuzz.sh)" >&2
      exit 1
    }
  done
  cmake --build build-asan -j"$jobs"
  (cd build-asan && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
     ctest -j"$jobs" --output-on-failure --timeout 900)

  # scripts/tsan.sh configured and its targets checked, nothing compiled: its TSan build would cost
  # CI minutes it does not have (README.md, "Two more checks").
  bash scripts/tsan.sh --check
fi

if [ "$format_rc" != 0 ]; then
  echo "scripts/test.sh: the sources are not formatted (see check_format above; scripts/check_format.sh --fix)" >&2
  exit 1
fi
