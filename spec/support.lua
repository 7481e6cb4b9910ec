-- Helpers shared by the specs: finding rows in getstats() tables and checking that times add up;
-- files, child processes and reference files; dumps built byte by byte.
local support = {}

support.jit = rawget(_G, "jit") ~= nil

--- The entry named `name` (and, if given, defined on `line`) and its index.
function support.find(stats, name, line)
  for i, e in ipairs(stats.entries) do
    if e.name == name and (line == nil or e.line == line) then return e, i end
  end
  return nil
end

--- The entry of a Lua function value, found by the line it is defined on.
function support.entry_of(stats, f)
  local line = debug.getinfo(f, "S").linedefined
  for i, e in ipairs(stats.entries) do
    if e.what == "Lua" and e.line == line then return e, i end
  end
  return nil
end

--- The edge caller -> callee, or nil.
function support.edge(stats, caller, callee)
  local _, ci = support.find(stats, caller)
  local ce = support.find(stats, callee)
  return ce and ci and ce.callers[ci]
end

--- Callee edges of entry i: { [j] = edge }.
function support.callees(stats, i)
  local out = {}
  for j, e in ipairs(stats.entries) do
    if e.callers[i] then out[j] = e.callers[i] end
  end
  return out
end

--- For every function that never recursed, cumulative time is its own time plus its callees'
--- cumulative times: the invariant that makes a profile add up.
function support.assert_adds_up(stats)
  for i, e in ipairs(stats.entries) do
    if e.ncalls == e.pcalls then
      local sum = e.tottime
      for _, c in pairs(support.callees(stats, i)) do sum = sum + c.cumtime end
      assert(math.abs(sum - e.cumtime) < 1e-9,
        ("%s: cumtime %g ~= tottime + callees %g"):format(e.name, e.cumtime, sum))
    end
  end
end

function support.total_tt(stats)
  local t = 0
  for _, e in ipairs(stats.entries) do t = t + e.tottime end
  return t
end

-------------------------------------------------------------------------------------------------
-- Files, directories and child processes

support.lua = support.jit and "luajit" or "lua5.4"

--- The directory of the specs (as this file was found: relative to the repository root, where
--- busted runs), and the repository root.
support.SPEC_DIR = debug.getinfo(1, "S").source:gsub("^@", ""):match("^(.*)[/\\][^/\\]*$") or "."
support.ROOT = support.SPEC_DIR .. "/.."

--- `p` made absolute against the current directory.
function support.absolute(p)
  if p:sub(1, 1) == "/" then return p end
  return (os.getenv("PWD") or ".") .. "/" .. p
end

--- The contents of a file, or nil and io.open's message.
function support.read_file(path)
  local f, err = io.open(path, "rb")
  if not f then return nil, err end
  local s = f:read("*a")
  f:close()
  return s
end

function support.write_file(path, text)
  local f = assert(io.open(path, "wb"))
  f:write(text)
  f:close()
end

--- A fresh temporary file name (no file by that name exists), with `suffix` appended.
function support.tmpname(suffix)
  local n = os.tmpname()
  os.remove(n)
  return n .. (suffix or "")
end

--- A new empty temporary directory; support.remove_dir removes it with what it holds.  With
--- `in_memory`, on a file system in memory (/dev/shm) when there is one: the specs that write
--- thousands of small files run there (ext4 flushes a file rewritten after a truncation).
function support.new_dir(in_memory)
  local d = support.tmpname()
  local shm = os.execute("test -d /dev/shm -a -w /dev/shm")
  if in_memory and (shm == true or shm == 0) then d = "/dev/shm/" .. d:match("[^/]*$") end
  assert(os.execute("mkdir -p '" .. d .. "'"))
  return d
end

