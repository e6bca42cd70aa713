#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (ASan + UBSan) and runs each for SECONDS (default 600),
# one after another, seeded from ../shared/data (when present), configs/ and tests/bad_inputs/.
# Findings go to build-fuzz/findings/<target>/, the corpus to build-fuzz/corpus/<target>/, each
# run's log to build-fuzz/logs/<target>.log. Ends with a table of libFuzzer's final DONE line
# (executions, coverage, features, corpus) per target.
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
[ ${#targets[@]} -gt 0 ] || targets=(fuzz_host_et fuzz_device_trace fuzz_link_pair
                                     fuzz_et_reader fuzz_converter fuzz_compat_feeder
                                     fuzz_run_config)
cmake --build build-fuzz -j"$(nproc)" --target "${targets[@]}"

data=../shared/data
bad=tests/bad_inputs
seed_dir=build-fuzz/seeds
mkdir -p "$seed_dir"
seed() {  # seed TARGET FILES...: decompressed copies of the small inputs (<= 1 MB)
  local t=$1; shift
  mkdir -p "$seed_dir/$t"
  for f in "$@"; do
    [ -f "$f" ] || continue
    local name; name=$(echo "$f" | tr '/' '_')
    zcat -f "$f" > "$seed_dir/$t/$name" 2>/dev/null || true  # a truncated .gz gives what it has
    [ "$(stat -c %s "$seed_dir/$t/$name")" -le 1048576 ] || rm -f "$seed_dir/$t/$name"
  done
}
seed_raw() {  # seed_raw TARGET FILES...: the small inputs as they are (gzip'd ones stay gzip'd)
  local t=$1; shift
  mkdir -p "$seed_dir/$t"
  for f in "$@"; do
    [ -f "$f" ] && [ "$(stat -c %s "$f")" -le 1048576 ] || continue
    cp "$f" "$seed_dir/$t/$(echo "$f" | tr '/' '_')"
  done
}
if [ -d "$data" ]; then
  seed fuzz_host_et "$data"/pairs/simple_add/host_et.json.gz "$data"/host_et/allgather_1.0.2/host_et.json.gz
  seed fuzz_device_trace "$data"/pairs/simple_add/kineto.modern.json.gz "$data"/kineto/hta_sync_small/*.json.gz \
    "$data"/kineto/hta_amd_mi250_rocm/*.json.gz "$data"/kineto/hta_cpu_only/*.json.gz
  mkdir -p "$seed_dir/fuzz_link_pair"
  { zcat "$data"/pairs/simple_add/host_et.json.gz; printf '\0'; zcat "$data"/pairs/simple_add/kineto.modern.json.gz; } \
    > "$seed_dir/fuzz_link_pair/simple_add"
  # Chakra .et traces: the 8-rank microbenchmarks and Chakra's converter output for small host ETs.
  seed_raw fuzz_et_reader "$data"/chakra_et/*/*/*.et "$data"/chakra_et/*/*.et "$data"/host_et/*/reference/chakra.et
  seed_raw fuzz_compat_feeder "$data"/chakra_et/*/*/*.et "$data"/chakra_et/*/*.et \
    "$data"/host_et/*/reference/chakra.et
  # ET+ (both linkers' references) and plain host ETs: the converter takes either.
  seed fuzz_converter "$data"/pairs/*/reference/et_plus.*.json.gz "$data"/pairs/simple_add/host_et.json.gz \
    "$data"/host_et/allgather_1.0.2/host_et.json.gz "$data"/host_et/pt2_compile_1.1.1/host_et.json.gz
fi
seed_raw fuzz_et_reader "$bad"/et/*
seed_raw fuzz_compat_feeder "$bad"/et/*
seed fuzz_converter "$bad"/et_plus/* "$bad"/host_et/*
seed fuzz_run_config configs/*.yaml "$bad"/yaml/*

mkdir -p build-fuzz/logs
summary=()
for t in "${targets[@]}"; do
  mkdir -p "build-fuzz/corpus/$t" "build-fuzz/findings/$t" "$seed_dir/$t"
  log="build-fuzz/logs/$t.log"
  echo "== $t: ${seconds}s"
  start=$(date +%s)
  "build-fuzz/tests/fuzz/$t" -max_total_time="$seconds" -max_len=1048576 -timeout=10 -rss_limit_mb=4096 \
    -artifact_prefix="build-fuzz/findings/$t/" -print_final_stats=1 \
    "build-fuzz/corpus/$t" "$seed_dir/$t" > "$log" 2>&1 || true
  elapsed=$(( $(date +%s) - start ))
  grep -E "DONE|stat::|==[0-9]+==|SUMMARY|Done|Test unit written" "$log" || true
  # "#123	DONE   cov: 456 ft: 789 corp: 12/34Kb lim: ... exec/s: ... rss: ...": the last run's totals.
  done_line=$(grep -E "^#[0-9]+[[:space:]]+DONE" "$log" | tail -1 || true)
  if [ -n "$done_line" ]; then
    summary+=("$(echo "$done_line" | awk -v t="$t" -v s="$elapsed" '{
      execs = substr($1, 2)
      for (i = 2; i < NF; ++i) {
        if ($i == "cov:") cov = $(i + 1)
        if ($i == "ft:") ft = $(i + 1)
        if ($i == "corp:") corp = $(i + 1)
      }
      printf "%-18s %12s %8s %8s %14s %6ss  ok", t, execs, cov, ft, corp, s }')")
  else
    summary+=("$(printf "%-18s %12s %8s %8s %14s %6ss  FINDING: see %s and build-fuzz/findings/%s/" \
      "$t" - - - - "$elapsed" "$log" "$t")")
  fi
done
echo
printf "%-18s %12s %8s %8s %14s %7s  %s\n" target executions cov ft corpus time result
for line in "${summary[@]}"; do echo "$line"; done
