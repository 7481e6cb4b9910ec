--- cprof.memory: cprof's allocator for the running Lua state (the C core's), and its reports
--- (cprof.report.allocator) of this state's statistics.
---
---   local memory = require "cprof.memory"
---   memory.install()              -- from here on, every new block comes from cprof's allocator
---   ...
---   memory.report()               -- kmemstat tree, free, arena_stats, slab_stats, Lua types, waste
---   memory.limit(64 * 2^20)       -- past 64 MiB allocations fail: Lua raises "not enough memory"
---   memory.trace("start", "table_56") ... memory.trace("print", "table_56")
---
--- The allocator is a heap of slab caches, one per Lua type and size class, over Bonwick-style
--- arenas (src/mem/arena.c, src/mem/slab.c, src/mem/lalloc.c); docs/MEMORY.md describes it and
--- every field of the statistics. The reports follow the layout of Akaros's #mem device (kmemstat,
--- arena_stats, slab_stats, free, slab_trace).
---
--- Under LuaJIT install() raises an error (see docs/MEMORY.md); the module still loads.

local _ENV = require("cprof.env")()

local core = require("cprof.version").core()
local allocator = require "cprof.report.allocator"
local args = require "cprof.args"
local C = core.memory

local memory = {}

--- install(): swaps the allocator of this state for cprof's. Blocks made before stay with the
--- old allocator, which frees them (and reallocations of them move them into cprof's heap).
--- Returns true, or false and "already installed". Raises an error where it cannot work.
memory.install = C.install
--- installed(): whether this state uses cprof's allocator.
memory.installed = C.installed
--- stats(): the statistics as tables (docs/MEMORY.md).
memory.stats = C.stats
--- bytes(): Lua's count (collectgarbage("count") * 1024), cprof's part of it, the part still in
--- blocks of the replaced allocator; three integers, read without allocating anything.
memory.bytes = C.bytes
--- type(name): live objects, live bytes and allocations ever of one Lua type ("table",
--- "string", "function", "userdata", "thread", "upvalue", "proto", "other", or "raw" for memory
--- that is no object), read without allocating anything.
memory.type = C.type
--- limit(bytes | nil): allocations that would take Lua's count past `bytes` fail; nil removes
--- the limit. Returns the previous limit (nil: none).
memory.limit = C.limit
--- check(): true, or nil and what is wrong with the heap's invariants (for tests).
memory.check = C.check
--- reap(): gives the empty slabs and magazines back, so that whole chunks go back to the OS.
memory.reap = C.reap
--- fail_after(n): tests: after n more OS mappings or metadata allocations, they fail; -1: never.
memory.fail_after = C.fail_after
--- uninstall(): raises an error: it cannot be done safely (docs/MEMORY.md).
memory.uninstall = C.uninstall

-- Runs printer(w, s) with `w` collecting what it writes, then writes the text to `stream`
-- (default io.stdout) in one call, as every report of cprof writes: a stream needs only a
-- write method that takes one string.
local function print_to(stream, fname, printer, s)
  args.check(stream == nil or args.is_stream(stream), stream, 1, fname,
             "an object with a write method", 1)
  args.check(s == nil or type(s) == "table", s, 2, fname, "statistics table (memory.stats())", 1)
  local buf = {}
  printer(function(...)
    for i = 1, select("#", ...) do buf[#buf + 1] = (select(i, ...)) end
  end, s or C.stats())
  ;(stream or io.stdout):write(table.concat(buf))
end

--- kmemstat, free, arena_stats, slab_stats, types, waste and report([stream], [stats]): the
--- reports of cprof.report.allocator (Akaros's layouts) written to `stream` (default
--- io.stdout) with one write, from `stats` (what stats() returned, now or earlier: a dump's
--- allocator snapshot, see cprof.allocdata.get) or, without it, a new reading of this
--- state's allocator.
for _, name in ipairs({ "kmemstat", "free", "arena_stats", "slab_stats", "types", "waste",
                        "report" }) do
  local printer = allocator[name]
  memory[name] = function(stream, s) print_to(stream, name, printer, s) end
end

local TRACE_VERBS = { start = true, stop = true, print = true, text = true, reset = true,
                      data = true }
local TRACE_USAGE = "start, stop, print, text, reset or data"

-- Calls C function f with the arguments; its error is raised at the line that called trace.
local function call(f, ...)
  local ok, res = pcall(f, ...)
  if not ok then error(res, 3) end
  return res
end

--- trace(cmd, cache[, stream]): Akaros's slab_trace for one cache, e.g. "table_56".
---   "start"  record the Lua stack (up to 8 frames) of every allocation from the cache; a free
---            removes its record, so the records are the live objects allocated since start
---   "stop"   stop recording; the records stay as they are (frees no longer remove them)
---   "print"  write the records grouped by stack, most bytes first, to stream (default
---            io.stdout), with one write; returns nothing, as print does
---   "text"   returns that text
---   "reset"  forget the records
---   "data"   returns the records as a table (cache, on, stacks, dropped, sites = { live,
---            bytes, allocs, frames = { src, line, defined } }), or nil when none is traced
--- For print, text and data the cache may be left out (the one traced). One cache is traced at
--- a time. While tracing, every allocation and free takes the checked path of the allocator (a
--- few times slower).
function memory.trace(cmd, cache, stream)
  if not TRACE_VERBS[cmd] then
    args.fail(1, "trace", type(cmd) == "string" and string.format("invalid option '%s': %s", cmd, TRACE_USAGE)
      or (TRACE_USAGE .. " expected, got " .. args.typename(cmd)))
  end
  local reads = cmd == "print" or cmd == "text" or cmd == "data"
  args.check(type(cache) == "string" or (reads and cache == nil), cache, 2, "trace",
             "cache name (as in memory.stats().caches)")
  if cmd == "print" then
    args.check(stream == nil or args.is_stream(stream), stream, 3, "trace",
               "an object with a write method")
  end
  if not reads then
    call(C.trace, cmd, cache)
    return
  end
  local d = call(C.trace_data)
  if cache and d and d.cache ~= cache then
    error(string.format("cprof.memory.trace(%s, %s): that cache is not traced", cmd, cache), 2)
  end
  if cmd == "data" then return d end
  local text = allocator.trace_text(d)
  if cmd == "text" then return text end
  ;(stream or io.stdout):write(text)
end

return memory
