#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (ASan + UBSan) and runs each for SECONDS (default 600),
# seeded from ../shared/data when present. Findings go to build-fuzz/findings/<target>/.
# Usage: scripts/fuzz.sh [SECONDS] [TARGET...]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-600}"
shift || true
./scripts/install_deps.sh
command -v clang++ >/dev/null || apt-get install -y -qq clang libclang-rt-14-dev
CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=Sanitize -DCHAKRAFLOW_FUZZ=ON \
  -DCHAKRAFLOW_BUILD_TESTS=OFF -DCHAKRAFLOW_BUILD_BENCH=OFF >/dev/null
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(fuzz_host_et fuzz_device_trace fuzz_link_pair)
cmake --build build-fuzz -j"$(nproc)" --target "${targets[@]}"

data=../shared/data
seed_dir=build-fuzz/seeds
mkdir -p "$seed_dir"
seed() {  # seed TARGET FILES...: decompressed copies of the small real traces (<= 1 MB)
  local t=$1; shift
  mkdir -p "$seed_dir/$t"
  for f in "$@"; do
    [ -f "$f" ] || continue
    local name; name=$(echo "$f" | tr '/' '_')
    zcat -f "$f" > "$seed_dir/$t/$name" || true
    [ "$(stat -c %s "$seed_dir/$t/$name")" -le 1048576 ] || rm -f "$seed_dir/$t/$name"
  done
}
if [ -d "$data" ]; then
  seed fuzz_host_et "$data"/pairs/simple_add/host_et.json.gz "$data"/host_et/allgather_1.0.2/host_et.json.gz
  seed fuzz_device_trace "$data"/pairs/simple_add/kineto.modern.json.gz "$data"/kineto/hta_sync_small/*.json.gz \
    "$data"/kineto/hta_amd_mi250_rocm/*.json.gz "$data"/kineto/hta_cpu_only/*.json.gz
  mkdir -p "$seed_dir/fuzz_link_pair"
  { zcat "$data"/pairs/simple_add/host_et.json.gz; printf '\0'; zcat "$data"/pairs/simple_add/kineto.modern.json.gz; } \
    > "$seed_dir/fuzz_link_pair/simple_add"
fi
for t in "${targets[@]}"; do
  mkdir -p "build-fuzz/corpus/$t" "build-fuzz/findings/$t"
  echo "== $t: ${seconds}s"
  "build-fuzz/tests/fuzz/$t" -max_total_time="$seconds" -max_len=1048576 -timeout=10 -rss_limit_mb=4096 \
    -artifact_prefix="build-fuzz/findings/$t/" -print_final_stats=1 \
    "build-fuzz/corpus/$t" "$seed_dir/$t" 2>&1 | grep -E "DONE|stat::|==[0-9]+==|SUMMARY|Done" || true
done
