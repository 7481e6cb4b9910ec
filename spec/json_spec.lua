-- cprof.report.json: the document cprof-stats --json prints (read back with a small JSON decoder
-- written here).
local json = require "cprof.report.json"
local stats = require "cprof.stats"

---------------------------------------------------------------------------
-- A small strict JSON decoder (RFC 8259): objects, arrays, strings with every escape
-- (surrogate pairs included), numbers, true, false, null (as json.null).
---------------------------------------------------------------------------

local function utf8_char(cp)
  if cp < 0x80 then return string.char(cp) end
  if cp < 0x800 then
    return string.char(0xC0 + math.floor(cp / 64), 0x80 + cp % 64)
  end
  if cp < 0x10000 then
    return string.char(0xE0 + math.floor(cp / 4096), 0x80 + math.floor(cp / 64) % 64, 0x80 + cp % 64)
  end
  return string.char(0xF0 + math.floor(cp / 262144), 0x80 + math.floor(cp / 4096) % 64,
    0x80 + math.floor(cp / 64) % 64, 0x80 + cp % 64)
end

local function decode(s)
  local pos = 1
  local function fail(msg) error(("json: at %d: %s"):format(pos, msg), 0) end
  local function ws() pos = s:find("[^ \t\r\n]", pos) or #s + 1 end
  local value
  local function str()
    pos = pos + 1
    local out = {}
    while true do
      local c = s:sub(pos, pos)
      if c == "" then fail("unterminated string") end
      if c == '"' then pos = pos + 1; break end
      if c:byte() < 32 then fail("control character in a string") end
      if c == "\\" then
        local e = s:sub(pos + 1, pos + 1)
        local simple = { ['"'] = '"', ["\\"] = "\\", ["/"] = "/", b = "\b", f = "\f", n = "\n",
                         r = "\r", t = "\t" }
        if simple[e] then
          out[#out + 1] = simple[e]; pos = pos + 2
        elseif e == "u" then
          local h = s:sub(pos + 2, pos + 5)
          if not h:match("^%x%x%x%x$") then fail("bad \\u escape") end
          local cp = tonumber(h, 16)
          pos = pos + 6
          if cp >= 0xD800 and cp <= 0xDBFF then
            local h2 = s:match("^\\u(%x%x%x%x)", pos)
            if not h2 then fail("lone surrogate") end
            cp = 0x10000 + (cp - 0xD800) * 1024 + (tonumber(h2, 16) - 0xDC00)
            pos = pos + 6
          end
          out[#out + 1] = utf8_char(cp)
        else
          fail("bad escape")
        end
      else
        out[#out + 1] = c; pos = pos + 1
      end
    end
    return table.concat(out)
  end
  value = function()
    ws()
    local c = s:sub(pos, pos)
    if c == "{" then
      pos = pos + 1
      local obj, keys = {}, {}
      ws()
      if s:sub(pos, pos) == "}" then pos = pos + 1; return obj, keys end
      while true do
        ws()
        if s:sub(pos, pos) ~= '"' then fail("object key expected") end
        local k = str()
        ws()
        if s:sub(pos, pos) ~= ":" then fail("':' expected") end
        pos = pos + 1
        obj[k] = value()
        keys[#keys + 1] = k
        ws()
        local d = s:sub(pos, pos)
        pos = pos + 1
        if d == "}" then return obj, keys end
        if d ~= "," then fail("',' or '}' expected") end
      end
    elseif c == "[" then
      pos = pos + 1
      local arr = { n = 0 }
      ws()
      if s:sub(pos, pos) == "]" then pos = pos + 1; return arr end
      while true do
        arr.n = arr.n + 1
        arr[arr.n] = value()
        ws()
        local d = s:sub(pos, pos)
        pos = pos + 1
        if d == "]" then return arr end
        if d ~= "," then fail("',' or ']' expected") end
      end
    elseif c == '"' then
      return str()
    elseif s:sub(pos, pos + 3) == "true" then pos = pos + 4; return true
    elseif s:sub(pos, pos + 4) == "false" then pos = pos + 5; return false
    elseif s:sub(pos, pos + 3) == "null" then pos = pos + 4; return json.null
    else
      -- -?(0|[1-9]digits*)(.digits+)?([eE][+-]?digits+)?
      local int = s:match("^%-?0", pos) or s:match("^%-?[1-9]%d*", pos)
      if not int then fail("bad value") end
      local num = int
      local frac = s:match("^%.%d+", pos + #num)
      if frac then num = num .. frac end
      local exp = s:match("^[eE][-+]?%d+", pos + #num)
      if exp then num = num .. exp end
      pos = pos + #num
      if num:find("[.eE]") then return tonumber(num) + 0.0 end
      return math.tointeger and math.tointeger(tonumber(num)) or tonumber(num)
    end
  end
  local v, keys = value()
  ws()
  if pos <= #s then fail("text after the value") end
  return v, keys
end

describe("the --json document", function()
  local function edge(nc, cc, tt, ct) return { ncalls = nc, pcalls = cc, tottime = tt, cumtime = ct } end
  local function data()
    return { entries = {
      { file = "main.lua", line = 1, name = "main", what = "Lua", ncalls = 1, pcalls = 1,
        tottime = 0.010, cumtime = 0.100 },
      { file = "main.lua", line = 5, name = "work", what = "Lua", ncalls = 1, pcalls = 1,
        tottime = 0.020, cumtime = 0.090, callers = { [1] = edge(1, 1, 0.020, 0.090) } },
      { file = "main.lua", line = 10, name = "fib", what = "Lua", ncalls = 9, pcalls = 3,
        tottime = 0.060, cumtime = 0.060,
        callers = { [2] = edge(3, 3, 0.030, 0.060), [3] = edge(6, 4, 0.030, 0.030) } },
      { file = "~", line = 0, name = "string.rep", what = "C", ncalls = 2, pcalls = 2,
        tottime = 0.010, cumtime = 0.010, callers = { [2] = edge(2, 2, 0.010, 0.010) } },
      { file = "idle.lua", line = 3, name = "never", what = "Lua", ncalls = 0, pcalls = 0,
        tottime = 0, cumtime = 0 },
    } }
  end

  it("has the exact text for a small fixed profile (C names sort first under 'name': '<')", function()
    local st = stats.new({ entries = { data().entries[1], data().entries[4] } }):sort_stats("name")
    assert.are.equal('{"files":[],"total_calls":3,"primitive_calls":3,"total_time":0.02,'
      .. '"order":"function name","functions":2,"restrictions":[],"rows":['
      .. '{"file":"~","line":0,"name":"string.rep","what":"C","stdname":"{string.rep}",'
      .. '"ncalls":2,"pcalls":2,"tottime":0.01,"percall_tottime":0.005,"cumtime":0.01,'
      .. '"percall_cumtime":0.005},'
      .. '{"file":"main.lua","line":1,"name":"main","what":"Lua","stdname":"main.lua:1(main)",'
      .. '"ncalls":1,"pcalls":1,"tottime":0.01,"percall_tottime":0.01,"cumtime":0.1,'
      .. '"percall_cumtime":0.1}]}\n', json.stats_json(st, {}))
  end)

  it("holds the rows print_stats prints, in order, with the restrictions' effect", function()
    local st = stats.new(data()):sort_stats("cumulative")
    local doc, keys = decode(json.stats_json(st, { callers = true, callees = true }, 4, "fib|work|nothing", "[bad"))
    assert.are.same({ "files", "total_calls", "primitive_calls", "total_time", "order", "functions",
                      "restrictions", "rows" }, keys)
    assert.are.equal(13, doc.total_calls)
    assert.are.equal(7, doc.primitive_calls)
    assert.are.equal("cumulative time", doc.order)
    assert.are.equal(5, doc.functions)
    assert.are.equal(3, doc.restrictions.n)
    assert.are.same({ restriction = 4, from = 5, to = 4, invalid = false }, doc.restrictions[1])
    assert.are.same({ restriction = "fib|work|nothing", from = 4, to = 2, invalid = false }, doc.restrictions[2])
    assert.are.same({ restriction = "[bad", from = 2, to = 2, invalid = true }, doc.restrictions[3])
    assert.are.equal(2, doc.rows.n)
    local work, fib = doc.rows[1], doc.rows[2]
    assert.are.equal("main.lua:5(work)", work.stdname)
    assert.are.equal("main.lua:10(fib)", fib.stdname)
    assert.are.equal(9, fib.ncalls)
    assert.are.equal(3, fib.pcalls)
    assert.are.equal(0.06, fib.tottime)
    assert.are.equal(0.06 / 9, fib.percall_tottime)
    assert.are.equal(0.06 / 3, fib.percall_cumtime)
    -- callers in pstats' order: main.lua:5 before main.lua:10
    assert.are.equal(2, fib.callers.n)
    assert.are.same({ file = "main.lua", line = 5, name = "work", stdname = "main.lua:5(work)",
                      ncalls = 3, pcalls = 3, tottime = 0.03, cumtime = 0.06 }, fib.callers[1])
    assert.are.equal(6, fib.callers[2].ncalls)
    assert.are.equal(4, fib.callers[2].pcalls)
    -- work's callees: fib, then the C function (file '~' last), its name without braces
    assert.are.equal(2, work.callees.n)
    assert.are.equal("main.lua:10(fib)", work.callees[1].stdname)
    assert.are.same({ file = "~", line = 0, name = "string.rep", stdname = "{string.rep}",
                      ncalls = 2, pcalls = 2, tottime = 0.01, cumtime = 0.01 }, work.callees[2])
  end)

  it("writes strings as JSON strings: '/' as it is, bytes that are not UTF-8 as U+FFFD", function()
    local st = stats.new({ entries = {
      { file = "/src/caf\233.lua", line = 1, name = 'say"hi"\n\\', what = "Lua", ncalls = 1 },
      { file = "/src/h\195\169.lua", line = 2, name = "ok\127\1", what = "Lua", ncalls = 1 },
    } })
    local out = json.stats_json(st, {})
    -- the rule of every file cprof writes (cprof.sanitize), not a guess at Latin-1
    assert.truthy(out:find('{"file":"/src/caf\239\191\189.lua","line":1,"name":"say\\"hi\\"\\n\\\\",', 1, true))
    assert.truthy(out:find('{"file":"/src/h\195\169.lua","line":2,"name":"ok\\u007f\\u0001",', 1, true))
    local doc = decode(out)
    assert.are.equal("/src/caf\239\191\189.lua", doc.rows[1].file)
    assert.are.equal('say"hi"\n\\', doc.rows[1].name)
    assert.are.equal("/src/h\195\169.lua", doc.rows[2].file)
    assert.are.equal("ok\127\1", doc.rows[2].name)
  end)

  it("writes numbers that read back as the same double, NaN and the infinities as null", function()
    local st = stats.new({ entries = {
      { file = "a.lua", line = 1, name = "f", what = "Lua", ncalls = 3, tottime = 0.1 + 0.2, cumtime = 0 / 0 },
      { file = "b.lua", line = 2, name = "g", what = "Lua", ncalls = 1, tottime = math.huge, cumtime = 1e300 },
    } })
    local out = json.stats_json(st, {})
    assert.truthy(out:find('"tottime":0.30000000000000004,', 1, true))
    assert.truthy(out:find('"cumtime":null,"percall_cumtime":null}', 1, true))
    local doc = decode(out)
    assert.are.equal(0.1 + 0.2, doc.rows[1].tottime)
    assert.are.equal((0.1 + 0.2) / 3, doc.rows[1].percall_tottime)
    assert.are.equal(json.null, doc.rows[2].tottime)
    assert.are.equal(1e300, doc.rows[2].cumtime)
  end)

  it("writes null for per-call values of functions never called, and no order when unsorted", function()
    local doc = decode(json.stats_json(stats.new(data()), {}, "never"))
    assert.are.equal(json.null, doc.order)
    assert.are.equal(json.null, doc.rows[1].percall_tottime)
    assert.are.equal(json.null, doc.rows[1].percall_cumtime)
    assert.is_nil(doc.rows[1].callers)
  end)
end)

