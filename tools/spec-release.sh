#!/usr/bin/env bash
# tools/spec-release.sh — the lua5.4 specs against another release of Lua 5.4, built from its
# source tree (e.g. `apt-get source lua5.4`, or an unpacked lua-5.4.x tarball).
#
#   tools/spec-release.sh LUA_SOURCE_DIR [OUT_DIR]
#
# Builds LUA_SOURCE_DIR/src into an interpreter (OUT_DIR/bin/lua5.4, first on PATH, so that the
# specs' child processes use it too) and cprof.core against that release's headers
# (OUT_DIR/cprof/core.so), then runs the specs twice: with the fast path (when the release is
# one util/luapriv.h knows, else it runs the public path both times) and with CPROF_FAST_PATH=0.
# The busted and C modules of the system's lua5.4 are used as they are: the 5.4 ABI is the same.
# OUT_DIR defaults to build/release-<version>.

set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

src=${1:?usage: tools/spec-release.sh LUA_SOURCE_DIR [OUT_DIR]}
src=$(cd "$src" && pwd)
[ -f "$src/src/lua.h" ] || { echo "spec-release: $src/src/lua.h: no Lua source tree there" >&2; exit 2; }
version=5.4.$(sed -n 's/^#define LUA_VERSION_RELEASE[[:space:]]*"\([0-9]*\)"/\1/p' "$src/src/lua.h")
out=${2:-build/release-$version}
mkdir -p "$out/bin" "$out/cprof" "$out/obj"
out=$(cd "$out" && pwd)

# Debian's lua5.4 also looks in /usr/share/lua/5.4 and /usr/lib/<arch>/lua/5.4, where busted,
# LPeg and lua-cjson live: the release under test gets the same defaults, so that the specs'
# child processes, which reset LUA_PATH on purpose, still find them.
defpath=$(env -u LUA_PATH -u LUA_PATH_5_4 lua5.4 -e 'io.write(package.path)')
defcpath=$(env -u LUA_CPATH -u LUA_CPATH_5_4 lua5.4 -e 'io.write(package.cpath)')
echo "==> Lua $version from $src into $out"
cc -O2 -std=gnu99 -DLUA_COMPAT_5_3 -DLUA_USE_LINUX -Wl,-E -o "$out/bin/lua5.4" \
  -DLUA_PATH_DEFAULT="\"$defpath\"" -DLUA_CPATH_DEFAULT="\"$defcpath\"" \
  $(ls "$src"/src/*.c | grep -v -E '/(luac|onelua|ltests)\.c$') -lm -ldl
for f in src/*.c src/*/*.c; do
  cc -std=c11 -Wall -Wextra -Werror -Isrc -O2 -fPIC -D_GNU_SOURCE -I"$src/src" \
    -c -o "$out/obj/$(echo "$f" | tr / _).o" "$f"
done
cc -shared -o "$out/cprof/core.so" "$out"/obj/*.o -lm -lpthread -ldl

status=0
for fast in 1 0; do
  echo "==> specs under Lua $version, CPROF_FAST_PATH=$fast"
  env -u LUA_PATH_5_4 -u LUA_CPATH_5_4 LUA_PATH="$PWD/lua/?.lua;$PWD/lua/?/init.lua;;" \
    LUA_CPATH="$out/?.so;;" PATH="$out/bin:$PWD/bin:$PATH" CPROF_FAST_PATH=$fast \
    lua5.4 /usr/bin/busted -o "$PWD/tools/busted-results.lua" spec || status=1
done
exit $status
