-- Sorting of cprof.stats: every sort key, its abbreviations and the "Ordered by" line, as in
-- CPython 3.11's pstats (shared/reference/pstats/SPEC.md). The layout of the rows is in
-- stats_layout_spec.lua.
--
-- Run: lua5.4 /usr/bin/busted -p _spec --lpath='lua/?.lua;lua/?/init.lua' spec/stats_sort_spec.lua

local stats = require("cprof.stats")
local collector = require("spec.support").collector

-- Four functions that every key orders differently.
local function sort_data()
  return { entries = {
    { file = "b.lua", line = 10, name = "alpha", what = "Lua", ncalls = 5, pcalls = 5,
      tottime = 0.5, cumtime = 2.0 },                                              -- A
    { file = "a.lua", line = 9, name = "beta", what = "Lua", ncalls = 10, pcalls = 2,
      tottime = 0.1, cumtime = 3.0 },                                              -- B
    { file = "a.lua", line = 20, name = "alpha", what = "Lua", ncalls = 1, pcalls = 1,
      tottime = 0.9, cumtime = 0.9 },                                              -- C
    { file = "~", line = 0, name = "string.rep", what = "C", ncalls = 3, pcalls = 3,
      tottime = 0.2, cumtime = 0.2 },                                              -- D
  } }
