-- The optional sections of a dump (docs/FORMAT.md): line records (section 7) and the allocator
-- snapshot (sections 8 to 11, and the meta keys mem_*). Round trips that keep every number, files
-- without them that read back without the groups, and a reader that checks them as it checks the
-- others. Plain Lua 5.1 syntax: the same file runs under LuaJIT.
local core = require "cprof.core"
local data = require "cprof.profdata"
local allocdata = require "cprof.allocdata"

local S = require "spec.support"

local jit_mode = S.jit
local toint, NEG_ZERO = S.toint, S.NEG_ZERO
local char = string.char
local write_file, group, same, show = S.write_file, S.group, S.same_value, S.show

local function read_file(path) return assert(S.read_file(path)) end

-- Every value of two tables of the same shape, recursively, numbers bit for bit.
local function assert_deep(want, got, where)
  where = where or "value"
  if type(want) ~= "table" then
    assert(same(want, got), ("%s: wrote %s, read %s"):format(where, show(want), show(got)))
    return
  end
  assert(type(got) == "table", where .. ": not a table: " .. show(got))
  for k, v in pairs(want) do assert_deep(v, got[k], where .. "." .. tostring(k)) end
  for k in pairs(got) do assert(want[k] ~= nil, where .. "." .. tostring(k) .. " was not written") end
end

local BIG = toint(2 ^ 53)

-- Frames listed so that the writer reorders them: frame 1 is referenced least.
local function with_lines()
  return {
    meta = { timer = "counter", unit = 1.0 },
    frames = group(3, { kind = { "Lua", "Lua", "main" }, file = { "a.lua", "b.lua", "m.lua" },
                        line = { 10, 20, 0 }, lastline = { 15, 30, 0 }, name = { "f", "g", "<main chunk>" },
                        ncalls = { 1, 2, 1 }, pcalls = { 1, 2, 1 }, tottime = { 0.5, 0.25, 1 },
                        cumtime = { 0.5, 0.75, 2 } }),
    edges = group(2, { caller = { 3, 3 }, callee = { 1, 2 }, ncalls = { 1, 2 }, pcalls = { 1, 2 },
                       tottime = { 0.5, 0.25 }, cumtime = { 0.5, 0.75 } }),
    nodes = group(0, { parent = {}, frame = {}, ncalls = {}, pcalls = {}, tottime = {}, cumtime = {} }),
    lines = group(7, {
      frame = { 2, 2, 2, 3, 3, 1, 2 },
      line = { 21, 22, -3, 1, 2, 11, toint(2 ^ 40) },
      hits = { 1, BIG, 0, 3, 1, 7, 2 },
      time = { 0.25, NEG_ZERO, 5e-324, 1 / 0, 0 / 0, 1e300, 0.1 },
    }),
  }
end

-- What cprof.memory.stats() returns (made up, every field), as allocdata.set takes it.
local function allocator_stats(limit)
  local s = {
    lua_bytes = 123456, requested = 120000, foreign = 3456, held = 130000, footprint = 150000,
    mapped = 4194304, peak_mapped = 6291456, metadata = 9000, live = 1500, allocs = BIG,
    failures = 2, limit_failures = 1, foreign_frees = 17, limit = limit,
    caches = {
      { name = "table_56", type = "table", source = "pages", objsize = 56, slab_size = 4096,
        objects = 73, live = 70, magazine = 3, allocs = 9001, requested = 3920, slabs = 1,
        partial_slabs = 0 },
      { name = "raw_16", type = "raw", source = "pages", objsize = 16, slab_size = 4096,
        objects = 252, live = 1, magazine = 0, allocs = 1, requested = 9, slabs = 1, partial_slabs = 1 },
    },
    types = {
      { name = "raw", tag = 0, live = 1, bytes = 9, held = 16, allocs = 1, large_live = 2,
        large_allocs = 3, large_held = 8192 },
      { name = "table", tag = 5, live = 70, bytes = 3920, held = 3920, allocs = 9001, large_live = 0,
        large_allocs = 0, large_held = 0 },
    },
    arenas = {
      { name = "chunks", source = "none", quantum = 2097152, total = 4194304, alloc = 4194304,
        free = 0, imported = 4194304, peak_total = 6291456, nr_allocs = 2, nr_free_segs = 0,
        nr_spans = 2, nr_imports = 2, nr_empty = 0, allocs = 3, frees = 1, imports = 3,
        releases = 1, import_failures = 0, hash_size = 64, hash_empty = 62, hash_longest = 1,
        meta = 2048, free_lists = {}, qcache_max = 0, qcached = 0, qcached_bytes = 0,
        qcache_allocs = 0, qcache_frees = 0 },
      { name = "pages", source = "chunks", quantum = 4096, total = 4186112, alloc = 40960,
        free = 4145152, imported = 4186112, peak_total = 4186112, nr_allocs = 10, nr_free_segs = 2,
        nr_spans = 2, nr_imports = 2, nr_empty = 1, allocs = 12, frees = 2, imports = 2,
        releases = 0, import_failures = 0, hash_size = 64, hash_empty = 54, hash_longest = 2,
        meta = 4096, free_lists = { [12] = 1, [21] = 1 }, qcache_max = 16384, qcached = 3,
        qcached_bytes = 20480, qcache_allocs = BIG, qcache_frees = 77 },
    },
  }
  for _, c in ipairs(s.caches) do c.total, c.alloc = c.objects * c.objsize, c.live * c.objsize end
  return s
