--- cprof.memory: cprof's allocator for the running Lua state, and its reports.
---
---   local memory = require "cprof.memory"
---   memory.install()              -- from here on, every new block comes from cprof's allocator
---   ...
---   memory.report()               -- kmemstat tree, free, arena_stats, slab_stats, Lua types, waste
---   memory.limit(64 * 2^20)       -- past 64 MiB allocations fail: Lua raises "not enough memory"
---   memory.trace("start", "table_56") ... memory.trace("print", "table_56")
---
--- The allocator is a heap of slab caches, one per Lua type and size class, over Bonwick-style
--- arenas (src/arena.c, src/slab.c, src/lalloc.c); docs/MEMORY.md describes it and every field
--- of the statistics. The reports follow the layout of Akaros's #mem device (kmemstat,
--- arena_stats, slab_stats, free, slab_trace).
---
--- Under LuaJIT install() raises an error (see docs/MEMORY.md); the module still loads.

local core = require "cprof.core"
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

local format, rep, concat = string.format, string.rep, table.concat

local function out(stream)
  stream = stream or io.stdout
  return function(...) stream:write(...) end
end

local function by_type_and_size(a, b)
  if a.type ~= b.type then return a.type < b.type end
  return a.objsize < b.objsize
end

local function sorted_caches(s)
  local t = {}
  for i, c in ipairs(s.caches) do t[i] = c end
  table.sort(t, by_type_and_size)
  return t
end

-- Akaros's kmemstat widths.
local NAME, OBJSIZE, TOTAL, ALLOCED, NR_ALLOCS = 30, 8, 15, 15, 12
local LINE = 8 + NAME + OBJSIZE + TOTAL + ALLOCED + NR_ALLOCS

local function kmem_line(w, indent, name, typ, objsize, total, alloc, ever)
  w(rep("    ", indent),
    format("%-" .. (NAME - indent * 4) .. "s: %s :%" .. OBJSIZE .. "d:%" .. TOTAL .. "d:%"
             .. ALLOCED .. "d:%" .. NR_ALLOCS .. "d\n",
           name, typ, objsize, total, alloc, ever))
end

