#!/usr/bin/env bash
# End-to-end scaling run: generates one rank at several scales with `chakraflow synth` (about
# 10 MB of JSON per unit of scale) and, on ONE core, measures (1) `chakraflow run` with the link
# and convert stages: the end-to-end figure, the linked rank converted in memory; (2) `link` and
# `convert` as separate commands, through an ET+ file. It records wall time, CPU time (user +
# sys), MB/s of input and peak RSS to bench/results/scaling.json and .tsv;
# bench/plot_scaling.sh draws them (docs/img/scaling.png).
# Usage: bench/scaling.sh [SCALES...]   (default: 1 10 100, i.e. ~10 MB, ~100 MB, ~1 GB per rank)
# MB/s is computed from CPU time (the fastest of at least 10 runs, taken in rounds over all the
# scales: SCALING_ROUNDS, default 10), which a busy machine inflates less than wall time; wall
# time is recorded too. On the CI VM a slow stretch (1.3 to 2x) can last the 2 minutes of 5
# rounds; 10 rounds of scales 1, 10 and 100 take about 2.5 minutes on a calm VM. The inputs of
# every scale stay on disk until the end (about 3.5 GB at 100).
# MB are 10^6 bytes, for the input and for RSS alike.
set -euo pipefail
cd "$(dirname "$0")/.."
scales=("$@")
[ ${#scales[@]} -gt 0 ] || scales=(1 10 100)
bin=build/chakraflow
[ -x "$bin" ] || { echo "build first: cmake --build build" >&2; exit 1; }
work=$(mktemp -d "${TMPDIR:-/tmp}/chakraflow_scaling.XXXXXX")
trap 'rm -rf "$work"' EXIT
has_convert=0
"$bin" convert --help >/dev/null 2>&1 && has_convert=1

measure() {  # measure OUT_PREFIX CMD...: runs CMD under /usr/bin/time -v; prints "wall cpu max_rss_kb"
  local prefix=$1; shift
  /usr/bin/time -v "$@" > "$prefix.out" 2> "$prefix.time" || { cat "$prefix.out" "$prefix.time" >&2; exit 1; }
  local wall cpu rss
  wall=$(grep "Elapsed (wall clock)" "$prefix.time" | awk '{print $NF}' | awk -F: '{ if (NF==3) print $1*3600+$2*60+$3; else print $1*60+$2 }')
  cpu=$(awk -F': ' '/User time|System time/ {s += $2} END {printf "%.2f", s}' "$prefix.time")
  rss=$(grep "Maximum resident set size" "$prefix.time" | awk '{print $NF}')
  echo "$wall $cpu $rss"
}

# measure_best REPS BATCH OUT_PREFIX CMD...: the smallest wall and CPU seconds over REPS runs and
# the largest peak RSS; prints "wall cpu rss". The fastest run, not the mean: on a shared VM other
# tenants only ever add time (runs of the same binary a minute apart differ by 30%). time(1)
# counts in 10 ms steps, so a small input is timed BATCH runs at a time, one after another under
# one time(1), and the times divided by BATCH (the peak RSS is the largest run's).
measure_best() {
  local reps=$1 batch=$2 prefix=$3; shift 3
  local wall_min="" cpu_min="" rss_max=0 w c r
  for ((i = 0; i < reps; ++i)); do
    if [ "$batch" -gt 1 ]; then
      read -r w c r < <(measure "$prefix" bash -c 'n=$1; shift; for ((k = 0; k < n; ++k)); do "$@" || exit 1; done' _ "$batch" "$@")
      w=$(echo "$w / $batch" | bc -l)
      c=$(echo "$c / $batch" | bc -l)
    else
      read -r w c r < <(measure "$prefix" "$@")
    fi
    if [ -z "$cpu_min" ] || [ "$(echo "$c < $cpu_min" | bc -l)" = 1 ]; then cpu_min=$c; fi
    if [ -z "$wall_min" ] || [ "$(echo "$w < $wall_min" | bc -l)" = 1 ]; then wall_min=$w; fi
    [ "$r" -gt "$rss_max" ] && rss_max=$r
  done
  printf '%.4f %.4f %s\n' "$wall_min" "$cpu_min" "$rss_max"
}

# The inputs, generated first: the timings come in rounds, each round timing every scale once, so
# that a slow stretch of the VM (its speed moves by 20-30% over minutes) falls on every scale
# alike instead of on all the runs of one of them. Each figure is the fastest over the rounds.
rounds=${SCALING_ROUNDS:-10}
[ "$rounds" -ge 5 ] || rounds=5
declare -A bytes_of batch_of
for s in "${scales[@]}"; do
  "$bin" synth --ranks 1 --iterations 2 --scale "$s" --out "$work/s$s" 2>/dev/null
  host="$work/s$s/rank0/host_et.json"; dev="$work/s$s/rank0/kineto.json"
  bytes=$(( $(stat -c %s "$host") + $(stat -c %s "$dev") ))
  bytes_of[$s]=$bytes
  # Each timing at least 200 MB of input: 20 runs of the 10 MB rank, 2 of the 100 MB one.
  batch_of[$s]=$(( bytes < 200000000 ? (200000000 + bytes - 1) / bytes : 1 ))
  # One process: link, then convert the linked rank in memory (no ET+ written or parsed).
  printf 'inputs:\n  host: %s\n  device: %s\n  ranks: [0]\nstages: [link, convert]\noutputs:\n  dir: %s\nrun:\n  threads: 1\n' \
    "$work/s$s/rank{rank}/host_et.json" "$work/s$s/rank{rank}/kineto.json" "$work/s$s/run" > "$work/s$s/run.yaml"
done
sync  # the generated text is written out before anything is timed

# best KEY WALL CPU RSS: keeps the smallest wall and CPU seconds and the largest RSS under KEY.
declare -A best_wall best_cpu best_rss
best() {
  local k=$1 w=$2 c=$3 r=$4
  if [ -z "${best_cpu[$k]:-}" ] || [ "$(echo "$c < ${best_cpu[$k]}" | bc -l)" = 1 ]; then best_cpu[$k]=$c; fi
  if [ -z "${best_wall[$k]:-}" ] || [ "$(echo "$w < ${best_wall[$k]}" | bc -l)" = 1 ]; then best_wall[$k]=$w; fi
  if [ -z "${best_rss[$k]:-}" ] || [ "$r" -gt "${best_rss[$k]}" ]; then best_rss[$k]=$r; fi
}
for ((round = 1; round <= rounds; ++round)); do
  for s in "${scales[@]}"; do
    host="$work/s$s/rank0/host_et.json"; dev="$work/s$s/rank0/kineto.json"; batch=${batch_of[$s]}
    best "run$s" $(measure_best 1 "$batch" "$work/run$s" "$bin" run --quiet "$work/s$s/run.yaml")
    best "link$s" $(measure_best 1 "$batch" "$work/link$s" "$bin" link --threads 1 --log-level ERROR \
        --chakra-host-trace "$host" --chakra-device-trace "$dev" --output-file "$work/s$s/et_plus.json")
    if [ "$has_convert" = 1 ]; then
      best "conv$s" $(measure_best 1 "$batch" "$work/conv$s" "$bin" convert --threads 1 --input "$work/s$s/et_plus.json" \
          --output "$work/s$s/trace.0.et")
    fi
  done
done

rows=()
tsv=()
for s in "${scales[@]}"; do
  bytes=${bytes_of[$s]}
  link_wall=${best_wall[link$s]}; link_s=${best_cpu[link$s]}; link_rss=${best_rss[link$s]}
  conv_wall=0; conv_s=0; conv_rss=0
  if [ "$has_convert" = 1 ]; then
    conv_wall=${best_wall[conv$s]}; conv_s=${best_cpu[conv$s]}; conv_rss=${best_rss[conv$s]}
  fi
  run_wall=${best_wall[run$s]}; run_s=${best_cpu[run$s]}; run_rss=${best_rss[run$s]}
  total=$(echo "$link_s + $conv_s" | bc -l)
  mbps=$(echo "$bytes / 1000000 / $total" | bc -l)
  if [ "$has_convert" = 1 ]; then
    cmp -s "$work/s$s/run/trace.0.et" "$work/s$s/trace.0.et" || { echo "scale $s: run and link + convert wrote different .et" >&2; exit 1; }
  fi
  run_mbps=$(echo "$bytes / 1000000 / $run_s" | bc -l)
  printf 'scale %-4s input %8.1f MB  run (link + convert) %6.3f s cpu (%6.0f MB RSS, %.2fx) %6.1f MB/s per core | separately: link %6.3f s (%6.0f MB)  convert %6.3f s (%6.0f MB)  %6.1f MB/s\n' \
    "$s" "$(echo "$bytes/1000000" | bc -l)" "$run_s" "$((run_rss*1024/1000000))" "$(echo "$run_rss * 1024 / $bytes" | bc -l)" "$run_mbps" "$link_s" "$((link_rss*1024/1000000))" "$conv_s" "$((conv_rss*1024/1000000))" "$mbps"
  rows+=("{\"scale\": $s, \"input_bytes\": $bytes, \"run_cpu_seconds\": $run_s, \"run_wall_seconds\": $run_wall, \"run_max_rss_kb\": $run_rss, \"run_mb_per_s\": $(printf '%.2f' "$run_mbps"), \"link_cpu_seconds\": $link_s, \"link_wall_seconds\": $link_wall, \"link_max_rss_kb\": $link_rss, \"convert_cpu_seconds\": $conv_s, \"convert_wall_seconds\": $conv_wall, \"convert_max_rss_kb\": $conv_rss, \"separate_mb_per_s\": $(printf '%.2f' "$mbps")}")
  tsv+=("$s	$bytes	$link_s	$conv_s	$link_rss	$conv_rss	$(printf '%.2f' "$mbps")	$run_s	$run_rss	$(printf '%.2f' "$run_mbps")")
done
mkdir -p bench/results
{
  echo "{\"machine\": \"$(nproc) cores, $(free -g | awk '/Mem:/{print $2}') GiB, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)\", \"build\": \"$("$bin" --version)\", \"threads\": 1, \"rounds\": $rounds, \"mb_per_s_from\": \"cpu seconds (user + sys)\", \"runs\": ["
  (IFS=$',\n'; echo "${rows[*]}")
  echo "]}"
} > bench/results/scaling.json
{
  printf '# scale\tinput_bytes\tlink_cpu_s\tconvert_cpu_s\tlink_rss_kb\tconvert_rss_kb\tseparate_mb_per_s\trun_cpu_s\trun_rss_kb\trun_mb_per_s\n'
  printf '%s\n' "${tsv[@]}"
} > bench/results/scaling.tsv
echo "wrote bench/results/scaling.json and scaling.tsv (plot: bench/plot_scaling.sh)"
