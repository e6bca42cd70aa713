#!/usr/bin/env bash
# bench/profile.py on the profile `chakraflow run --profile` writes for a small generated rank:
# a line per stage span of the rank graph (with its rank), the command's line first, the busy
# figure where a stage handed batches to the workers; --min-ms leaves out short spans; --busy adds
# the time at each count of busy threads; a file that is not a profile fails.
# Usage: tests/scripts/profile_test.sh CHAKRAFLOW_BINARY
source "$(dirname "$0")/script_test_setup.sh"

"$bin" synth --ranks 1 --scale 0.3 --out "$tmp/t" 2>/dev/null
printf 'inputs:\n  host: t/rank{rank}/host_et.json\n  device: t/rank{rank}/kineto.json\nstages: [link, convert]\noutputs: {dir: out}\nrun: {threads: 2}\n' >"$tmp/run.yaml"
"$bin" run --quiet "$tmp/run.yaml" --profile "$tmp/profile.json" >/dev/null ||
  fail "run --profile: exit $?"
out=$(python3 "$here/bench/profile.py" "$tmp/profile.json" --min-ms 0) || fail "exit $?"
head -1 <<<"$out" | grep -qF "chakraflow run --quiet $tmp/run.yaml" || fail "no command line first: $out"
for stage in "load host trace (rank 0)" "load device trace (rank 0)" "assign ids (rank 0)" \
  "select nodes (rank 0)" "write .et (rank 0)"; do
  grep -qF " $stage" <<<"$out" || fail "no line for '$stage': $out"
done
grep -Eq '^ +0\.0 +[0-9.]+ +[0-9.]+ +main +run$' <<<"$out" || fail "the command's span: $out"
# write .et encodes its batches on the workers: its busy figure is shown.
grep -Eq ' [0-9]+\.[0-9] +(main|worker [0-9]+) +write \.et \(rank 0\)' <<<"$out" ||
  fail "no busy figure for write .et: $out"
# --busy: the time at each count of busy threads (two at most here) adds up to the command's
# length, and the single-thread time is put on spans.
busy=$(python3 "$here/bench/profile.py" "$tmp/profile.json" --min-ms 1e9 --busy) || fail "--busy: exit $?"
counts=$(grep '^threads busy: ' <<<"$busy") || fail "--busy: no counts: $busy"
python3 - "$counts" "$tmp/profile.json" <<'PY' || fail "--busy: counts do not add up: $counts"
import json, re, sys
parts = dict((int(k), float(v)) for k, v in re.findall(r"(\d+): ([0-9.]+) ms", sys.argv[1]))
doc = json.load(open(sys.argv[2]))
run = max((e for e in doc["traceEvents"] if e.get("name") == "run"), key=lambda e: e["dur"])
assert parts and max(parts) <= 2, parts
assert abs(sum(parts.values()) - run["dur"] / 1000) < 0.1 * len(parts) + 0.1, (parts, run["dur"])
PY
grep -q '^one thread busy, by the innermost span open on it:$' <<<"$busy" || fail "--busy: $busy"
# Every span is at least 0 ms long: with a threshold above the run's length, only the header.
few=$(python3 "$here/bench/profile.py" "$tmp/profile.json" --min-ms 1e9)
[ "$(wc -l <<<"$few")" = 2 ] || fail "--min-ms 1e9 kept spans: $few"
echo '{"not": "a profile"}' >"$tmp/bad.json"
if python3 "$here/bench/profile.py" "$tmp/bad.json" >/dev/null 2>&1; then
  fail "a file without traceEvents passed"
fi
echo "profile_test: ok"
