#!/usr/bin/env bash
# One generated rank at several thread counts: `link` (to a new ET+), `convert` of the ET+ the
# first count wrote, and `run` (link and convert in one process), each at every count of THREADS,
# in ROUNDS rounds whose order of counts reverses every round (a fixed order favours the count
# run after another; docs/performance.md, fourteenth steps of #34). Prints, per command and count,
# the median wall seconds, the speedup over the first count and the median CPU seconds (user +
# sys); fails when a count writes other bytes than the first (the ET+, both .et). RANKS=N (N > 1)
# also generates N ranks of RANKS_SCALE (default 5: 16 of them are the 780 MB set of #34) and
# times `run` of all of them at each count.
# PROFILE=DIR writes each command's --profile at each count in the last round to DIR
# (bench/profile.py prints one). The table that docs/performance.md keeps for issue #34 is this
# script's, on a machine with 16 cores.
# Usage: bench/threads.sh BIN [SCALE]   (SCALE: `synth --scale`, default 15, the 147 MB rank;
# THREADS="1 2 4 8 16" and ROUNDS=5 by default; counts past the machine's CPUs are run as given)
set -euo pipefail
[ $# -ge 1 ] || { sed -n '2,14p' "$0" >&2; exit 2; }
bin=$1 scale=${2:-15}
rounds=${ROUNDS:-5}
read -r -a counts <<<"${THREADS:-1 2 4 8 16}"
ranks=${RANKS:-1}
profile=${PROFILE:-}
[ -x "$bin" ] || { echo "threads.sh: not an executable: $bin" >&2; exit 2; }
for n in "${counts[@]}" "$rounds" "$ranks"; do
  [[ "$n" =~ ^[1-9][0-9]*$ ]] || { echo "threads.sh: not a positive count: $n" >&2; exit 2; }
done
[ ${#counts[@]} -ge 1 ] || { echo "threads.sh: THREADS is empty" >&2; exit 2; }
[ -z "$profile" ] || mkdir -p "$profile"
work=$(mktemp -d "${TMPDIR:-/tmp}/chakraflow_threads.XXXXXX")
trap 'rm -rf "$work"' EXIT
"$bin" synth --ranks 1 --iterations 2 --scale "$scale" --out "$work/one" >/dev/null 2>&1
host="$work/one/rank0/host_et.json"
dev="$work/one/rank0/kineto.json"
mb=$(awk -v b=$(($(stat -c %s "$host") + $(stat -c %s "$dev"))) 'BEGIN {printf "%.1f", b / 1e6}')
commands=(link convert run)
if [ "$ranks" -gt 1 ]; then
  "$bin" synth --ranks "$ranks" --iterations 2 --scale "${RANKS_SCALE:-5}" --out "$work/many" \
    >/dev/null 2>&1
  commands+=(ranks)
fi
for t in "${counts[@]}"; do
  for set in one many; do
    [ -d "$work/$set" ] || continue
    printf 'inputs:\n  host: %s\n  device: %s\nstages: [link, convert]\noutputs:\n  dir: %s\nrun:\n  threads: %s\n' \
      "$work/$set/rank{rank}/host_et.json" "$work/$set/rank{rank}/kineto.json" \
      "$work/out_${set}_$t" "$t" >"$work/${set}_$t.yaml"
  done
done
sync

# timed NAME CMD...: runs CMD, appends "wall cpu" (seconds) to $work/times.NAME.
timed() {
  local name=$1 t0 t1 out
  shift
  t0=$(date +%s%N)
  if ! out=$("$@" >/dev/null 2>"$work/err" && times); then
    cat "$work/err" >&2
    exit 1
  fi
  t1=$(date +%s%N)
  echo "$out" | tail -1 | awk -v w="$(((t1 - t0) / 1000))" '
    function s(x, p) { sub(/s$/, "", x); split(x, p, "m"); return p[1] * 60 + p[2] }
    {printf "%.6f %.3f\n", w / 1e6, s($1) + s($2)}' >>"$work/times.$name"
}

first=${counts[0]}
for ((round = 1; round <= rounds; ++round)); do
  order=("${counts[@]}")
  if ((round % 2 == 0)); then
    order=()
    for ((k = ${#counts[@]} - 1; k >= 0; --k)); do order+=("${counts[k]}"); done
  fi
  for t in "${order[@]}"; do
    prof=()
    for c in "${commands[@]}"; do
      [ -n "$profile" ] && [ "$round" = "$rounds" ] && prof=(--profile "$profile/$c.$t.json")
      case $c in
        link)
          rm -f "$work/et_plus_$t.json"
          timed "link.$t" "$bin" link --threads "$t" --log-level ERROR --host "$host" --device "$dev" \
            --output "$work/et_plus_$t.json" "${prof[@]}" ;;
        convert)
          [ -f "$work/et_plus_$first.json" ] || continue  # the first count's link is yet to come
          rm -f "$work/convert_$t.et"
          timed "convert.$t" "$bin" convert --threads "$t" --quiet --input "$work/et_plus_$first.json" \
            --output "$work/convert_$t.et" "${prof[@]}" ;;
        run)
          rm -rf "$work/out_one_$t"
          timed "run.$t" "$bin" run --quiet "$work/one_$t.yaml" "${prof[@]}" ;;
        ranks)
          rm -rf "$work/out_many_$t"
          timed "ranks.$t" "$bin" run --quiet "$work/many_$t.yaml" "${prof[@]}" ;;
      esac
    done
  done
done

# The same bytes at every count as at the first.
for t in "${counts[@]}"; do
  cmp -s "$work/et_plus_$t.json" "$work/et_plus_$first.json" ||
    { echo "threads.sh: link at $t threads wrote other ET+ bytes than at $first" >&2; exit 1; }
  [ ! -f "$work/convert_$t.et" ] || cmp -s "$work/convert_$t.et" "$work/convert_$first.et" ||
    { echo "threads.sh: convert at $t threads wrote other .et bytes than at $first" >&2; exit 1; }
  for set in one many; do
    [ -d "$work/out_${set}_$t" ] || continue
    for f in "$work/out_${set}_$first"/*.et; do
      cmp -s "$f" "$work/out_${set}_$t/$(basename "$f")" ||
        { echo "threads.sh: run at $t threads wrote other bytes in $(basename "$f")" >&2; exit 1; }
    done
  done
done

median() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
many=""
[ "$ranks" -gt 1 ] && many=", and $ranks ranks of --scale ${RANKS_SCALE:-5}"
echo "$bin: one rank of $mb MB (synth --scale $scale)$many, $rounds rounds, $(nproc) CPUs"
printf '%-8s %8s %10s %8s %8s\n' command threads "wall s" speedup "CPU s"
for c in "${commands[@]}"; do
  base=""
  for t in "${counts[@]}"; do
    [ -f "$work/times.$c.$t" ] || continue
    wall=$(cut -d' ' -f1 "$work/times.$c.$t" | median)
    cpu=$(cut -d' ' -f2 "$work/times.$c.$t" | median)
    [ -n "$base" ] || base=$wall
    printf '%-8s %8s %10.3f %7.2fx %8.3f\n' "$c" "$t" "$wall" "$(awk -v a="$base" -v b="$wall" 'BEGIN {print a / b}')" "$cpu"
  done
done
[ -z "$profile" ] || echo "profiles of the last round: $profile (bench/profile.py FILE)"
