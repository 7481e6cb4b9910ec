#!/usr/bin/env bash
# tools/test-summary.sh — sums the busted results that tools/busted-results.lua left behind.
#
#   tools/test-summary.sh [--suites-only] DIR SUITE...
#
# For each SUITE it reads DIR/SUITE.json and prints one line:
#   lua5.4    41 passed, 0 failed, 0 errors, 2 pending  (1.23 s)
# then, unless --suites-only, a last line with the totals:
#   41 passed, 0 failed
# where "failed" counts failures and errors.  A suite with no results file, one whose run did
# not finish (a crash), and one whose busted exited non-zero (DIR/SUITE.exit, written by the
# Makefile) although no test failed (e.g. LeakSanitizer's report at exit) each count as one
# more failure.  Exits 1 when anything failed.

set -u

suites_only=0
if [ "${1:-}" = "--suites-only" ]; then suites_only=1; shift; fi
if [ $# -lt 2 ]; then
  echo "usage: $0 [--suites-only] DIR SUITE..." >&2
  exit 2
fi
dir=$1; shift

# The first "key":value pair of that name: the counts come before the list of problems.
field() {
  grep -o "\"$2\":[a-z0-9.]*" "$1" | head -n 1 | cut -d: -f2
}

total_passed=0
total_failed=0
for suite in "$@"; do
  f=$dir/$suite.json
  if [ ! -s "$f" ]; then
    printf '%-9s no results: the run did not start (see the output above)\n' "$suite"
    total_failed=$((total_failed + 1))
    continue
  fi
  passed=$(field "$f" passed); failed=$(field "$f" failed)
  errors=$(field "$f" errors); pending=$(field "$f" pending)
  complete=$(field "$f" complete); duration=$(field "$f" duration)
  passed=${passed:-0}; failed=${failed:-0}; errors=${errors:-0}; pending=${pending:-0}
  note="(${duration:-0} s)"; crashed=0
  status=$(cat "$dir/$suite.exit" 2>/dev/null)
  if [ "$complete" != "true" ]; then
    note="DID NOT FINISH: crashed or was killed${status:+ (exit status $status)}; counted as one more failure"
    crashed=1
  elif [ -n "$status" ] && [ "$status" != 0 ] && [ $((failed + errors)) -eq 0 ]; then
    note="exited with status $status after the tests (a sanitizer report at exit?); counted as one more failure"
    crashed=1
  fi
  printf '%-9s %d passed, %d failed, %d errors, %d pending  %s\n' \
    "$suite" "$passed" "$failed" "$errors" "$pending" "$note"
  total_passed=$((total_passed + passed))
  total_failed=$((total_failed + failed + errors + crashed))
done

if [ $suites_only -eq 0 ]; then
  echo "$total_passed passed, $total_failed failed"
fi
[ $total_failed -eq 0 ]
