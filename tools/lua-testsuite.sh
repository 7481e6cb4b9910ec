#!/usr/bin/env bash
# tools/lua-testsuite.sh DIR — runs Lua's own test suite plainly and under cprof.auto, and
# prints one line per variant: passed, or failed with the first error.
#
# DIR is a checkout of Lua's test suite: the folder with all.lua (lua-5.4.x-tests, or the
# testes/ folder of github.com/lua/lua at the tag of the interpreter's version); nothing is
# downloaded.  The suite writes files in its folder, so it runs in a copy under a temporary
# folder (removed at the end).  It is cprof's check that real programs "observe no difference
# but the files it writes": every variant must pass where the plain run passes.
#
#   plain        the interpreter alone
#   quiet        -l cprof.auto, CPROF_QUIET=1
#   memory       ... CPROF_MEMORY=1 (cprof's allocator; Lua 5.4 only)
#   lines        ... CPROF_LINES=1
#   out          ... CPROF_OUT=FILE CPROF_TRACE=1, the dump checked with cprof-stats --verify
#   live         ... CPROF_INTERVAL=0.2 CPROF_RESET=1 CPROF_OUT=live.%n.prof: dumps while it
#                runs, each checked, and no word from cprof on stderr
#   asan         ... CPROF_QUIET=1 CPROF_MEMORY=1 with the sanitized build (make asan builds
#                build/asan/; lua5.4 only): any report of AddressSanitizer or UBSan fails it
#   valgrind     ... CPROF_QUIET=1 under valgrind's memcheck (slow: ARGS="_U=true")
# asan and valgrind run only when named in VARIANTS.
#
# One check of errors.lua ("too many results" from table.unpack just below the stack limit) fails
# under any return hook, cprof's or debug.sethook(f, "r")'s (docs/SEMANTICS.md): it is commented
# out in the copy, and a line says so.
#
# Settings (environment): LUA (default lua5.4), ARGS (the suite's globals, default
# "_port=true; _nomsg=true"; "_U=true" is shorter), VARIANTS (a space-separated subset of the
# above), TIMEOUT (seconds per variant, default 1800: a hang is a failure).  cprof comes from
# this checkout when it is built (make, make LUA=luajit), else from Lua's default paths.
# Exit status: 0 when every variant passed, 1 when one failed, 2 for a bad command line.

set -uo pipefail

usage() {
  echo "usage: tools/lua-testsuite.sh DIR   (DIR: Lua's test suite, the folder with all.lua)" >&2
  exit 2
}
[ $# -eq 1 ] || usage
case $1 in -h | --help) usage ;; esac
src=$1
[ -f "$src/all.lua" ] || [ ! -f "$src/testes/all.lua" ] || src=$src/testes
if [ ! -f "$src/all.lua" ]; then
  echo "lua-testsuite.sh: $1: no all.lua there (give the folder of Lua's test suite)" >&2
  exit 2
fi

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
lua=${LUA:-lua5.4}
suite_args=${ARGS:-_port=true; _nomsg=true}
variants=${VARIANTS:-plain quiet memory lines out live}
timeout=${TIMEOUT:-1800}
command -v "$lua" >/dev/null || { echo "lua-testsuite.sh: LUA=$lua: not found" >&2; exit 2; }
case $lua in *jit*) build=luajit ;; *) build=lua5.4 ;; esac

# This checkout's modules, C module and cprof-stats when it is built; the _5_4 variables would
# be preferred over these by lua5.4.
in_checkout() {
  env_cprof=(env -u LUA_PATH_5_4 -u LUA_CPATH_5_4
             "LUA_PATH=$root/lua/?.lua;$root/lua/?/init.lua;;" "LUA_CPATH=$root/build/$1/?.so;;")
}
env_cprof=()
stats=(cprof-stats)
if [ -f "$root/build/$build/cprof/core.so" ]; then
  in_checkout "$build"
  stats=("$lua" "$root/bin/cprof-stats")
fi
plain_env=("${env_cprof[@]}")
for v in $variants; do
  case $v in
    plain | quiet | memory | lines | out | live | valgrind) ;;
    asan)
      if [ "$build" != lua5.4 ] || [ ! -f "$root/build/asan/cprof/core.so" ]; then
        echo "lua-testsuite.sh: VARIANTS: asan needs LUA=lua5.4 and make asan's build/asan/" >&2
        exit 2
      fi ;;
    *) echo "lua-testsuite.sh: VARIANTS: unknown variant '$v'" >&2; exit 2 ;;
  esac
