#!/usr/bin/env bash
# Two builds of chakraflow side by side on one generated rank: `link` then `convert` (the two-tool
# path) and `run`, the CPU seconds (user + sys) of each, in rounds whose order swaps every round
# (A B, then B A, ...). On a shared VM the first command of a round pays for what the one before
# it left, so a fixed order favours the second build (docs/performance.md, fourteenth steps of
# #34). Prints each build's median and lower quartile, in CPU seconds and MB of input per
# CPU-second, and the median of the paired differences (B - A) with the rounds B won; fails when
# the two builds write different .et bytes.
# Usage: bench/compare.sh BIN_A BIN_B [SCALE]   (SCALE: `synth --scale`, default 15, the 147 MB
# rank of #34; ROUNDS=12 and THREADS=1 by default). Outputs are new in every round. PAUSE=S idles
# S seconds before each command: on a VM whose host takes free memory back, a command after a
# pause finds its fresh memory cold, one run back to back warm (docs/performance.md, fifteenth
# steps); the default 0 measures the warm state.
set -euo pipefail
[ $# -ge 2 ] || { sed -n '2,13p' "$0" >&2; exit 2; }
a=$1 b=$2 scale=${3:-15}
rounds=${ROUNDS:-12}
threads=${THREADS:-1}
pause=${PAUSE:-0}
if ! [[ "$pause" =~ ^[0-9]+([.][0-9]+)?$ ]]; then
  echo "compare.sh: PAUSE is not a number of seconds: $pause" >&2
  exit 2
fi
for bin in "$a" "$b"; do
  [ -x "$bin" ] || { echo "compare.sh: not an executable: $bin" >&2; exit 2; }
done
work=$(mktemp -d "${TMPDIR:-/tmp}/chakraflow_compare.XXXXXX")
trap 'rm -rf "$work"' EXIT
"$a" synth --ranks 1 --iterations 2 --scale "$scale" --out "$work/in" >/dev/null 2>&1
host="$work/in/rank0/host_et.json"
dev="$work/in/rank0/kineto.json"
bytes=$(($(stat -c %s "$host") + $(stat -c %s "$dev")))
for v in a b; do
  printf 'inputs:\n  host: %s\n  device: %s\n  ranks: [0]\nstages: [link, convert]\noutputs:\n  dir: %s\nrun:\n  threads: %s\n' \
    "$work/in/rank{rank}/host_et.json" "$work/in/rank{rank}/kineto.json" "$work/run_$v" \
    "$threads" >"$work/run_$v.yaml"
done
sync

cpu() {  # cpu CMD...: runs CMD (after PAUSE), prints its user + system seconds (`times`: ms)
  local t
  [ "$pause" = 0 ] || sleep "$pause"
  if ! t=$("$@" >/dev/null 2>"$work/err" && times); then
    cat "$work/err" >&2
    exit 1
  fi
  echo "$t" | tail -1 | awk 'function s(x, p) { sub(/s$/, "", x); split(x, p, "m"); return p[1] * 60 + p[2] }
    {printf "%.3f", s($1) + s($2)}'
}

measure() {  # measure a|b ROUND: one round of a build, appended to $work/times.<a|b>
  local v=$1 round=$2 bin
  [ "$v" = a ] && bin=$a || bin=$b
  rm -rf "$work/$v.json" "$work/$v.et" "$work/run_$v"
  local link conv run
  link=$(cpu "$bin" link --threads "$threads" --log-level ERROR --host "$host" --device "$dev" \
    --output "$work/$v.json")
  conv=$(cpu "$bin" convert --threads "$threads" --quiet --input "$work/$v.json" \
    --output "$work/$v.et")
  run=$(cpu "$bin" run --quiet "$work/run_$v.yaml")
  echo "$round $link $conv $run" >>"$work/times.$v"
}

for ((r = 0; r < rounds; ++r)); do
  if ((r % 2 == 0)); then measure a "$r"; measure b "$r"; else measure b "$r"; measure a "$r"; fi
done
cmp -s "$work/a.et" "$work/b.et" || { echo "compare.sh: the two builds wrote different .et" >&2; exit 1; }

# stat_of FILE EXPR Q: the Q-quantile (0.25, 0.5; the lower of two middles) over the rounds of
# EXPR, an awk expression of a file's columns (times: $2 link, $3 convert, $4 run; diff: $1, $2).
stat_of() {
  local file=$1 expr=$2 q=$3
  awk "{print $expr}" "$file" | sort -g |
    awk -v q="$q" '{x[NR] = $1} END {i = int((NR - 1) * q) + 1; print x[i]}'
}
mbps() { awk -v b="$bytes" -v s="$1" 'BEGIN {printf "%.0f", b / 1e6 / s}'; }

idle="back to back"
[ "$pause" = 0 ] || idle="$pause s of idle before each command"
echo "rank: $((bytes / 1000000)) MB of JSON (synth --scale $scale), $rounds rounds, $threads thread(s), $idle, CPU s"
for v in a b; do
  [ "$v" = a ] && name=$a || name=$b
  two=$(stat_of "$work/times.$v" '$2 + $3' 0.5)
  two_q=$(stat_of "$work/times.$v" '$2 + $3' 0.25)
  printf '%s: link then convert %s s median (lower quartile %s): %s MB/s; link %s, convert %s; run %s: %s MB/s\n' \
    "$name" "$two" "$two_q" "$(mbps "$two")" "$(stat_of "$work/times.$v" '$2' 0.5)" \
    "$(stat_of "$work/times.$v" '$3' 0.5)" "$(stat_of "$work/times.$v" '$4' 0.5)" \
    "$(mbps "$(stat_of "$work/times.$v" '$4' 0.5)")"
done
sort -n "$work/times.a" >"$work/sa"
sort -n "$work/times.b" >"$work/sb"
paste -d' ' "$work/sa" "$work/sb" | awk '{print ($6 + $7) - ($2 + $3), $8 - $4}' >"$work/diff"
for col in 1 2; do
  [ "$col" = 1 ] && what="link then convert" || what="run"
  med=$(stat_of "$work/diff" "\$$col" 0.5)
  won=$(awk "\$$col < 0" "$work/diff" | wc -l)
  printf 'paired B - A, %s: median %+.1f ms, B faster in %d of %d rounds\n' "$what" \
    "$(awk -v m="$med" 'BEGIN {print m * 1000}')" "$won" "$rounds"
done
