-- cprof.export: sources, the tree model, the binary helpers, errors and the output file.
local S = require "spec.support"
local X = require "spec.export_support"
local export = require "cprof.export"
local model = require "cprof.export.model"
local binary = require "cprof.export.binary"
local stats = require "cprof.stats"
local data = require "cprof.profdata"

local function hex(s) return (s:gsub(".", function(c) return ("%02x"):format(c:byte()) end)) end

describe("cprof.export.model", function()
  it("sums self values up the tree and orders children largest first", function()
    local m = model.new(X.sample())
    local self = m:weight("time")
    local incl = m:inclusive(self)
    assert.is_true(math.abs(incl[0] - 0.1) < 1e-12)
    assert.is_true(math.abs(incl[2] - 0.09) < 1e-12)
    local kids = m:children(incl)
    -- work's children: fib (60 ms) before string.rep (10 ms)
    assert.same({ 3, 4 }, { kids.child[kids.first[2]], kids.child[kids.first[2] + 1] })
    local seen = {}
    m:walk(kids, function(k, depth, path)
      seen[#seen + 1] = k .. "@" .. depth .. ":" .. table.concat(path, ",", 1, depth)
    end)
    assert.same({ "1@1:1", "2@2:1,2", "3@3:1,2,3", "4@3:1,2,4" }, seen)
  end)

  it("gives every weight, and refuses memory weights without memory", function()
    local m = model.new(X.sample(true))
    assert.same({ 1, 1, 9, 2 }, m:weight("calls"))
    assert.same({ 1000, 4000, 9000, 2000 }, m:weight("alloc"))
    assert.same({ 10, 20, 90, 2 }, m:weight("allocs"))
    assert.same({ 0, 1000, 3000, 0 }, m:weight("live"))
    local plain = model.new(X.sample())
    local ok, err = pcall(plain.weight, plain, "live")
    assert.is_false(ok)
    assert.matches("weight 'live' needs a profile with memory", err)
    ok, err = pcall(plain.weight, plain, "bytes")
    assert.matches("unknown weight 'bytes'", err)
  end)

  it("keeps only the paths through matching functions", function()
    local m = model.new(X.sample())
    assert.same({ 0, 0, 0, 0.01 }, m:restrict(m:weight("time"), { "rep" }))
    assert.same({ 0, 0.02, 0.06, 0.01 }, m:restrict(m:weight("time"), { "work" }))
    local ok, err = pcall(m.restrict, m, m:weight("time"), { "fib(" })
    assert.is_false(ok)
    assert.matches("bad pattern 'fib%('", err)
  end)

  it("names functions apart only where they would collide", function()
    local d = X.sample()
    local F = d.frames
    F.n = 6
    F.kind[5], F.file[5], F.line[5], F.name[5] = "Lua", "a/other.lua", 10, "fib"
    F.kind[6], F.file[6], F.line[6], F.name[6] = "Lua", "b/other.lua", 10, "fib"
    for _, c in ipairs({ "lastline", "ncalls", "pcalls", "tottime", "cumtime" }) do
      F[c][5], F[c][6] = 0, 0
    end
    local m = model.new(d)
    -- three fib:10: the one in main.lua is told apart by its file; the two other.lua ones only
    -- by their full names
    assert.same({ "main", "work", "fib main.lua:10", "string.rep", "a/other.lua:10(fib)",
                  "b/other.lua:10(fib)" },
      { m:name(1), m:name(2), m:name(3), m:name(4), m:name(5), m:name(6) })
    assert.same({ "main.lua:1(main)", "{string.rep}" }, { m:label(1), m:label(4) })
  end)

  it("aligns the nodes of two profiles by call path", function()
    local a, b = model.new(X.changed()), model.new(X.sample())
    local to_base, matched = a:align(b)
    assert.same({ 1, 2, 3 }, { to_base[1], to_base[2], to_base[3] })
    assert.is_nil(to_base[4])          -- log: not in the base
    assert.is_nil(matched[4])          -- string.rep: not in the new one
  end)

  it("puts a coroutine's body and what it calls in a thread of its own", function()
    local m = model.new(X.with_coroutine())
    local thread, names, top = m:threads()
    assert.same({ 1, 1, 2, 2 }, { thread[1], thread[2], thread[3], thread[4] })
    assert.same({ "main", "coroutine gen" }, names)
    assert.is_true(top[3])
  end)
end)

describe("cprof.export.binary", function()
  it("writes varints, int32s and doubles as protobuf and marshal do", function()
    assert.equal("00", hex(binary.varint(0)))
    assert.equal("7f", hex(binary.varint(127)))
    assert.equal("8001", hex(binary.varint(128)))
    assert.equal("ac02", hex(binary.varint(300)))
    assert.equal("ffffffff0f", hex(binary.varint(4294967295)))
    assert.equal("808080808080808040", hex(binary.varint(2 ^ 62)))
    assert.equal("feffffff", hex(binary.le32(-2)))
    assert.equal("000000000000f03f", hex(binary.double(1)))
    assert.equal("69" .. "01000000" .. "69" .. "feffffff" .. "67" .. "000000000000e03f" .. "67"
      .. "0000000000000840", hex(binary.iigg(1, -2, 0.5, 3)))
    assert.has_error(function() binary.varint(-1) end)
    assert.has_error(function() binary.varint(1.5) end)
  end)

  it("computes CRC-32 as zlib does, in pieces too", function()
    assert.equal(0, binary.crc32(""))
    assert.equal(0xcbf43926, binary.crc32("123456789"))
    local s = string.rep("The quick brown fox jumps over the lazy dog. ", 200) .. "!"
    assert.equal(binary.crc32(s), binary.crc32(s:sub(101), binary.crc32(s:sub(1, 100))))
    assert.equal(0xaa96ad00, binary.crc32(s))
  end)

  it("writes gzip that gzip inflates, across stored blocks", function()
    local body = {}
    for i = 1, 30000 do body[i] = ("%d,"):format(i * 7919 % 100003) end
    local text = table.concat(body)     -- about 170 KB: three stored blocks
    local parts = {}
    local gz = binary.gzip(function(s) parts[#parts + 1] = s end)
    gz.write(text:sub(1, 1000))
    gz.write(text:sub(1001))
    gz.close()
    local file = X.file(table.concat(parts), ".gz")
    local out, err, status = S.capture("gzip -dc " .. S.q(file))
    os.remove(file)
    assert.equal(0, status, err)
    assert.equal(text, out)
  end)
end)

describe("cprof.export sources", function()
  it("takes profile data, a Profile, a getstats() table, a Stats, a file and lists of them", function()
    local d = X.sample()
    local folded = X.export("folded", d)
    assert.equal("main.lua:1(main) 10000000\n", folded:match("^[^\n]*\n"))
    -- a list is merged by path: twice the numbers
    local twice = X.export("folded", { d, X.sample() })
    assert.equal("main.lua:1(main) 20000000\n", twice:match("^[^\n]*\n"))
    -- a Stats made from data keeps the call tree; from a getstats() table it has none
    assert.equal(folded, X.export("folded", stats.new(X.sample())))
    local st = stats.new(data.to_stats(X.sample()))
    local ok, err = pcall(X.export, "folded", st)
    assert.is_false(ok)
    assert.matches("folded needs the call tree, and this profile has none %(it is a Stats object", err)
    assert.matches("^%(dict", (X.export("pstats", st):gsub("^{.", "(dict")))
    ok, err = pcall(X.export, "svg", data.to_stats(X.sample()))
    assert.matches("none %(it is a getstats%(%) table%)", err)
    ok, err = pcall(X.export, "svg", 42)
    assert.matches("cannot export 42", err)
  end)

  it("exports a live Profile with its bias subtracted", function()
    local cprof = require "cprof"
    local p = cprof.Profile { timer = "counter", bias = 0 }
    local function leaf() return 1 end
    local function top() for _ = 1, 3 do leaf() end end
    p:runcall(top)
    local folded = X.export("folded", p)
    local lines = {}
    for line in folded:gmatch("[^\n]+") do lines[#lines + 1] = line end
    assert.equal(2, #lines)
    assert.matches(":%d+%(top%) %d+$", lines[1]) -- called from C by runcall: named by its definition
    assert.matches("%(top%);.*%(leaf%) 3000000000$", lines[2])
    p:bias(0.25) -- a quarter tick per event: leaf loses one per call received (cprof.bias)
    assert.matches("%(leaf%) 2250000000\n$", X.export("folded", p))
  end)

  it("reads dump and pstats files, and names a file it cannot read", function()
    local cprof = require "cprof"
    local dump = S.tmpname(".prof")
    require("cprof.core").write_dump(dump, X.sample())
    assert.equal(X.export("folded", X.sample()), X.export("folded", dump))
    local pst = S.tmpname(".pstats")
    export.export("pstats", dump, pst)
    local ok, err = pcall(X.export, "svg", pst)
    assert.matches(pst:gsub("%p", "%%%0") .. " is a pstats file", err)
    assert.matches("\nsummary: 100000000\n", X.export("callgrind", pst))
    ok, err = pcall(X.export, "folded", "/nonexistent/x.prof")
    assert.is_false(ok)
    assert.matches("^cprof: /nonexistent/x.prof: ", err)
    os.remove(dump)
    os.remove(pst)
    assert.is_function(cprof.load)
  end)
end)

describe("cprof.export output", function()
  it("refuses unknown formats and options that do not apply, naming them", function()
    local d = X.sample()
    local cases = {
      { { "png", d }, "unknown export format 'png' %(svg, html, folded, pstats, callgrind, speedscope, pprof, chrome%)" },
      { { "svg", d, { weight = "bytes" } }, "unknown weight 'bytes'" },
      { { "pstats", d, { weight = "calls" } }, "pstats: weight 'calls' does not apply" },
      { { "chrome", d, { weight = "alloc" } }, "chrome: weight 'alloc' does not apply %(a trace is a time line%)" },
      { { "callgrind", d, { weight = "calls" } }, "callgrind: weight 'calls' does not apply" },
      { { "pprof", d, { base = d } }, "pprof cannot compare two profiles" },
      { { "pstats", d, { patterns = { "fib" } } }, "pstats holds whole functions" },
      { { "svg", d, { weight = "alloc" } }, "weight 'alloc' needs a profile with memory" },
      { { "svg", d, { width = 50 } }, "svg: width must be a number of pixels of at least 100" },
      { { "svg", d, { minwidth = 0 } }, "svg: minwidth must be a number of pixels above 0" },
      { { "svg", d, 7 }, "options must be a table, not a number" },
    }
    for _, c in ipairs(cases) do
      local a = c[1]
      local ok, err = pcall(export.export, a[1], a[2], S.collector(), a[3])
      assert.is_false(ok)
      assert.matches(c[2], err)
    end
    local ok, err = pcall(export.export, "svg", d, 42)
    assert.is_false(ok)
    assert.matches("the output must be a file name or a stream", err)
  end)

  it("writes a file whole or not at all", function()
    local dir = S.new_dir()
    local path = dir .. "/out.folded"
    S.write_file(path, "old")
    local ok = pcall(export.export, "folded", X.sample(), path, { patterns = { "(" } })
    assert.is_false(ok)
    assert.equal("old", S.read_file(path))
    local _, _, status = S.capture("ls -A " .. S.q(dir) .. " | grep -v '^out.folded$'")
    assert.equal(1, status) -- nothing else is left in the directory
    export.export("folded", X.sample(), path)
    assert.equal(X.export("folded", X.sample()), S.read_file(path))
    ok, err = pcall(export.export, "folded", X.sample(), dir .. "/no/such/dir/x")
    assert.is_false(ok)
    assert.matches("^cprof: " .. dir:gsub("%p", "%%%0") .. "/no/such/dir/x: cannot create a file in ", err)
    S.remove_dir(dir)
  end)
end)
