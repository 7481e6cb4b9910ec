-- What the dump reader vouches for (issue 17): format version 2 and its checksums, the
-- version-1 files it still reads, the checks that leave nothing after it to fail on a file it
-- accepted, cprof-stats --verify, and the corruption sweep: every truncation of a real dump and
-- a fixed-seed sample of byte corruptions, through both readers (cprof dumps, pstats files)
-- and everything that reads their data after them.
-- Plain Lua 5.1 syntax: the same file runs under LuaJIT.
local core = require "cprof.core"
local profdata = require "cprof.profdata"
local stats = require "cprof.stats"
local S = require "spec.support"

local read_file, write_file, q = S.read_file, S.write_file, S.q
local uv, str, field, le, get_le, build, sections_of = S.uv, S.str, S.field, S.le, S.get_le, S.build,
  S.sections_of
local char, byte = string.char, string.byte

local V1_SAMPLE = S.SPEC_DIR .. "/golden/dump-v1.prof"
local PSTATS_SAMPLE = S.SPEC_DIR .. "/golden/sample.pstats"

local SCHEMA_FRAMES, SCHEMA_EDGES = S.SCHEMA_FRAMES, S.SCHEMA_EDGES
local minimal_sections = S.minimal_sections

-- Everything cprof does with a profile once it is read: the data's own functions, a Stats with
-- every report, JSON, every export, merging, and writing it again.
local sink = { write = function(self) return self end }
local has_json = pcall(require, "cjson")
local function exercise(path, dir)
  local st = stats.new(path, { stream = sink })
  for _, format in ipairs(require("cprof.export").FORMATS) do
    local ok, err = pcall(st.export, st, format, sink)
    -- an export may refuse what it cannot show (no call tree, no function), with its reason
    if not ok and not tostring(err):find("^cprof%.export: ") then error(err, 0) end
  end
  if st.meta and S.read_file(path):sub(1, 8) == S.MAGIC then
    local d = core.read_dump(path)
    profdata.to_stats(d)
    profdata.merge(d, d)
    require("cprof.allocdata").get(d)
    require("cprof.bias").apply(d)
    st:add(d)
  end
  for _, key in ipairs({ "cumulative", "time", "calls", "nfl", "stdname" }) do st:sort_stats(key) end
  st:print_stats()
  st:print_callers()
  st:print_callees()
  if st:has_lines() then st:print_lines() end
  if st:has_memory() then
    st:sort_stats("alloc")
    st:print_memory()
  end
  if st.allocator then st:print_allocator() end
  st:report_table({ callers = true, callees = true })
  if has_json then require("cprof.report.json").stats_json(st, { callers = true, callees = true }) end
  st:strip_dirs()
  st:print_stats(10)
  st:dump_stats(dir .. "/again.prof")
  stats.new(dir .. "/again.prof", { stream = sink }):print_stats()
end

