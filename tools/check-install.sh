#!/usr/bin/env bash
# tools/check-install.sh — checks that cprof installs, both ways, with the expected layout.
# `make test` runs it (through `make check-install`); it can also be run by hand from anywhere.
#
#  1. rockspec/cprof-scm-1.rockspec lists every lua/cprof/*.lua, every src/**/*.c and every bin/*.
#  2. `luarocks make` (lua 5.4) into a scratch tree installs the Lua modules under
#     share/lua/5.4/cprof/ and core.so under lib/lua/5.4/cprof/.  luarocks' builtin backend
#     writes its objects next to the sources, so it runs in a copy of the sources.
#  3. `make install PREFIX=...` (and with DESTDIR=..., and with LUA=luajit when luajit is
#     installed) gives the layout README.md promises.
#  After each install, `lua5.4 -l cprof.auto -e 'local x = 1'` must work with LUA_PATH and
#  LUA_CPATH pointing at that tree, and the modules must come from that tree.
#
# Everything is written under build/check-install/.  Exit status 1 when any check failed.

set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
root=$PWD
make=${MAKE:-make}
rockspec=rockspec/cprof-scm-1.rockspec
work=$root/build/check-install
rm -rf "$work"
mkdir -p "$work"

failures=0
ok()   { echo "  ok    $*"; }
bad()  { echo "  FAIL  $*"; failures=$((failures + 1)); }
show() { tail -n 40 "$1" | sed 's/^/        | /'; }

# What must be installed.
expected_lua=$(cd lua && find cprof -name '*.lua' | LC_ALL=C sort)
expected_bin=$( [ -d bin ] && cd bin && find . -maxdepth 1 -type f | sed 's|^\./||' | LC_ALL=C sort)

# same_list WHAT EXPECTED GOT
same_list() {
  if [ "$2" = "$3" ]; then
    ok "$1"
  else
    bad "$1 differ (< expected, > installed):"
    diff <(printf '%s\n' "$2") <(printf '%s\n' "$3") | grep '^[<>]' | sed 's/^/        /'
  fi
}

