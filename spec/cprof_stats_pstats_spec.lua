-- cprof-stats on Python pstats files, --json, and Stats:dump_stats round trips.
local stats = require "cprof.stats"
local core = require "cprof.core"
local W = require "spec.pstats_writer"

local S = require "spec.support"
local read_file, q, tmpname, collector = S.read_file, S.q, S.tmpname, S.collector

local ROOT = S.absolute(S.ROOT)
local SCRIPT = ROOT .. "/bin/cprof-stats"

-- A reference file, by its absolute path.
local function ref_path(sub, name) return S.absolute(S.ref_path(sub, name)) end

local function lua54_env() return S.lua54_env(ROOT) end

local function cli(args)
  return S.capture(("%slua5.4 %s %s"):format(assert(lua54_env()), q(SCRIPT), args))
end

-- Every number of every function and edge of two Stats, compared exactly.
local function assert_same_numbers(a, b)
  assert.are.equal(#a.order, #b.order)
  for _, key in ipairs(a.order) do
    local ra, rb = a.stats[key], b.stats[key]
    assert.is_not_nil(rb, tostring(key))
    for i = 1, 4 do assert.are.equal(ra[i], rb[i], tostring(key)) end
    local n = 0
    for ck, e in pairs(ra[5]) do
      n = n + 1
      local f = rb[5][ck]
      assert.is_not_nil(f, tostring(ck) .. " -> " .. tostring(key))
      for i = 1, 4 do assert.are.equal(e[i], f[i]) end
    end
    for _ in pairs(rb[5]) do n = n - 1 end
    assert.are.equal(0, n)
  end
  assert.are.equal(a.total_calls, b.total_calls)
  assert.are.equal(a.prim_calls, b.prim_calls)
  assert.are.equal(a.total_tt, b.total_tt)
end

describe("Stats:dump_stats", function()
  if not core.write_dump then return pending("cprof.core has no write_dump") end

  local function fib(n) if n < 2 then return n end return fib(n - 1) + fib(n - 2) end
  local function program() local t = 0 for _ = 1, 3 do t = t + fib(6) .. "" end return t end

  it("round-trips a Stats after add and strip_dirs: every number identical", function()
    local a, b = tmpname(".prof"), tmpname(".prof")
    local p = require("cprof").Profile { timer = "counter" }
    p:runcall(program)
    p:dump_stats(a)
    p:runcall(program)
    p:dump_stats(b)
    local pst = W.write(tmpname(".pstats"), read_file(ref_path("samples/", "sample.pstats")))
    local st = stats.new(a)
    st:add(b, pst)
    st:strip_dirs()
    local out = tmpname(".prof")
    assert.are.equal(st, st:dump_stats(out))
    local back = stats.new(out)
    assert_same_numbers(st, back)
    -- the same report, apart from the file lines
    local t1, t2 = collector(), collector()
    st.stream, back.stream = t1, t2
    st:sort_stats("cumulative", "name"):print_stats():print_callers()
    back:sort_stats("cumulative", "name"):print_stats():print_callers()
    assert.are.equal(t1.text():gsub("^.-\n\n", ""), (t2.text():gsub("^.-\n\n", "")))
    for _, f in ipairs({ a, b, pst, out }) do os.remove(f) end
  end)

  it("raises cprof: <path>: <reason> when it cannot write", function()
    local ok, err = pcall(stats.new(nil).dump_stats, stats.new(nil), "/nonexistent-dir/x.prof")
    assert.is_false(ok)
    assert.matches("^cprof: /nonexistent%-dir/x%.prof: ", err)
  end)
end)

describe("cprof-stats on pstats files", function()
  local ok_env, why = lua54_env()
  if not ok_env then return pending(why) end

  it("prints sample.pstats as Python's pstats does (golden_sample_pstats.txt, file line aside)", function()
    local want = read_file(ref_path("golden/", "golden_sample_pstats.txt"))
    local path = ref_path("samples/", "sample.pstats")
    local out, err, status = cli(q(path) .. " --stats --callers --callees")
    assert.are.equal("", err)
    assert.are.equal(0, status)
    assert.matches("^%a%a%a %a%a%a [ %d]%d %d%d:%d%d:%d%d %d%d%d%d    " .. path:gsub("%p", "%%%0") .. "\n", out)
    assert.are.equal(want:gsub("^[^\n]*\n", ""), (out:gsub("^[^\n]*\n", "")))
    -- without options: the table of functions alone, by cumulative time
    local table_only = cli(q(path))
    assert.are.equal(want:match("^[^\n]*\n(.-\n\n\n)"), (table_only:gsub("^[^\n]*\n", "")))
  end)

  it("loads handmade.pstats", function()
    local out, err, status = cli(q(ref_path("samples/", "handmade.pstats")) .. " --sort calls --limit 1")
    assert.are.equal(0, status, err)
    assert.matches("\n3000000000    0%.000    0%.000    0%.000    0%.000 main%.lua:99%(huge%)\n", out)
  end)

  it("bad.pstats: one line on stderr naming the file and the byte, exit status 2", function()
    local path = ref_path("samples/", "bad.pstats")
    local out, err, status = cli(q(path))
    assert.are.equal(2, status)
    assert.are.equal("", out)
    assert.are.equal("cprof-stats: " .. path .. ": byte 24: not a pstats profile: invalid timing data"
      .. " for main.lua:1(main): a 3-tuple, expected (cc, nc, tt, ct, callers)\n", err)
    -- a file cut short
    local cut = W.write(tmpname(".pstats"), read_file(ref_path("samples/", "sample.pstats")):sub(1, 100))
    out, err, status = cli(q(cut))
    assert.are.equal(2, status)
    assert.matches("^cprof%-stats: " .. cut:gsub("%p", "%%%0") .. ": byte %d+: [^\n]+\n$", err)
    os.remove(cut)
  end)

  it("adds a cprof dump and a pstats file", function()
    if not core.write_dump then return pending("cprof.core has no write_dump") end
    local path = ref_path("samples/", "sample.pstats")
    local d = tmpname(".prof")
    stats.new(path):dump_stats(d)
    local out, err, status = cli(q(d) .. " " .. q(path) .. " --sort calls")
    assert.are.equal(0, status, err)
    assert.matches("         26 function calls %(14 primitive calls%) in 0%.200 seconds", out)
    assert.matches("\n     18/6 ", out)
    os.remove(d)
  end)

  it("--json prints the selected rows as JSON", function()
    local path = ref_path("samples/", "sample.pstats")
    local out, err, status = cli(q(path) .. " --json --sort tottime --limit 2 --callers")
    assert.are.equal(0, status, err)
    assert.matches('^{"files":%["[^"]*sample%.pstats"%],"total_calls":13,"primitive_calls":7,', out)
    assert.matches('"order":"internal time","functions":4,'
      .. '"restrictions":%[{"restriction":2,"from":4,"to":2,"invalid":false}%],"rows":%[', out)
    assert.matches('"stdname":"main%.lua:10%(fib%)","ncalls":9,"pcalls":3,"tottime":0%.06,', out)
    assert.matches('"callers":%[{"file":"main%.lua","line":5,"name":"work","stdname":"main%.lua:5%(work%)",'
      .. '"ncalls":3,"pcalls":3,"tottime":0%.03,"cumtime":0%.06},', out)
    assert.not_matches('"callees"', out)
    assert.matches("}\n$", out)
    -- the same document as json.stats_json of the Stats
    local st = stats.new(path):sort_stats("tottime")
    assert.are.equal(require("cprof.report.json").stats_json(st, { callers = true }, 2), out)
  end)

  it("--prompt and --no-prompt need -i", function()
    local _, err, status = cli(q(ref_path("samples/", "sample.pstats")) .. " --no-prompt")
    assert.are.equal(2, status)
    assert.are.equal("cprof-stats: options --prompt and --no-prompt go with -i\n", err)
  end)

  it("--help lists the new options", function()
    local out = cli("--help")
    for _, opt in ipairs({ "--json", "--interactive", "--prompt", "--no-prompt" }) do
      assert.matches("\n  [%- %a,]*" .. opt:gsub("%-", "%%-"), out)
    end
    assert.matches("\n       cprof%-stats %-i %[FILE%]%.%.%.", out)
  end)
end)
