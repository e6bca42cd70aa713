#!/usr/bin/env bash
# Every test: install dependencies, build (Release, warnings as errors), run ctest.
# Golden tests read ../shared/data and skip loudly when it is absent.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install_deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build build -j"$(nproc)"
cd build
ctest -j"$(nproc)" --output-on-failure --timeout 600
