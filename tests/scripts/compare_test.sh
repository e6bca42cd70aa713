#!/usr/bin/env bash
# bench/compare.sh on a small generated rank: two builds timed in alternating rounds print their
# medians and paired differences; builds that write different .et bytes fail it; an argument that
# is not an executable, or a PAUSE that is not a number, is a usage error; PAUSE idles before each
# command; nothing is left in TMPDIR.
# Usage: tests/scripts/compare_test.sh CHAKRAFLOW_BINARY
source "$(dirname "$0")/script_test_setup.sh"

out=$(TMPDIR="$tmp/scratch" ROUNDS=2 "$here/bench/compare.sh" "$bin" "$bin" 0.3) ||
  fail "two copies of the same build: exit $?"
for want in "2 rounds" "link then convert" "MB/s" "paired B - A, link then convert: median" \
  "paired B - A, run: median"; do
  grep -qF "$want" <<<"$out" || fail "the report lacks '$want': $out"
done
[ "$(grep -c "^$bin: " <<<"$out")" = 2 ] || fail "not one line per build: $out"
grep -qF "back to back" <<<"$out" || fail "no word of the runs' state: $out"

# With a pause before each of the 12 commands (2 rounds of 3 per build), at least 12 pauses.
start=$(date +%s.%N)
out=$(TMPDIR="$tmp/scratch" ROUNDS=2 PAUSE=0.25 "$here/bench/compare.sh" "$bin" "$bin" 0.3) ||
  fail "with PAUSE: exit $?"
took=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN {print e - s}')
grep -qF "0.25 s of idle before each command" <<<"$out" || fail "no word of the pause: $out"
awk -v t="$took" 'BEGIN {exit !(t >= 3)}' || fail "12 pauses of 0.25 s took $took s in all"

# A "build" whose convert renumbers the process groups writes other .et bytes.
cat >"$tmp/other" <<WRAP
#!/bin/sh
if [ "\$1" = convert ]; then exec "$bin" "\$@" --renumber-groups; fi
exec "$bin" "\$@"
WRAP
chmod +x "$tmp/other"
if err=$(TMPDIR="$tmp/scratch" ROUNDS=2 "$here/bench/compare.sh" "$bin" "$tmp/other" 0.3 2>&1); then
  fail "builds that write different .et passed: $err"
fi
grep -qF "different .et" <<<"$err" || fail "no word of the different .et: $err"

set +e
TMPDIR="$tmp/scratch" "$here/bench/compare.sh" "$bin" "$tmp/missing" 0.3 2>/dev/null
rc=$?
TMPDIR="$tmp/scratch" PAUSE=soon "$here/bench/compare.sh" "$bin" "$bin" 0.3 2>/dev/null
rc_pause=$?
set -e
[ "$rc" = 2 ] || fail "a missing build: exit $rc, not 2"
[ "$rc_pause" = 2 ] || fail "PAUSE=soon: exit $rc_pause, not 2"
[ -z "$(ls -A "$tmp/scratch")" ] || fail "left behind in TMPDIR: $(ls -A "$tmp/scratch")"
echo "compare_test: ok"
