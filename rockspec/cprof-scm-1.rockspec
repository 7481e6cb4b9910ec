-- LuaRocks rockspec for cprof on Lua 5.4, built from a checkout:
--
--   luarocks make --lua-version=5.4 rockspec/cprof-scm-1.rockspec
--
-- (Debian's luarocks defaults to Lua 5.1, for which this rock refuses to install: cprof's C
-- module is built for Lua 5.4's API.)  For LuaRocks configured for LuaJIT, `make rockspecs`
-- writes build/rockspec/cprof-luajit-scm-1.rockspec: this file with its package name and its
-- Lua dependency changed.  `make test` lints both and installs them into scratch trees
-- (tools/check-install.sh).
--
-- A rockspec cannot glob: every lua/cprof/*.lua, every src/**/*.c, every bin/* script and every
-- file of lua/cprof/export/html/ has to be listed here by hand.  tools/check-install.sh fails
-- `make test` when one is missing.

rockspec_format = "3.0"
package = "cprof"
version = "scm-1"

source = {
   -- `luarocks make` builds the checkout it is run in and never fetches this URL; it only has
   -- to be well-formed.  Put the project's real repository here before publishing the rock.
   url = "git+file:///cprof",
}

description = {
   summary = "A deterministic profiler for Lua 5.4 and LuaJIT, after Python's cProfile",
   detailed = [[
cprof records every call and return of a Lua program through a C hook and reports, per
function and per caller->callee pair, the number of calls, the time spent in the function
itself and the time spent in it and everything it called, in the layout of Python's pstats.
`lua5.4 -l cprof.auto script.lua` profiles a whole script and prints the report when it exits;
the `cprof` module gives the same control from Lua code (cprof.run, cprof.Profile,
cprof.stats), and `cprof-stats` prints saved profiles (cprof's and Python's) from the shell.
Line-level timing, memory per function on cprof's own allocator, JSON output.
]],
   -- The project's page: put its public address here before publishing the rock.
   homepage = "https://cprof.invalid/",
   license = "MIT",
   labels = { "profiler", "profiling", "performance", "debugging" },
}

dependencies = {
   "lua >= 5.4, < 5.5",
   "lpeg",        -- cprof-stats -i (the browser's command grammar)
   "lua-cjson",   -- cprof-stats --json
}

build = {
   type = "builtin",
   modules = {
      ["cprof"] = "lua/cprof/init.lua",
      ["cprof.allocdata"] = "lua/cprof/allocdata.lua",
      ["cprof.args"] = "lua/cprof/args.lua",
      ["cprof.auto"] = "lua/cprof/auto.lua",
      ["cprof.bias"] = "lua/cprof/bias.lua",
      ["cprof.busted"] = "lua/cprof/busted.lua",
      ["cprof.browser"] = "lua/cprof/browser/init.lua",
      ["cprof.browser.grammar"] = "lua/cprof/browser/grammar.lua",
      ["cprof.browser.lineedit"] = "lua/cprof/browser/lineedit.lua",
      ["cprof.browser.views"] = "lua/cprof/browser/views.lua",
      ["cprof.calibrate"] = "lua/cprof/calibrate.lua",
      ["cprof.cli"] = "lua/cprof/cli.lua",
      ["cprof.env"] = "lua/cprof/env.lua",
      ["cprof.dump"] = "lua/cprof/dump.lua",
      ["cprof.export"] = "lua/cprof/export/init.lua",
      ["cprof.export.binary"] = "lua/cprof/export/binary.lua",
      ["cprof.export.callgrind"] = "lua/cprof/export/callgrind.lua",
      ["cprof.export.chrome"] = "lua/cprof/export/chrome.lua",
      ["cprof.export.cli"] = "lua/cprof/export/cli.lua",
      ["cprof.export.folded"] = "lua/cprof/export/folded.lua",
      ["cprof.export.html"] = "lua/cprof/export/html.lua",
      ["cprof.export.htmldata"] = "lua/cprof/export/htmldata.lua",
      ["cprof.export.model"] = "lua/cprof/export/model.lua",
      ["cprof.export.palette"] = "lua/cprof/export/palette.lua",
      ["cprof.export.pprof"] = "lua/cprof/export/pprof.lua",
      ["cprof.export.pstats"] = "lua/cprof/export/pstats.lua",
      ["cprof.export.speedscope"] = "lua/cprof/export/speedscope.lua",
      ["cprof.export.svg"] = "lua/cprof/export/svg.lua",
      ["cprof.funckey"] = "lua/cprof/funckey.lua",
      ["cprof.loaders"] = "lua/cprof/loaders.lua",
      ["cprof.main"] = "lua/cprof/main.lua",
      ["cprof.memory"] = "lua/cprof/memory.lua",
      ["cprof.patmatch"] = "lua/cprof/patmatch.lua",
      ["cprof.profdata"] = "lua/cprof/profdata.lua",
      ["cprof.pstats.marshal"] = "lua/cprof/pstats/marshal.lua",
      ["cprof.pyfmt"] = "lua/cprof/pyfmt.lua",
      ["cprof.sanitize"] = "lua/cprof/sanitize.lua",
      ["cprof.report"] = "lua/cprof/report/init.lua",
      ["cprof.report.allocator"] = "lua/cprof/report/allocator.lua",
      ["cprof.report.callers"] = "lua/cprof/report/callers.lua",
      ["cprof.report.diff"] = "lua/cprof/report/diff.lua",
      ["cprof.report.json"] = "lua/cprof/report/json.lua",
      ["cprof.report.lines"] = "lua/cprof/report/lines.lua",
      ["cprof.report.memctx"] = "lua/cprof/report/memctx.lua",
      ["cprof.report.memory"] = "lua/cprof/report/memory.lua",
      ["cprof.report.rows"] = "lua/cprof/report/rows.lua",
      ["cprof.report.summary"] = "lua/cprof/report/summary.lua",
      ["cprof.report.text"] = "lua/cprof/report/text.lua",
      ["cprof.report.tree"] = "lua/cprof/report/tree.lua",
      ["cprof.restrictions"] = "lua/cprof/restrictions.lua",
      ["cprof.sortkeys"] = "lua/cprof/sortkeys.lua",
      ["cprof.stats"] = "lua/cprof/stats.lua",
      ["cprof.version"] = "lua/cprof/version.lua",
      ["cprof.core"] = {
         sources = {
            "src/dump/crc32c.c",
            "src/dump/ldump.c",
            "src/dump/out.c",
            "src/dump/read.c",
            "src/dump/write.c",
            "src/engine/engine.c",
            "src/hook/defname.c",
            "src/hook/filters.c",
            "src/hook/hook.c",
            "src/hook/ident.c",
            "src/hook/layout.c",
            "src/hook/live.c",
            "src/hook/luatimer.c",
            "src/hook/proghook.c",
            "src/hook/threads.c",
            "src/hook/timer.c",
            "src/lcprof.c",
            "src/mem/arena.c",
            "src/mem/chunk.c",
            "src/mem/lalloc.c",
            "src/mem/lalloc_state.c",
            "src/mem/lalloc_stats.c",
            "src/mem/lalloc_trace.c",
            "src/mem/lmemory.c",
            "src/mem/memattr.c",
            "src/mem/slab.c",
            "src/tables/calltree.c",
            "src/tables/clock.c",
            "src/tables/functions.c",
            "src/tables/lines.c",
            "src/tables/profiler.c",
            "src/tables/snapshot.c",
            "src/tables/stacks.c",
            "src/tables/trace.c",
            "src/util/array.c",
            "src/util/fault.c",
            "src/util/idxmap.c",
            "src/util/symbol.c",
            "src/util/weak.c",
         },
         defines = { "_GNU_SOURCE" },
         incdirs = { "src" },
         libraries = { "m", "dl" },
      },
   },
   install = {
      bin = {
         ["cprof-stats"] = "bin/cprof-stats",
         ["cprof"] = "bin/cprof",
      },
      -- The HTML report's page, next to cprof.export.html, which reads them from its own folder:
      -- LuaRocks puts each under the module path of its key, with its own file name.
      lua = {
         ["cprof.export.html.report_css"] = "lua/cprof/export/html/report.css",
         ["cprof.export.html.report_html"] = "lua/cprof/export/html/report.html",
         ["cprof.export.html.report_js"] = "lua/cprof/export/html/report.js",
      },
   },
   copy_directories = { "docs" },
}
