#!/usr/bin/env bash
# Every test: install dependencies, then build and run the whole suite twice: Release (warnings as
# errors) and Sanitize (ASan + UBSan). Golden tests read ../shared/data and skip loudly when it is
# absent. Set CHAKRAFLOW_SKIP_SANITIZE=1 to run the Release pass only.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install_deps.sh
jobs="$(nproc)"

# The Release pass builds the Python module (required: ON) and runs its pytest suite as the ctest
# test python_module, with Debian's interpreter (pyenv's python3 may come first on PATH).
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCHAKRAFLOW_BUILD_BENCH=ON \
  -DCHAKRAFLOW_BUILD_PYTHON=ON -DPython3_EXECUTABLE=/usr/bin/python3
cmake --build build -j"$jobs"
(cd build && ctest -j"$jobs" --output-on-failure --timeout 600)

if [ "${CHAKRAFLOW_SKIP_SANITIZE:-0}" != 1 ]; then
  # Without the Python module: an ASan-instrumented extension cannot be loaded by an
  # uninstrumented interpreter without LD_PRELOAD tricks; the Release pass tests it.
  cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Sanitize -DCHAKRAFLOW_BUILD_BENCH=OFF \
    -DCHAKRAFLOW_BUILD_PYTHON=OFF
  cmake --build build-asan -j"$jobs"
  (cd build-asan && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
     ctest -j"$jobs" --output-on-failure --timeout 900)
fi