end
local LABEL = {
  ["b.lua:10(alpha)"] = "A", ["a.lua:9(beta)"] = "B", ["a.lua:20(alpha)"] = "C", ["{string.rep}"] = "D",
}
local function order_of(st)
  local s = {}
  for _, row in ipairs(st:entries()) do s[#s + 1] = LABEL[row.stdname] end
  return table.concat(s)
end
local function sorted_by(...)
  local st = stats.new(sort_data(), { stream = collector() })
  st:sort_stats(...)
  return order_of(st), st.sort_type
end

-- The "Ordered by" line printed for a sort.
local function ordered_by(...)
  local out = collector()
  stats.new(sort_data(), { stream = out }):sort_stats(...):print_stats()
  return out.text():match("\n   Ordered by: ([^\n]*)\n") or out.text():match("\n   (Random[^\n]*)\n")
end

describe("sort_stats", function()
  local cases = {
    { "calls", "BADC", "call count" },
    { "ncalls", "BADC", "call count" },
    { "cumulative", "BACD", "cumulative time" },
    { "cumtime", "BACD", "cumulative time" },
    { "file", "BCAD", "file name" },
    { "filename", "BCAD", "file name" },
    { "module", "BCAD", "file name" },
    { "pcalls", "ADBC", "primitive call count" },
    { "line", "DBAC", "line number" },
    { "name", "DACB", "function name" },        -- '<string.rep>' < 'alpha'; ties keep order
    { "nfl", "DCAB", "name/file/line" },
    { "stdname", "CBAD", "standard name" },     -- string order: 'a.lua:20' < 'a.lua:9'; '{' last
    { "time", "CADB", "internal time" },
    { "tottime", "CADB", "internal time" },
  }
  for _, c in ipairs(cases) do
    it("key '" .. c[1] .. "'", function()
      local order, text = sorted_by(c[1])
      assert.are.equal(c[2], order)
      assert.are.equal(c[3], text)
      assert.are.equal(c[3], ordered_by(c[1]))
    end)
  end

  it("SortKey constants", function()
    assert.are.equal("BADC", (sorted_by(stats.SortKey.CALLS)))
    assert.are.equal("BACD", (sorted_by(stats.SortKey.CUMULATIVE)))
    assert.are.equal("BCAD", (sorted_by(stats.SortKey.FILENAME)))
    assert.are.equal("DBAC", (sorted_by(stats.SortKey.LINE)))
    assert.are.equal("DACB", (sorted_by(stats.SortKey.NAME)))
    assert.are.equal("DCAB", (sorted_by(stats.SortKey.NFL)))
    assert.are.equal("ADBC", (sorted_by(stats.SortKey.PCALLS)))
    assert.are.equal("CBAD", (sorted_by(stats.SortKey.STDNAME)))
    assert.are.equal("CADB", (sorted_by(stats.SortKey.TIME)))
  end)

  it("several keys, texts joined with ', '", function()
    local order, text = sorted_by("file", "line")
    assert.are.equal("BCAD", order)
    assert.are.equal("file name, line number", text)
    order, text = sorted_by("name", "time")
    assert.are.equal("DCAB", order)
    assert.are.equal("function name, internal time", text)
    order, text = sorted_by("file", "calls", "stdname")
    assert.are.equal("BCAD", order)
    assert.are.equal("file name, call count, standard name", text)
    assert.are.equal("file name, line number", ordered_by("fil", "l"))
  end)

  it("legacy integers -1, 0, 1, 2", function()
    assert.are.same({ "CBAD", "standard name" }, { sorted_by(-1) })
    assert.are.same({ "BADC", "call count" }, { sorted_by(0) })
    assert.are.same({ "CADB", "internal time" }, { sorted_by(1) })
    assert.are.same({ "BACD", "cumulative time" }, { sorted_by(2) })
  end)

  it("rejects other integers and several integers", function()
    local st = stats.new(sort_data())
    assert.has_error(function() st:sort_stats(3) end)
    assert.has_error(function() st:sort_stats(-2) end)
    local ok, err = pcall(st.sort_stats, st, 1, 2)
    assert.is_false(ok)
    assert.truthy(tostring(err):find("unknown sort key 1", 1, true))
    ok, err = pcall(st.sort_stats, st, 3)
    assert.truthy(tostring(err):find("valid keys: calls, ncalls, cumtime", 1, true))
  end)

  it("rejects mixed argument types like CPython", function()
    local st = stats.new(sort_data())
    local ok, err = pcall(st.sort_stats, st, "time", 1)
    assert.is_false(ok)
    assert.truthy(tostring(err):find("Can't have mixed argument type", 1, true))
    ok, err = pcall(st.sort_stats, st, 2, "calls")
    assert.is_false(ok)
    assert.truthy(tostring(err):find("Can't have mixed argument type", 1, true))
  end)

  it("rejects non-string, non-number keys", function()
    local st = stats.new(sort_data())
    assert.has_error(function() st:sort_stats({}) end)
    assert.has_error(function() st:sort_stats(nil) end)
    assert.has_error(function() st:sort_stats(true) end)
  end)

  it("no argument: random listing order (insertion order)", function()
    local st = stats.new(sort_data(), { stream = collector() })
    st:sort_stats("time")
    st:sort_stats()
    assert.are.equal("ABCD", order_of(st))
    assert.are.equal("Random listing order was used", ordered_by())
  end)

  it("an unsorted Stats lists in entries order", function()
    local st = stats.new(sort_data())
    assert.are.equal("ABCD", order_of(st))
  end)

  it("ties keep the entries order, under every key", function()
    local data = { entries = {} }
    for i = 1, 20 do
      data.entries[i] = { file = "same.lua", line = 1, name = "f" .. string.char(64 + i),
                          what = "Lua", ncalls = 2, pcalls = 1, tottime = 0.5, cumtime = 1.0 }
    end
    for _, k in ipairs({ "calls", "cumulative", "file", "line", "pcalls", "time" }) do
      local st = stats.new(data):sort_stats(k)
      local names = {}
      for _, r in ipairs(st:entries()) do names[#names + 1] = r.name end
      assert.are.equal("fAfBfCfDfEfFfGfHfIfJfKfLfMfNfOfPfQfRfSfT", table.concat(names), k)
    end
    -- reversed: exact reversal of the sorted list, as list.reverse()
    local st = stats.new(data):sort_stats("time"):reverse_order()
    assert.are.equal("fT", st:entries()[1].name)
    assert.are.equal("fA", st:entries()[20].name)
  end)

  it("stable multi-key sort (ties on the first key decided by the second)", function()
    local data = { entries = {
      { file = "x.lua", line = 3, name = "a", ncalls = 1, pcalls = 1, tottime = 1, cumtime = 1 },
      { file = "x.lua", line = 1, name = "b", ncalls = 2, pcalls = 2, tottime = 1, cumtime = 1 },
      { file = "x.lua", line = 2, name = "c", ncalls = 2, pcalls = 2, tottime = 2, cumtime = 1 },
    } }
    local function names(st)
      local s = ""
      for _, r in ipairs(st:entries()) do s = s .. r.name end
      return s
    end
    assert.are.equal("bca", names(stats.new(data):sort_stats("calls", "line")))
    assert.are.equal("cba", names(stats.new(data):sort_stats("calls", "time")))
    assert.are.equal("cab", names(stats.new(data):sort_stats("time", "name")))
  end)

  it("reverse_order only when sorted, and returns self", function()
    local st = stats.new(sort_data())
    assert.are.equal(st, st:reverse_order())
    assert.are.equal("ABCD", order_of(st))
    assert.are.equal(st, st:sort_stats("calls"):reverse_order())
    assert.are.equal("CDAB", order_of(st))
    st:reverse_order()
    assert.are.equal("BADC", order_of(st))
  end)

  it("NaN times do not break sorting", function()
    local data = sort_data()
    data.entries[2].tottime = 0 / 0
    local st = stats.new(data)
    assert.has_no.errors(function() st:sort_stats("time") end)
    assert.are.equal(4, #st:entries())
  end)
end)

describe("sort key abbreviations", function()
  local KEYS = { "calls", "cumtime", "cumulative", "filename", "line", "module", "name",
                 "ncalls", "nfl", "pcalls", "stdname", "time", "tottime" }
  local function meaning(word)
    local ok, st = pcall(function() return stats.new(sort_data()):sort_stats(word) end)
    if ok then return st.sort_type end
    return nil, st
  end

  it("accepts prefixes that are unambiguous in meaning", function()
    local accepted = {
      ["call count"] = { "ca", "cal", "call", "calls", "nc", "nca", "ncal", "ncall", "ncalls" },
      ["cumulative time"] = { "cu", "cum", "cumt", "cumti", "cumtim", "cumtime", "cumu", "cumul",
                              "cumula", "cumulat", "cumulati", "cumulativ", "cumulative" },
      ["file name"] = { "f", "fi", "fil", "file", "filen", "filena", "filenam", "filename",
                        "m", "mo", "mod", "modu", "modul", "module" },
      ["line number"] = { "l", "li", "lin", "line" },
      ["function name"] = { "na", "nam", "name" },
      ["name/file/line"] = { "nf", "nfl" },
      ["primitive call count"] = { "p", "pc", "pca", "pcal", "pcall", "pcalls" },
      ["standard name"] = { "s", "st", "std", "stdn", "stdna", "stdnam", "stdname" },
      ["internal time"] = { "t", "ti", "tim", "time", "to", "tot", "tott", "totti", "tottim", "tottime" },
    }
    local n = 0
    for text, words in pairs(accepted) do
      for _, w in ipairs(words) do
        assert.are.equal(text, (meaning(w)), "prefix " .. w)
        n = n + 1
      end
    end
    assert.are.equal(68, n)
  end)

  it("every prefix of every key is accepted except 'c' and 'n' (68 strings)", function()
    local seen, accepted, rejected = {}, 0, {}
    for _, k in ipairs(KEYS) do
      for i = 1, #k do
        local w = k:sub(1, i)
        if not seen[w] then
          seen[w] = true
          if meaning(w) then accepted = accepted + 1 else rejected[#rejected + 1] = w end
        end
      end
    end
    table.sort(rejected)
    assert.are.equal(68, accepted)
    assert.are.same({ "c", "n" }, rejected)
  end)

  it("'c' is ambiguous between calls and cumulative; the message lists the valid keys", function()
    local _, err = meaning("c")
    err = tostring(err)
    assert.truthy(err:find("ambiguous sort key 'c' (could be calls, cumtime, cumulative)", 1, true), err)
    assert.truthy(err:find("valid keys: calls, ncalls, cumtime, cumulative, filename, line, module, "
      .. "name, nfl, pcalls, stdname, time, tottime", 1, true), err)
  end)

  it("'n' is ambiguous between ncalls, name and nfl", function()
    local _, err = meaning("n")
    assert.truthy(tostring(err):find("ambiguous sort key 'n' (could be ncalls, name, nfl)", 1, true),
      tostring(err))
  end)

  it("rejects unknown keys, the empty string, wrong case and extra characters", function()
    for _, w in ipairs({ "", "x", "cumx", "timex", "calls ", "Calls", "TIME", "cumulatives", "fn" }) do
      local st, err = meaning(w)
      assert.is_nil(st, "accepted " .. w)
      assert.truthy(tostring(err):find("valid keys: calls,", 1, true), tostring(err))
    end
    local _, err = meaning("bogus")
    assert.truthy(tostring(err):find("unknown sort key 'bogus'", 1, true), tostring(err))
  end)

  it("a bad key in a list of keys is an error", function()
    local st = stats.new(sort_data())
    assert.has_error(function() st:sort_stats("time", "c") end)
    assert.has_no.errors(function() st:sort_stats("tot", "cu", "nf") end)
    assert.are.equal("internal time, cumulative time, name/file/line", st.sort_type)
  end)

  it("resolve_sort_key and sort_keys", function()
    local def = stats.resolve_sort_key("cum")
    assert.are.equal("cumulative time", def[3])
    local none, err = stats.resolve_sort_key("c")
    assert.is_nil(none)
    assert.truthy(err:find("ambiguous", 1, true))
    local keys = stats.sort_keys()
    assert.are.equal(13, #keys)
    assert.are.same({ key = "calls", description = "call count" }, keys[1])
    assert.are.same({ key = "tottime", description = "internal time" }, keys[13])
  end)
end)
