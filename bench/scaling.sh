#!/usr/bin/env bash
# End-to-end scaling run: generates one rank at several scales with `chakraflow synth` (about
# 10 MB of JSON per unit of scale), links it (and converts it to .et when the convert verb exists)
# on ONE core, and records wall time, MB/s of input and peak RSS to bench/results/scaling.json.
# Usage: bench/scaling.sh [SCALES...]   (default: 1 10 100, i.e. ~10 MB, ~100 MB, ~1 GB per rank)
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

measure() {  # measure OUT_PREFIX CMD...: runs CMD under /usr/bin/time -v; prints "seconds max_rss_kb"
  local prefix=$1; shift
  /usr/bin/time -v "$@" > "$prefix.out" 2> "$prefix.time" || { cat "$prefix.out" "$prefix.time" >&2; exit 1; }
  local wall rss
  wall=$(grep "Elapsed (wall clock)" "$prefix.time" | awk '{print $NF}' | awk -F: '{ if (NF==3) print $1*3600+$2*60+$3; else print $1*60+$2 }')
  rss=$(grep "Maximum resident set size" "$prefix.time" | awk '{print $NF}')
  echo "$wall $rss"
}

rows=()
for s in "${scales[@]}"; do
  "$bin" synth --ranks 1 --iterations 2 --scale "$s" --out "$work/s$s" 2>/dev/null
  host="$work/s$s/rank0/host_et.json"; dev="$work/s$s/rank0/kineto.json"
  bytes=$(( $(stat -c %s "$host") + $(stat -c %s "$dev") ))
  read -r link_s link_rss < <(measure "$work/link$s" "$bin" link --threads 1 --log-level ERROR \
      --chakra-host-trace "$host" --chakra-device-trace "$dev" --output-file "$work/s$s/et_plus.json")
  conv_s=0; conv_rss=0
  if [ "$has_convert" = 1 ]; then
    read -r conv_s conv_rss < <(measure "$work/conv$s" "$bin" convert --input "$work/s$s/et_plus.json" \
        --output "$work/s$s/trace.0.et")
  fi
  total=$(echo "$link_s + $conv_s" | bc -l)
  mbps=$(echo "$bytes / 1000000 / $total" | bc -l)
  printf 'scale %-4s input %8.1f MB  link %6.2f s (%6.0f MB RSS)  convert %6.2f s (%6.0f MB RSS)  end to end %6.1f MB/s\n' \
    "$s" "$(echo "$bytes/1000000" | bc -l)" "$link_s" "$((link_rss/1024))" "$conv_s" "$((conv_rss/1024))" "$mbps"
  rows+=("{\"scale\": $s, \"input_bytes\": $bytes, \"link_seconds\": $link_s, \"link_max_rss_kb\": $link_rss, \"convert_seconds\": $conv_s, \"convert_max_rss_kb\": $conv_rss, \"mb_per_s\": $(printf '%.2f' "$mbps")}")
  rm -rf "$work/s$s"
done
mkdir -p bench/results
{
  echo "{\"machine\": \"$(nproc) cores, $(free -g | awk '/Mem:/{print $2}') GiB\", \"threads\": 1, \"runs\": ["
  (IFS=$',\n'; echo "${rows[*]}")
  echo "]}"
} > bench/results/scaling.json
echo "wrote bench/results/scaling.json"
