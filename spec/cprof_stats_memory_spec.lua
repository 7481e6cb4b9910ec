-- cprof-stats' memory views on dumps made by hand (their numbers known): --memory-series in the
-- order the dumps were taken, and what it says of dumps without memory; lifetimes with their
-- units and --unit, --limit on --memory-types and --leaks.  cprof-stats runs under lua5.4 (see
-- cprof_stats_cli_spec.lua); the dumps are written here, by either interpreter.
local S = require "spec.support"
local q = S.q

local ROOT = S.ROOT
local SCRIPT = S.absolute(ROOT) .. "/bin/cprof-stats"

local function g(n, cols) cols.n = n return cols end

-- A dump with one function and, with `live` given, the memory totals charged to its contexts
-- (the series' "charged live" column); `start` is its profile's start_time.
local function series_dump(path, start, live)
  local meta = { timer = "counter", unit = 1, bias = 0, start_time = start, total_time = 1, pid = 7,
                 tree_cap = 100, tree_folded = 0, dropped = 0 }
  if live then
    meta.memory, meta.memory_lost = true, 0
    meta.memory_allocs, meta.memory_bytes, meta.memory_frees, meta.memory_freed = 2, live + 8, 1, 8
  end
  require("cprof.dump").write(path, {
    meta = meta,
    frames = g(1, { kind = { "main" }, file = { "m.lua" }, line = { 0 }, lastline = { 3 },
                    name = { "<main chunk>" }, ncalls = { 1 }, pcalls = { 1 }, tottime = { 1 }, cumtime = { 1 } }),
    edges = g(0, { caller = {}, callee = {}, ncalls = {}, pcalls = {}, tottime = {}, cumtime = {} }),
    nodes = g(1, { parent = { 0 }, frame = { 1 }, ncalls = { 1 }, pcalls = { 1 }, tottime = { 1 }, cumtime = { 1 } }),
  })
end

local TYPES = { "raw", "string", "table", "function", "userdata", "thread", "upvalue", "proto", "other" }

-- A dump whose main chunk calls a, b and c, each allocating tables: a 10 (4 freed, living 0.5 to
-- 2 ms, 1 ms on average), b 5 (all freed, 1 to 12 us, 5 us on average), c 2 (none freed).
local function contexts_dump(path)
  local nodes = g(4, { parent = { 0, 1, 1, 1 }, frame = { 1, 2, 3, 4 }, ncalls = { 1, 1, 1, 1 },
    pcalls = { 1, 1, 1, 1 }, tottime = { 1, 1, 1, 1 }, cumtime = { 4, 1, 1, 1 },
    alloc_count = { 0, 10, 5, 2 }, alloc_bytes = { 0, 560, 280, 112 }, free_count = { 0, 4, 5, 0 },
    free_bytes = { 0, 224, 280, 0 }, min_size = { 0, 56, 56, 56 }, max_size = { 0, 56, 56, 56 },
    life_total = { 0, 0.004, 25e-6, 0 }, life_min = { 0, 0.0005, 1e-6, 0 }, life_max = { 0, 0.002, 12e-6, 0 },
    alloc_time = { 0, 0, 0, 0 }, free_time = { 0, 0, 0, 0 } })
  for _, t in ipairs(TYPES) do
    nodes[t .. "_allocs"], nodes[t .. "_frees"] = { 0, 0, 0, 0 }, { 0, 0, 0, 0 }
  end
  nodes.table_allocs, nodes.table_frees = nodes.alloc_count, nodes.free_count
  require("cprof.dump").write(path, {
    meta = { timer = "counter", unit = 1, bias = 0, start_time = 1, total_time = 4, pid = 7,
             tree_cap = 100, tree_folded = 0, dropped = 0, memory = true },
    frames = g(4, { kind = { "main", "Lua", "Lua", "Lua" }, file = { "m.lua", "m.lua", "m.lua", "m.lua" },
                    line = { 0, 1, 2, 3 }, lastline = { 9, 1, 2, 3 }, name = { "<main chunk>", "a", "b", "c" },
                    ncalls = { 1, 1, 1, 1 }, pcalls = { 1, 1, 1, 1 }, tottime = { 1, 1, 1, 1 },
                    cumtime = { 4, 1, 1, 1 } }),
    edges = g(3, { caller = { 1, 1, 1 }, callee = { 2, 3, 4 }, ncalls = { 1, 1, 1 }, pcalls = { 1, 1, 1 },
                   tottime = { 1, 1, 1 }, cumtime = { 1, 1, 1 } }),
    nodes = nodes,
  })
end

describe("cprof-stats' memory views", function()
  local env, why = S.lua54_env(ROOT)
  if not env or not require("cprof.core").write_dump then
    pending("cprof-stats specs: " .. (why or "cprof.core has no write_dump"))
    return
  end

  describe("--memory-types, --stacks and --leaks", function()
    local dir = S.new_dir()
    setup(function() contexts_dump(dir .. "/c.prof") end)
    teardown(function() S.remove_dir(dir) end)
    local function cli(args)
      return S.capture(("cd %s && %slua5.4 %s c.prof %s"):format(q(dir), env, q(SCRIPT), args))
    end
    local function ok(args)
      local out, err, status = cli(args)
      assert.are.equal("", err)
      assert.are.equal(0, status)
      return out
    end

    it("prints lifetimes with their units; --unit gives one unit to them all", function()
      assert.are.equal("Lua types allocated per function in c.prof (lifetimes of the blocks freed)\n\n"
        .. "   allocs     frees      live  type        life avg   life min   life max  function\n"
        .. "       10         4         6  (all)        1.00 ms     500 us    2.00 ms  m.lua:1(a)\n"
        .. "       10         4         6  table\n"
        .. "        5         5         0  (all)        5.00 us    1.00 us    12.0 us  m.lua:2(b)\n"
        .. "        5         5         0  table\n"
        .. "        2         0         2  (all)                                       m.lua:3(c)\n"
        .. "        2         0         2  table\n\n", ok("--memory-types"))
      local out = ok("--memory-types -u us")
      assert.matches("^Lua types allocated per function in c.prof %(lifetimes of the blocks freed, in us%)\n", out)
      assert.matches("\n       10         4         6  %(all%)       1000.000    500.000   2000.000  m.lua:1%(a%)\n", out)
      assert.matches("\n        5         5         0  %(all%)          5.000      1.000     12.000  m.lua:2%(b%)\n", out)
      out = ok("--memory --stacks 2")
      assert.matches("\n      lifetime avg 1.00 ms, min 500 us, max 2.00 ms\n      m.lua:1%(a%)\n", out)
      assert.matches("\n      lifetime avg 5.00 us, min 1.00 us, max 12.0 us\n      m.lua:2%(b%)\n", out)
      out = ok("--memory --stacks 1 --unit=ms")
      assert.matches("\n      lifetime avg 1.000, min 0.500, max 2.000 ms\n", out)
    end)

    it("--sort by a memory key prints the table of memory columns it sorts by", function()
      local out = ok("--sort live")
      assert.matches("\n   Ordered by: live bytes\n\n   allocs        bytes     frees   live bytes      min      max"
        .. " filename:lineno%(function%)\n       10          560         4          336       56       56"
        .. " m.lua:1%(a%)\n        2          112         0          112       56       56 m.lua:3%(c%)\n", out)
      assert.is_nil(out:find("== kmemstat", 1, true)) -- the allocator's reports are --memory's
      -- asked for, the time table is printed as it is, sorted by live bytes
      out = ok("--sort live --stats")
      assert.matches("\n   Ordered by: live bytes\n\n   ncalls  tottime", out)
      assert.is_nil(out:find("live bytes      min", 1, true))
    end)

    it("--limit cuts the rows of --memory-types and --leaks, as it cuts the table's", function()
      local out = ok("--memory-types -l 2")
      assert.matches("^Lua types allocated per function in c.prof %(lifetimes of the blocks freed%); 2 of 3"
        .. " functions\n", out)
      assert.matches("m.lua:2%(b%)\n        5         5         0  table\n\n$", out)
      out = ok("--memory-types -l1 --limit 0.5")
      assert.matches("; 1 of 3 functions\n", out)
      assert.is_nil(out:find("m.lua:2(b)", 1, true))
      out = ok("--leaks --limit 1")
      assert.matches("^Leaks in c.prof: blocks still live when the profile was written, by allocation"
        .. " context %(1 of 2%)\n", out)
      assert.matches("\n      m.lua:1%(a%)\n", out)
      assert.is_nil(out:find("m.lua:3(c)", 1, true))
      for args, msg in pairs({ ["--leaks -u ms"] = "option --unit does not go with --leaks",
                               ["--memory --stacks 2 -l 1"] = "option --limit does not go with --stacks",
                               ["-u ms"] = "option --unit goes with --lines, --diff, --memory-types or"
                                 .. " --memory --stacks" }) do
        local o, err, status = cli(args)
        assert.are.equal(2, status, args)
        assert.are.equal("", o, args)
        assert.are.equal("cprof-stats: " .. msg .. "\n", err, args)
      end
    end)
  end)

  describe("--memory-series", function()
    local dir = S.new_dir()
    teardown(function() S.remove_dir(dir) end)
    local function cli(args)
      return S.capture(("cd %s && %slua5.4 %s %s"):format(q(dir), env, q(SCRIPT), args))
    end

    -- The files of the rows, in the order printed.
    local function rows(out)
      local files = {}
      for line in out:gmatch("[^\n]+") do
        local i, file = line:match("^ +(%d+) .*  (%S+)$")
        if i then files[tonumber(i)] = file end
      end
      return files
    end

    it("orders the dumps as they were taken, whatever the shell's order of their names", function()
      -- live dumps of one profile named with %n, unpadded (what older cprofs wrote) and padded
      for n = 1, 12 do series_dump(("%s/srv.%d.prof"):format(dir, n), 1000, 100 * n) end
      -- the shell's order: 1, 10, 11, 12, 2, ...
      local out, err, status = cli("--memory-series srv.*.prof")
      assert.are.equal(0, status, err)
      local want = {}
      for n = 1, 12 do want[n] = ("srv.%d.prof"):format(n) end
      assert.are.same(want, rows(out))
      assert.matches("^Memory over 12 dumps in the order they were taken", out)
      -- the live bytes charged grow by 100 from one to the next, never from 10 to 2
      for n = 1, 12 do
        assert.matches(("\n +%d +%%- [-%% ]+ %d +srv%%.%d%%.prof\n"):format(n, 100 * n, n), out)
      end
      -- padded names mixed in, and a second profile started earlier: its dumps come first
      series_dump(dir .. "/old.07.prof", 500, 50)
      series_dump(dir .. "/old.7.prof", 500, 60)
      series_dump(dir .. "/old.10.prof", 500, 70)
      out, err, status = cli("--memory-series srv.10.prof srv.9.prof old.10.prof old.7.prof old.07.prof")
      assert.are.equal(0, status, err)
      assert.are.same({ "old.07.prof", "old.7.prof", "old.10.prof", "srv.9.prof", "srv.10.prof" }, rows(out))
    end)

    it("says why there is nothing to show for dumps without memory numbers, with status 1", function()
      series_dump(dir .. "/plain1.prof", 1000)
      series_dump(dir .. "/plain2.prof", 1000)
      local out, err, status = cli("--memory-series plain1.prof plain2.prof")
      assert.are.equal(1, status)
      assert.are.equal("", out)
      assert.are.equal("cprof-stats: nothing to show: none of the 2 dumps has memory numbers (make them"
        .. " with cprof's allocator installed: CPROF_MEMORY=1 with cprof.auto)\n", err)
      out, err, status = cli("--memory-series plain1.prof --export svg")
      assert.are.equal(1, status)
      assert.are.equal("", out)
      assert.are.equal("cprof-stats: nothing to show: the dump has no memory numbers (make it with"
        .. " cprof's allocator installed: CPROF_MEMORY=1 with cprof.auto)\n", err)
      -- one dump with memory among them is a series: the others' cells are "-"
      series_dump(dir .. "/mem.prof", 1000, 64)
      out, err, status = cli("--memory-series plain1.prof mem.prof")
      assert.are.equal(0, status, err)
      assert.matches("\n +1 +%- [^\n]*  mem%.prof\n", out)
    end)
  end)
end)
