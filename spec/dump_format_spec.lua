-- The binary dump format (docs/FORMAT.md): cprof.core.write_dump and cprof.core.read_dump.
-- Round trips that keep every bit, a writer that refuses bad data and never leaves a partial
-- file, and a reader that meets truncated, corrupted and hostile files with one clean error.
-- Plain Lua 5.1 syntax: the same file runs under LuaJIT.
local core = require "cprof.core"
local S = require "spec.support"

local lua = S.lua
local math_type, toint, NEG_ZERO = S.math_type, S.toint, S.NEG_ZERO
local floor = math.floor

if not core.write_dump then
  describe("the dump format", function()
    it("needs cprof.core.write_dump and read_dump", function()
      assert.is_function(core.write_dump)
    end)
  end)
  return
end

-------------------------------------------------------------------------------------------------
-- Files

local read_file, write_file, new_dir = S.read_file, S.write_file, S.new_dir

local listing = S.listing

-------------------------------------------------------------------------------------------------
-- Data tables

local group, same_number, same_value, show = S.group, S.same_number, S.same_value, S.show

local function frame_key(fr, i)
  return table.concat({ #fr.kind[i], fr.kind[i], #fr.file[i], fr.file[i], tostring(fr.line[i]),
                        #fr.name[i], fr.name[i] }, ":")
end

local function check(cond, fmt, ...)
  if not cond then error(string.format(fmt, ...), 2) end
end

local FIELDS = {
  frames = { "kind", "file", "line", "lastline", "name", "ncalls", "pcalls", "tottime", "cumtime" },
  edges = { "ncalls", "pcalls", "tottime", "cumtime" },
  nodes = { "parent", "ncalls", "pcalls", "tottime", "cumtime" },
}

-- `got` (read back) against `want` (written): every field exactly, frames matched by identity.
local function assert_same_data(want, got)
  local wf, gf = want.frames, got.frames
  check(gf.n == wf.n, "frames.n: %s ~= %s", tostring(gf.n), tostring(wf.n))
  local where = {}
  for i = 1, gf.n do where[frame_key(gf, i)] = i end
  local map = {}  -- want index -> got index
  for i = 1, wf.n do
    local j = where[frame_key(wf, i)]
    check(j, "frame %d (%s) is missing", i, frame_key(wf, i))
    map[i] = j
    for _, f in ipairs(FIELDS.frames) do
      check(same_value(wf[f][i], gf[f][j]), "frames.%s[%d]: wrote %s, read %s", f, i,
            show(wf[f][i]), show(gf[f][j]))
    end
  end
  for _, g in ipairs({ "edges", "nodes" }) do
    local w, r = want[g], got[g]
    check(r.n == w.n, "%s.n: %s ~= %s", g, tostring(r.n), tostring(w.n))
    for i = 1, w.n do
      for _, f in ipairs(FIELDS[g]) do
        check(same_value(w[f][i], r[f][i]), "%s.%s[%d]: wrote %s, read %s", g, f, i,
              show(w[f][i]), show(r[f][i]))
      end
      for _, f in ipairs(g == "edges" and { "caller", "callee" } or { "frame" }) do
        check(map[w[f][i]] == r[f][i], "%s.%s[%d]: wrote frame %d, read frame %s", g, f, i,
              w[f][i], tostring(r[f][i]))
      end
    end
  end
  local wm, gm = want.meta or {}, got.meta
  for k, v in pairs(wm) do check(same_value(v, gm[k]), "meta.%s: wrote %s, read %s", k, show(v), show(gm[k])) end
  for k in pairs(gm) do check(wm[k] ~= nil, "meta.%s was not written", k) end
end

local BIG = toint(2 ^ 53)

local function special_data()
  local nan = 0 / 0
  local meta = {
    lua_version = "Lua 5.4", timer = "monotonic", unit = 1e-9, bias = 0.0,
    command = "lua5.4 script.lua a\0b \255\254", start_time = 1795230000.25, total_time = 1.5,
    pid = 1234, host = "build-7", tree_cap = 1000000, tree_folded = 0, dropped = toint(2 ^ 40),
    flag = true, off = false, empty = "",
  }
  if math.maxinteger then meta.minint = math.mininteger end
  local data = {
    meta = meta,
    frames = group(4, {
      kind = { "Lua", "C", "main", "Lua" },
      file = { "dir/a\0b.lua", "~", "\255\254\0", "dir/a\0b.lua" },
      line = { 10, 0, 0, -7 },
      lastline = { 20, -1, 0, toint(-2 ^ 40) },
      name = { "f\0g", "{string.rep}", "<main chunk>", "" },
      ncalls = { BIG, 3, 1, 0 },
      pcalls = { 5, 7, 1, 0 },  -- pcalls > ncalls is accepted: other producers swap them
      tottime = { 0.1, NEG_ZERO, 1e-300, 5e-324 },
      cumtime = { math.huge, -math.huge, nan, 1.7976931348623157e308 },
    }),
    edges = group(3, {
      caller = { 3, 1, 1 }, callee = { 1, 2, 1 },
      ncalls = { 1, 3, BIG }, pcalls = { 1, 3, 2 },
      tottime = { 0.25, 0.0, -1.5 }, cumtime = { 0.5, 2 ^ -1074, 1e300 },
    }),
    nodes = group(4, {
      parent = { 0, 1, 2, 1 }, frame = { 3, 1, 2, 1 },
      ncalls = { 1, 1, 3, 0 }, pcalls = { 1, 1, 3, 0 },
      tottime = { 0.0, 0.1, 0.2, 0.3 }, cumtime = { 0.6, 0.5, 0.2, NEG_ZERO },
    }),
  }
  if math.maxinteger then
    data.frames.ncalls[4] = math.maxinteger
    data.edges.ncalls[2] = math.maxinteger
  end
  return data
end

-- A deterministic profile of F frames, E edges and K nodes; frame 1 is rarely referenced and
-- frame F often, so that the writer has to reorder them.
local function medium_data(F, E, K)
  local seed = 7
  local function rnd(n)
    seed = (seed * 1103515245 + 12345) % 2147483648
    return seed % n
  end
  local fr = group(F, { kind = {}, file = {}, line = {}, lastline = {}, name = {},
                        ncalls = {}, pcalls = {}, tottime = {}, cumtime = {} })
  for i = 1, F do
    fr.kind[i] = i % 5 == 0 and "C" or "Lua"
    fr.file[i] = i % 5 == 0 and "~" or ("src/m" .. (i % 9) .. ".lua")
    fr.line[i], fr.lastline[i] = i * 10, i * 10 + rnd(9)
    fr.name[i] = "fn" .. i
    fr.ncalls[i], fr.pcalls[i] = rnd(100000), rnd(100)
    fr.tottime[i], fr.cumtime[i] = rnd(1000000) * 1e-9, rnd(100000000) * 1e-9
  end
  local function popular() local u = rnd(1000) / 1000 return F - floor((F - 1) * u * u * u) end
  local ed = group(E, { caller = {}, callee = {}, ncalls = {}, pcalls = {}, tottime = {}, cumtime = {} })
  for e = 1, E do
    ed.caller[e], ed.callee[e] = popular(), 1 + rnd(F)
    ed.ncalls[e], ed.pcalls[e] = rnd(5000), rnd(5000)
    ed.tottime[e], ed.cumtime[e] = rnd(1000000) * 1e-9, rnd(1000000) / 3
  end
  local no = group(K, { parent = {}, frame = {}, ncalls = {}, pcalls = {}, tottime = {}, cumtime = {} })
  for i = 1, K do
    no.parent[i] = (i == 1 or rnd(5) == 0) and 0 or i - 1 - rnd(math.min(i - 1, 8))
    no.frame[i] = popular()
    no.ncalls[i], no.pcalls[i] = rnd(50), rnd(50)
    no.tottime[i], no.cumtime[i] = rnd(1000) * 1e-9, rnd(1000) * 1e-9
  end
  return { meta = { timer = "monotonic", unit = 1e-9, pid = 99 }, frames = fr, edges = ed, nodes = no }
end

local function small_data()
  return {
    meta = { timer = "counter", pid = 5 },
    frames = group(2, { kind = { "Lua", "C" }, file = { "a.lua", "~" }, line = { 3, 0 },
                        lastline = { 8, -1 }, name = { "f", "{print}" }, ncalls = { 2, 1 },
                        pcalls = { 2, 1 }, tottime = { 0.5, 0.25 }, cumtime = { 0.75, 0.25 } }),
    edges = group(1, { caller = { 1 }, callee = { 2 }, ncalls = { 1 }, pcalls = { 1 },
                       tottime = { 0.25 }, cumtime = { 0.25 } }),
    nodes = group(2, { parent = { 0, 1 }, frame = { 1, 2 }, ncalls = { 2, 1 }, pcalls = { 2, 1 },
                       tottime = { 0.5, 0.25 }, cumtime = { 0.75, 0.25 } }),
  }
end

-------------------------------------------------------------------------------------------------
-- Building files byte by byte (arithmetic only, so that it runs under LuaJIT too)

local char, byte = string.char, string.byte
local uv, le, get_le, str, field = S.uv, S.le, S.get_le, S.str, S.field
local build, sections_of = S.build, S.sections_of

local function section(list, kind)
  for _, s in ipairs(list) do if s[1] == kind then return s end end
end

local SCHEMA_FRAMES, SCHEMA_EDGES, SCHEMA_NODES = S.SCHEMA_FRAMES, S.SCHEMA_EDGES, S.SCHEMA_NODES

-- A minimal valid file with only the required fields; parts can be replaced.
local function minimal(o)
  return build(S.minimal_sections(o), o and o.version)
end

-------------------------------------------------------------------------------------------------

describe("the dump format", function()
  local dir

  before_each(function() dir = new_dir(true) end)
  after_each(function()
    core.fail_allocations(-1)
    S.remove_dir(dir)
  end)

  local function roundtrip(data)
    local path = dir .. "/out.prof"
    assert.is_true(core.write_dump(path, data))
    local got = core.read_dump(path)
    assert_same_data(data, got)
    return got, path
  end

  -- pcall(f, ...) must fail with "cprof: <path>: <pattern...>".
  local function fails(path, pattern, f, ...)
    local ok, err = pcall(f, ...)
    assert.is_false(ok, "expected an error")
    assert.are.equal("string", type(err))
    local prefix = "cprof: " .. path .. ": "
    assert.are.equal(prefix, err:sub(1, #prefix), err)
    if pattern then assert.is_truthy(err:sub(#prefix + 1):find(pattern), err) end
    return err
  end

  describe("round trips", function()
    it("keep every field exactly: NUL and non-UTF-8 bytes, 2^53 and 2^63-1, -0.0, subnormals, inf, nan", function()
      roundtrip(special_data())
    end)

    it("keep the integer and float types of meta values", function()
      local got = roundtrip(special_data())
      assert.are.equal(math_type(1234), math_type(got.meta.pid))
      assert.are.equal(math_type(0.5), math_type(got.meta.bias))
      assert.are.equal(math_type(0.5), math_type(got.frames.tottime[1]))
      assert.are.equal(math_type(1234), math_type(got.frames.ncalls[2]))
      assert.is_true(got.meta.flag)
      assert.is_false(got.meta.off)
    end)

    it("keep a medium profile, with its frames most referenced first", function()
      local data = medium_data(300, 2000, 2000)
      local got = roundtrip(data)
      local refs = {}
      for i = 1, got.frames.n do refs[i] = 0 end
      for i = 1, got.edges.n do
        refs[got.edges.caller[i]] = refs[got.edges.caller[i]] + 1
        refs[got.edges.callee[i]] = refs[got.edges.callee[i]] + 1
      end
      for i = 1, got.nodes.n do refs[got.nodes.frame[i]] = refs[got.nodes.frame[i]] + 1 end
      for i = 2, got.frames.n do
        assert(refs[i - 1] >= refs[i], "frames are not in popularity order at " .. i)
      end
      assert.are_not.equal("fn1", got.frames.name[1])
    end)

    it("write the same bytes for the same data, whatever the frames' order on input", function()
      local data = medium_data(50, 200, 200)
      local a, b = dir .. "/a.prof", dir .. "/b.prof"
      core.write_dump(a, data)
      core.write_dump(b, core.read_dump(a))
      assert.are.equal(read_file(a), read_file(b))
    end)

    it("keep an empty profile; missing groups and meta are empty", function()
      roundtrip({ frames = group(0, {}), edges = group(0, {}), nodes = group(0, {}), meta = {} })
      local path = dir .. "/empty.prof"
      core.write_dump(path, {})
      local got = core.read_dump(path)
      assert.are.same({ 0, 0, 0 }, { got.frames.n, got.edges.n, got.nodes.n })
      assert.are.same({}, got.meta)
      assert.are.same({}, got.frames.kind)
    end)

    it("give defaults for optional columns the data lacks", function()
      local data = small_data()
      data.frames.lastline, data.frames.tottime, data.edges.ncalls, data.nodes.cumtime = nil, nil, nil, nil
      local path = dir .. "/partial.prof"
      core.write_dump(path, data)
      local got = core.read_dump(path)
      assert.are.same({ -1, -1 }, got.frames.lastline)
      assert.are.same({ 0, 0 }, got.frames.tottime)
      assert.are.same({ 0 }, got.edges.ncalls)
      assert.are.same({ 0, 0 }, got.nodes.cumtime)
      assert.is_true(same_number(0.0, got.frames.tottime[1]))
    end)

    it("writing over an existing file replaces it", function()
      local path = dir .. "/out.prof"
      core.write_dump(path, medium_data(20, 50, 50))
      roundtrip(small_data())
      assert.are.same({ "out.prof" }, listing(dir))
    end)
  end)

  describe("the writer", function()
    local cases = {
      { "the profile data must be a table, not a string", function(d) return "x" end },
      { "frames must be a table, not a number", function(d) d.frames = 3 return d end },
      { "frames.n must be a non%-negative integer %(got %-1%)", function(d) d.frames.n = -1 return d end },
      { "edges.n must be a non%-negative integer %(got 1.5%)", function(d) d.edges.n = 1.5 return d end },
      { "frames.file is missing", function(d) d.frames.file = nil return d end },
      { "nodes.frame must be a table, not a string", function(d) d.nodes.frame = "x" return d end },
      { "edges.caller%[1%] = 0 is not a frame index %(frames.n = 2%)", function(d) d.edges.caller[1] = 0 return d end },
      { "edges.callee%[1%] = 3 is not a frame index", function(d) d.edges.callee[1] = 3 return d end },
      { "edges.callee%[1%] = 1.5 is not a frame index", function(d) d.edges.callee[1] = 1.5 return d end },
      { "edges.callee%[1%] = a string is not a frame index", function(d) d.edges.callee[1] = "1" return d end },
      { "nodes.parent%[2%] = 2 must be 0 %(a root%) or the index of an earlier node", function(d) d.nodes.parent[2] = 2 return d end },
      { "nodes.parent%[1%] = %-1 must be 0", function(d) d.nodes.parent[1] = -1 return d end },
      { "nodes.frame%[2%] = a nil is not a frame index", function(d) d.nodes.frame[2] = nil return d end },
      { "frames.ncalls%[2%] must be a non%-negative integer %(got %-1%)", function(d) d.frames.ncalls[2] = -1 return d end },
      { "edges.pcalls%[1%] must be a non%-negative integer %(got 0.5%)", function(d) d.edges.pcalls[1] = 0.5 return d end },
      { "nodes.ncalls%[1%] must be a non%-negative integer %(got a string%)", function(d) d.nodes.ncalls[1] = "1" return d end },
      { "frames.ncalls%[1%] must be a non%-negative integer %(got 9.2233720368547758e%+18%)", function(d) d.frames.ncalls[1] = 2 ^ 63 return d end },
      { "frames.line%[1%] must be an integer %(got 2.5%)", function(d) d.frames.line[1] = 2.5 return d end },
      { "frames.tottime%[2%] must be a number %(got a boolean%)", function(d) d.frames.tottime[2] = true return d end },
      { "frames.name%[2%] must be a string, not a number", function(d) d.frames.name[2] = 42 return d end },
      { "meta must be a table, not a string", function(d) d.meta = "x" return d end },
      { "meta keys must be strings, not a number", function(d) d.meta[1] = "x" return d end },
      { "meta.pid must be a string, a number or a boolean, not a table", function(d) d.meta.pid = {} return d end },
    }
    for _, case in ipairs(cases) do
      it("refuses bad data: " .. case[1]:gsub("%%", ""), function()
        local path = dir .. "/bad.prof"
        fails(path, "^" .. case[1], core.write_dump, path, case[2](small_data()))
        assert.are.same({}, listing(dir))
      end)
    end

    it("leaves an existing file as it was when it refuses the data", function()
      local path = dir .. "/out.prof"
      core.write_dump(path, small_data())
      local before = read_file(path)
      local bad = medium_data(30, 100, 100)
      bad.nodes.cumtime[100] = "late"  -- found after most of the file is written
      fails(path, "nodes.cumtime%[100%] must be a number", core.write_dump, path, bad)
      assert.are.equal(before, read_file(path))
      assert.are.same({ "out.prof" }, listing(dir))
    end)

    it("reports a missing folder", function()
      local path = dir .. "/missing/out.prof"
      fails(path, "^cannot create a file in " .. dir:gsub("%p", "%%%0") .. "/missing: No such file or directory$",
            core.write_dump, path, small_data())
      assert.are.same({}, listing(dir))
    end)

    it("reports a folder that is a regular file", function()
      fails("/etc/passwd/x.prof", "Not a directory$", core.write_dump, "/etc/passwd/x.prof", small_data())
    end)

    it("refuses a target that is a folder, and creates nothing", function()
      local path = dir .. "/sub"
      assert(os.execute("mkdir '" .. path .. "'"))
      fails(path, "^cannot write a dump over a directory$", core.write_dump, path, small_data())
      assert.are.same({ "sub" }, listing(dir))
      assert.are.same({}, listing(path))
    end)

    it("reports a full disk (a file size limit) and leaves nothing behind", function()
      local path = dir .. "/big.prof"
      local script = dir .. "/write.lua"
      write_file(script, S.big_dump_script(2000) .. [[
        local ok, err = pcall(core.write_dump, arg[1], data)
        io.write(tostring(ok), "\n", tostring(err), "\n")
      ]])
      -- SIGXFSZ ignored: a write past the limit fails with EFBIG instead of killing the process.
      local p = io.popen("sh -c 'trap \"\" XFSZ; ulimit -f 8; exec " .. lua .. " \"$0\" \"$1\"' '"
                         .. script .. "' '" .. path .. "' 2>&1")
      local out = p:read("*a")
      p:close()
      assert.are.equal("false\ncprof: " .. path .. ": cannot write: File too large\n", out)
      assert.are.same({ "write.lua" }, listing(dir))
    end)

    it("reports running out of memory at any allocation and leaves no file", function()
      local data = medium_data(30, 100, 100)
      local path = dir .. "/oom.prof"
      local failed, n = 0, 0
      repeat
        core.fail_allocations(n)
        local ok, err = pcall(core.write_dump, path, data)
        core.fail_allocations(-1)
        if not ok then
          assert.are.equal("cprof: " .. path .. ": out of memory", err)
          assert.are.same({}, listing(dir))
          failed = failed + 1
        end
        n = n + 1
      until ok
      assert.is_true(failed > 3)
      assert_same_data(data, core.read_dump(path))
    end)
  end)

  describe("the reader", function()
    local function dump_bytes(data)
      local path = dir .. "/src.prof"
      core.write_dump(path, data or small_data())
      return read_file(path)
    end

    -- Reads bytes from a file: the data table, or false and the error message.
    local function read_bytes(bytes, name)
      local path = dir .. "/" .. (name or "in.prof")
      write_file(path, bytes)
      local ok, res = pcall(core.read_dump, path)
      return ok and res, (not ok) and res, path
    end

    local function refuses(bytes, pattern)
      local path = dir .. "/in.prof"
      write_file(path, bytes)
      return fails(path, pattern, core.read_dump, path)
    end

    it("refuses a newer version with a clear message", function()
      local b = dump_bytes()
      local path = dir .. "/out.prof"
      write_file(path, b:sub(1, 8) .. le(7, 4) .. b:sub(13))
      local _, err = pcall(core.read_dump, path)
      assert.are.equal("cprof: " .. path .. ": format version 7 not supported; this cprof reads versions 1 to 2", err)
      refuses(b:sub(1, 8) .. le(0, 4) .. b:sub(13), "^format version 0 not supported")
    end)

    it("gives one clean error for a dump truncated at every byte", function()
      local b = dump_bytes()
      for cut = 0, #b - 1 do
        local got, err = read_bytes(b:sub(1, cut))
        assert.is_false(got, "a dump cut at " .. cut .. " bytes was accepted")
        assert.are.equal("cprof: " .. dir .. "/in.prof: ", err:sub(1, #dir + 17), err)
      end
      assert.is_truthy(read_bytes(b))
    end)

    it("refuses a byte flipped at any position of a version-2 dump", function()
      local b = dump_bytes()
      for i = 1, #b do
        local c = byte(b, i)
        for _, flipped in ipairs({ 255 - c, c % 2 == 0 and c + 1 or c - 1 }) do
          local got, err = read_bytes(b:sub(1, i - 1) .. char(flipped) .. b:sub(i + 1))
          assert.is_false(got, "a dump with byte " .. i .. " changed was accepted")
          assert.are.equal("cprof: " .. dir .. "/in.prof: ", err:sub(1, #dir + 17), err)
        end
      end
    end)

    it("never crashes on a byte flipped at any position of a version-1 dump: a clean error or a valid table", function()
      local b = build(sections_of(dump_bytes()))
      local valid, refused = 0, 0
      for i = 1, #b do
        local c = byte(b, i)
        for _, flipped in ipairs({ 255 - c, c % 2 == 0 and c + 1 or c - 1 }) do
          local got, err = read_bytes(b:sub(1, i - 1) .. char(flipped) .. b:sub(i + 1))
          if got then
            valid = valid + 1
            -- What the reader accepts, the writer accepts.
            assert.is_true(core.write_dump(dir .. "/again.prof", got))
          else
            refused = refused + 1
            assert.are.equal("cprof: " .. dir .. "/in.prof: ", err:sub(1, #dir + 17), err)
          end
        end
      end
      assert.is_true(valid > 0 and refused > 0)
    end)

    it("refuses files that are not dumps, naming what happened to them", function()
      refuses("", "^empty file, not a cprof dump$")
      refuses("hello world, this is text\n", "^not a cprof dump %(wrong magic number%)$")
      local b = dump_bytes()
      refuses((b:gsub("\r\n", "\n", 1)), "line endings were converted %(\\r\\n to \\n%)")
      refuses((b:gsub("\r\n", "\r\r\n", 1)), "line endings were converted %(\\n to \\r\\n%)")
      refuses("\9" .. b:sub(2), "high bit of its bytes was stripped")
      refuses(b:sub(1, 5), "^truncated: the file is only 5 bytes long$")
    end)

    it("reads the file that minimal() builds, and supplies the missing fields", function()
      local got = read_bytes(minimal())
      assert.are.same({ n = 1, kind = { "Lua" }, file = { "a.lua" }, line = { 3 }, lastline = { -1 },
                        name = { "f" }, ncalls = { 0 }, pcalls = { 0 }, tottime = { 0 }, cumtime = { 0 } },
                      got.frames)
      assert.are.same({ 0, 1 }, got.nodes.parent)
      assert.are.same({ 1 }, got.edges.caller)
    end)

    it("skips sections of unknown kinds and fields it does not know, of every wire type", function()
      local schema = uv(4) .. SCHEMA_FRAMES
        .. uv(2) .. uv(5) .. field("caller", 5, 0) .. field("future_v", 1, 0) .. field("callee", 5, 0)
        .. field("future_f", 3, 1) .. field("future_b", 77, 2)
        .. SCHEMA_NODES .. uv(42) .. uv(1) .. field("x", 99, 0)
      local edges = uv(1) .. uv(0) .. uv(300) .. uv(0) .. "\0\0\0\0\0\0\248\63" .. str("opaque\0")
      local list = sections_of(minimal({ schema = schema, edges = edges }))
      table.insert(list, 3, { 1000, "a section from a newer cprof" })
      table.insert(list, { 4242, "" })
      local got, err = read_bytes(build(list))
      assert.is_falsy(err)
      assert.are.same({ n = 1, caller = { 1 }, callee = { 1 }, ncalls = { 0 }, pcalls = { 0 },
                        tottime = { 0 }, cumtime = { 0 } }, got.edges)
    end)

    it("refuses bad schemas", function()
      refuses(minimal({ schema = uv(2) .. SCHEMA_FRAMES .. SCHEMA_EDGES }), "^schema section: nodes are not described$")
      refuses(minimal({ schema = uv(3) .. uv(1) .. uv(1) .. field("kind", 4, 0) .. SCHEMA_EDGES .. SCHEMA_NODES }),
              "^schema section: frames lack the required field 'file'$")
      refuses(minimal({ schema = uv(3) .. SCHEMA_FRAMES .. SCHEMA_EDGES .. SCHEMA_NODES .. "x" }),
              "^schema section: 1 unexpected bytes after its contents$")
      refuses(minimal({ schema = uv(4) .. SCHEMA_FRAMES .. SCHEMA_FRAMES .. SCHEMA_EDGES .. SCHEMA_NODES }),
              "^schema section: frames described twice$")
      refuses(minimal({ schema = uv(3) .. uv(1) .. uv(4) .. field("kind", 4, 0) .. field("file", 4, 0)
                                  .. field("line", 3, 1) .. field("name", 4, 0) .. SCHEMA_EDGES .. SCHEMA_NODES }),
              "^schema section: frames field 'line' has encoding 3; this cprof reads encoding 2$")
      refuses(minimal({ schema = uv(3) .. SCHEMA_FRAMES .. SCHEMA_EDGES .. uv(3) .. uv(3) .. field("parent", 6, 0)
                                  .. field("frame", 5, 0) .. field("new\1", 9, 3) }),
              "^schema section: field 'new\\x01' has wire type 3, which this cprof cannot skip$")
      refuses(minimal({ schema = uv(3) .. SCHEMA_FRAMES .. SCHEMA_EDGES .. uv(3) .. uv(3) .. field("parent", 6, 0)
                                  .. field("frame", 5, 0) .. field("x", 3, 0) }),
              "^schema section: field 'x' has encoding 3 with wire type 0$")
      refuses(minimal({ schema = uv(1) .. uv(1) .. uv(65) .. string.rep(field("x", 1, 0), 65) }),
              "^schema section: 65 fields for one record kind %(at most 64%)$")
    end)

    it("refuses bad indexes, parents and numbers", function()
      refuses(minimal({ frames = uv(1) .. uv(0) .. uv(3) .. uv(6) .. uv(2) }),
              "^frames section: record 1: file is string 3 but there are 3 strings$")
      refuses(minimal({ edges = uv(1) .. uv(0) .. uv(1) }),
              "^edges section: record 1: callee is frame 1 but there are 1 frames$")
      refuses(minimal({ nodes = uv(2) .. uv(0) .. uv(0) .. uv(2) .. uv(0) }),
              "^nodes section: record 2: parent delta 2 points before the first node$")
      refuses(minimal({ nodes = uv(1) .. uv(1) .. uv(0) }),
              "^nodes section: record 1: parent delta 1 points before the first node$")
      refuses(minimal({ edges = uv(1) .. uv(0) .. "\128\128\128\128\128\128\128\128\128\2" }),
              "^edges section: a number is longer than 64 bits$")
      refuses(minimal({ edges = uv(1) .. uv(0) .. "\128\128" }),
              "^edges section: truncated %(a number runs past its end%)$")
      local schema = uv(3) .. SCHEMA_FRAMES .. uv(2) .. uv(3) .. field("caller", 5, 0) .. field("callee", 5, 0)
                     .. field("ncalls", 1, 0) .. SCHEMA_NODES
      refuses(minimal({ schema = schema, edges = uv(1) .. uv(0) .. uv(0) .. "\255\255\255\255\255\255\255\255\255\1" }),
              "^edges section: record 1: ncalls = 18446744073709551615 is larger than 2%^63%-1$")
      local got = read_bytes(minimal({ schema = schema, edges = uv(1) .. uv(0) .. uv(0) .. "\255\255\255\255\255\255\255\255\127" }))
      assert.are.equal(math.maxinteger or 2 ^ 63, got.edges.ncalls[1])
    end)

    it("refuses bogus counts at once, without allocating for them", function()
      local huge = 2 ^ 60
      local t0 = os.clock()
      collectgarbage("collect")
      collectgarbage("stop")
      local kb = collectgarbage("count")
      refuses(minimal({ strings = uv(huge) }), "^strings section: claims 1152921504606846976 strings but only 0 bytes remain$")
      refuses(minimal({ nodes = uv(2 ^ 31 - 1) .. string.rep("\0", 40) }), "^nodes section: claims 2147483647 records but only 40 bytes remain$")
      local grew = collectgarbage("count") - kb
      collectgarbage("restart")
      assert.is_true(grew < 256, "reading bogus counts allocated " .. grew .. " KB")
      refuses(minimal({ frames = uv(huge) .. uv(0) }), "^frames section: claims 1152921504606846976 records but only 1 bytes remain$")
      refuses(minimal({ edges = uv(huge) .. uv(0) .. uv(0) }), "^edges section: claims 1152921504606846976 records")
      refuses(minimal({ nodes = uv(huge) }), "^nodes section: claims 1152921504606846976 records")
      refuses(minimal({ meta = uv(huge) }), "^meta section: claims 1152921504606846976 entries")
      refuses(minimal({ schema = uv(huge) }), "^schema section: claims 1152921504606846976 record kinds")
      refuses(minimal({ schema = uv(1) .. uv(1) .. uv(huge) }), "^schema section: claims 1152921504606846976 fields")
      refuses(minimal({ strings = uv(1) .. uv(huge) }), "^strings section: a string of 1152921504606846976 bytes runs past its end")
      -- Records of 8 bytes each (a float per record) need 8 bytes per claimed record.
      local schema = uv(3) .. SCHEMA_FRAMES .. uv(2) .. uv(3) .. field("caller", 5, 0) .. field("callee", 5, 0)
                     .. field("t", 3, 1) .. SCHEMA_NODES
      refuses(minimal({ schema = schema, edges = uv(2) .. string.rep("\0", 15) }),
              "^edges section: claims 2 records but only 15 bytes remain$")
      local b = minimal()
      refuses(b:sub(1, 12) .. le(2 ^ 31, 4) .. b:sub(17), "^truncated: the header lists 2147483648 sections")
      assert.is_true(os.clock() - t0 < 1)
    end)

    it("refuses bad directories", function()
      local list = sections_of(minimal())
      local b = build(list)
      -- Entry 1's offset (bytes 21..28) and length (29..36).
      local function with_entry(i, off, len)
        local e = 17 + (i - 1) * 20
        return b:sub(1, e + 3) .. le(off, 8) .. le(len, 8) .. b:sub(e + 20)
      end
      refuses(with_entry(1, 16, 4), "^section 1 %(kind 1%) at offset 16 overlaps the header$")
      refuses(with_entry(1, 136, 2 ^ 60),
              "^truncated: section 1 %(kind 1%) of 1152921504606846976 bytes at offset 136 runs past the end of the file %(%d+ bytes%)$")
      refuses(with_entry(1, 2 ^ 62, 1), "^truncated: section 1 %(kind 1%) of 1 bytes at offset 4611686018427387904 runs past")
      refuses(with_entry(6, 2 ^ 64 - 2 ^ 11, 2 ^ 11), "^truncated: section 6 %(kind 6%) of 2048 bytes at offset 18446744073709549568")
      refuses(with_entry(2, 136, 10), "^section 2 %(kind 2%) overlaps the one before it$")
      list[3][1] = 2
      refuses(build(list), "^two strings sections$")
      table.remove(list, 3)
      refuses(build(list), "^no frames section$")
    end)

    it("refuses bad metadata", function()
      refuses(minimal({ meta = uv(2) .. str("a") .. uv(1) .. str("a") .. uv(0) }), "^meta section: key 'a' appears twice$")
      refuses(minimal({ meta = uv(1) .. str("k\0") .. uv(9) }), "^meta section: key 'k\\x00' has a value of unknown type 9$")
      local got = read_bytes(minimal({ meta = uv(3) .. str("a\0") .. uv(4) .. str("\0\255") .. str("i") .. uv(2) .. uv(3)
                                              .. str("") .. uv(3) .. "\0\0\0\0\0\0\240\63" }))
      assert.are.same({ ["a\0"] = "\0\255", i = -2, [""] = 1 }, got.meta)
    end)

    it("reports files it cannot read", function()
      local path = dir .. "/none.prof"
      fails(path, "^cannot open: No such file or directory$", core.read_dump, path)
      fails(dir, "^a directory, not a regular file$", core.read_dump, dir)
    end)

    it("reports running out of memory while reading", function()
      local path = dir .. "/m.prof"
      core.write_dump(path, small_data())
      core.fail_allocations(0)
      local ok, err = pcall(core.read_dump, path)
      core.fail_allocations(-1)
      assert.is_false(ok)
      assert.are.equal("cprof: " .. path .. ": out of memory", err)
    end)
  end)
end)
