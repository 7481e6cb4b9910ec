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

local core = require("cprof.version").core()
local allocator = require "cprof.report.allocator"
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

-- A function that writes its arguments to `stream` (default io.stdout).
local function writer(stream)
  stream = stream or io.stdout
  return function(...) stream:write(...) end
end

--- kmemstat, free, arena_stats, slab_stats, types, waste and report([stream], [stats]): the
--- reports of cprof.report.allocator (Akaros's layouts) written to `stream` (default
--- io.stdout), from `stats` (what stats() returned, now or earlier: a dump's allocator snapshot,
--- see cprof.profdata.allocator) or, without it, a new reading of this state's allocator.
for _, name in ipairs({ "kmemstat", "free", "arena_stats", "slab_stats", "types", "waste",
                        "report" }) do
  local print_report = allocator[name]
  memory[name] = function(stream, s) return print_report(writer(stream), s or C.stats()) end
end

--- trace(cmd, cache[, stream]): Akaros's slab_trace for one cache, e.g. "table_56".
---   "start"  record the Lua stack (up to 8 frames) of every allocation from the cache; a free
---            removes its record, so the records are the live objects allocated since start
---   "stop"   stop recording; the records stay as they are (frees no longer remove them)
---   "print"  write the records grouped by stack, most bytes first, to stream (default
---            io.stdout); returns the text
---   "reset"  forget the records
---   "data"   returns the records as a table (cache, on, stacks, dropped, sites = { live,
---            bytes, allocs, frames = { src, line, defined } })
--- One cache is traced at a time. While tracing, every allocation and free takes the checked
--- path of the allocator (a few times slower).
function memory.trace(cmd, cache, stream)
  if cmd == "print" then
    local d = C.trace_data()
    if cache and d and d.cache ~= cache then
      error(("cprof.memory.trace(print, %s): that cache is not traced"):format(tostring(cache)), 2)
    end
    local text = allocator.trace_text(d)
    writer(stream)(text)
    return text
  elseif cmd == "data" then
    return C.trace_data()
  end
  return C.trace(cmd, cache)
end

return memory
