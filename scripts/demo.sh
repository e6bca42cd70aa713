#!/usr/bin/env bash
# The main job on the bundled demo pair: install dependencies, build, link configs/demo into ET+.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install_deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCHAKRAFLOW_BUILD_BENCH=OFF
cmake --build build -j"$(nproc)" --target chakraflow
mkdir -p out
./build/chakraflow link \
  --chakra-host-trace configs/demo/host_et.json \
  --chakra-device-trace configs/demo/kineto.json \
  --output-file out/demo_et_plus.json
echo "wrote out/demo_et_plus.json"
