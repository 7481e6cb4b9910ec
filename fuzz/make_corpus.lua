-- fuzz/make_corpus.lua -- regenerates the files of fuzz/corpus/, the seed corpus of
-- fuzz/fuzz_read.c; fuzz/corpus/v1/ holds the seeds of format version 1 (kept, never remade:
-- this cprof writes version 2 only).
--
--   make && eval "$(make -s env)" && lua5.4 fuzz/make_corpus.lua
--
-- Small valid dumps written by cprof.core.write_dump (one with every optional section: line
-- records and an allocator snapshot), a few built byte by byte to show the format's extension
-- points (an unknown section, unknown fields, fields left to their defaults), and truncated and
-- damaged copies. Lua 5.4 (it uses string.pack), run from the repository's root (it builds
-- files with spec/support.lua).

local core = require "cprof.core"
local data = require "cprof.profdata"
local S = dofile("spec/support.lua")

local dir = (arg and arg[0] and arg[0]:match("^(.*)/[^/]*$") or ".") .. "/corpus"
os.execute("mkdir -p '" .. dir .. "'")
for name in io.popen("ls '" .. dir .. "'"):lines() do
  if name ~= "v1" then assert(os.remove(dir .. "/" .. name)) end
end

local function save(name, bytes)
  local f = assert(io.open(dir .. "/" .. name, "wb"))
  f:write(bytes)
  f:close()
end

local function dump(data)
  local tmp = os.tmpname()
  core.write_dump(tmp, data)
  local f = assert(io.open(tmp, "rb"))
  local bytes = f:read("a")
  f:close()
  os.remove(tmp)
  return bytes
end

local function group(n, cols)
  cols.n = n
  return cols
end

local empty = { frames = group(0, {}), edges = group(0, {}), nodes = group(0, {}) }

local tiny = {
  meta = { timer = "monotonic", unit = 1e-9, pid = 7 },
  frames = group(1, { kind = { "main" }, file = { "t.lua" }, line = { 0 }, lastline = { 3 },
                      name = { "<main chunk>" }, ncalls = { 1 }, pcalls = { 1 },
                      tottime = { 0.5 }, cumtime = { 0.5 } }),
  edges = group(0, {}),
  nodes = group(1, { parent = { 0 }, frame = { 1 }, ncalls = { 1 }, pcalls = { 1 },
                     tottime = { 0.5 }, cumtime = { 0.5 } }),
}

local odd = {
  meta = { lua_version = "Lua 5.4", timer = "counter", unit = 1.0, bias = -0.0,
           command = "lua5.4 x.lua \0 \255", start_time = 1795230000.25, total_time = 1 / 0,
           host = "", tree_cap = 3, tree_folded = 1, dropped = math.maxinteger,
           yes = true, no = false },
  frames = group(3, { kind = { "Lua", "C", "main" }, file = { "a\0b.lua", "~", "\200\255" },
                      line = { 10, 0, 0 }, lastline = { 20, -1, -1 },
                      name = { "f", "{string.rep}", "" },
                      ncalls = { 1 << 53, math.maxinteger, 0 }, pcalls = { 3, 0, 5 },
                      tottime = { 0.1, -0.0, 1e-300 }, cumtime = { 1 / 0, -1 / 0, 0 / 0 } }),
  edges = group(3, { caller = { 3, 1, 1 }, callee = { 1, 2, 1 }, ncalls = { 1, 2, 3 },
                     pcalls = { 1, 2, 1 }, tottime = { 0.25, 5e-324, 0 },
                     cumtime = { 0.5, 1.5, 2.5 } }),
  nodes = group(4, { parent = { 0, 1, 2, 1 }, frame = { 3, 1, 2, 1 }, ncalls = { 1, 1, 2, 1 },
                     pcalls = { 1, 1, 2, 0 }, tottime = { 0, 0.1, 0.2, 0.3 },
                     cumtime = { 0.6, 0.5, 0.2, 0.3 } }),
}

