-- The reporting layer without the C extension: in a process where cprof.core cannot be loaded
-- (LUA_CPATH without build/, and package.preload["cprof.core"] raising), cprof.stats, the
-- reports, Python pstats files, cprof-stats and its browser load and print what they print with
-- it.  Only a cprof dump needs cprof.core, and reading or writing one says so.
local S = require "spec.support"

local q = S.q
local ROOT = S.absolute(S.ROOT)
local SCRIPT = ROOT .. "/bin/cprof-stats"
local SAMPLE = S.absolute(S.ref_path("", "sample.pstats"))

-- Lua code that makes cprof.core impossible to load.
local NO_CORE = 'package.preload["cprof.core"] = function() error("cprof.core must not be loaded") end'

-- The environment of a process without cprof.core: the checkout's Lua modules, and only Lua's
-- default paths for C modules (where lpeg and cjson are, and never build/).
local NO_CORE_ENV = ("env -u LUA_PATH_5_4 -u LUA_CPATH_5_4 LUA_PATH=%s LUA_CPATH=';;' ")
  :format(q(ROOT .. "/lua/?.lua;" .. ROOT .. "/lua/?/init.lua;;"))

-- Runs `script` in a child of this spec's interpreter: with `no_core`, without cprof.core;
-- otherwise in this spec's environment (cprof.core available).  Returns stdout, stderr, status.
local function run(script, no_core)
  if no_core then
    return S.run_lua(NO_CORE .. "\n" .. script, "", NO_CORE_ENV)
  end
  return S.run_lua(script)
end

-- The file line of `path` ("<ctime>    <path>", or the path alone without cprof.core, which
-- reads the modification time) as the path alone.
local function without_mtime(text, path)
  local ctime = "%a%a%a %a%a%a [ %d]%d %d%d:%d%d:%d%d %d+    "
  return (text:gsub(ctime .. path:gsub("%p", "%%%0"), function() return path end))
end

