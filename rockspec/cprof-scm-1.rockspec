-- LuaRocks rockspec for cprof, built from a checkout:
--
--   luarocks make --lua-version=5.4 rockspec/cprof-scm-1.rockspec
--
-- (`make test` runs this into a scratch tree; see tools/check-install.sh.)
--
-- A rockspec cannot glob: every lua/cprof/*.lua, every src/*.c and every bin/* script has to be
-- listed here by hand.  tools/check-install.sh fails `make test` when one is missing.

rockspec_format = "3.0"
package = "cprof"
version = "scm-1"

source = {
   -- `luarocks make` builds the checkout it is run in and never fetches this URL; it only has
   -- to be well-formed.  Put the project's real repository here before publishing the rock.
   url = "git+file:///cprof",
}

description = {
   summary = "A deterministic, cProfile-like profiler for Lua 5.4 (and LuaJIT), written in C",
   detailed = [[
cprof records every call and return of a Lua program through a C hook and reports, per
function, the number of calls, the time spent in the function itself and the time spent in it
and everything it called, like Python's cProfile.  `lua5.4 -l cprof.auto script.lua` profiles a
whole script and prints the report when it exits; the `cprof` module gives the same control from
Lua code (cprof.run, cprof.Profile).
]],
}

dependencies = {
   "lua >= 5.1",
}

build = {
   type = "builtin",
   modules = {
      ["cprof"] = "lua/cprof/init.lua",
      ["cprof.auto"] = "lua/cprof/auto.lua",
      ["cprof.bias"] = "lua/cprof/bias.lua",
      ["cprof.browser"] = "lua/cprof/browser.lua",
      ["cprof.cmdline"] = "lua/cprof/cmdline.lua",
      ["cprof.data"] = "lua/cprof/data.lua",
      ["cprof.export"] = "lua/cprof/export/init.lua",
      ["cprof.export.binary"] = "lua/cprof/export/binary.lua",
      ["cprof.export.callgrind"] = "lua/cprof/export/callgrind.lua",
      ["cprof.export.chrome"] = "lua/cprof/export/chrome.lua",
      ["cprof.export.cli"] = "lua/cprof/export/cli.lua",
      ["cprof.export.folded"] = "lua/cprof/export/folded.lua",
      ["cprof.export.model"] = "lua/cprof/export/model.lua",
      ["cprof.export.pprof"] = "lua/cprof/export/pprof.lua",
      ["cprof.export.pstats"] = "lua/cprof/export/pstats.lua",
      ["cprof.export.speedscope"] = "lua/cprof/export/speedscope.lua",
      ["cprof.export.svg"] = "lua/cprof/export/svg.lua",
      ["cprof.json"] = "lua/cprof/json.lua",
      ["cprof.marshal"] = "lua/cprof/marshal.lua",
      ["cprof.memory"] = "lua/cprof/memory.lua",
      ["cprof.report"] = "lua/cprof/report.lua",
      ["cprof.report.diff"] = "lua/cprof/report/diff.lua",
      ["cprof.report.tree"] = "lua/cprof/report/tree.lua",
      ["cprof.stats"] = "lua/cprof/stats.lua",
      ["cprof.core"] = {
         sources = {
            "src/alloc.c",
            "src/arena.c",
            "src/dump_lua.c",
            "src/dump_read.c",
            "src/dump_write.c",
            "src/engine.c",
            "src/funcs.c",
            "src/hook.c",
            "src/idxmap.c",
            "src/luatimer.c",
            "src/memattr.c",
            "src/lalloc.c",
            "src/memory_lua.c",
            "src/module.c",
            "src/profiler.c",
            "src/slab.c",
            "src/tables.c",
            "src/timer.c",
         },
         defines = { "_GNU_SOURCE" },
         incdirs = { "src" },
         libraries = { "m", "dl" },
      },
   },
   install = {
      bin = {
         ["cprof-stats"] = "bin/cprof-stats",
      },
   },
}
