#!/usr/bin/env bash
# The main job on a default the project generates itself: install dependencies, build, generate a
# realistic 2-rank trace set (host ET + Kineto per rank), link every rank into ET+.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install_deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCHAKRAFLOW_BUILD_BENCH=OFF
cmake --build build -j"$(nproc)" --target chakraflow
rm -rf out/demo && mkdir -p out/demo
./build/chakraflow synth --ranks 2 --iterations 2 --scale 0.5 --gzip --out out/demo/traces
for rank in 0 1; do
  ./build/chakraflow link --rank "$rank" \
    --chakra-host-trace "out/demo/traces/rank$rank/host_et.json.gz" \
    --chakra-device-trace "out/demo/traces/rank$rank/kineto.json.gz" \
    --output-file "out/demo/et_plus.$rank.json.gz"
done
echo "demo: ET+ files in out/demo/"
