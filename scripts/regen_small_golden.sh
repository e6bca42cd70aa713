#!/usr/bin/env bash
# Regenerates tests/golden/small/: a 2-rank trace set made by `chakraflow synth` (kept in the
# repository, so that the expectations do not move with the generator) and what each verb gives
# on it. Run it after a change that is meant to change an output, then review `git diff`.
#   bash scripts/regen_small_golden.sh [--inputs]     (--inputs: also remake the input traces)
# Uses build/chakraflow (CHAKRAFLOW=path to override).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${CHAKRAFLOW:-build/chakraflow}
dir=tests/golden/small
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [ "${1:-}" = "--inputs" ]; then
  "$bin" synth --out "$tmp/synth" --ranks 2 --iterations 1 --scale 0.002 --seed 1 >/dev/null
  for r in 0 1; do
    mkdir -p "$dir/rank$r"
    cp "$tmp/synth/rank$r/host_et.json" "$tmp/synth/rank$r/kineto.json" "$dir/rank$r/"
  done
fi
mkdir -p "$dir/expected"
for r in 0 1; do
  "$bin" link --host "$dir/rank$r/host_et.json" --device "$dir/rank$r/kineto.json" \
    --output-file "$dir/expected/et_plus.$r.json" --rank "$r" >/dev/null 2>&1
  "$bin" link --host "$dir/rank$r/host_et.json" --device "$dir/rank$r/kineto.json" \
    --output-file "$dir/expected/et_plus.chakra.$r.json" --rank "$r" --compat chakra >/dev/null 2>&1
  "$bin" convert --input "$dir/expected/et_plus.$r.json" --output "$tmp/trace.$r.et" --quiet
  "$bin" jsonize --input "$tmp/trace.$r.et" --output "$dir/expected/trace.$r.json" --quiet
done
# The test runs these from the folder of the traces: the names in the outputs are relative.
(cd "$tmp" && "$OLDPWD/$bin" feed trace.0.et trace.1.et --quiet | grep '^rank ' > feed.txt)
cp "$tmp/feed.txt" "$dir/expected/feed.txt"
(cd "$tmp" && "$OLDPWD/$bin" simulate --traces 'trace.{rank}.et' --ranks 2 \
   --report-json simulation.json >/dev/null)
cp "$tmp/simulation.json" "$dir/expected/simulation.json"
echo "regenerated $dir/expected/ (review with git diff)"
