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
cmake -S . -B build-fuzz -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=Sanitize \
  -DCHAKRAFLOW_FUZZ=ON -DCHAKRAFLOW_BUILD_TESTS=OFF -DCHAKRAFLOW_BUILD_BENCH=OFF >/dev/null
targets=("$@")
[ ${#targets[@]} -gt 0 ] || mapfile -t targets < build-fuzz/tests/fuzz/targets.txt  # all of them
cmake --build build-fuzz -j"$(nproc)" --target "${targets[@]}"

# The same seeds as the fuzz_<target>_seeds tests of scripts/test.sh.
seed_dir=build-fuzz/seeds
./scripts/fuzz_seeds.sh "$seed_dir" ../shared/data "${targets[@]}"

mkdir -p build-fuzz/logs
summary=()
for t in "${targets[@]}"; do
  mkdir -p "build-fuzz/corpus/$t" "build-fuzz/findings/$t"
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