# smoke LABEL INTERPRETER LUADIR LIBDIR: cprof.auto runs, and cprof comes from that tree.
smoke() {
  local label=$1 interp=$2 luadir=$3 libdir=$4 log
  log=$work/smoke-$label.log
  local -a envv=(env -u LUA_PATH_5_4 -u LUA_CPATH_5_4
                 "LUA_PATH=$luadir/?.lua;$luadir/?/init.lua;;" "LUA_CPATH=$libdir/?.so;;")
  if (cd "$work" && "${envv[@]}" "$interp" -l cprof.auto -e 'local x = 1') > "$log" 2>&1; then
    ok "$label: $interp -l cprof.auto -e 'local x = 1'"
  else
    bad "$label: $interp -l cprof.auto -e 'local x = 1' failed:"
    show "$log"
  fi
  local where
  where=$(cd "$work" && "${envv[@]}" "$interp" -e '
    for _, m in ipairs{{"cprof", package.path}, {"cprof.auto", package.path},
                       {"cprof.core", package.cpath}} do
      print(m[1] .. " " .. tostring(package.searchpath(m[1], m[2])))
    end' 2>&1)
  local line name file all=1
  while read -r name file; do
    case "$file" in
      "$luadir"/*|"$libdir"/*) ;;
      *) all=0; bad "$label: $name resolves to $file, not into the installed tree" ;;
    esac
  done <<< "$where"
  [ $all -eq 1 ] && ok "$label: cprof, cprof.auto and cprof.core resolve into the installed tree"
}

# ---------------------------------------------------------------------------------------------
echo "==> check-install: $rockspec lists every module and script"

if lua5.4 - "$rockspec" > "$work/rockspec.txt" 2> "$work/rockspec.err" <<'EOF'
local env = {}
local chunk = assert(loadfile(arg[1], "t", env))
chunk()
assert(env.package == "cprof", "package must be cprof")
assert(env.build and env.build.type == "builtin", "build.type must be builtin")
for name, m in pairs(env.build.modules or {}) do
  if type(m) == "string" then
    print("lua " .. name .. " " .. m)
  else
    for _, src in ipairs(m.sources or {}) do print("c " .. name .. " " .. src) end
  end
end
for _, file in pairs(env.build.install and env.build.install.bin or {}) do print("bin - " .. file) end
EOF
then
  ok "$rockspec loads"
else
  bad "$rockspec does not load:"
  show "$work/rockspec.err"
fi

spec_lua=$(awk '$1 == "lua" { print $3 " " $2 }' "$work/rockspec.txt" | LC_ALL=C sort)
want_lua=$(for f in $expected_lua; do
  m=${f%.lua}; m=${m//\//.}; m=${m%.init}
  echo "lua/$f $m"
done | LC_ALL=C sort)
same_list "Lua modules in the rockspec (file module)" "$want_lua" "$spec_lua"

spec_c=$(awk '$1 == "c" && $2 == "cprof.core" { print $3 }' "$work/rockspec.txt" | LC_ALL=C sort)
want_c=$(find src -name '*.c' | LC_ALL=C sort)
same_list "C sources of cprof.core in the rockspec" "$want_c" "$spec_c"
if awk '$1 == "c" && $2 != "cprof.core"' "$work/rockspec.txt" | grep -q .; then
  bad "the rockspec has C modules other than cprof.core"
fi

spec_bin=$(awk '$1 == "bin" { print $3 }' "$work/rockspec.txt" | LC_ALL=C sort)
want_bin=$(for b in $expected_bin; do echo "bin/$b"; done)
same_list "scripts in the rockspec's install.bin" "$want_bin" "$spec_bin"

# ---------------------------------------------------------------------------------------------
echo "==> check-install: luarocks make (lua 5.4) into build/check-install/rocks"

incdir=$(pkg-config --cflags-only-I lua5.4 2>/dev/null | sed 's/^ *-I//; s/ .*//')
incdir=${incdir:-/usr/include/lua5.4}
copy=$work/source
tree=$work/rocks
mkdir -p "$copy"
cp -R rockspec src lua "$copy"/
[ -d bin ] && cp -R bin "$copy"/
# check_tree LABEL LUAVERSION INTERPRETER ROOT: the modules, core.so and bin/ scripts are where
# Lua looks for them under ROOT, and load from there.
check_tree() {
  local label=$1 ver=$2 interp=$3 dir=$4
  same_list "$label: Lua modules in share/lua/$ver/cprof" "$expected_lua" \
    "$( [ -d "$dir/share/lua/$ver" ] && cd "$dir/share/lua/$ver" && find cprof -name '*.lua' | LC_ALL=C sort)"
  if [ -f "$dir/lib/lua/$ver/cprof/core.so" ]; then
    ok "$label: lib/lua/$ver/cprof/core.so"
  else
    bad "$label: no lib/lua/$ver/cprof/core.so"
  fi
  for b in $expected_bin; do
    if [ -x "$dir/bin/$b" ]; then ok "$label: bin/$b"; else bad "$label: bin/$b missing or not executable"; fi
  done
  smoke "$label" "$interp" "$dir/share/lua/$ver" "$dir/lib/lua/$ver"
}

if (cd "$copy" && luarocks make --deps-mode=none "$rockspec" --tree "$tree" --lua-version=5.4 \
      "LUA_INCDIR=$incdir") > "$work/luarocks.log" 2>&1; then
  ok "luarocks make"
  check_tree luarocks 5.4 lua5.4 "$tree"
else
  bad "luarocks make failed:"
  show "$work/luarocks.log"
fi

# ---------------------------------------------------------------------------------------------
# check_prefix LABEL LUA LUAVERSION INTERPRETER ROOTDIR MAKE-ARGS...
check_prefix() {
  local label=$1 lua=$2 ver=$3 interp=$4 dir=$5
  shift 5
  echo "==> check-install: make install LUA=$lua $*"
  if "$make" --no-print-directory -s install LUA="$lua" "$@" > "$work/install-$label.log" 2>&1; then
    ok "make install LUA=$lua $*"
  else
    bad "make install LUA=$lua $* failed:"
    show "$work/install-$label.log"
    return
  fi
  if cmp -s src/cprof.h "$dir/include/cprof.h"; then
    ok "$label: include/cprof.h"
  else
    bad "$label: include/cprof.h missing or not src/cprof.h"
  fi
  check_tree "$label" "$ver" "$interp" "$dir"
}

check_prefix prefix lua5.4 5.4 lua5.4 "$work/prefix" PREFIX="$work/prefix" DESTDIR=
check_prefix destdir lua5.4 5.4 lua5.4 "$work/destdir/opt/cprof" PREFIX=/opt/cprof DESTDIR="$work/destdir"
if command -v luajit > /dev/null 2>&1; then
  check_prefix luajit luajit 5.1 luajit "$work/prefix-luajit" PREFIX="$work/prefix-luajit" DESTDIR=
else
  echo "==> check-install: luajit is not installed: skipping make install LUA=luajit"
fi

# ---------------------------------------------------------------------------------------------
if [ $failures -ne 0 ]; then
  echo "check-install: $failures check(s) FAILED (logs in build/check-install/)"
  exit 1
fi
echo "check-install: all checks passed"