--- The names in directory `dir` (dot files too), sorted.
function support.listing(dir)
  local p = io.popen("ls -A '" .. dir .. "'")
  local names = {}
  for name in p:lines() do names[#names + 1] = name end
  p:close()
  table.sort(names)
  return names
end

function support.remove_dir(dir)
  os.execute("rm -rf '" .. dir .. "'")
end

--- `s` quoted for the shell.
function support.q(s)
  return "'" .. tostring(s):gsub("'", [['\'']]) .. "'"
end

--- Runs shell command `cmd` with its stdout and stderr going to files; returns the two texts
--- and the exit status.
function support.capture(cmd)
  local out, err = support.tmpname(), support.tmpname()
  local p = assert(io.popen(("%s >%s 2>%s; echo $?"):format(cmd, support.q(out), support.q(err))))
  local status = tonumber(p:read("*l"))
  p:close()
  local o, e = support.read_file(out), support.read_file(err)
  os.remove(out)
  os.remove(err)
  return o, e, status
end

--- Runs Lua program `script` in a child process of this spec's interpreter (lua5.4 or luajit),
--- as `<env> <lua> <flags> <file>`; returns its stdout, stderr, exit status and the file's name.
function support.run_lua(script, flags, env)
  local src = support.tmpname(".lua")
  support.write_file(src, script)
  local o, e, status = support.capture(("%s %s %s %s"):format(env or "", support.lua, flags or "", src))
  os.remove(src)
  return o, e, status, src
end

--- The environment for lua5.4 running bin/cprof-stats of the repository at `root` ("" or
--- "env ... "), or nil and why not: under LuaJIT it needs the lua5.4 build of cprof.core.
-- `env ...` for a child process that runs this checkout's cprof under the suite's interpreter:
-- its Lua modules, and the C module the suite itself loaded (so an ASan suite's children run
-- the instrumented build), whatever LUA_*_5_4 the caller's shell has; then `extra`.
function support.child_env(extra)
  local root = support.absolute(support.ROOT)
  return ("env -u LUA_PATH_5_4 -u LUA_CPATH_5_4 LUA_PATH=%s LUA_CPATH=%s %s"):format(
    support.q(root .. "/lua/?.lua;" .. root .. "/lua/?/init.lua;;"), support.q(package.cpath),
    extra or "")
end

function support.lua54_env(root)
  if support.jit then
    local so = root .. "/build/lua5.4/cprof/core.so"
    if not support.read_file(so) then return nil, "build/lua5.4/cprof/core.so is not built (run make first)" end
    return ("env -u LUA_CPATH_5_4 LUA_CPATH=%s "):format(support.q(root .. "/build/lua5.4/?.so;;"))
  end
  return ""
end

-------------------------------------------------------------------------------------------------
-- Reference files: CPython's pstats output and files in shared/reference/pstats when the
-- checkout has them, else the copies in spec/golden/

support.SHARED_REF = support.SPEC_DIR .. "/../../shared/reference/pstats/"
support.LOCAL_REF = support.SPEC_DIR .. "/golden/"
local SHARED, LOCAL = support.SHARED_REF, support.LOCAL_REF

--- The path of reference file `name`: the shared copy in SHARED/`sub` when present, else the
--- one in spec/golden/.
function support.ref_path(sub, name)
  if support.read_file(SHARED .. sub .. name) then return SHARED .. sub .. name end
  assert(support.read_file(LOCAL .. name), "reference file not found: " .. name)
  return LOCAL .. name
end

--- The text of golden file `name`; nil when it is not there and `required` is false.
function support.golden(name, required)
  local s = support.read_file(SHARED .. "golden/" .. name) or support.read_file(LOCAL .. name)
  if required ~= false then assert(s, "golden file not found: " .. name) end
  return s
end

--- "========== title ==========" sections of a golden file: { [title] = text }.
function support.sections(text)
  local out, cur = {}, nil
  for line in text:gmatch("([^\n]*)\n") do
    local title = line:match("^=+ (.-) =+$")
    if title then
      cur = {}
      out[title] = cur
    elseif cur then
      cur[#cur + 1] = line .. "\n"
    end
  end
  for k, v in pairs(out) do out[k] = table.concat(v) end
  return out
end

--- A stream that collects what is written to it: text() all of it, count() the pieces.
function support.collector()
  local buf = {}
  local s = {}
  function s:write(...)
    for i = 1, select("#", ...) do buf[#buf + 1] = tostring((select(i, ...))) end
    return self
  end
  function s.text() return table.concat(buf) end
  function s.count() return #buf end
  return s
end

--- A timer function whose clock advances one tick per reading (Python's golden runs).
function support.ticking()
  local n = 0
  return function() n = n + 1 return n end
end

-------------------------------------------------------------------------------------------------
-- fibdemo_det.py (fib(6) x3, 1 ms per timer read) as a getstats() table: the numbers of the raw
-- marshal dict in golden_det.txt, in the dict order CPython used (it decides ties).
-- support.DET names its entries' indices; det_data(file) names the Python file (default
-- "fibdemo_det.py").

local WORK, FIB, MAIN, HELPER, SORTED, DISABLE, LEN = 1, 2, 3, 4, 5, 6, 7
support.DET = { WORK = WORK, FIB = FIB, MAIN = MAIN, HELPER = HELPER, SORTED = SORTED,
                DISABLE = DISABLE, LEN = LEN }

local function edge(nc, cc, tt, ct) return { ncalls = nc, pcalls = cc, tottime = tt, cumtime = ct } end


function support.det_data(file)
  local F = file or "fibdemo_det.py"
  return {
    timer = "counter", unit = 0.001, -- CPython's fake timer counts readings, as counter does
    entries = {
      [WORK] = { file = F, line = 15, name = "work", what = "Lua", ncalls = 1, pcalls = 1,
                 tottime = 0.007, cumtime = 0.163,
                 callers = { [MAIN] = edge(1, 1, 0.007, 0.163) } },
      [FIB] = { file = F, line = 7, name = "fib", what = "Lua", ncalls = 75, pcalls = 3,
                tottime = 0.147, cumtime = 0.147,
                callers = { [WORK] = edge(3, 3, 0.009000000000000001, 0.147),
                            [FIB] = edge(72, 6, 0.138, 0.138) } },
      [MAIN] = { file = F, line = 22, name = "main", what = "Lua", ncalls = 1, pcalls = 1,
                 tottime = 0.003, cumtime = 0.167, callers = {} },
      [HELPER] = { file = F, line = 12, name = "helper", what = "Lua", ncalls = 3, pcalls = 3,
                   tottime = 0.006, cumtime = 0.009000000000000001,
                   callers = { [WORK] = edge(3, 3, 0.006, 0.009000000000000001) } },
      [SORTED] = { file = "~", line = 0, name = "built-in method builtins.sorted", what = "C",
                   ncalls = 3, pcalls = 3, tottime = 0.003, cumtime = 0.003,
                   callers = { [HELPER] = edge(3, 3, 0.003, 0.003) } },
      [DISABLE] = { file = "~", line = 0, name = "method 'disable' of '_lsprof.Profiler' objects",
                    what = "C", ncalls = 1, pcalls = 1, tottime = 0.001, cumtime = 0.001,
                    callers = {} },
      [LEN] = { file = "~", line = 0, name = "built-in method builtins.len", what = "C",
                ncalls = 1, pcalls = 1, tottime = 0.001, cumtime = 0.001,
                callers = { [MAIN] = edge(1, 1, 0.001, 0.001) } },
    },
  }
end

-------------------------------------------------------------------------------------------------
-- Dumps: values compared bit for bit, files built byte by byte (docs/FORMAT.md). Arithmetic
-- only, so that it runs under LuaJIT too.

support.math_type = math.type or function(x) return type(x) == "number" and "float" or nil end
support.toint = math.tointeger or function(x) return x end
support.NEG_ZERO = -1 / math.huge

--- Column table `cols` of a data group with `n` rows.
function support.group(n, cols)
  cols.n = n
  return cols
end

--- Two numbers of the same type and the same bits: NaN equals NaN, 0 does not equal -0.
function support.same_number(a, b)
  local math_type = support.math_type
  if type(a) ~= "number" or type(b) ~= "number" then return false end
  if math_type(a) ~= math_type(b) then return false end
  if a ~= a then return b ~= b end
  if a == 0 then return b == 0 and 1 / a == 1 / b end
  return a == b
end

--- Two values the same: numbers as same_number has it, anything else by ==.
function support.same_value(a, b)
  if type(a) == "number" then return support.same_number(a, b) end
  return a == b
end

--- A value for messages: strings quoted, numbers with their type.
function support.show(v)
  if type(v) == "string" then return string.format("%q", v) end
  return tostring(v) .. " (" .. tostring(support.math_type(v) or type(v)) .. ")"
end

local char, byte = string.char, string.byte

--- An unsigned varint.
function support.uv(n)
  local t = {}
  repeat
    local b = n % 128
    n = (n - b) / 128
    t[#t + 1] = char(n > 0 and b + 128 or b)
  until n == 0
  return table.concat(t)
end

--- `n` in `size` little-endian bytes, and back from position `pos` of `s`.
function support.le(n, size)
  local t = {}
  for i = 1, size do
    local b = n % 256
    t[i] = char(b)
    n = (n - b) / 256
  end
  return table.concat(t)
end

function support.get_le(s, pos, size)
  local v = 0
  for i = size, 1, -1 do v = v * 256 + byte(s, pos + i - 1) end
  return v
end

--- A string as the file holds it: its length, then its bytes.
function support.str(s) return support.uv(#s) .. s end

--- A schema field: name, encoding, wire type.
function support.field(name, enc, wire) return support.str(name) .. support.uv(enc) .. support.uv(wire) end

support.MAGIC = "\137CPROF\r\n"

-- Bitwise XOR, AND and shift on 32-bit values: LuaJIT's bit library, or Lua 5.4's operators
-- (compiled at run time, so that this file stays plain Lua 5.1).
local bxor, band, rshift
if bit then
  bxor, band, rshift = bit.bxor, bit.band, bit.rshift
else
  bxor, band, rshift = load("return function(a, b) return a ~ b end, function(a, b) return a & b end,"
    .. " function(a, n) return a >> n end")()
end

-- CRC-32C one bit at a time, independent of cprof's table-driven one (dump/crc32c.c).
function support.crc32c(s)
  local c = 0xFFFFFFFF
  for i = 1, #s do
    c = bxor(c, byte(s, i)) % 2 ^ 32
    for _ = 1, 8 do
      local low = band(c, 1)
      c = rshift(c, 1) % 2 ^ 32
      if low == 1 then c = bxor(c, 0x82F63B78) % 2 ^ 32 end
    end
  end
  return bxor(c, 0xFFFFFFFF) % 2 ^ 32
end

--- A file from a list of { kind, bytes } sections, laid out in that order: format version 1
--- (the default) or 2 (24-byte directory entries with the sections' CRC-32C, then the header's).
function support.build(sections, version)
  local le = support.le
  version = version or 1
  local v2 = version >= 2
  local off = 16 + (v2 and 24 or 20) * #sections + (v2 and 4 or 0)
  local dir, body = {}, {}
  for i, s in ipairs(sections) do
    dir[i] = le(s[1], 4) .. le(off, 8) .. le(#s[2], 8) .. (v2 and le(support.crc32c(s[2]), 4) or "")
    body[i] = s[2]
    off = off + #s[2]
  end
  local header = support.MAGIC .. le(version, 4) .. le(#sections, 4) .. table.concat(dir)
  if v2 then header = header .. le(support.crc32c(header), 4) end
  return header .. table.concat(body)
end

support.SCHEMA_FRAMES = support.uv(1) .. support.uv(4) .. support.field("kind", 4, 0)
  .. support.field("file", 4, 0) .. support.field("line", 2, 0) .. support.field("name", 4, 0)
support.SCHEMA_EDGES = support.uv(2) .. support.uv(2) .. support.field("caller", 5, 0)
  .. support.field("callee", 5, 0)
support.SCHEMA_NODES = support.uv(3) .. support.uv(2) .. support.field("parent", 6, 0)
  .. support.field("frame", 5, 0)

--- The sections of a minimal valid file with only the required fields, for build(); o.schema,
--- o.strings, o.frames, o.edges, o.nodes and o.meta replace parts.
function support.minimal_sections(o)
  local uv, str = support.uv, support.str
  o = o or {}
  return {
    { 1, o.schema or (uv(3) .. support.SCHEMA_FRAMES .. support.SCHEMA_EDGES .. support.SCHEMA_NODES) },
    { 2, o.strings or (uv(3) .. str("Lua") .. str("a.lua") .. str("f")) },
    { 3, o.frames or (uv(1) .. uv(0) .. uv(1) .. uv(6) .. uv(2)) },
    { 4, o.edges or (uv(1) .. uv(0) .. uv(0)) },
    { 5, o.nodes or (uv(2) .. uv(0) .. uv(0) .. uv(1) .. uv(0)) },
    { 6, o.meta or uv(0) },
  }
end

--- A Lua program that defines `data`: a profile of n frames with long names (dumps of some
--- hundred KB), for the specs that make a write fail or die half-way; `core` is cprof.core.
function support.big_dump_script(n)
  return ([[
    local core = require "cprof.core"
    local n = %d
    local names = {}
    for i = 1, n do names[i] = ("function_number_%%d"):format(i) end
    local function col(v) local t = {} for i = 1, n do t[i] = v end return t end
    local data = { frames = { n = n, kind = col("Lua"), file = names, line = col(1), name = names } }
  ]]):format(n)
end

--- The sections of a file (version 1 or 2), as build() takes them.
function support.sections_of(bytes)
  local get_le = support.get_le
  local n = get_le(bytes, 13, 4)
  local size = get_le(bytes, 9, 4) >= 2 and 24 or 20
  local out = {}
  for i = 1, n do
    local e = 17 + (i - 1) * size
    local off, len = get_le(bytes, e + 4, 8), get_le(bytes, e + 12, 8)
    out[i] = { get_le(bytes, e, 4), bytes:sub(off + 1, off + len) }
  end
  return out
end

return support