end

-- Bytes of files built by hand.
local uv, str, field, build, sections_of = S.uv, S.str, S.field, S.build, S.sections_of

local SCHEMA_REQUIRED = uv(1) .. uv(4) .. field("kind", 4, 0) .. field("file", 4, 0) .. field("line", 2, 0)
  .. field("name", 4, 0) .. uv(2) .. uv(2) .. field("caller", 5, 0) .. field("callee", 5, 0)
  .. uv(3) .. uv(2) .. field("parent", 6, 0) .. field("frame", 5, 0)
local SCHEMA_LINES = uv(4) .. uv(2) .. field("frame", 5, 0) .. field("line", 2, 0)
local SCHEMA_ARENAS = uv(7) .. uv(1) .. field("name", 4, 0)
local SCHEMA_FREE_LISTS = uv(8) .. uv(2) .. field("arena", 8, 0) .. field("list", 1, 0)

-- One frame (string 0 "Lua", 1 "a.lua", 2 "f"), no edges, no nodes; extra sections after nodes.
local function handmade(nkinds, schema_extra, extra)
  local list = { { 1, uv(3 + nkinds) .. SCHEMA_REQUIRED .. schema_extra },
                 { 2, uv(3) .. str("Lua") .. str("a.lua") .. str("f") },
                 { 3, uv(1) .. uv(0) .. uv(1) .. uv(6) .. uv(2) }, { 4, uv(0) }, { 5, uv(0) } }
  for _, s in ipairs(extra) do list[#list + 1] = s end
  list[#list + 1] = { 6, uv(0) }
  return build(list)
end

describe("optional dump sections", function()
  local dir
  before_each(function() dir = S.new_dir(true) end)
  after_each(function()
    core.fail_allocations(-1)
    S.remove_dir(dir)
  end)

  local function roundtrip(d)
    local path = dir .. "/out.prof"
    assert.is_true(core.write_dump(path, d))
    return core.read_dump(path), path
  end

  local function refuses(bytes, pattern)
    local path = dir .. "/in.prof"
    write_file(path, bytes)
    local ok, err = pcall(core.read_dump, path)
    assert.is_false(ok, "accepted")
    local prefix = "cprof: " .. path .. ": "
    assert.are.equal(prefix, err:sub(1, #prefix), err)
    assert.is_truthy(err:sub(#prefix + 1):find(pattern), err)
  end

  local function reads(bytes)
    local path = dir .. "/in.prof"
    write_file(path, bytes)
    return core.read_dump(path)
  end

  describe("line records", function()
    it("round-trip with every number identical, their frames following the frames' new order", function()
      local d = with_lines()
      local got = roundtrip(d)
      assert.are.equal(7, got.lines.n)
      assert.are_not.equal("f", got.frames.name[1], "the writer reordered the frames")
      for i = 1, d.lines.n do
        local f, g = d.lines.frame[i], got.lines.frame[i]
        assert.are.equal(d.frames.name[f], got.frames.name[g], "line record " .. i)
        for _, c in ipairs({ "line", "hits", "time" }) do
          assert(same(d.lines[c][i], got.lines[c][i]),
                 ("lines.%s[%d]: wrote %s, read %s"):format(c, i, show(d.lines[c][i]), show(got.lines[c][i])))
        end
      end
      -- and the same bytes again from what was read
      local a, b = dir .. "/a.prof", dir .. "/b.prof"
      core.write_dump(a, d)
      core.write_dump(b, core.read_dump(a))
      assert.are.equal(read_file(a), read_file(b))
    end)

    it("an empty lines group is kept as an empty group", function()
      local d = with_lines()
      d.lines = group(0, {})
      assert.are.same({ n = 0, frame = {}, line = {}, hits = {}, time = {} }, (roundtrip(d)).lines)
    end)

    it("a dump without them reads back without the group, and without the section", function()
      local d = with_lines()
      d.lines = nil
      local got, path = roundtrip(d)
      assert.is_nil(got.lines)
      local kinds = {}
      for _, s in ipairs(sections_of(read_file(path))) do kinds[#kinds + 1] = s[1] end
      assert.are.same({ 1, 2, 3, 4, 5, 6 }, kinds)
    end)

    it("come from a profile with line events, and only from one", function()
      local cprof = require "cprof"
      local function loop(n) local s = 0 for i = 1, n do s = s + i end return s end
      local p = cprof.Profile { lines = true, timer = "counter" }
      p:runcall(loop, 5)
      local d = p:dump_data()
      local got = roundtrip(d)
      assert.is_true(got.lines.n > 0)
      assert.are.equal(d.lines.n, got.lines.n)
      local hits = 0
      for i = 1, got.lines.n do hits = hits + got.lines.hits[i] end
      local want = 0
      for i = 1, d.lines.n do want = want + d.lines.hits[i] end
      assert.are.equal(want, hits)
      local q = cprof.Profile()
      q:runcall(loop, 5)
      assert.is_nil(q:dump_data().lines)
      assert.is_nil((roundtrip(q:dump_data())).lines)
    end)

    it("the writer checks them", function()
      local path = dir .. "/bad.prof"
      local function bad(change, pattern)
        local d = with_lines()
        change(d)
        local ok, err = pcall(core.write_dump, path, d)
        assert.is_false(ok)
        assert.is_truthy(err:find(pattern), err)
      end
      bad(function(d) d.lines.frame[2] = 4 end, "lines%.frame%[2%] = 4 is not a frame index %(frames%.n = 3%)")
      bad(function(d) d.lines.line[1] = 1.5 end, "lines%.line%[1%] must be an integer")
      bad(function(d) d.lines.hits[1] = -1 end, "lines%.hits%[1%] must be a non%-negative integer")
      bad(function(d) d.lines.frame = nil end, "lines%.frame is missing")
      bad(function(d) d.lines = 3 end, "lines must be a table, not a number")
    end)
  end)

  describe("the allocator snapshot", function()
    it("round-trips what cprof.memory.stats() returns, every number identical", function()
      for _, limit in ipairs({ false, 64 * 2 ^ 20 }) do
        local s = allocator_stats(limit and toint(limit) or nil)
        local d = allocdata.set(with_lines(), s)
        local got = roundtrip(d)
        assert.are.equal(2, got.mem_caches.n)
        assert.are.equal(2, got.mem_free_lists.n)
        assert_deep(s, allocdata.get(got), "stats")
        assert.are.equal(s.lua_bytes, got.meta.mem_lua_bytes)
        if limit then assert.are.equal(s.limit, got.meta.mem_limit) else assert.is_nil(got.meta.mem_limit) end
      end
    end)

    it("a dump without one reads back without the groups; allocdata.get says nil", function()
      local got = roundtrip(with_lines())
      for _, g in ipairs({ "mem_caches", "mem_types", "mem_arenas", "mem_free_lists" }) do
        assert.is_nil(got[g], g)
      end
      assert.is_nil(allocdata.get(got))
    end)

    it("the writer checks free lists against the arenas", function()
      local d = allocdata.set(with_lines(), allocator_stats())
      d.mem_arenas = nil
      local ok, err = pcall(core.write_dump, dir .. "/x.prof", d)
      assert.is_false(ok)
      assert.is_truthy(err:find("mem_free_lists.arena[1] = 2 is not an index of mem_arenas (mem_arenas.n = 0)", 1, true), err)
      d = allocdata.set(with_lines(), allocator_stats())
      d.mem_caches.name[2] = 7
      ok, err = pcall(core.write_dump, dir .. "/x.prof", d)
      assert.is_false(ok)
      assert.is_truthy(err:find("mem_caches.name[2] must be a string, not a number", 1, true), err)
    end)

    it("is taken at dump time when cprof's allocator is installed (a child process)", function()
      if jit_mode then
        pending("LuaJIT has no cprof allocator (cprof.memory.install raises there)")
        return
      end
      local script = dir .. "/child.lua"
      write_file(script, [[
        local cprof = require "cprof"
        local core, allocdata = require "cprof.core", require "cprof.allocdata"
        cprof.memory.install()
        local keep = {}
        local p = cprof.Profile { lines = true }
        p:runcall(function() for i = 1, 200 do keep[i] = { i } end end)
        local d = p:dump_data()
        core.write_dump(arg[1], d)
        local r = core.read_dump(arg[1])
        local function same(a, b)
          if type(a) ~= "table" then return a == b or (a ~= a and b ~= b) end
          for k, v in pairs(a) do if not same(v, b[k]) then return false end end
          for k in pairs(b) do if a[k] == nil then return false end end
          return true
        end
        local groups = { "lines", "mem_caches", "mem_types", "mem_arenas", "mem_free_lists" }
        for _, g in ipairs(groups) do io.write(g, " ", tostring(same(d[g], r[g])), "\n") end
        local mem = 0
        for k, v in pairs(d.meta) do
          if k:sub(1, 4) == "mem_" then mem = mem + 1 assert(r.meta[k] == v, k) end
        end
        io.write("meta ", mem, "\n")
        io.write("caches ", #allocdata.get(r).caches, " ", tostring(d.mem_caches.n > 0), "\n")
        io.write("allocs ", d.nodes.alloc_count[1] or "none", "\n")
      ]])
      local p = io.popen("lua5.4 '" .. script .. "' '" .. dir .. "/child.prof' 2>&1")
      local out = p:read("*a")
      p:close()
      for _, g in ipairs({ "lines", "mem_caches", "mem_types", "mem_arenas", "mem_free_lists" }) do
        assert.matches(g .. " true\n", out)
      end
      assert.matches("meta 13\n", out)   -- every total but the limit (there is none)
      assert.matches("caches %d+ true\n", out)
      assert.matches("allocs %d+\n", out)
    end)
  end)

  describe("the reader", function()
    it("reads hand-made files with only the required fields of the new kinds", function()
      local got = reads(handmade(3, SCHEMA_LINES .. SCHEMA_ARENAS .. SCHEMA_FREE_LISTS, {
        { 7, uv(2) .. uv(0) .. uv(5) .. uv(0) .. uv(3) },
        { 10, uv(2) .. uv(1) .. uv(2) },
        { 11, uv(1) .. uv(1) .. uv(12) },
      }))
      assert.are.same({ n = 2, frame = { 1, 1 }, line = { -3, -2 }, hits = { 0, 0 }, time = { 0, 0 } }, got.lines)
      assert.are.same({ "a.lua", "f" }, got.mem_arenas.name)
      assert.are.same({ "", "" }, got.mem_arenas.source)
      assert.are.same({ 0, 0 }, got.mem_arenas.quantum)
      assert.are.same({ n = 1, arena = { 2 }, list = { 12 }, segs = { 0 } }, got.mem_free_lists)
      assert.is_nil(got.mem_caches)
    end)

    it("supplies nothing for a kind the schema describes but the file has no section of", function()
      local got = reads(handmade(1, SCHEMA_LINES, {}))
      assert.is_nil(got.lines)
    end)

    it("refuses records whose kind the schema does not describe", function()
      refuses(handmade(0, "", { { 7, uv(0) } }), "^schema section: lines are not described$")
      refuses(handmade(0, "", { { 9, uv(0) } }), "^schema section: mem_types are not described$")
    end)

    it("refuses a kind that lacks its required fields, or a field of the wrong encoding", function()
      refuses(handmade(1, uv(4) .. uv(1) .. field("frame", 5, 0), { { 7, uv(0) } }),
              "^schema section: lines lack the required field 'line'$")
      refuses(handmade(1, uv(8) .. uv(2) .. field("arena", 1, 0) .. field("list", 1, 0), {}),
              "^schema section: mem_free_lists field 'arena' has encoding 1; this cprof reads encoding 8$")
      refuses(handmade(1, uv(8) .. uv(2) .. field("arena", 8, 1) .. field("list", 1, 0), {}),
              "^schema section: field 'arena' has encoding 8 with wire type 1$")
    end)

    it("refuses indexes out of range, bogus counts and two sections of one kind", function()
      refuses(handmade(1, SCHEMA_LINES, { { 7, uv(1) .. uv(1) .. uv(0) } }),
              "^lines section: record 1: frame is frame 1 but there are 1 frames$")
      refuses(handmade(2, SCHEMA_ARENAS .. SCHEMA_FREE_LISTS, { { 10, uv(1) .. uv(0) }, { 11, uv(1) .. uv(1) .. uv(3) } }),
              "^mem_free_lists section: record 1: arena is mem_arenas record 1 but there are 1$")
      refuses(handmade(1, SCHEMA_FREE_LISTS, { { 11, uv(1) .. uv(0) .. uv(3) } }),
              "^mem_free_lists section: record 1: arena is mem_arenas record 0 but there are 0$")
      refuses(handmade(1, SCHEMA_LINES, { { 7, uv(2 ^ 40) .. uv(0) .. uv(0) } }),
              "^lines section: claims 1099511627776 records but only 2 bytes remain$")
      refuses(handmade(1, SCHEMA_LINES, { { 7, uv(0) }, { 7, uv(0) } }), "^two lines sections$")
      refuses(handmade(1, SCHEMA_LINES, { { 7, uv(1) .. uv(0) .. uv(0) .. "x" } }),
              "^lines section: 1 unexpected bytes after its contents$")
    end)

    it("gives one clean error for a dump with every section truncated at any byte, and never crashes on a flipped byte", function()
      local d = allocdata.set(with_lines(), allocator_stats(1000))
      local path = dir .. "/all.prof"
      core.write_dump(path, d)
      local b = read_file(path)
      local prefix = "cprof: " .. dir .. "/in.prof: "
      for cut = 0, #b - 1 do
        write_file(dir .. "/in.prof", b:sub(1, cut))
        local ok, err = pcall(core.read_dump, dir .. "/in.prof")
        assert(not ok, "a dump cut at " .. cut .. " bytes was accepted")
        assert.are.equal(prefix, err:sub(1, #prefix), err)
      end
      -- Version 2 refuses them all; version 1, which has no checksums, accepts some.
      local v1 = build(sections_of(b))
      for version, bytes in ipairs({ v1, b }) do
        local valid = 0
        for i = 1, #bytes do
          local c = bytes:byte(i)
          write_file(dir .. "/in.prof", bytes:sub(1, i - 1) .. char(255 - c) .. bytes:sub(i + 1))
          local ok, got = pcall(core.read_dump, dir .. "/in.prof")
          if ok then
            valid = valid + 1
            assert.is_true(core.write_dump(dir .. "/again.prof", got))
          else
            assert.are.equal(prefix, got:sub(1, #prefix), got)
          end
        end
        assert.are.equal(version == 1, valid > 0)
      end
    end)

    it("reports running out of memory at any allocation while writing them", function()
      local d = allocdata.set(with_lines(), allocator_stats())
      local path = dir .. "/oom.prof"
      local n = 0
      repeat
        core.fail_allocations(n)
        local ok, err = pcall(core.write_dump, path, d)
        core.fail_allocations(-1)
        if not ok then assert.are.equal("cprof: " .. path .. ": out of memory", err) end
        n = n + 1
      until ok
      assert_deep(allocdata.get(d), allocdata.get(core.read_dump(path)), "stats")
    end)
  end)
end)