-- Every report, of a pstats file and of Stats made from Lua tables (lines, memory, an allocator
-- snapshot); then whether cprof.core was loaded.
local REPORTS = ([[
local stats = require "cprof.stats"
local profdata = require "cprof.profdata"
local allocdata = require "cprof.allocdata"
local st = stats.new(%q)
st:sort_stats("cumulative"):print_stats()
st:print_callers(3)
st:print_callees("fib")
st:print_lines()
local entries = {
  { file = "/src/m.lua", line = 2, name = "make", what = "Lua", ncalls = 3, pcalls = 2,
    tottime = 0.25, cumtime = 0.5, lastline = 4,
    alloc_count = 10, alloc_bytes = 560, free_count = 2, free_bytes = 112, min_size = 56, max_size = 56,
    lines = { [3] = { hits = 3, time = 0.125 }, [4] = { hits = 1, time = 0.125 } } },
  { file = "~", line = 0, name = "print", what = "C", ncalls = 1, tottime = 0.125, cumtime = 0.125,
    callers = { [1] = { ncalls = 1, tottime = 0.125, cumtime = 0.125 } } },
}
local t = stats.new({ timer = "counter", unit = 1, entries = entries }):sort_stats("tottime")
t:print_stats(); t:print_callers(); t:print_lines(); t:print_memory(); t:print_allocator()
local s = { lua_bytes = 1000, requested = 900, foreign = 0, held = 960, footprint = 4096,
  mapped = 8192, peak_mapped = 8192, metadata = 512, live = 10, allocs = 12, failures = 0,
  limit_failures = 0, foreign_frees = 0,
  caches = { { name = "table_56", type = "table", source = "pages", objsize = 56, slab_size = 4096,
               objects = 73, live = 10, magazine = 2, allocs = 12, requested = 560, slabs = 1,
               partial_slabs = 1 } },
  types = { { name = "table", tag = 5, live = 10, bytes = 560, held = 560, allocs = 12,
              large_live = 0, large_allocs = 0, large_held = 0 } },
  arenas = { { name = "pages", source = "none", quantum = 4096, total = 8192, alloc = 4096,
               free = 4096, imported = 0, peak_total = 8192, nr_allocs = 1, nr_free_segs = 1,
               nr_spans = 1, nr_imports = 0, nr_empty = 0, allocs = 1, frees = 0, imports = 0,
               releases = 0, import_failures = 0, hash_size = 64, hash_empty = 63,
               hash_longest = 1, meta = 100, free_lists = { [12] = 1 } } } }
stats.new(allocdata.set(profdata.from_stats(t), s)):print_allocator()
require("cprof.report").print({ entries = entries }, { sort = "calls", views = { "stats", "callees" } })
print(#t:entries(), #t:report_table({ callers = true }).rows)
-- (after a failed require, Lua 5.1 and LuaJIT leave a sentinel in package.loaded)
print("cprof.core loaded:", type(package.loaded["cprof.core"]) == "table")
]]):format(SAMPLE)

describe("without the C extension", function()
  it("cprof.stats and every report print what they print with it", function()
    local with, err, status = run(REPORTS)
    assert.are.equal(0, status, err)
    local without, err2, status2 = run(REPORTS, true)
    assert.are.equal(0, status2, err2)
    assert.matches("\ncprof.core loaded:\tfalse\n$", without)
    assert.matches("\ncprof.core loaded:\ttrue\n$", with)
    -- the same text, but for the file line: without cprof.core there is no modification time,
    -- and the line is the path alone, as pstats prints it when os.stat fails
    assert.are.equal(SAMPLE .. "\n", without:match("^[^\n]*\n"))
    assert.are.equal(without_mtime(with, SAMPLE):gsub("true\n$", ""), (without:gsub("false\n$", "")))
    for _, part in ipairs({ "function calls", "was called by...", "called...", "Timer unit: 1 s",
                            " allocations of 560 bytes", "== kmemstat", "2\t2\n" }) do
      assert.truthy(without:find(part, 1, true), part)
    end
  end)

  it("reading or writing a cprof dump says that it needs cprof.core", function()
    local dir = S.new_dir()
    local dump = dir .. "/x.prof"
    local _, e, st = run(("require('cprof').Profile():dump_stats(%q)"):format(dump))
    assert.are.equal(0, st, e)
    local out, err, status = run(([[
local stats = require "cprof.stats"
print(select(2, pcall(stats.new, %q)))
print(select(2, pcall(function() stats.new({ entries = {} }):dump_stats(%q) end)))
]]):format(dump, dir .. "/y.prof"), true)
    S.remove_dir(dir)
    assert.are.equal(0, status, err)
    local read, write = out:match("^([^\n]*)\n([^\n]*)\n")
    assert.matches("^cprof: " .. dump:gsub("%p", "%%%0") .. ": reading a cprof dump needs the C"
      .. " extension cprof%.core, which cannot be loaded: .*cprof%.core must not be loaded", read)
    assert.matches("^cprof: " .. dir:gsub("%p", "%%%0") .. "/y%.prof: writing a cprof dump needs"
      .. " the C extension cprof%.core", write)
  end)

  describe("cprof-stats", function()
    local env_ok, why = S.lua54_env(ROOT)
    if not env_ok then return pending(why) end

    local function cli(args, no_core, input)
      local prefix = no_core and NO_CORE_ENV or env_ok
      local flags = no_core and ("-e " .. q(NO_CORE)) or ""
      local redirect = input and (" <" .. q(input)) or ""
      return S.capture(("%slua5.4 %s %s %s%s"):format(prefix, flags, q(SCRIPT), args, redirect))
    end

    it("prints a pstats file, its callers and its JSON document", function()
      for _, args in ipairs({ q(SAMPLE) .. " --sort tottime --callers --stats",
                              q(SAMPLE) .. " --json --callees --limit 2" }) do
        local with, err, status = cli(args)
        assert.are.equal(0, status, err)
        local without, err2, status2 = cli(args, true)
        assert.are.equal(0, status2, err2)
        assert.are.equal(without_mtime(with, SAMPLE), without)
      end
    end)

    it("browses a pstats file (-i)", function()
      local lpeg = os.execute("lua5.4 -e 'require \"lpeg\"' 2>/dev/null")
      if not (lpeg == true or lpeg == 0) then return pending("LPeg is not installed for lua5.4") end
      local input = S.tmpname()
      S.write_file(input, "sort tottime\nstats 2\ncallers fib\nquit\n")
      local with = cli("-i --no-prompt " .. q(SAMPLE), false, input)
      local without, err, status = cli("-i --no-prompt " .. q(SAMPLE), true, input)
      os.remove(input)
      assert.are.equal(0, status, err)
      assert.matches("^Welcome to the profile statistics browser%.\n.*was called by%.%.%.", without)
      assert.are.equal(without_mtime(with, SAMPLE), without)
    end)
  end)
end)
