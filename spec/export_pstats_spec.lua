-- The pstats export read back by cprof and by CPython's pstats (the real reader).
local S = require "spec.support"
local X = require "spec.export_support"
local export = require "cprof.export"
local stats = require "cprof.stats"

local function rows(st)
  local out = {}
  for _, key in ipairs(st.order) do
    local r = st.stats[key]
    local callers = {}
    for ck, e in pairs(r[5]) do callers[stats.func_std_string(ck)] = { e[1], e[2], e[3], e[4] } end
    out[stats.func_std_string(key)] = { r[1], r[2], r[3], r[4], callers }
  end
  return out
end

-- pstats' table of functions as CPython prints it, without its first line (the file's name
-- and time), and the same as cprof-stats prints it: they must be equal.
local PY = [[
import pstats, sys
st = pstats.Stats(sys.argv[1])
st.sort_stats("cumulative", "name").print_stats()
st.print_callers()
]]

describe("pstats export", function()
  local tmp = X.tmp_files(after_each)

  it("reads back in cprof with every number equal, callers included", function()
    for _, d in ipairs({ X.sample(), X.sample(true), X.with_coroutine() }) do
      local path = tmp(".pstats")
      export.export("pstats", d, path)
      assert.equal("pstats", stats.file_kind(path))
      assert.same(rows(stats.new(d)), rows(stats.new(path)))
    end
  end)

  it("round-trips a live profile through a dump and back", function()
    local dump = X.live_dump(tmp(".prof"))
    local path = tmp(".pstats")
    export.export("pstats", dump, path)
    assert.same(rows(stats.new(dump)), rows(stats.new(path)))
    -- and a Stats written again from the pstats file gives the same bytes
    local again = tmp(".pstats")
    stats.new(path):export("pstats", again)
    assert.equal(S.read_file(path), S.read_file(again))
  end)

  it("writes the SPEC's sample dict: Lua keys (file, line, name), C keys ('~', 0, '<name>')", function()
    local py, why = X.reader("python3")
    if not py then return pending("pstats export against CPython: " .. why) end
    local path = tmp(".pstats")
    export.export("pstats", X.sample(), path)
    local out, err, status = X.run(py .. [[ -c 'import marshal, sys
d = marshal.load(open(sys.argv[1], "rb"))
for k in sorted(d): print(k, d[k])' ]] .. S.q(path))
    assert.equal(0, status, err)
    assert.equal(table.concat({
      "('main.lua', 1, 'main') (1, 1, 0.01, 0.1, {})",
      "('main.lua', 5, 'work') (1, 1, 0.02, 0.09, {('main.lua', 1, 'main'): (1, 1, 0.02, 0.09)})",
      "('main.lua', 10, 'fib') (3, 9, 0.06, 0.06, {('main.lua', 5, 'work'): (3, 3, 0.03, 0.06),"
        .. " ('main.lua', 10, 'fib'): (6, 4, 0.03, 0.03)})",
      "('~', 0, '<string.rep>') (2, 2, 0.01, 0.01, {('main.lua', 5, 'work'): (2, 2, 0.01, 0.01)})",
      "" }, "\n"), out)
  end)

  -- CPython's print_stats and print_callers of the pstats export of `dump`, and cprof-stats'
  -- of the dump itself, both without their first line (the file's name and time); or nil
  -- and why a reader is missing.
  local function both_printed(dump)
    local py, why = X.reader("python3")
    if not py then return nil, "pstats export against CPython: " .. why end
    local env, ewhy = S.lua54_env(S.ROOT)
    if not env then return nil, ewhy end
    local path = tmp(".pstats")
    export.export("pstats", dump, path)
    local script = tmp(".py")
    S.write_file(script, PY)
    local out, err, status = X.run(py .. " " .. S.q(script) .. " " .. S.q(path))
    assert.equal(0, status, err)
    local mine, merr, mstatus = S.capture(env .. "lua5.4 " .. S.q(S.ROOT .. "/bin/cprof-stats") .. " "
      .. S.q(dump) .. " --sort cumulative,name --stats --callers")
    assert.equal(0, mstatus, merr)
    -- cprof's own note under the totals (LuaJIT's compiler was off) is not pstats'
    local function body(t) return (t:gsub("^[^\n]*\n", ""):gsub("\n   cprof: [^\n]*\n\n", "\n", 1)) end
    return body(out), body(mine)
  end

  it("prints in CPython's pstats exactly as cprof-stats prints the dump", function()
    local python, mine = both_printed(X.live_dump(tmp(".prof")))
    if not python then return pending(mine) end
    assert.matches("function calls %(%d+ primitive calls%)", python)
    assert.matches("%(fib%)", python)
    assert.equal(mine, python)
  end)

  it("adds up functions with the same key, as cprof-stats does, and Python shows their sum", function()
    -- two chunks that are both [string "local x = 1..."]:0(<main chunk>), called 3 and 2 times
    local p = require("cprof").Profile({ timer = "counter" })
    local a = load("local x = 1\nreturn x")
    local b = load("local x = 1\nreturn x + 1")
    p:enable()
    for _ = 1, 3 do a() end
    for _ = 1, 2 do b() end
    p:disable()
    local dump = tmp(".prof")
    p:dump_stats(dump)
    local python, mine = both_printed(dump)
    if not python then return pending(mine) end
    assert.matches('\n +5 +[%d.]+ +[%d.]+ +[%d.]+ +[%d.]+ %[string "local x = 1..."%]:0%(<main chunk>%)\n',
      python)
    assert.equal(mine, python)
  end)

  it("writes call counts past 32 bits as marshal longs, and names that are not UTF-8 as U+FFFD", function()
    local d = X.sample()
    d.frames.ncalls[3] = 2 ^ 40 + 3
    d.frames.name[2] = "w\255rk"
    local path = tmp(".pstats")
    export.export("pstats", d, path)
    local back = rows(stats.new(path))
    assert.equal(2 ^ 40 + 3, back["main.lua:10(fib)"][2])
    assert.is_table(back["main.lua:5(w\239\191\189rk)"])
    local py, why = X.reader("python3")
    if not py then return pending("pstats export against CPython: " .. why) end
    local out, err, status = X.run(py .. [[ -c 'import pstats, sys
s = pstats.Stats(sys.argv[1])
print(s.stats[("main.lua", 10, "fib")][1], ascii([k[2] for k in s.stats if k[1] == 5]))' ]]
      .. S.q(path))
    assert.equal(0, status, err)
    assert.equal("1099511627779 ['w\\ufffdrk']\n", out)
  end)

  it("refuses a profile without a completed call (pstats cannot read an empty dict)", function()
    local d = X.sample()
    for i = 1, d.frames.n do d.frames.ncalls[i] = 0 end
    local ok, err = pcall(X.export, "pstats", d)
    assert.is_false(ok)
    assert.matches("pstats: the profile has no function that completed a call", err)
  end)
end)