done

work=$(mktemp -d "${TMPDIR:-/tmp}/lua-testsuite.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT

# The first line that says what went wrong: an interpreter's error, a failed assertion, a
# sanitizer's report, cprof's own word; else the last line.
first_error() {
  local line
  line=$(grep -m1 -E "^$lua: |^[^ ]+\.lua:[0-9]+: |assertion failed|ERROR: |runtime error|^==[0-9]+== [A-Z]|^cprof" "$1")
  [ -n "$line" ] || line=$(grep -v '^\s*$' "$1" | tail -n 1)
  printf '%s' "${line:0:200}"
}

failed=0
for v in $variants; do
  env_v=()
  run=()
  env_cprof=("${plain_env[@]}")
  case $v in
    plain) ;;
    quiet) env_v=(CPROF_QUIET=1) ;;
    memory) env_v=(CPROF_QUIET=1 CPROF_MEMORY=1) ;;
    lines) env_v=(CPROF_QUIET=1 CPROF_LINES=1) ;;
    out) env_v=(CPROF_OUT=$work/out.prof CPROF_TRACE=1) ;;
    live) env_v=(CPROF_QUIET=1 CPROF_INTERVAL=0.2 CPROF_RESET=1 "CPROF_OUT=$work/live.%n.prof") ;;
    asan)
      # lua5.4 itself is not instrumented: the sanitizers' runtimes are preloaded (Makefile).
      in_checkout asan
      env_v=(CPROF_QUIET=1 CPROF_MEMORY=1
             "LD_PRELOAD=$(gcc -print-file-name=libasan.so) $(gcc -print-file-name=libubsan.so)"
             ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
             UBSAN_OPTIONS=halt_on_error=1:abort_on_error=1:print_stacktrace=1) ;;
    valgrind)
      env_v=(CPROF_QUIET=1)
      run=(valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite) ;;
  esac
  if [ "$v" = memory ] && [ "$build" = luajit ]; then
    echo "$v: skipped (cprof's allocator is Lua 5.4's only)"
    continue
  fi
  rm -rf "$work/suite" "$work"/*.prof
  cp -R "$src" "$work/suite"
  if [ "$v" != plain ] && grep -q 'checkerr("too many results", f)' "$work/suite/errors.lua" 2>/dev/null; then
    sed -i 's/^\( *\)checkerr("too many results", f)/\1-- &/' "$work/suite/errors.lua"
    note=" (errors.lua's 'too many results' check left out: docs/SEMANTICS.md)"
  else
    note=""
  fi
  flags=()
  [ "$v" = plain ] || flags=(-l cprof.auto)
  log=$work/$v.log
  start=$SECONDS
  (cd "$work/suite" && timeout "$timeout" "${env_cprof[@]}" env "${env_v[@]}" \
     "${run[@]}" "$lua" "${flags[@]}" -e "$suite_args" all.lua) >"$log" 2>&1
  status=$?
  took=$((SECONDS - start))
  why=""
  if [ $status -eq 124 ]; then
    why="timed out after $timeout s"
  elif [ $status -ne 0 ]; then
    why="exit status $status: $(first_error "$log")"
  elif ! grep -q '^final OK' "$log"; then
    why="no 'final OK': $(first_error "$log")"
  elif [ "$v" = out ] || [ "$v" = live ]; then
    dumps=("$work"/*.prof)
    if [ ! -f "${dumps[0]}" ]; then
      why="no dump written"
    elif ! "${env_cprof[@]}" "${stats[@]}" --verify "${dumps[@]}" >"$work/verify" 2>&1; then
      why="a dump does not verify: $(grep -m1 -v ': ok (' "$work/verify")"
    elif grep -q '^cprof: ' "$log"; then
      why="cprof said: $(grep -m1 '^cprof: ' "$log")"
    else
      note="$note, ${#dumps[@]} dump(s) verified"
    fi
  fi
  if [ -n "$why" ]; then
    echo "$v: failed ($took s): $why"
    failed=1
  else
    echo "$v: passed ($took s)$note"
  fi
done
exit $failed