-- A deterministic medium profile: 40 frames, 120 edges, 200 nodes.
local function medium()
  local seed = 12345
  local function rnd(n)
    seed = (seed * 1103515245 + 12345) % 2147483648
    return seed % n
  end
  local F, E, K = 40, 120, 200
  local fr = group(F, { kind = {}, file = {}, line = {}, lastline = {}, name = {},
                        ncalls = {}, pcalls = {}, tottime = {}, cumtime = {} })
  for i = 1, F do
    fr.kind[i] = i % 7 == 0 and "C" or "Lua"
    fr.file[i] = i % 7 == 0 and "~" or ("m" .. (i % 5) .. ".lua")
    fr.line[i], fr.lastline[i] = i * 3, i * 3 + 2
    fr.name[i] = "fn" .. i
    fr.ncalls[i], fr.pcalls[i] = rnd(1000), rnd(1000)
    fr.tottime[i], fr.cumtime[i] = rnd(10 ^ 6) * 1e-9, rnd(10 ^ 7) * 1e-9
  end
  local ed = group(E, { caller = {}, callee = {}, ncalls = {}, pcalls = {}, tottime = {}, cumtime = {} })
  for e = 1, E do
    ed.caller[e], ed.callee[e] = 1 + rnd(F) * rnd(F) // F, 1 + rnd(F)
    ed.ncalls[e], ed.pcalls[e] = rnd(500), rnd(500)
    ed.tottime[e], ed.cumtime[e] = rnd(10 ^ 6) * 1e-9, rnd(10 ^ 6) * 1e-9
  end
  local no = group(K, { parent = {}, frame = {}, ncalls = {}, pcalls = {}, tottime = {}, cumtime = {} })
  for i = 1, K do
    no.parent[i] = i == 1 and 0 or (rnd(4) == 0 and 0 or i - 1 - rnd(math.min(i - 1, 6)))
    no.frame[i] = 1 + rnd(F)
    no.ncalls[i], no.pcalls[i] = rnd(50), rnd(50)
    no.tottime[i], no.cumtime[i] = rnd(1000) * 1e-9, rnd(1000) * 1e-9
  end
  return { meta = { timer = "monotonic", unit = 1e-9 }, frames = fr, edges = ed, nodes = no }
end

-- tiny, with line records, memory in its node and frame, and an allocator snapshot.
local function full()
  local d = {
    meta = { timer = "counter", unit = 1.0, memory = true, memory_lost = 0 },
    frames = group(2, { kind = { "main", "Lua" }, file = { "t.lua", "t.lua" }, line = { 0, 2 },
                        lastline = { 9, 4 }, name = { "<main chunk>", "f" }, ncalls = { 1, 3 },
                        pcalls = { 1, 3 }, tottime = { 2, 6 }, cumtime = { 8, 6 },
                        alloc_count = { 1, 6 }, alloc_bytes = { 56, 336 }, free_count = { 0, 2 },
                        free_bytes = { 0, 112 }, min_size = { 56, 56 }, max_size = { 56, 56 } }),
    edges = group(1, { caller = { 1 }, callee = { 2 }, ncalls = { 3 }, pcalls = { 3 },
                       tottime = { 6 }, cumtime = { 6 } }),
    nodes = group(2, { parent = { 0, 1 }, frame = { 1, 2 }, ncalls = { 1, 3 }, pcalls = { 1, 3 },
                       tottime = { 2, 6 }, cumtime = { 8, 6 }, alloc_count = { 1, 6 },
                       alloc_bytes = { 56, 336 }, free_count = { 0, 2 }, free_bytes = { 0, 112 },
                       min_size = { 56, 56 }, max_size = { 56, 56 } }),
    lines = group(4, { frame = { 1, 2, 2, 1 }, line = { 5, 3, 4, 6 }, hits = { 1, 3, 3, 1 },
                       time = { 7, 3, 3, 1 } }),
  }
  return data.set_allocator(d, {
    lua_bytes = 20000, requested = 19000, foreign = 1000, held = 19500, footprint = 24000,
    mapped = 2097152, peak_mapped = 2097152, metadata = 3000, live = 300, allocs = 400,
    failures = 0, limit_failures = 0, foreign_frees = 4, limit = 1 << 30,
    caches = { { name = "table_56", type = "table", source = "pages", objsize = 56, slab_size = 4096,
                 objects = 73, live = 5, magazine = 1, allocs = 7, requested = 280, slabs = 1,
                 partial_slabs = 1 } },
    types = { { name = "table", tag = 5, live = 5, bytes = 280, held = 280, allocs = 7,
                large_live = 0, large_allocs = 0, large_held = 0 } },
    arenas = {
      { name = "chunks", source = "none", quantum = 2097152, total = 2097152, alloc = 2097152,
        free = 0, imported = 2097152, peak_total = 2097152, nr_allocs = 1, nr_free_segs = 0,
        nr_spans = 1, nr_imports = 1, nr_empty = 0, allocs = 1, frees = 0, imports = 1,
        releases = 0, import_failures = 0, hash_size = 64, hash_empty = 63, hash_longest = 1,
        meta = 1500, free_lists = {} },
      { name = "pages", source = "chunks", quantum = 4096, total = 2093056, alloc = 4096,
        free = 2088960, imported = 2093056, peak_total = 2093056, nr_allocs = 1, nr_free_segs = 1,
        nr_spans = 1, nr_imports = 1, nr_empty = 0, allocs = 1, frees = 0, imports = 1,
        releases = 0, import_failures = 0, hash_size = 64, hash_empty = 63, hash_longest = 1,
        meta = 1500, free_lists = { [20] = 1 } },
    },
  })
end

-- Hand-built files ---------------------------------------------------------------------------

