-- --focus and --hide on the call tree (issue 15, part 3, the report side), as pprof's options:
-- focus keeps the paths through a matching frame, hide takes matching frames out and charges
-- their own time to their callers.  A known tree under the counter timer (one tick per event),
-- so every number is exact.  Plain Lua 5.1 syntax: the same file runs under LuaJIT.
local cprof = require "cprof"
local export = require "cprof.export"
local S = require "spec.support"

-- main -> g -> h -> leaf, g -> leaf, main -> h -> leaf, main -> leaf
local function known()
  local p = cprof.Profile({ timer = "counter" })
  local function leaf() end
  local function h() leaf() end
  local function g() h(); leaf() end
  local function main() g(); h(); leaf() end
  p:enable(); main(); p:disable()
  return p:snapshot()
end

local function export_text(format, source, opts)
  local parts = {}
  export.export(format, source, { write = function(self, s)
    parts[#parts + 1] = s
    return self
  end }, opts)
  return table.concat(parts)
end

-- Folded lines with the file names taken out: "main;g;leaf 2".
local function folded(source, opts)
  local text = export_text("folded", source, opts)
  local lines = {}
  for line in text:gmatch("[^\n]+") do
    lines[#lines + 1] = (line:gsub("[^;]-:%d+%((%w+)%)", "%1"))
  end
  table.sort(lines)
  return lines
end

local function tree_text(d, opts)
  local parts = {}
  opts.min_percent = 0
  require("cprof.report.tree").write(export.model(d), function(s) parts[#parts + 1] = s end, opts)
  return (table.concat(parts):gsub("[^ ]-:%d+%((%w+)%)", "%1"))
end

describe("--hide", function()
  local d = known()

  it("charges a hidden frame's own time to its caller and merges the paths that become one", function()
    assert.same({ "main 6000000000", "main;g 5000000000", "main;g;leaf 2000000000",
      "main;leaf 2000000000" }, folded(d, { hide = "%(h%)" }))
    -- calls: a hidden function's calls leave with it
    assert.same({ "main 1", "main;g 1", "main;g;leaf 2", "main;leaf 2" },
      folded(d, { hide = { "%(h%)" }, weight = "calls" }))
  end)

  it("says so in the flame graph's subtitle", function()
    assert.matches("hidden: %%%(h%%%), nothing", export_text("svg", d, { hide = { "%(h%)", "nothing" } }))
  end)

  it("in the tree report: the same numbers, the total unchanged", function()
    local text = tree_text(d, { hide = { "%(h%)" } })
    assert.matches("15%.000000 seconds, 6 calls\nhidden: %%%(h%%%)\n", text)
    assert.matches("\n   15%.000000  100%.0%%    6%.000000             1  main\n", text)
    assert.matches("\n    7%.000000   46%.7%%    5%.000000             1    g\n", text)
    assert.matches("\n    2%.000000   13%.3%%    2%.000000             2      leaf\n", text)
    assert.matches("\n    2%.000000   13%.3%%    2%.000000             2    leaf\n", text)
    assert.matches("\n5 of 5 nodes shown\n", text)
  end)

  it("hides a root: its callees become roots, its own time goes nowhere", function()
    assert.same({ "g 3000000000", "g;h 2000000000", "g;h;leaf 1000000000", "g;leaf 1000000000",
      "h 2000000000", "h;leaf 1000000000", "leaf 1000000000" }, folded(d, { hide = { "main" } }))
  end)
end)

describe("--focus", function()
  local d = known()

  it("keeps the paths through a matching frame, as the PATTERN operands do", function()
    local want = { "main;g;h 2000000000", "main;g;h;leaf 1000000000", "main;h 2000000000",
      "main;h;leaf 1000000000" }
    assert.same(want, folded(d, { focus = "%(h%)" }))
    assert.same(want, folded(d, { patterns = { "%(h%)" } }))
  end)

  it("goes with --hide: focus on g, hide h", function()
    assert.same({ "main;g 5000000000", "main;g;leaf 2000000000" },
      folded(d, { focus = "%(g%)", hide = "%(h%)" }))
  end)

  it("in the tree report", function()
    local text = tree_text(d, { focus = { "%(h%)" } })
    assert.matches("only the paths through %%%(h%%%): 6%.000000 seconds %(40%.0%%%)", text)
    assert.matches("\n6 of 9 nodes shown\n", text)
  end)
end)

describe("Stats:print_tree", function()
  it("prints the tree report with focus and hide", function()
    local out = {}
    local st = require("cprof.stats").new(known(), { stream = { write = function(self, s)
      out[#out + 1] = s
      return self
    end } })
    assert.equal(st, st:print_tree({ hide = "%(h%)", min_percent = 0 }))
    local text = (table.concat(out):gsub("[^ ]-:%d+%((%w+)%)", "%1"))
    assert.matches("\n   15%.000000  100%.0%%    6%.000000             1  main\n", text)
    assert.matches("\n5 of 5 nodes shown\n", text)
  end)
end)

describe("cprof-stats --focus/--hide", function()
  local dir = S.new_dir()
  local path = dir .. "/known.prof"
  require("cprof.dump").write(path, known())
  teardown(function() S.remove_dir(dir) end)
  local function stats(args)
    return S.capture(("%s %s/bin/cprof-stats %s %s"):format(S.lua, S.q(S.ROOT), S.q(path), args))
  end

  it("apply to --tree and --export", function()
    local out, err, status = stats("--tree --min-percent 0 --hide '%(h%)' --hide nothing")
    assert.equal(0, status, err)
    assert.matches("hidden: %%%(h%%%), nothing", out)
    out, err, status = stats("--export folded --focus '%(h%)'")
    assert.equal(0, status, err)
    assert.equal(4, select(2, out:gsub("\n", "")))
  end)

  it("are refused where there is no call tree to work on", function()
    local _, err, status = stats("--hide h")
    assert.equal(2, status)
    assert.matches("options %-%-focus and %-%-hide go with %-%-tree or %-%-export", err)
    _, err, status = stats("--export pstats --hide h")
    assert.equal(2, status)
    assert.matches("pstats holds whole functions", err)
    _, err, status = stats("--tree --hide '('")
    assert.equal(2, status)
    assert.matches("bad pattern '%('", err)
  end)

  it("options name what is wrong", function()
    local ok, err = pcall(export_text, "folded", known(), { hide = { 1 } })
    assert.is_false(ok)
    assert.matches("option hide: item 1 is a number, not a pattern", err)
  end)
end)