-- A deterministic generator (the sweep's fixed seed).
local function rng(seed)
  return function(n)
    seed = (seed * 1103515245 + 12345) % 2147483648
    return seed % n
  end
end

describe("dump checks", function()
  local dir
  before_each(function() dir = S.new_dir(true) end)
  after_each(function() S.remove_dir(dir) end)

  local function read_bytes(bytes)
    local path = dir .. "/in.prof"
    write_file(path, bytes)
    local ok, res = pcall(core.read_dump, path)
    if ok then return res end
    assert.are.equal("cprof: " .. path .. ": ", res:sub(1, #path + 9), res)
    return nil, res:sub(#path + 10)
  end

  describe("format version 2", function()
    it("is laid out as docs/FORMAT.md says, byte by byte", function()
      local list = minimal_sections()
      local b = build(list, 2)
      local got = assert(read_bytes(b))
      assert.are.same({ "Lua" }, got.frames.kind)
      -- What cprof writes for the same data is laid out the same way.
      local path = dir .. "/w.prof"
      core.write_dump(path, got)
      local w = read_file(path)
      assert.are.equal(S.MAGIC, w:sub(1, 8))
      assert.are.same({ 2, 6 }, { get_le(w, 9, 4), get_le(w, 13, 4) })
      local header_end = 16 + 24 * 6 + 4
      assert.are.equal(S.crc32c(w:sub(1, header_end - 4)), get_le(w, header_end - 3, 4))
      local at = header_end
      for i = 1, 6 do
        local e = 17 + (i - 1) * 24
        local off, len = get_le(w, e + 4, 8), get_le(w, e + 12, 8)
        assert.are.equal(at, off, "section " .. i .. " follows the one before it")
        assert.are.equal(S.crc32c(w:sub(off + 1, off + len)), get_le(w, e + 20, 4))
        at = off + len
      end
      assert.are.equal(#w, at)
      assert.are.equal(w, build(sections_of(w), 2))
    end)

    it("names the damaged sections", function()
      local b = build(minimal_sections(), 2)
      local off3 = get_le(b, 17 + 2 * 24 + 4, 8)  -- the frames section
      local off5 = get_le(b, 17 + 4 * 24 + 4, 8)  -- the nodes section
      local function flip(s, at) return s:sub(1, at - 1) .. char(255 - byte(s, at)) .. s:sub(at + 1) end
      assert.are.same({ nil, "damaged: the checksum of the frames section does not match" },
                      { read_bytes(flip(b, off3 + 1)) })
      assert.are.same({ nil, "damaged: the checksums of 2 sections do not match: frames, nodes" },
                      { read_bytes(flip(flip(b, off3 + 2), off5 + 1)) })
      assert.are.same({ nil, "damaged: the checksum of the header does not match (its section directory is corrupt)" },
                      { read_bytes(flip(b, 17 + 24 + 5)) })
      local list = minimal_sections()
      table.insert(list, 4, { 99, "from the future" })
      local b2 = build(list, 2)
      local off = get_le(b2, 17 + 3 * 24 + 4, 8)
      assert.are.same({ nil, "damaged: the checksum of the kind-99 section does not match" },
                      { read_bytes(flip(b2, off + 1)) })
      assert.is_table((read_bytes(b2)))
    end)

    it("leaves no byte unchecked: no gap between sections, nothing after the last", function()
      local b = build(minimal_sections(), 2)
      assert.are.same({ nil, "1 unexpected bytes after the last section" }, { read_bytes(b .. "x") })
      -- A gap: the strings section moved one byte on, with the directory's checksum made right.
      local e = 17 + 24
      local off = get_le(b, e + 4, 8)
      local moved = b:sub(1, e + 3) .. le(off + 1, 8) .. b:sub(e + 12)
      local header_end = 16 + 24 * 6
      moved = moved:sub(1, header_end) .. le(S.crc32c(moved:sub(1, header_end)), 4) .. moved:sub(header_end + 5)
      assert.are.same({ nil, "section 2 (kind 2) does not start where the one before it ends" },
                      { read_bytes(moved) })
    end)

    it("a version-1 reader's message for it names the versions", function()
      local b = build(minimal_sections(), 3)
      assert.are.same({ nil, "format version 3 not supported; this cprof reads versions 1 to 2" },
                      { read_bytes(b) })
    end)
  end)

  describe("version 1", function()
    it("reads the committed version-1 sample: a real profile with memory, lines and allocator", function()
      local d, info = core.read_dump(V1_SAMPLE)
      assert.are.same({ version = 1, sections = 11, checksums = false }, info)
      assert.are.same({ 5, 5, 5, 8, 79 }, { d.frames.n, d.edges.n, d.nodes.n, d.lines.n, d.mem_caches.n })
      local fib
      for i = 1, d.frames.n do if d.frames.name[i] == "fib" then fib = i end end
      assert.are.same({ "Lua", 11, 14, 177, 1 }, { d.frames.kind[fib], d.frames.line[fib],
                      d.frames.lastline[fib], d.frames.ncalls[fib], d.frames.pcalls[fib] })
      assert.are.same({ "example", 4242, true }, { d.meta.host, d.meta.pid, d.meta.memory })
      assert.is_table(d.nodes.alloc_count)
      -- Written again it is version 2, and reads back the same.
      local path = dir .. "/v2.prof"
      core.write_dump(path, d)
      local d2, info2 = core.read_dump(path)
      assert.are.same({ version = 2, sections = 11, checksums = true }, info2)
      assert.are.same(d, d2)
    end)
  end)

  describe("what the reader vouches for", function()
    it("memory columns come all together or not at all, in a file and in data to write", function()
      local nodes = uv(3) .. uv(3) .. field("parent", 6, 0) .. field("frame", 5, 0) .. field("alloc_count", 1, 0)
      local list = minimal_sections({ schema = uv(3) .. SCHEMA_FRAMES .. SCHEMA_EDGES .. nodes })
      list[5] = { 5, uv(2) .. uv(0) .. uv(0) .. uv(7) .. uv(1) .. uv(0) .. uv(7) }
      local msg = "schema section: nodes have the memory field 'alloc_count' but not 'alloc_bytes' (they go together)"
      assert.are.same({ nil, msg }, { read_bytes(build(list)) })
      assert.are.same({ nil, msg }, { read_bytes(build(list, 2)) })
      -- The audit's case: one byte of a field's name changed in a dump with memory.
      local d = core.read_dump(V1_SAMPLE)
      local b = build(sections_of(read_file(V1_SAMPLE)))
      local at = b:find("alloc_bytes", 1, true)
      assert.are.same({ nil, "schema section: nodes have the memory field 'alloc_count' but not 'alloc_bytes' (they go together)" },
                      { read_bytes(b:sub(1, at + 9) .. "z" .. b:sub(at + 11)) })
      d.nodes.free_bytes = nil
      local ok, err = pcall(core.write_dump, dir .. "/w.prof", d)
      assert.is_false(ok)
      assert.are.equal("cprof: " .. dir .. "/w.prof: nodes.free_bytes is missing (nodes.alloc_count is there: the memory columns go together)", err)
      assert.are.same({ "in.prof" }, S.listing(dir))
    end)

    it("metadata that cprof reads holds the type it needs, in a file and in data to write", function()
      local function meta(key, type_, value) return uv(1) .. str(key) .. uv(type_) .. value end
      local cases = {
        { meta("unit", 4, str("fast")), "key 'unit' must hold a number" },
        { meta("timer", 2, uv(4)), "key 'timer' must hold a string" },
        { meta("pid", 3, "\0\0\0\0\0\0\248\63"), "key 'pid' must hold an integer" },
        { meta("mem_live", 1, ""), "key 'mem_live' must hold an integer" },
        { meta("memory", 2, uv(2)), "key 'memory' must hold a boolean" },
      }
      for _, c in ipairs(cases) do
        assert.are.same({ nil, "meta section: " .. c[2] }, { read_bytes(build(minimal_sections({ meta = c[1] }), 2)) })
      end
      local got = read_bytes(build(minimal_sections({ meta = meta("unit", 2, uv(2)) .. "" }), 2))
      assert.are.equal(1, got.meta.unit)
      local d = core.read_dump(V1_SAMPLE)
      local path = dir .. "/w.prof"
      for key, v in pairs({ unit = "fast", timer = 3, pid = 1.5, mem_live = true, memory = 1 }) do
        local m = d.meta[key]
        d.meta[key] = v
        local ok, err = pcall(core.write_dump, path, d)
        d.meta[key] = m
        assert.is_false(ok)
        assert.matches("^cprof: " .. path:gsub("%p", "%%%0") .. ": meta%." .. key:gsub("%p", "%%%0") .. " must be ", err)
      end
      d.meta.pid = 4242.0  -- an integral float: written as the integer it is
      core.write_dump(path, d)
      assert.are.equal(S.math_type(1), S.math_type(core.read_dump(path).meta.pid))
    end)
  end)

  describe("what comes after the reader", function()
    it("takes any value the format holds: times that are not finite, huge counts, NUL bytes in names", function()
      local big = 2 ^ 52 -- summed with itself below (Stats:add, merge), and exact on LuaJIT
      local function all(col, v) for i = 1, #col do col[i] = v end end
      local variants = {
        function(d) d.frames.tottime[1], d.frames.cumtime[2] = 1 / 0, -1 / 0; all(d.nodes.tottime, 1 / 0) end,
        function(d) d.edges.cumtime[1], d.lines.time[1] = 0 / 0, -1e300; all(d.nodes.tottime, 1e10) end,
        function(d) all(d.nodes.tottime, 0 / 0); all(d.nodes.cumtime, -1e300) end,
        function(d) d.frames.ncalls[1], d.edges.ncalls[1], d.nodes.ncalls[1], d.lines.hits[1] = big, big, big, big end,
        function(d) d.frames.name[1], d.frames.file[2], d.frames.kind[3] = "a\0b", "\255\0", "" end,
        function(d) d.mem_caches.name[1], d.mem_types.name[1], d.mem_arenas.name[1] = "c\0", "t\0", "a\0" end,
        function(d) d.nodes.alloc_bytes[1], d.nodes.free_bytes[1], d.mem_free_lists.list[1] = big, big, 62 end,
      }
      local path = dir .. "/v.prof"
      for i, change in ipairs(variants) do
        local d = core.read_dump(V1_SAMPLE)
        change(d)
        core.write_dump(path, d)
        local ok, err = pcall(exercise, path, dir)
        assert(ok, "variant " .. i .. ": " .. tostring(err))
      end
    end)
  end)

  describe("cprof-stats --verify", function()
    local env = S.lua54_env(S.ROOT)
    local function cli(args)
      return S.capture(env .. "lua5.4 " .. q(S.ROOT .. "/bin/cprof-stats") .. " " .. args)
    end

    it("says which files are intact, and which section of a dump is damaged", function()
      if not env then pending("needs build/lua5.4") return end
      local v2 = dir .. "/v2.prof"
      core.write_dump(v2, core.read_dump(V1_SAMPLE))
      local b = read_file(v2)
      local off = get_le(b, 17 + 4 * 24 + 4, 8)  -- the nodes section (the fifth)
      local bad = dir .. "/bad.prof"
      write_file(bad, b:sub(1, off) .. char(255 - byte(b, off + 1)) .. b:sub(off + 2))
      local out, err, status = cli("--verify " .. q(V1_SAMPLE) .. " " .. q(v2) .. " " .. q(bad) .. " "
                                   .. q(PSTATS_SAMPLE) .. " " .. q(dir .. "/none.prof"))
      assert.are.equal(V1_SAMPLE .. ": ok (cprof dump, format version 1, 11 sections, no checksums)\n"
        .. v2 .. ": ok (cprof dump, format version 2, 11 sections, checksums match)\n"
        .. PSTATS_SAMPLE .. ": ok (Python pstats file, no checksums)\n", out)
      assert.are.equal("cprof-stats: " .. bad .. ": damaged: the checksum of the nodes section does not match\n"
        .. "cprof-stats: " .. dir .. "/none.prof: cannot open: No such file or directory\n", err)
      assert.are.equal(2, status)
      out, err, status = cli("--verify " .. q(v2))
      assert.are.same({ v2 .. ": ok (cprof dump, format version 2, 11 sections, checksums match)\n", "", 0 },
                      { out, err, status })
      -- What prints the profile refuses the damaged file with the same words.
      out, err, status = cli(q(bad))
      assert.are.same({ "", "cprof-stats: " .. bad .. ": damaged: the checksum of the nodes section does not match\n", 2 },
                      { out, err, status })
    end)

    it("takes only files", function()
      if not env then pending("needs build/lua5.4") return end
      assert.are.same({ "", "cprof-stats: option --verify takes only FILEs\n", 2 },
                      { cli("--verify " .. q(V1_SAMPLE) .. " --sort calls") })
      assert.are.same({ "", "cprof-stats: no file given to --verify (see cprof-stats --help)\n", 2 },
                      { cli("--verify") })
    end)
  end)

  describe("the corruption sweep", function()
    local CORRUPTIONS = 300

    -- Every cut of `bytes` and CORRUPTIONS changes of one byte (a fixed seed) as the file
    -- `name`: each one is refused with "cprof: <path>: ..." (by cprof's reader, or by anything
    -- after it: they are bugs) or accepted; `accept(path)` says whether it may be, and runs
    -- everything that reads the data.  Returns how many were accepted.
    local function sweep(bytes, name, accept, seed)
      local path = dir .. "/" .. name
      local prefix = "cprof: " .. path .. ": "
      local accepted = 0
      local function try(b, what)
        write_file(path, b)
        local ok, err = pcall(accept, path)
        if ok then
          accepted = accepted + 1
        else
          assert(type(err) == "string" and err:sub(1, #prefix) == prefix,
                 what .. ": not a clean error: " .. tostring(err))
        end
      end
      for cut = 0, #bytes - 1 do try(bytes:sub(1, cut), "cut at " .. cut) end
      local rnd = rng(seed)
      for _ = 1, CORRUPTIONS do
        local at = 1 + rnd(#bytes)
        local v = (byte(bytes, at) + 1 + rnd(255)) % 256
        try(bytes:sub(1, at - 1) .. char(v) .. bytes:sub(at + 1), ("byte %d set to %d"):format(at, v))
      end
      return accepted
    end

    -- Whether cprof's reader accepted any cut or corruption of the version-2 dump at `path`.
    local function accepted_v2(path, seed)
      return sweep(read_file(path), "in.prof", function(p)
        core.read_dump(p)
        error("accepted", 0)
      end, seed)
    end

    it("version 2: every truncation and every corruption is refused", function()
      local path = dir .. "/real.prof"
      core.write_dump(path, core.read_dump(V1_SAMPLE))
      assert.are.equal(0, accepted_v2(path, 17))
    end)

    it("version 2 with a trace section: every truncation and every corruption is refused", function()
      local path = dir .. "/traced.prof"
      local p = require("cprof").Profile({ trace = true, trace_size = 40 })
      local function f(n) if n > 0 then return f(n - 1) end end
      p:enable(); f(30); p:disable()
      p:dump_stats(path)
      assert.is_true(core.read_dump(path).trace.n > 0)
      assert.are.equal(0, accepted_v2(path, 23))
    end)

    it("version 1 (no checksums): what is accepted goes through everything without an internal error", function()
      local accepted = sweep(read_file(V1_SAMPLE), "in.prof", function(p) exercise(p, dir) end, 42)
      assert.is_true(accepted > 0)
    end)

    it("pstats files: what is accepted goes through everything without an internal error", function()
      local accepted = sweep(read_file(PSTATS_SAMPLE), "in.pstats", function(p) exercise(p, dir) end, 7)
      assert.is_true(accepted > 0)
    end)
  end)
end)
