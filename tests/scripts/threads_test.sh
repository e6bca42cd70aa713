#!/usr/bin/env bash
# bench/threads.sh on a small generated rank: a line per command and thread count (the first
# count's speedup 1.00x), `run` of several ranks with RANKS, each command's profile at each count
# with PROFILE; a build whose output changes with the thread count fails it; a count that is not
# a positive number, or a BIN that is not an executable, is a usage error; nothing is left in
# TMPDIR.
# Usage: tests/scripts/threads_test.sh CHAKRAFLOW_BINARY
source "$(dirname "$0")/script_test_setup.sh"

out=$(TMPDIR="$tmp/scratch" THREADS="1 2" ROUNDS=2 RANKS=2 RANKS_SCALE=0.2 PROFILE="$tmp/profiles" \
  "$here/bench/threads.sh" "$bin" 0.3) || fail "exit $?"
grep -qF "and 2 ranks of --scale 0.2, 2 rounds" <<<"$out" || fail "no ranks or rounds: $out"
for c in link convert run ranks; do
  grep -Eq "^$c +1 +[0-9.]+ +1\.00x +[0-9.]+$" <<<"$out" || fail "no '$c' line at 1 thread: $out"
  grep -Eq "^$c +2 +[0-9.]+ +[0-9.]+x +[0-9.]+$" <<<"$out" || fail "no '$c' line at 2 threads: $out"
  for t in 1 2; do
    python3 -c 'import json, sys; assert json.load(open(sys.argv[1]))["traceEvents"]' \
      "$tmp/profiles/$c.$t.json" || fail "no profile of $c at $t threads"
  done
done
[ -z "$(ls -A "$tmp/scratch")" ] || fail "left in TMPDIR: $(ls -A "$tmp/scratch")"

# A "build" whose link at two threads is in Chakra's mode writes other ET+ bytes.
cat >"$tmp/other" <<WRAP
#!/bin/sh
if [ "\$1" = link ] && [ "\$3" = 2 ]; then exec "$bin" "\$@" --compat chakra; fi
exec "$bin" "\$@"
WRAP
chmod +x "$tmp/other"
if err=$(TMPDIR="$tmp/scratch" THREADS="1 2" ROUNDS=1 "$here/bench/threads.sh" "$tmp/other" 0.3 2>&1); then
  fail "a build whose bytes change with the threads passed: $err"
fi
grep -qF "link at 2 threads wrote other ET+ bytes" <<<"$err" || fail "not named: $err"

for bad in "THREADS=0" "THREADS=two" "ROUNDS=0"; do
  if env "$bad" "$here/bench/threads.sh" "$bin" 0.3 >/dev/null 2>&1; then fail "$bad passed"; fi
done
set +e
"$here/bench/threads.sh" "$tmp/missing" >/dev/null 2>&1
[ $? = 2 ] || fail "a missing BIN is not a usage error"
set -e
echo "threads_test: ok"
