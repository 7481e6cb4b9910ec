#!/usr/bin/env bash
# tools/install-env.sh PREFIX LUA VERSION — what `make install` says last: whether LUA (lua5.4
# or luajit, whose modules go to share/lua/VERSION and lib/lua/VERSION) finds cprof under PREFIX
# with its default paths, the shell finds cprof-stats and man finds its pages; and otherwise the
# `export` lines that make them, one per line, each starting with "  export ".
#
# The Lua variables are those the interpreter reads: LUA_PATH_5_4 and LUA_CPATH_5_4 for Lua 5.4
# (it prefers them to LUA_PATH and LUA_CPATH), LUA_PATH and LUA_CPATH for LuaJIT.  Each line
# keeps what the variable held, or Lua's default path (";;") when it held nothing.

set -u
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
prefix=${1%/}
lua=$2
ver=$3
luadir=$prefix/share/lua/$ver
libdir=$prefix/lib/lua/$ver
mandir=$prefix/share/man

version=$("$lua" -e 'package.path = "lua/?.lua;" .. package.path
  io.write(require("cprof.version").VERSION)' 2>/dev/null) || version='?'

if [ "$ver" = 5.4 ]; then
  pvar=LUA_PATH_5_4 cvar=LUA_CPATH_5_4
  pkeep='${LUA_PATH_5_4:-${LUA_PATH:-;}}' ckeep='${LUA_CPATH_5_4:-${LUA_CPATH:-;}}'
else
  pvar=LUA_PATH cvar=LUA_CPATH
  pkeep='${LUA_PATH:-;}' ckeep='${LUA_CPATH:-;}'
fi

exports=()
defaults=$(env -u LUA_PATH -u LUA_CPATH -u LUA_PATH_5_4 -u LUA_CPATH_5_4 "$lua" \
  -e 'io.write(";", package.path, ";", package.cpath, ";")' 2>/dev/null)
case "$defaults" in
  *";$luadir/?.lua;"*) ;;
  *) exports+=("export $pvar=\"$luadir/?.lua;$luadir/?/init.lua;$pkeep\"") ;;
esac
case "$defaults" in
  *";$libdir/?.so;"*) ;;
  *) exports+=("export $cvar=\"$libdir/?.so;$ckeep\"") ;;
esac
case ":${PATH:-}:" in
  *":$prefix/bin:"*) ;;
  *) exports+=("export PATH=\"$prefix/bin:\$PATH\"") ;;
esac
# A MANPATH that ends with ':' keeps man's own search path after it.
case ":$(manpath 2>/dev/null):" in
  *":$mandir:"*) ;;
  *) exports+=("export MANPATH=\"$mandir:\${MANPATH:-}\"") ;;
esac

if [ ${#exports[@]} -eq 0 ]; then
  echo "cprof $version is installed under $prefix: $lua finds it with its default paths," \
    "cprof-stats is on PATH and man finds cprof-stats(1) and cprof(3). Nothing to set."
  exit 0
fi
echo "cprof $version is installed under $prefix, where $lua or the shell does not look by"
echo "default. To use it, run these lines in the shell (or add them to ~/.profile):"
echo
for e in "${exports[@]}"; do echo "  $e"; done
echo
