#!/usr/bin/env bash
# tools/check-install.sh — checks that cprof installs, every way, and runs where it was installed.
# `make test` runs it (through `make check-install`); it can also be run by hand from anywhere.
#
#  1. rockspec/cprof-scm-1.rockspec lists every lua/cprof/*.lua, every src/**/*.c, every bin/*
#     and the HTML report's page files (lua/cprof/export/html/*);
#     `luarocks lint` passes on it and on the LuaJIT rockspec (`make rockspecs`).
#  2. `luarocks make --lua-version=5.4` into a scratch tree installs the Lua modules under
#     share/lua/5.4/cprof/ and core.so under lib/lua/5.4/cprof/; luarocks for Lua 5.1 refuses
#     the rock, naming the Lua it needs.  The LuaJIT rockspec installs with luarocks configured
#     for LuaJIT.  lpeg and lua-cjson come from Debian's packages here: a luarocks config file
#     says they are provided, so that the dependency check itself runs.  luarocks' builtin
#     backend writes its objects next to the sources, so it runs in a copy of the sources.
#  3. `make install PREFIX=...` (and with DESTDIR=..., and with LUA=luajit when luajit is
#     installed) gives the layout README.md promises, with the manual pages and the docs.  For
#     a prefix Lua does not search, a fresh shell that has only the `export` lines make install
#     printed runs `lua5.4 -l cprof.auto`, `cprof-stats` and `man cprof-stats` from another
#     directory; for /usr/local, make install says there is nothing to set.
#  4. `make uninstall` leaves no file and no empty directory behind.
#  After each install, `lua5.4 -l cprof.auto -e 'local x = 1'` must work with LUA_PATH and
#  LUA_CPATH pointing at that tree, the modules must come from that tree, and its cprof-stats
#  must run with no Lua variable set.
#
# Everything is written under build/check-install/.  Exit status 1 when any check failed.

set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
root=$PWD
make=${MAKE:-make}
rockspec=rockspec/cprof-scm-1.rockspec
jit_rockspec=build/rockspec/cprof-luajit-scm-1.rockspec
work=$root/build/check-install
rm -rf "$work"
mkdir -p "$work"

failures=0
ok()   { echo "  ok    $*"; }
bad()  { echo "  FAIL  $*"; failures=$((failures + 1)); }
show() { tail -n 40 "$1" | sed 's/^/        | /'; }

# The environment of a fresh login shell: no Lua variable, no MANPATH, the usual PATH.
fresh=(env -i "HOME=$work" "PATH=/usr/local/bin:/usr/bin:/bin" "TERM=dumb")

