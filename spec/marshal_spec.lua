-- cprof.marshal: Python pstats (marshal) files read in pure Lua, turned into Stats, printed as
-- pstats prints them (golden_sample_pstats.txt, golden_pyprofile_det.txt), and hostile input
-- refused with one clear message.
local marshal = require "cprof.pstats.marshal"
local stats = require "cprof.stats"
local W = require "spec.pstats_writer"
local unpack = table.unpack or unpack

local S = require "spec.support"
local read_file, tmpname, collector = S.read_file, S.tmpname, S.collector

local function golden(name) return read_file(S.ref_path("golden/", name)) end
local function sample(name) return S.ref_path("samples/", name) end

-- The text a Stats prints, with the file lines ("<ctime>    <path>") removed.
local function without_file_lines(text)
  return (text:gsub("%a%a%a %a%a%a [ %d]%d %d%d:%d%d:%d%d %d%d%d%d    [^\n]*\n", ""))
end

local function decode_error(bytes)
  local ok, err = pcall(marshal.decode, bytes, "x.pstats")
  assert.is_false(ok, "decoding should fail")
  return err
end

describe("cprof.marshal.decode", function()
  it("reads every type a pstats file uses", function()
    assert.are.equal(7, marshal.decode(W.i(7)))
    assert.are.equal(-2, marshal.decode(W.i(-2)))
    assert.are.equal(2147483647, marshal.decode(W.i(2147483647)))
    assert.are.equal(-2147483648, marshal.decode(W.i(-2147483648)))
    assert.are.equal(3000000000, marshal.decode(W.long(3000000000)))
    assert.are.equal(-3000000000, marshal.decode(W.long(3000000000, true)))
    assert.are.equal(0, marshal.decode("l" .. W.le32(0)))
    assert.are.equal(0.1, marshal.decode(W.g(0.1)))
    assert.are.equal(-2.5e-300, marshal.decode(W.g(-2.5e-300)))
    assert.are.equal(4.9e-324, marshal.decode(W.g(4.9e-324)))
    assert.are.equal(math.huge, marshal.decode(W.g(math.huge)))
    local nan = marshal.decode(W.g(0 / 0))
    assert.is_true(nan ~= nan)
    assert.are.equal(0.25, marshal.decode(W.f("0.25")))
    assert.are.equal(-math.huge, marshal.decode(W.f("-inf")))
    assert.are.equal(1e300, marshal.decode(W.f("1e+300")))
    assert.are.equal("main.lua", marshal.decode(W.u("main.lua")))
    assert.are.equal("h\195\169", marshal.decode(W.u("h\195\169")))
    for _, code in ipairs({ "t", "a", "A", "s" }) do
      assert.are.equal("abc", marshal.decode(code .. W.le32(3) .. "abc"))
    end
    assert.are.equal("abc", marshal.decode(W.z("abc")))
    assert.are.equal("", marshal.decode("Z\0"))
    assert.are.equal(marshal.None, marshal.decode("N"))
    assert.are.equal(true, marshal.decode("T"))
    assert.are.equal(false, marshal.decode("F"))
    local t = marshal.decode(W.tuple({ W.i(1), W.z("x") }))
    assert.are.same({ type = "tuple", at = 0, n = 2, 1, "x" }, t)
    assert.are.same(t, marshal.decode(W.small_tuple({ W.i(1), W.z("x") })))
    -- Python 2: 'I' 64-bit ints and 'R' references to interned ('t') strings
    assert.are.equal(5000000000, marshal.decode("I" .. W.le32(705032704) .. W.le32(1)))
    assert.are.equal(-1, marshal.decode("I" .. W.le32(-1) .. W.le32(-1)))
    local t2 = marshal.decode(W.tuple({ "t" .. W.le32(2) .. "ab", "t" .. W.le32(1) .. "c",
                                        "R" .. W.le32(0), "R" .. W.le32(1) }))
    assert.are.same({ "ab", "c", "ab", "c" }, { t2[1], t2[2], t2[3], t2[4] })
    assert.matches("byte 5: invalid string reference 0 %(0 interned strings so far%)",
      decode_error(W.tuple({ "R" .. W.le32(0) })))
    local d = marshal.decode(W.dict({ { W.z("b"), W.i(2) }, { W.z("a"), W.i(1) } }))
    assert.are.same({ "b", "a" }, d.keys)       -- the file's order
    assert.are.same({ 2, 1 }, d.values)
    assert.are.equal(2, d.n)
  end)

  it("keeps Lua 5.4's integer and float subtypes apart", function()
    if not math.type then return pending("LuaJIT has one number type") end
    assert.are.equal("integer", math.type(marshal.decode(W.i(3))))
    assert.are.equal("integer", math.type(marshal.decode(W.long(3000000000))))
    assert.are.equal("float", math.type(marshal.decode(W.g(3))))
    assert.are.equal("float", math.type(marshal.decode(W.f("3"))))
    -- beyond 64 bits: a float
    assert.are.equal("float", math.type(marshal.decode(W.long(2 ^ 70))))
    assert.are.equal(2 ^ 70, marshal.decode(W.long(2 ^ 70)))
  end)

  it("decodes binary64 by hand exactly as string.unpack does (the LuaJIT path)", function()
    local values = { 0, -0.0, 1, -1, 0.1, 1 / 3, 2 ^ -1074, 2 ^ -1022, 2 ^ 1023 * 1.5, 123456.789,
                     math.huge, -math.huge, 5e-324, 1.7976931348623157e308 }
    for _, x in ipairs(values) do
      local bytes = W.double(x)
      local got = marshal.decode_double(bytes, 1)
      assert.are.equal(x, got)
      assert.are.equal(1 / x < 0, 1 / got < 0)
    end
    -- known bytes: 0.1 and -2.0
    assert.are.equal(0.1, marshal.decode_double("\154\153\153\153\153\153\185\63", 1))
    assert.are.equal(-2.0, marshal.decode_double("\0\0\0\0\0\0\0\192", 1))
  end)

  it("follows references to objects written with FLAG_REF, as CPython's own dumps use them", function()
    -- ( 'ab'[flagged], r0, (1,)[flagged], r1 )
    local bytes = W.tuple({ W.flag(W.z("ab")), W.ref(0), W.flag(W.small_tuple({ W.i(1) })), W.ref(1) })
    local t = marshal.decode(bytes)
    assert.are.equal("ab", t[1])
    assert.are.equal("ab", t[2])
    assert.are.equal(t[3], t[4])
    -- a container takes its slot before its items: {[flag] 'k'[flag]: r1}
    local d = marshal.decode(W.flag(W.dict({ { W.flag(W.z("k")), W.ref(1) } })))
    assert.are.same({ "k" }, d.keys)
    assert.are.same({ "k" }, d.values)
    -- None, True and False ignore the flag
    assert.are.equal(marshal.None, marshal.decode(W.flag("N")))
  end)

  it("refuses what a pstats file never holds, naming the file, the byte and the type", function()
    assert.matches("^x%.pstats: byte 0: a list %(type code '%['%) cannot be in a pstats file$",
      decode_error("[" .. W.le32(0)))
    assert.matches("^x%.pstats: byte 5: a code object", decode_error(W.tuple({ "c" })))
    assert.matches("^x%.pstats: byte 0: a complex number", decode_error("y" .. string.rep("\0", 16)))
    assert.matches("^x%.pstats: byte 0: a set", decode_error("<" .. W.le32(0)))
    assert.matches("^x%.pstats: byte 0: unknown type code 0x01$", decode_error("\1"))
    assert.matches("^x%.pstats: byte 1: unknown type code 0xff$", decode_error("{\255"))
  end)

  it("checks every length against the bytes left", function()
    assert.matches("^x%.pstats: byte 1: an int needs 4 bytes, but the file ends after 2$",
      decode_error("i\1\2"))
    assert.matches("^x%.pstats: byte 0: a string of 2147483647 bytes needs 2147483647 bytes",
      decode_error("u" .. W.le32(2147483647) .. "abc"))
    assert.matches("^x%.pstats: byte 0: negative string length %-1$", decode_error("u" .. W.le32(-1)))
    assert.matches("^x%.pstats: byte 0: a tuple of 1000000 items needs 1000000 bytes",
      decode_error("(" .. W.le32(1000000) .. "i"))
    assert.matches("^x%.pstats: byte 0: negative tuple size", decode_error("(" .. W.le32(-5)))
    assert.matches("^x%.pstats: byte 0: a long int of 100000 digits needs 200000 bytes",
      decode_error("l" .. W.le32(100000) .. "\1\0"))
    assert.matches("byte 1: a float needs 8 bytes", decode_error("g\0\0"))
    assert.matches("byte 0: a float written as text is not a number: '0x10'$", decode_error(W.f("0x10")))
    assert.matches("not a number: 'a\\x0ab'$", decode_error(W.f("a\nb")))
    assert.matches("byte 0: the dict that starts here has no end marker '0'$",
      decode_error("{" .. W.z("k") .. W.i(1)))
    assert.matches("byte 0: the file ends where an object should start", decode_error(""))
    assert.matches("byte 5: NULL object %('0'%) inside a tuple", decode_error("(" .. W.le32(1) .. "0"))
    assert.matches("byte 0: NULL object", decode_error("0"))
    assert.matches("byte 5: digit out of range in a long int", decode_error("l" .. W.le32(1) .. "\255\255"))
    assert.matches("byte 0: unnormalized long int", decode_error("l" .. W.le32(1) .. "\0\0"))
  end)

  it("refuses bad references and references into objects still being read (no cycles)", function()
    assert.matches("byte 0: invalid reference 0 %(0 objects", decode_error(W.ref(0)))
    assert.matches("byte 10: invalid reference %-1 %(1 objects", decode_error(W.tuple({ W.flag(W.i(1)), W.ref(-1) })))
    assert.matches("byte 5: reference 0 points at an object that is still being read",
      decode_error(W.flag(W.tuple({ W.ref(0) }))))
    assert.matches("reference 0 points at an object that is still being read",
      decode_error(W.flag(W.dict({ { W.z("k"), W.ref(0) } }))))
  end)

  it("caps the nesting depth", function()
    local deep = string.rep(")\1", marshal.MAX_DEPTH + 5) .. "N"
    assert.matches("objects nested deeper than " .. marshal.MAX_DEPTH .. " levels", decode_error(deep))
    local ok_depth = string.rep(")\1", marshal.MAX_DEPTH - 1) .. "N"
    assert.is_not_nil(marshal.decode(ok_depth))
  end)

  it("never crashes on any prefix of a real file, nor on random changes to it", function()
    local whole = read_file(sample("sample.pstats"))
    for n = 0, #whole - 1 do
      local ok, err = pcall(marshal.decode, whole:sub(1, n), "cut")
      -- a cut inside the last "0" markers still decodes a complete prefix? never: the top dict
      -- needs its own end marker
      assert.is_false(ok, "prefix of " .. n .. " bytes decoded")
      assert.matches("^cut: byte %d+: ", err)
    end
    -- seeded random byte changes: a value or a one-line error, never a Lua error
    math.randomseed(4)
    for _ = 1, 2000 do
      local bytes = { whole:byte(1, -1) }
      for _ = 1, math.random(1, 4) do bytes[math.random(#bytes)] = math.random(0, 255) end
      local s = string.char((table.unpack or unpack)(bytes))
      local ok, v = pcall(marshal.decode, s, "fuzz")
      if ok then
        local ok2, err2 = pcall(marshal.to_records, v, "fuzz", #s)
        if not ok2 then assert.matches("^fuzz: byte %d+: not a pstats profile: ", err2) end
      else
        assert.matches("^fuzz: byte %d+: [^\n]+$", v)
      end
    end
  end)
end)

describe("cprof.marshal.to_records", function()
  local MAIN, WORK, FIB = { "main.lua", 1, "main" }, { "main.lua", 5, "work" }, { "main.lua", 10, "fib" }

  it("turns the dict into records in the file's order, with both kinds of callers", function()
    local bytes = W.pstats({
      { MAIN, 1, 1, 0.5, 2.0, {} },
      { FIB, 3, 9, 0.25, 0.5, { { WORK, { 3, 3, 0.1, 0.5 } }, { FIB, { 6, 4, 0.15, 0.2 } } } },
      { WORK, 1, 1, 1, 1.5, { { MAIN, 1 } } },
    })
    local recs = marshal.to_records(marshal.decode(bytes), "t")
    assert.are.equal(3, #recs)
    assert.are.same({ "main.lua", 1, "main", 1, 1, 0.5, 2.0 }, { unpack(recs[1], 1, 7) })
    assert.are.same({ "main.lua", 10, "fib", 3, 9, 0.25, 0.5 }, { unpack(recs[2], 1, 7) })
    assert.are.same({ "main.lua", 5, "work", { 3, 3, 0.1, 0.5 } }, recs[2].callers[1])
    assert.are.same({ "main.lua", 1, "main", 1 }, recs[3].callers[1])
    assert.are.equal(0, recs.swapped)
  end)

  it("swaps the call counts back when a producer wrote (nc, cc) (yappi), for functions and edges", function()
    -- yappi: (nc, cc, ...) = (9, 3, ...) for fib; an edge written (cc, nc) = (4, 6)
    local bytes = W.pstats({
      { FIB, 9, 3, 0.25, 0.5, { { FIB, { 4, 6, 0.15, 0.2 } } } },
      { MAIN, 1, 1, 0.5, 2.0, {} },
    })
    local recs = marshal.to_records(marshal.decode(bytes), "t")
    assert.are.same({ 3, 9 }, { recs[1][4], recs[1][5] })
    assert.are.same({ 6, 4, 0.15, 0.2 }, recs[1].callers[1][4])
    assert.are.equal(2, recs.swapped)
    local out = collector()
    local st = stats.new(nil, { stream = out })
    st:_load_marshal(recs)
    st:get_top_level_stats()
    st:print_stats()
    assert.matches("\n      9/3 ", out.text())
    assert.matches("10 function calls %(4 primitive calls%)", out.text())
  end)

  it("keeps a function's first place and last value when its key appears twice", function()
    local bytes = W.pstats({
      { MAIN, 1, 1, 0.5, 2.0, {} },
      { WORK, 1, 1, 1, 1.5, { { MAIN, 1 }, { MAIN, 2 } } },
      { MAIN, 2, 2, 0.25, 1.0, {} },
    })
    local recs = marshal.to_records(marshal.decode(bytes), "t")
    assert.are.equal(2, #recs)
    assert.are.same({ "main.lua", 1, "main", 2, 2, 0.25, 1.0 }, { unpack(recs[1], 1, 7) })
    assert.are.equal(1, #recs[2].callers)
    assert.are.equal(2, recs[2].callers[1][4])
  end)

  it("explains data of the wrong shape (pstats' 'Invalid timing data'), with the byte", function()
    local function shape_error(bytes)
      local ok, err = pcall(marshal.to_records, marshal.decode(bytes), "s.pstats", #bytes)
      assert.is_false(ok)
      return err
    end
    assert.matches("^s%.pstats: byte 0: not a pstats profile: the file holds the int 3, not a dict",
      shape_error(W.i(3)))
    assert.matches("^s%.pstats: byte 1: not a pstats profile: a function key must be a %(file, line, name%) tuple, not a 2%-tuple",
      shape_error(W.dict({ { W.tuple({ W.z("a"), W.i(1) }), W.i(0) } })))
    assert.matches("the line in a function key is a string",
      shape_error(W.dict({ { W.tuple({ W.z("a"), W.z("1"), W.z("f") }), W.i(0) } })))
    assert.matches("the line in a function key is the float 1.5",
      shape_error(W.dict({ { W.tuple({ W.z("a"), W.g(1.5), W.z("f") }), W.i(0) } })))
    assert.matches("invalid timing data for a:1%(f%): the int 0, expected %(cc, nc, tt, ct, callers%)",
      shape_error(W.dict({ { W.func({ "a", 1, "f" }), W.i(0) } })))
    assert.matches("invalid timing data for a:1%(f%): item 3 is None, expected a number",
      shape_error(W.dict({ { W.func({ "a", 1, "f" }), W.tuple({ W.i(1), W.i(1), "N", W.i(0), W.dict({}) }) } })))
    assert.matches("the callers are a 0%-tuple, expected a dict",
      shape_error(W.dict({ { W.func({ "a", 1, "f" }), W.tuple({ W.i(1), W.i(1), W.i(0), W.i(0), W.tuple({}) }) } })))
    assert.matches("invalid caller data for a:1%(f%) called by b:2%(g%): a 3%-tuple",
      shape_error(W.dict({ { W.func({ "a", 1, "f" }), W.tuple({ W.i(1), W.i(1), W.i(0), W.i(0),
        W.dict({ { W.func({ "b", 2, "g" }), W.tuple({ W.i(1), W.i(1), W.i(0) }) } }) }) } })))
    -- {x} for C functions in messages
    assert.matches("invalid timing data for {len}:",
      shape_error(W.dict({ { W.func({ "~", 0, "<len>" }), W.i(0) } })))
  end)

  it("bounds the work on data that refers to one big dict over and over", function()
    -- one callers dict of 2000 entries, then 3000 functions whose callers are a reference to it
    local callers = {}
    for i = 1, 2000 do callers[i] = { W.func({ "c.lua", i, "c" }), W.i(1) } end
    local parts = { "{", W.func({ "f.lua", 0, "f" }),
                    W.tuple({ W.i(1), W.i(1), W.i(0), W.i(0), W.flag(W.dict(callers)) }) }
    for i = 1, 3000 do
      parts[#parts + 1] = W.func({ "f.lua", i, "f" })
      parts[#parts + 1] = W.tuple({ W.i(1), W.i(1), W.i(0), W.i(0), W.ref(0) })
    end
    parts[#parts + 1] = "0"
    local bytes = table.concat(parts)
    local v = marshal.decode(bytes)
    local ok, err = pcall(marshal.to_records, v, "big", #bytes)
    assert.is_false(ok)
    assert.matches("too much shared data", err)
  end)
end)

describe("Stats from pstats files", function()
  it("prints sample.pstats as Python's pstats does (golden_sample_pstats.txt)", function()
    local want = golden("golden_sample_pstats.txt")
    local out = collector()
    local path = sample("sample.pstats")
    stats.new(path, { stream = out }):sort_stats("cumulative"):print_stats():print_callers()
      :print_callees()
    local got = out.text()
    -- the first line is "<ctime(mtime)>    <path>": the date and the path differ
    assert.matches("^%a%a%a %a%a%a [ %d]%d %d%d:%d%d:%d%d %d%d%d%d    " .. path:gsub("%p", "%%%0") .. "\n", got)
    assert.are.equal(want:gsub("^[^\n]*\n", ""), (got:gsub("^[^\n]*\n", "")))
  end)

  it("loads handmade.pstats (written byte by byte, with a 'l' long count)", function()
    local st = stats.new(sample("handmade.pstats"))
    local huge = stats.func_key("main.lua", 99, "huge")
    assert.are.same({ 3000000000, 3000000000, 0, 0 }, { unpack(st.stats[huge], 1, 4) })
    assert.are.equal(3000000013, st.total_calls)
    assert.are.equal(5, #st.order)
  end)

  it("bad.pstats gives one clear error naming the file and the byte", function()
    local path = sample("bad.pstats")
    local ok, err = pcall(stats.new, path)
    assert.is_false(ok)
    assert.are.equal("cprof: " .. path .. ": byte 24: not a pstats profile: invalid timing data for"
      .. " main.lua:1(main): a 3-tuple, expected (cc, nc, tt, ct, callers)", err)
  end)

  it("knows a file's kind by its first bytes", function()
    assert.are.equal("pstats", stats.file_kind(sample("sample.pstats")))
    local p = tmpname(".pstats")
    W.write(p, W.flag(W.dict({})))
    assert.are.equal("pstats", stats.file_kind(p))
    W.write(p, "\137CPROF\r\n\1\0\0\0")
    assert.are.equal("cprof", stats.file_kind(p))
    W.write(p, "hello")
    assert.is_nil(stats.file_kind(p))
    os.remove(p)
    assert.is_nil(stats.file_kind(p))
  end)

  it("an empty pstats dict is an empty profile (CPython raises TypeError)", function()
    local p = W.write(tmpname(".pstats"), W.dict({}))
    local out = collector()
    stats.new(p, { stream = out }):print_stats()
    os.remove(p)
    assert.matches("\n         0 function calls in 0%.000 seconds\n\n$", out.text())
  end)

  -- golden_pyprofile_det.txt: profile.py's data (int callers, times in ticks).  The records
  -- are the raw dict of that golden, in the order profile.py creates them (it decides ties).
  local D = "/home/user/demo/pyprofile_det.py"
  local PROFILER, CMD = { "profile", 0, "profiler" }, { "profile", 0, "<function work at 0x7fe479ba1440>" }
  local WORKP, SUM, GEN, FIBP = { D, 7, "work" }, { "", 0, "sum" }, { D, 8, "<genexpr>" }, { D, 5, "fib" }
  local SORTEDP, LENP, SETP = { "", 0, "sorted" }, { "", 0, "len" }, { "", 0, "setprofile" }
  local PYPROFILE = {
    { PROFILER, 0, 0, 0, 0, {} },
    { CMD, 1, 1, 2, 76, { { PROFILER, 1 } } },
    { WORKP, 1, 1, 4, 73, { { CMD, 1 } } },
    { SUM, 1, 1, 4, 67, { { WORKP, 1 } } },
    { GEN, 3, 3, 5, 63, { { SUM, 3 } } },
    { FIBP, 2, 30, 58, 58, { { FIBP, 28 }, { GEN, 2 } } },
    { SORTEDP, 1, 1, 1, 1, { { WORKP, 1 } } },
    { LENP, 1, 1, 1, 1, { { WORKP, 1 } } },
    { SETP, 1, 1, 1, 1, { { CMD, 1 } } },
  }

  it("prints profile.py's call-count callers as pstats does (golden_pyprofile_det.txt)", function()
    local want = golden("golden_pyprofile_det.txt")
    want = want:match("^(.-\n\n\n.-\n\n\n.-\n\n\n)")
    local p = W.write(tmpname(".prof"), W.pstats(PYPROFILE))
    local out = collector()
    stats.new(p, { stream = out }):strip_dirs():sort_stats("cumulative"):print_stats()
      :print_callers():print_callees()
    os.remove(p)
    assert.are.equal(want:gsub("^[^\n]*\n", ""), (out.text():gsub("^[^\n]*\n", "")))
  end)

  it("adds a pstats file and a cprof dump in one Stats, and dumps the sum", function()
    local core = require "cprof.core"
    if not core.write_dump then return pending("cprof.core has no write_dump") end
    local p = tmpname(".pstats")
    W.write(p, read_file(sample("sample.pstats")))
    local d = tmpname(".prof")
    stats.new(p):dump_stats(d)
    local st = stats.new(p, d)
    assert.are.equal(2, #st.files)
    local fib = stats.func_key("main.lua", 10, "fib")
    assert.are.same({ 6, 18, 0.12, 0.12 }, { unpack(st.stats[fib], 1, 4) })
    assert.are.same({ 12, 8, 0.06, 0.06 }, st.stats[fib][5][fib])
    for _, row in ipairs(st:entries()) do
      if row.stdname == "{built-in function string.rep}" then
        assert.are.equal("C", row.what)
        assert.are.equal("built-in function string.rep", row.name)
      end
    end
    -- a dump of the mixture reads back with the same numbers
    local d2 = tmpname(".prof")
    st:dump_stats(d2)
    local back = stats.new(d2)
    for _, key in ipairs(st.order) do
      assert.are.same({ unpack(st.stats[key], 1, 4) }, { unpack(back.stats[key], 1, 4) })
      assert.are.same(st.stats[key][5], back.stats[key][5])
    end
    os.remove(p); os.remove(d); os.remove(d2)
  end)

  it("adds old-style call counts to each other and to cProfile edges", function()
    local a = W.write(tmpname(".pstats"), W.pstats({
      { { "m.lua", 1, "g" }, 1, 1, 0, 0, {} },
      { { "m.lua", 2, "f" }, 2, 2, 1, 1, { { { "m.lua", 1, "g" }, 2 } } } }))
    local b = W.write(tmpname(".pstats"), W.pstats({
      { { "m.lua", 1, "g" }, 1, 1, 0, 0, {} },
      { { "m.lua", 2, "f" }, 3, 3, 1, 1, { { { "m.lua", 1, "g" }, { 3, 3, 0.5, 0.75 } } } } }))
    local f, g = stats.func_key("m.lua", 2, "f"), stats.func_key("m.lua", 1, "g")
    assert.are.equal(4, stats.new(a, a).stats[f][5][g])
    assert.are.same({ 5, 5, 0.5, 0.75 }, stats.new(a, b).stats[f][5][g])
    assert.are.same({ 5, 5, 0.5, 0.75 }, stats.new(b, a).stats[f][5][g])
    os.remove(a); os.remove(b)
  end)
end)