local function uv(n)
  local t = {}
  repeat
    local b = n & 0x7f
    n = n >> 7
    t[#t + 1] = string.char(n ~= 0 and (b | 0x80) or b)
  until n == 0
  return table.concat(t)
end
local function str(s) return uv(#s) .. s end

-- sections: a list of { kind, bytes }; the directory (with the checksums) is laid out for them.
local function file(sections, version)
  return S.build(sections, version or 2)
end

local function field(name, enc, wire) return str(name) .. uv(enc) .. uv(wire) end

-- Only the required fields, an unknown field of each wire type in edges, an unknown record
-- kind in the schema and an unknown section kind.
local function extended(o)
  o = o or {}
  local schema = uv(4)
    .. uv(1) .. uv(4) .. field("kind", 4, 0) .. field("file", 4, 0) .. field("line", 2, 0) .. field("name", 4, 0)
    .. uv(2) .. uv(5) .. field("caller", 5, 0) .. field("future_v", 1, 0) .. field("callee", 5, 0)
                     .. field("future_f", 3, 1) .. field("future_b", 7, 2)
    .. uv(3) .. uv(2) .. field("parent", 6, 0) .. field("frame", 5, 0)
    .. uv(9) .. uv(1) .. field("whatever", 42, 2)
  local strings = o.strings or uv(4) .. str("Lua") .. str("x.lua") .. str("f") .. str("g")
  local frames = uv(2) .. uv(0) .. uv(1) .. uv(2) .. uv(2) .. uv(0) .. uv(1) .. uv(20) .. uv(3)
  local edges = o.edges or uv(1) .. uv(0) .. uv(300) .. uv(1) .. string.pack("<d", 1.5) .. str("opaque")
  local nodes = uv(2) .. uv(0) .. uv(0) .. uv(1) .. uv(1)
  local meta = uv(2) .. str("timer") .. uv(4) .. str("monotonic") .. str("pid") .. uv(2) .. uv(84)
  return file({ { 1, schema }, { 2, strings }, { 3, frames }, { 77, "a section from the future" },
                { 4, edges }, { 5, nodes }, { 6, meta } })
end

-- The optional record kinds with only their required fields: lines, arenas and their free lists
-- (an index into the arenas: encoding 8); the mem_types kind described but without a section.
local function optional()
  local schema = uv(6)
    .. uv(1) .. uv(4) .. field("kind", 4, 0) .. field("file", 4, 0) .. field("line", 2, 0) .. field("name", 4, 0)
    .. uv(2) .. uv(2) .. field("caller", 5, 0) .. field("callee", 5, 0)
    .. uv(3) .. uv(2) .. field("parent", 6, 0) .. field("frame", 5, 0)
    .. uv(4) .. uv(2) .. field("frame", 5, 0) .. field("line", 2, 0)
    .. uv(7) .. uv(1) .. field("name", 4, 0)
    .. uv(8) .. uv(3) .. field("arena", 8, 0) .. field("list", 1, 0) .. field("future", 3, 1)
  local strings = uv(3) .. str("Lua") .. str("x.lua") .. str("pages")
  local frames = uv(1) .. uv(0) .. uv(1) .. uv(2) .. uv(1)
  local lines = uv(2) .. uv(0) .. uv(4) .. uv(0) .. uv(6)
  local arenas = uv(1) .. uv(2)
  local free_lists = uv(1) .. uv(0) .. uv(12) .. string.pack("<d", 0.5)
  return file({ { 1, schema }, { 2, strings }, { 3, frames }, { 4, uv(0) }, { 5, uv(0) },
                { 7, lines }, { 10, arenas }, { 11, free_lists }, { 6, uv(0) } })
end

-- Writing -------------------------------------------------------------------------------------

local valid = {
  empty = dump(empty),
  tiny = dump(tiny),
  odd = dump(odd),
  medium = dump(medium()),
  extended = extended(),
  full = dump(full()),
  optional = optional(),
}
for name, bytes in pairs(valid) do
  save(name .. ".prof", bytes)
  assert(core.read_dump(dir .. "/" .. name .. ".prof"))
end

-- Damaged copies of the small ones: they must fail cleanly.
local odd_bytes = valid.odd
for _, cut in ipairs({ 4, 12, 40, 150, #odd_bytes // 2, #odd_bytes - 1 }) do
  save(("odd-truncated-%d.prof"):format(cut), odd_bytes:sub(1, cut))
end
save("tiny-version-7.prof", valid.tiny:sub(1, 8) .. string.pack("<I4", 7) .. valid.tiny:sub(13))
save("tiny-crlf.prof", (valid.tiny:gsub("\r\n", "\n", 1)))
save("bogus-string-count.prof", extended({ strings = uv(1 << 60) .. str("x") }))
save("bogus-edge-count.prof", extended({ edges = uv(1 << 60) .. uv(0) .. uv(1) .. uv(1) }))
local full_bytes = valid.full
for _, cut in ipairs({ #full_bytes // 3, #full_bytes // 2, #full_bytes - 9 }) do
  save(("full-truncated-%d.prof"):format(cut), full_bytes:sub(1, cut))
end

local n = 0
for _ in io.popen("ls '" .. dir .. "'"):lines() do n = n + 1 end
print(("fuzz/make_corpus.lua: %d files in %s"):format(n, dir))
