#!/usr/bin/env bash
# Writes the seed corpus of each libFuzzer target named into OUT/<target>/ (emptied first): the
# small inputs (<= 1 MB) of its format from DATA (../shared/data; skipped when absent), configs/
# and tests/bad_inputs/ (the bad-input corpus, fuzz findings included). Used by scripts/fuzz.sh
# (the seeds of a long run) and by the ctest fixture fuzz_seeds (tests/fuzz/CMakeLists.txt: each
# target run once over its seeds in CI), so that both see the same seeds. Fails when a target has
# no rule here or gets no seed: a new target needs its seeds written down.
# Usage: scripts/fuzz_seeds.sh OUT DATA TARGET...
set -euo pipefail
[ $# -ge 3 ] || { echo "usage: $0 OUT DATA TARGET..." >&2; exit 2; }
out=$1 data=$2
shift 2
root="$(cd "$(dirname "$0")/.." && pwd)"
bad="$root/tests/bad_inputs"

seed_name() {  # seed_name TARGET FILE: where FILE's copy goes, named by its path under DATA or the repo
  local rel=${2#"$data"/}
  rel=${rel#"$root"/}
  echo "$out/$1/$(echo "$rel" | tr '/' '_')"
}
seed() {  # seed TARGET FILES...: decompressed copies of the small inputs
  local t=$1 f name
  shift
  for f in "$@"; do
    [ -f "$f" ] || continue
    name=$(seed_name "$t" "$f")
    zcat -f "$f" > "$name" 2>/dev/null || true  # a truncated .gz gives what it has
    [ "$(stat -c %s "$name")" -le 1048576 ] || rm -f "$name"
  done
}
seed_raw() {  # seed_raw TARGET FILES...: the small inputs as they are (gzip'd ones stay gzip'd)
  local t=$1 f
  shift
  for f in "$@"; do
    [ -f "$f" ] && [ "$(stat -c %s "$f")" -le 1048576 ] || continue
    cp "$f" "$(seed_name "$t" "$f")"
  done
}

for t in "$@"; do
  rm -rf "${out:?}/$t"
  mkdir -p "$out/$t"
  case "$t" in
    fuzz_host_et)
      seed "$t" "$data"/pairs/simple_add/host_et.json.gz "$data"/host_et/allgather_1.0.2/host_et.json.gz \
        "$bad"/host_et/* ;;
    fuzz_device_trace)
      seed "$t" "$data"/pairs/simple_add/kineto.modern.json.gz "$data"/kineto/hta_sync_small/*.json.gz \
        "$data"/kineto/hta_amd_mi250_rocm/*.json.gz "$data"/kineto/hta_cpu_only/*.json.gz \
        "$bad"/device_trace/* ;;
    fuzz_link_pair)
      # The input is host ET, a NUL byte, device trace.
      if [ -f "$data"/pairs/simple_add/host_et.json.gz ]; then
        { zcat "$data"/pairs/simple_add/host_et.json.gz; printf '\0'
          zcat "$data"/pairs/simple_add/kineto.modern.json.gz; } > "$out/$t/simple_add"
      fi
      seed_raw "$t" "$bad"/link_pair/* ;;
    fuzz_et_reader | fuzz_compat_feeder)
      # Chakra .et traces: the 8-rank microbenchmarks and Chakra's converter output for small host ETs.
      seed_raw "$t" "$data"/chakra_et/*/*/*.et "$data"/chakra_et/*/*.et \
        "$data"/host_et/*/reference/chakra.et "$bad"/et/* ;;
    fuzz_converter)
      # ET+ (both linkers' references) and plain host ETs: the converter takes either.
      seed "$t" "$data"/pairs/*/reference/et_plus.*.json.gz "$data"/pairs/simple_add/host_et.json.gz \
        "$data"/host_et/allgather_1.0.2/host_et.json.gz "$data"/host_et/pt2_compile_1.1.1/host_et.json.gz \
        "$bad"/et_plus/* "$bad"/host_et/* ;;
    fuzz_run_config)
      seed "$t" "$root"/configs/*.yaml "$bad"/yaml/* ;;
    *)
      echo "$0: no seeds for $t: add its inputs here" >&2
      exit 1 ;;
  esac
  [ -n "$(ls -A "$out/$t")" ] || { echo "$0: no seed found for $t" >&2; exit 1; }
done