# What must be installed.
expected_lua=$(cd lua && find cprof -name '*.lua' | LC_ALL=C sort)
expected_bin=$( [ -d bin ] && cd bin && find . -maxdepth 1 -type f | sed 's|^\./||' | LC_ALL=C sort)
expected_page=$(cd lua && find cprof/export/html -type f | LC_ALL=C sort)
version=$(lua5.4 -e 'package.path = "lua/?.lua;" .. package.path
  io.write(require("cprof.version").VERSION)')

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
  if (cd "$work" && "${envv[@]}" CPROF_OUT="$work/smoke-$label.prof" "$interp" -l cprof.auto -e 'local x = 1') \
       > "$log" 2>&1; then
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
  local name file all=1
  while read -r name file; do
    case "$file" in
      "$luadir"/*|"$libdir"/*) ;;
      *) all=0; bad "$label: $name resolves to $file, not into the installed tree" ;;
    esac
  done <<< "$where"
  [ $all -eq 1 ] && ok "$label: cprof, cprof.auto and cprof.core resolve into the installed tree"
}

# runs LABEL WANT COMMAND...: COMMAND (from $work, in a fresh environment) succeeds and its
# output has WANT.
nruns=0
runs() {
  local label=$1 want=$2 log
  nruns=$((nruns + 1))
  log=$work/run-$nruns.log
  shift 2
  if (cd "$work" && "${fresh[@]}" "$@") > "$log" 2>&1 && grep -qF -- "$want" "$log"; then
    ok "$label"
  else
    bad "$label failed:"
    show "$log"
  fi
}

# ---------------------------------------------------------------------------------------------
echo "==> check-install: $rockspec lists every module and script; luarocks lint"

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
for name, file in pairs(env.build.install and env.build.install.lua or {}) do print("page " .. name .. " " .. file) end
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

# each under its own file name in the folder of its key's module path
spec_page=$(awk '$1 == "page" { print $3 }' "$work/rockspec.txt" | LC_ALL=C sort)
same_list "the HTML report's page files in the rockspec's install.lua" \
  "$(for f in $expected_page; do echo "lua/$f"; done)" "$spec_page"
page_dirs=$(awk '$1 == "page" { m = $2; sub(/\.[^.]*$/, "", m); gsub(/\./, "/", m); print m }' "$work/rockspec.txt" | sort -u)
if [ "$page_dirs" = cprof/export/html ]; then
  ok "the rockspec installs the page files into cprof/export/html/"
else
  bad "the rockspec installs the page files into $page_dirs, not cprof/export/html/"
fi

spec_c=$(awk '$1 == "c" && $2 == "cprof.core" { print $3 }' "$work/rockspec.txt" | LC_ALL=C sort)
want_c=$(find src -name '*.c' | LC_ALL=C sort)
same_list "C sources of cprof.core in the rockspec" "$want_c" "$spec_c"
if awk '$1 == "c" && $2 != "cprof.core"' "$work/rockspec.txt" | grep -q .; then
  bad "the rockspec has C modules other than cprof.core"
fi

spec_bin=$(awk '$1 == "bin" { print $3 }' "$work/rockspec.txt" | LC_ALL=C sort)
want_bin=$(for b in $expected_bin; do echo "bin/$b"; done)
same_list "scripts in the rockspec's install.bin" "$want_bin" "$spec_bin"

if "$make" --no-print-directory -s rockspecs > "$work/rockspecs.log" 2>&1; then
  ok "make rockspecs: $jit_rockspec"
else
  bad "make rockspecs failed:"
  show "$work/rockspecs.log"
fi
for r in "$rockspec" "$jit_rockspec"; do
  if luarocks lint "$r" > "$work/lint.log" 2>&1; then
    ok "luarocks lint $r"
  else
    bad "luarocks lint $r:"
    show "$work/lint.log"
  fi
done

# ---------------------------------------------------------------------------------------------
echo "==> check-install: luarocks make into build/check-install/rocks*"

copy=$work/source
mkdir -p "$copy"
cp -R rockspec src lua bin docs "$copy"/
mkdir -p "$copy/build/rockspec" && cp "$jit_rockspec" "$copy/build/rockspec/"
# lpeg and lua-cjson are Debian's packages here, which luarocks does not know.
cat > "$work/luarocks-config.lua" <<'EOF'
rocks_provided = { lpeg = "1.0.2-1", ["lua-cjson"] = "2.1.0-1" }
EOF
cat "$work/luarocks-config.lua" - > "$work/luarocks-config-luajit.lua" <<'EOF'
lua_interpreter = "luajit"
variables = { LUA_BINDIR = "/usr/bin", LUA_INCDIR = "/usr/include/luajit-2.1" }
EOF

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
  same_list "$label: the HTML report's page files in share/lua/$ver/cprof/export/html" "$expected_page" \
    "$( [ -d "$dir/share/lua/$ver" ] && cd "$dir/share/lua/$ver" && find cprof/export/html -type f 2>/dev/null | LC_ALL=C sort)"
  smoke "$label" "$interp" "$dir/share/lua/$ver" "$dir/lib/lua/$ver"
  runs "$label: bin/cprof-stats --version with no Lua variable set" "cprof-stats (cprof) $version" \
    "$dir/bin/cprof-stats" --version
  runs "$label: bin/cprof-stats --html finds the page's files" 'id="cprof-data"' \
    "$dir/bin/cprof-stats" "$work/smoke-$label.prof" --html
}

# rocks LABEL CONFIG ROCKSPEC ARGS...: luarocks make ROCKSPEC in the copy, log in rocks-LABEL.log;
# an empty directory is the only rocks server, so that a missing dependency is not looked for
# on the network.
mkdir -p "$work/no-server"
rocks() {
  local label=$1 config=$2 spec=$3
  shift 3
  (cd "$copy" && LUAROCKS_CONFIG="$config" luarocks make "$spec" --only-server="$work/no-server" "$@") \
    > "$work/rocks-$label.log" 2>&1
}

if rocks lua5.4 "$work/luarocks-config.lua" "$rockspec" --tree "$work/rocks" --lua-version=5.4; then
  ok "luarocks make --lua-version=5.4 $rockspec"
  check_tree luarocks 5.4 lua5.4 "$work/rocks"
else
  bad "luarocks make --lua-version=5.4 failed:"
  show "$work/rocks-lua5.4.log"
fi

# Without --lua-version, Debian's luarocks is for Lua 5.1.
refuse=()
[ "$(luarocks config lua_version 2>/dev/null)" = 5.4 ] && refuse=(--lua-version=5.1)
if rocks refuse "$work/luarocks-config.lua" "$rockspec" --tree "$work/rocks-5.1" "${refuse[@]}"; then
  bad "luarocks make ${refuse[*]} for Lua 5.1 installed the rock"
elif grep -q 'lua >= 5.4, < 5.5' "$work/rocks-refuse.log"; then
  ok "luarocks make ${refuse[*]} for Lua 5.1 refuses, naming 'lua >= 5.4, < 5.5'"
else
  bad "luarocks make ${refuse[*]} for Lua 5.1 failed without naming the Lua it needs:"
  show "$work/rocks-refuse.log"
fi

if command -v luajit > /dev/null 2>&1; then
  if rocks luajit "$work/luarocks-config-luajit.lua" "$jit_rockspec" --tree "$work/rocks-luajit" \
       --lua-version=5.1; then
    ok "luarocks make --lua-version=5.1 $jit_rockspec (interpreter luajit)"
    check_tree luarocks-luajit 5.1 luajit "$work/rocks-luajit"
  else
    bad "luarocks make of $jit_rockspec for LuaJIT failed:"
    show "$work/rocks-luajit.log"
  fi
  if rocks refuse-jit "$work/luarocks-config.lua" "$jit_rockspec" --tree "$work/rocks-5.1" \
       --lua-version=5.1 && grep -q 'cprof-luajit scm-1 is now installed' "$work/rocks-refuse-jit.log"; then
    bad "luarocks make $jit_rockspec for plain Lua 5.1 installed the rock"
  elif grep -q 'luajit >= 2.1' "$work/rocks-refuse-jit.log"; then
    ok "luarocks make $jit_rockspec for plain Lua 5.1 refuses, naming 'luajit >= 2.1'"
  else
    bad "luarocks make $jit_rockspec for plain Lua 5.1 failed without naming LuaJIT:"
    show "$work/rocks-refuse-jit.log"
  fi
else
  echo "==> check-install: luajit is not installed: skipping the LuaJIT rockspec"
fi

# ---------------------------------------------------------------------------------------------
# check_prefix LABEL LUA LUAVERSION INTERPRETER ROOTDIR MAKE-ARGS...
check_prefix() {
  local label=$1 lua=$2 ver=$3 interp=$4 dir=$5
  shift 5
  echo "==> check-install: make install LUA=$lua $*"
  if "${fresh[@]}" "$make" --no-print-directory -s install LUA="$lua" "$@" \
       > "$work/install-$label.log" 2>&1; then
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
  local f missing=''
  for f in share/man/man1/cprof-stats.1 share/man/man3/cprof.3 share/doc/cprof/README.md \
           share/doc/cprof/LICENSE share/doc/cprof/CHANGELOG.md share/doc/cprof/docs/MANUAL.md; do
    [ -f "$dir/$f" ] || missing="$missing $f"
  done
  if [ -z "$missing" ]; then ok "$label: manual pages and docs"; else bad "$label: missing$missing"; fi
  check_tree "$label" "$ver" "$interp" "$dir"
}

# exports_work LABEL INTERPRETER: a fresh shell with only the export lines `make install`
# printed (install-LABEL.log) runs cprof from another directory.
exports_work() {
  local label=$1 interp=$2 exports
  exports=$(sed -n 's/^  \(export .*\)$/\1/p' "$work/install-$label.log")
  if [ -z "$exports" ]; then
    bad "$label: make install printed no export lines"
    show "$work/install-$label.log"
    return
  fi
  mkdir -p "$work/elsewhere"
  printf 'local function f(n) if n < 2 then return n end return f(n - 1) + f(n - 2) end\nprint(f(12))\n' \
    > "$work/elsewhere/fib.lua"
  runs "$label: $interp -l cprof.auto with only the printed exports" "(f)" bash --noprofile --norc -c \
    "$exports; cd elsewhere && CPROF_OUT=out.prof CPROF_REPORT=1 $interp -l cprof.auto fib.lua"
  runs "$label: cprof-stats with only the printed exports" "List reduced from" bash --noprofile --norc -c \
    "$exports; cd elsewhere && cprof-stats out.prof --limit 1"
  runs "$label: man cprof-stats with only the printed exports" "cprof-stats - print the report" \
    bash --noprofile --norc -c "$exports; cd elsewhere && MANWIDTH=200 man cprof-stats 2>&1"
  runs "$label: man 3 cprof with only the printed exports" "cprof - a deterministic profiler" \
    bash --noprofile --norc -c "$exports; cd elsewhere && MANWIDTH=200 man 3 cprof 2>&1"
}

# uninstalled LABEL DIR KEPT MAKE-ARGS...: make uninstall leaves in DIR only the directories
# KEPT lists (one per line; "" for none).
uninstalled() {
  local label=$1 dir=$2 kept=$3 left
  shift 3
  if ! "$make" --no-print-directory -s uninstall "$@" > "$work/uninstall-$label.log" 2>&1; then
    bad "$label: make uninstall $* failed:"
    show "$work/uninstall-$label.log"
    return
  fi
  left=$(cd "$dir" && find . -mindepth 1 | LC_ALL=C sort)
  if [ "$left" = "$kept" ]; then
    ok "$label: make uninstall leaves ${kept:+only the standard directories }nothing else under $dir"
  else
    bad "$label: make uninstall left:"
    printf '%s\n' "$left" | sed 's/^/        /'
  fi
}

check_prefix prefix lua5.4 5.4 lua5.4 "$work/prefix" PREFIX="$work/prefix" DESTDIR=
exports_work prefix lua5.4
uninstalled prefix "$work/prefix" "" PREFIX="$work/prefix" DESTDIR=

check_prefix destdir lua5.4 5.4 lua5.4 "$work/destdir/usr/local" PREFIX=/usr/local DESTDIR="$work/destdir"
if grep -q 'Nothing to set' "$work/install-destdir.log" && ! grep -q '^  export ' "$work/install-destdir.log"; then
  ok "destdir: make install PREFIX=/usr/local says there is nothing to set"
else
  bad "destdir: make install PREFIX=/usr/local does not say that there is nothing to set:"
  show "$work/install-destdir.log"
fi
# Under /usr/local the standard directories stay (the system has them, empty or not).
uninstalled destdir "$work/destdir/usr/local" "$(printf './%s\n' bin include lib share share/doc \
  share/man share/man/man1 share/man/man3)" PREFIX=/usr/local DESTDIR="$work/destdir"

if command -v luajit > /dev/null 2>&1; then
  check_prefix luajit luajit 5.1 luajit "$work/prefix-luajit" PREFIX="$work/prefix-luajit" DESTDIR=
  exports_work luajit luajit
  uninstalled luajit "$work/prefix-luajit" "" LUA=luajit PREFIX="$work/prefix-luajit" DESTDIR=
else
  echo "==> check-install: luajit is not installed: skipping make install LUA=luajit"
fi

# ---------------------------------------------------------------------------------------------
if [ $failures -ne 0 ]; then
  echo "check-install: $failures check(s) FAILED (logs in build/check-install/)"
  exit 1
fi
echo "check-install: all checks passed"
