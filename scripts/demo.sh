#!/usr/bin/env bash
# The main job on a default the project generates itself: install dependencies, build, generate a
# realistic 4-rank trace set (host ET + Kineto per rank), then run the batch of configs/demo.yaml:
# every rank linked into ET+ and converted to a Chakra .et, concurrently, then all ranks simulated.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install_deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCHAKRAFLOW_BUILD_BENCH=OFF
# chakraflow_dist: the binary and everything `cmake --install build` ships (the feeder library of
# docs/astra-sim.md), so that this build can be installed.
cmake --build build -j"$(nproc)" --target chakraflow_dist
rm -rf out/demo && mkdir -p out/demo
./build/chakraflow synth --ranks 4 --iterations 2 --scale 0.5 --gzip --out out/demo/traces
./build/chakraflow run configs/demo.yaml
echo "demo: Chakra traces in out/demo/et/ (ET+ in out/demo/et/et_plus/), summary in out/demo/et/summary.json, simulation in out/demo/et/simulation.json"