--- kmemstat([stream], [stats]): the tree of arenas and the caches that import from them, in
--- Akaros's layout. Typ A is an arena, S a slab cache, L the large blocks of one Lua type
--- (pages straight from the "pages" arena; those above LA_HUGE_MIN have mappings of their own).
--- For a cache, Total Amt is the room of its slabs and Alloc Amt what Lua holds (objsize times
--- live objects; Akaros counts its magazines' objects as allocated too).
function memory.kmemstat(stream, s)
  local w = out(stream)
  s = s or C.stats()
  w(format("%-" .. NAME .. "s:Typ:%" .. OBJSIZE .. "s:%" .. TOTAL .. "s:%" .. ALLOCED .. "s:%"
             .. NR_ALLOCS .. "s\n", "Arena/Slab Name", "Objsize", "Total Amt", "Alloc Amt",
           "Allocs Ever"))
  w(rep("-", LINE), "\n")
  local function arena_and_kids(a, indent)
    kmem_line(w, indent, a.name, "A", a.quantum, a.total, a.alloc, a.allocs)
    for _, kid in ipairs(s.arenas) do
      if kid.source == a.name then arena_and_kids(kid, indent + 1) end
    end
    if a.name == "pages" then
      for _, c in ipairs(sorted_caches(s)) do
        kmem_line(w, indent + 1, c.name, "S", c.objsize, c.total, c.alloc, c.allocs)
      end
      for _, t in ipairs(s.types) do
        if t.large_allocs > 0 then
          kmem_line(w, indent + 1, t.name .. "_large", "L", 4096, t.large_held, t.large_held,
                    t.large_allocs)
        end
      end
    end
  end
  for _, a in ipairs(s.arenas) do
    if a.source == "none" then arena_and_kids(a, 0) end
  end
end

--- free([stream], [stats]): Akaros's "free" (memory from the OS, used, free), then where Lua's
--- bytes are.
function memory.free(stream, s)
  local w = out(stream)
  s = s or C.stats()
  w(format("Total Memory : %15d\n", s.mapped))
  w(format("Used Memory  : %15d\n", s.footprint))
  w(format("Free Memory  : %15d\n", s.mapped - s.footprint))
  w(format("Lua's count  : %15d  (collectgarbage(\"count\") * 1024)\n", s.lua_bytes))
  w(format("  in cprof's : %15d\n", s.requested))
  if s.foreign > 0 then w(format("  in older   : %15d  (blocks of the allocator before install)\n", s.foreign)) end
end

local function hex(n) return format("0x%x", n) end

--- arena_stats([stream], [stats]): each arena, as Akaros prints it.
function memory.arena_stats(stream, s)
  local w = out(stream)
  s = s or C.stats()
  for _, a in ipairs(s.arenas) do
    w("Arena: ", a.name, "\n--------------\n")
    w(format("\tquantum: %d, qcache_max: 0\n", a.quantum))
    w("\tsource: ", a.source, "\n")
    local lists = {}
    for i in pairs(a.free_lists) do lists[#lists + 1] = i end
    table.sort(lists)
    for _, i in ipairs(lists) do
      w(format("\tList of [2^%d - 2^%d):\n\t\tNr free segs: %d\n", i, i + 1, a.free_lists[i]))
    end
    w("\tStats:\n\t-----------------\n")
    w(format("\t\tAmt free: %d (%s)\n", a.free, hex(a.free)))
    w(format("\t\tAmt alloc: %d (%s), nr allocs %d\n", a.alloc, hex(a.alloc), a.nr_allocs))
    w(format("\t\tAmt total segs: %d, amt alloc segs %d\n", a.total, a.alloc))
    w(format("\t\tAmt imported: %d (%s), nr imports %d\n", a.imported, hex(a.imported), a.nr_imports))
    w(format("\t\tNr hash %d, empty hash: %d, longest hash %d\n", a.hash_size, a.hash_empty,
             a.hash_longest))
    w(format("\t\tAllocs ever %d, frees ever %d, imports ever %d, releases ever %d, import failures %d\n",
             a.allocs, a.frees, a.imports, a.releases, a.import_failures))
    w(format("\t\tPeak total segs %d, empty spans kept %d, btag metadata %d\n", a.peak_total,
             a.nr_empty, a.meta))
    w("\tImporting Arenas:\n\t-----------------\n")
    for _, kid in ipairs(s.arenas) do
      if kid.source == a.name then w("\t\t", kid.name, "\n") end
    end
    w("\tImporting Slabs:\n\t-----------------\n")
    if a.name == "pages" then
      for _, c in ipairs(sorted_caches(s)) do w("\t\t", c.name, "\n") end
    end
  end
end

--- slab_stats([stream], [stats]): each cache, as Akaros prints it. cprof's caches have no hash
--- of buffers (a block's slab is found from its address) and one magazine instead of a depot.
function memory.slab_stats(stream, s)
  local w = out(stream)
  s = s or C.stats()
  for _, c in ipairs(sorted_caches(s)) do
    w("\nKmem_cache: ", c.name, "\n---------------------\n")
    w("Source: ", c.source, "\n")
    w(format("Objsize (incl align): %d\n", c.objsize))
    w("Align: 8\n")
    w(format("Nr unallocated in slab layer: %d\n", c.objects - c.live - c.magazine))
    w(format("Nr allocated from slab layer: %d\n", c.live + c.magazine))
    w(format("Nr live (held by Lua): %d, requested bytes %d\n", c.live, c.requested))
    w(format("Slabs: %d of %d bytes, %d partial\n", c.slabs, c.slab_size, c.partial_slabs))
    w(format("Magazine: %d objects\n", c.magazine))
  end
end

local function pct(part, whole)
  if whole == 0 then return "-" end
  return format("%.1f%%", 100 * part / whole)
end

--- types([stream], [stats]): live objects and bytes per Lua type, exact (a block's type is known
--- from its slab when it is freed).
function memory.types(stream, s)
  local w = out(stream)
  s = s or C.stats()
  w(format("%-10s %12s %14s %14s %14s\n", "Lua type", "live", "live bytes", "held bytes", "allocs ever"))
  for _, t in ipairs(s.types) do
    if t.allocs > 0 then
      w(format("%-10s %12d %14d %14d %14d\n", t.name, t.live, t.bytes, t.held, t.allocs))
    end
  end
end

--- waste([stream], [stats]): what the bytes Lua asked for cost.
function memory.waste(stream, s)
  local w = out(stream)
  s = s or C.stats()
  w(format("requested by Lua    %14d\n", s.requested))
  w(format("held in blocks      %14d  +%s  (rounding up to size classes and pages)\n", s.held,
           pct(s.held - s.requested, s.requested)))
  w(format("in slabs and large  %14d  +%s  (free objects in slabs and magazines)\n", s.footprint,
           pct(s.footprint - s.held, s.requested)))
  w(format("mapped from the OS  %14d  +%s  (free pages, chunk headers)\n", s.mapped,
           pct(s.mapped - s.footprint, s.requested)))
  w(format("metadata            %14d  +%s  (btags, hashes, caches, traces)\n", s.metadata,
           pct(s.metadata, s.requested)))
end

--- report([stream], [stats]): everything above, from one reading of the statistics: `stats`
--- (what stats() returned, now or earlier: a dump's allocator snapshot, see cprof.data.allocator)
--- or, without it, a new reading of this state's allocator.
function memory.report(stream, s)
  local w = out(stream)
  s = s or C.stats()
  w("== kmemstat\n")
  memory.kmemstat(stream, s)
  w("\n== free\n")
  memory.free(stream, s)
  w("\n== Lua types\n")
  memory.types(stream, s)
  w("\n== waste\n")
  memory.waste(stream, s)
  w("\n== arena_stats\n")
  memory.arena_stats(stream, s)
  w("\n== slab_stats")
  memory.slab_stats(stream, s)
  w("\n")
end

local function trace_text(d)
  if not d then return "no cache is traced\n" end
  local lines = {}
  local live, bytes = 0, 0
  for _, site in ipairs(d.sites) do
    live = live + site.live
    bytes = bytes + site.bytes
  end
  lines[#lines + 1] = format("Dumping trace for kmem_cache %s (%s): %d live objects, %d bytes, %d sites, %d dropped",
                             d.cache, d.on and "recording" or "stopped", live, bytes, #d.sites, d.dropped)
  if not d.stacks then
    lines[#lines + 1] = "(no stacks: memory that is no Lua object is allocated where Lua's stack may be"
      .. " inconsistent, and LuaJIT has none to read)"
  end
  lines[#lines + 1] = rep("-", 49)
  table.sort(d.sites, function(a, b)
    if a.bytes ~= b.bytes then return a.bytes > b.bytes end
    return a.live > b.live
  end)
  for _, site in ipairs(d.sites) do
    lines[#lines + 1] = format("Live: %d objects, %d bytes (%d allocated while tracing)", site.live,
                               site.bytes, site.allocs)
    for i, f in ipairs(site.frames) do
      local where = f.line >= 0 and format("%s:%d", f.src, f.line) or f.src
      local what = f.defined > 0 and format("function at line %d", f.defined)
        or (f.defined == 0 and "main chunk" or "C function")
      lines[#lines + 1] = format("\t#%d %s (%s)", i, where, what)
    end
  end
  return concat(lines, "\n") .. "\n"
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
    local text = trace_text(d)
    out(stream)(text)
    return text
  elseif cmd == "data" then
    return C.trace_data()
  end
  return C.trace(cmd, cache)
end

return memory
