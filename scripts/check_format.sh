#!/usr/bin/env bash
# Checks that every C++ source of the project is formatted as .clang-format says (Debian's
# clang-format 14), naming each file that is not; exit 1 if any. CI runs it (scripts/test.sh).
# `scripts/check_format.sh --fix` formats them in place instead.
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(git ls-files '*.cc' '*.h' | grep -v '^tests/bad_inputs/')
if [ "${1:-}" = "--fix" ]; then
  clang-format -i "${files[@]}"
  exit 0
fi
# One process for every file; each finding starts with "FILE:LINE:COL: error:".
mapfile -t bad < <(clang-format --dry-run -Werror "${files[@]}" 2>&1 |
                   sed -n 's/^\([^:]*\):[0-9]*:[0-9]*: error: .*/\1/p' | sort -u)
if [ ${#bad[@]} -gt 0 ]; then
  echo "check_format: ${#bad[@]} file(s) not formatted as .clang-format says (scripts/check_format.sh --fix):"
  printf '  %s\n' "${bad[@]}"
  exit 1
fi
echo "check_format: ${#files[@]} files formatted"
