--- cprof.report.allocator: the reports of cprof's allocator, in the layouts of Akaros's #mem
--- device — kmemstat, free, arena_stats, slab_stats, slab_trace — and cprof's Lua types and
--- waste tables, printed from a statistics table (what cprof.memory.stats() returns: now, or a
--- dump's allocator snapshot).
--
-- Every printer takes `w`, a function that writes its arguments in order, and the statistics
-- `s`.  cprof.memory binds them to a stream and to the running state's allocator; Stats'
-- print_allocator to a dump's snapshot.  Pure Lua: printing a snapshot needs no C extension.

local _ENV = require("cprof.env")()

local pyfmt = require "cprof.pyfmt"
local sanitize = require "cprof.sanitize"

local M = {}

local format, rep, concat, tostring = string.format, string.rep, table.concat, tostring
local ljust = pyfmt.ljust  -- not %-Ns: a dump's names may hold NUL bytes, which format refuses

-- A name of the statistics as printed: a dump's snapshot is read, not trusted, so a control
-- character in it shows as its escape (sanitize.display).
local function name(s) return sanitize.display(tostring(s)) end

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

local function kmem_line(w, indent, label, typ, objsize, total, alloc, ever)
  w(rep("    ", indent),
    ljust(name(label), NAME - indent * 4),
    format(": %s :%" .. OBJSIZE .. "d:%" .. TOTAL .. "d:%" .. ALLOCED .. "d:%" .. NR_ALLOCS .. "d\n",
           typ, objsize, total, alloc, ever))
end

--- kmemstat(w, s): the tree of arenas and the caches that import from them, in
--- Akaros's layout. Typ A is an arena, S a slab cache, L the large blocks of one Lua type
--- (pages straight from the "pages" arena; those above LA_HUGE_MIN have mappings of their own).
--- For a cache, Total Amt is the room of its slabs and Alloc Amt what Lua holds (objsize times
--- live objects; Akaros counts its magazines' objects as allocated too).
function M.kmemstat(w, s)
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

--- free(w, s): Akaros's "free" (memory from the OS, used, free), then where Lua's
--- bytes are.
function M.free(w, s)
  w(format("Total Memory : %15d\n", s.mapped))
  w(format("Used Memory  : %15d\n", s.footprint))
  w(format("Free Memory  : %15d\n", s.mapped - s.footprint))
  w(format("Lua's count  : %15d  (collectgarbage(\"count\") * 1024)\n", s.lua_bytes))
  w(format("  in cprof's : %15d\n", s.requested))
  if s.foreign > 0 then w(format("  in older   : %15d  (blocks of the allocator before install)\n", s.foreign)) end
end

local function hex(n) return format("0x%x", n) end

--- arena_stats(w, s): each arena, as Akaros prints it.
function M.arena_stats(w, s)
  for _, a in ipairs(s.arenas) do
    w("Arena: ", name(a.name), "\n--------------\n")
    local qmax = a.qcache_max or 0  -- a snapshot from before quantum caches has none
    w(format("\tquantum: %d, qcache_max: %d\n", a.quantum, qmax))
    w("\tsource: ", name(a.source), "\n")
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
    if qmax > 0 then
      w(format("\t\tQuantum caches: %d segs of %d bytes held, allocs %d, frees %d\n", a.qcached,
               a.qcached_bytes, a.qcache_allocs, a.qcache_frees))
    end
    w("\tImporting Arenas:\n\t-----------------\n")
    for _, kid in ipairs(s.arenas) do
      if kid.source == a.name then w("\t\t", name(kid.name), "\n") end
    end
    w("\tImporting Slabs:\n\t-----------------\n")
    if a.name == "pages" then
      for _, c in ipairs(sorted_caches(s)) do w("\t\t", name(c.name), "\n") end
    end
  end
end

--- slab_stats(w, s): each cache, as Akaros prints it. cprof's caches have no hash
--- of buffers (a block's slab is found from its address) and one magazine instead of a depot.
function M.slab_stats(w, s)
  for _, c in ipairs(sorted_caches(s)) do
    w("\nKmem_cache: ", name(c.name), "\n---------------------\n")
    w("Source: ", name(c.source), "\n")
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

--- types(w, s): live objects and bytes per Lua type, exact (a block's type is known
--- from its slab when it is freed).
function M.types(w, s)
  w(format("%-10s %12s %14s %14s %14s\n", "Lua type", "live", "live bytes", "held bytes", "allocs ever"))
  for _, t in ipairs(s.types) do
    if t.allocs > 0 then
      w(ljust(name(t.name), 10), format(" %12d %14d %14d %14d\n", t.live, t.bytes, t.held, t.allocs))
    end
  end
end

--- waste(w, s): what the bytes Lua asked for cost.
function M.waste(w, s)
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

--- report(w, s): everything above, from one reading of the statistics.
function M.report(w, s)
  w("== kmemstat\n")
  M.kmemstat(w, s)
  w("\n== free\n")
  M.free(w, s)
  w("\n== Lua types\n")
  M.types(w, s)
  w("\n== waste\n")
  M.waste(w, s)
  w("\n== arena_stats\n")
  M.arena_stats(w, s)
  w("\n== slab_stats")
  M.slab_stats(w, s)
  w("\n")
end

--- trace_text(d): Akaros's slab_trace text of the records of a traced cache (what
--- cprof.memory.trace("data") returns; nil: no cache is traced).
function M.trace_text(d)
  if not d then return "no cache is traced\n" end
  local lines = {}
  local live, bytes = 0, 0
  for _, site in ipairs(d.sites) do
    live = live + site.live
    bytes = bytes + site.bytes
  end
  lines[#lines + 1] = format("Dumping trace for kmem_cache %s (%s): %d live objects, %d bytes, %d sites, %d dropped",
                             name(d.cache), d.on and "recording" or "stopped", live, bytes, #d.sites, d.dropped)
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
      local where = f.line >= 0 and format("%s:%d", name(f.src), f.line) or name(f.src)
      local what = f.defined > 0 and format("function at line %d", f.defined)
        or (f.defined == 0 and "main chunk" or "C function")
      lines[#lines + 1] = format("\t#%d %s (%s)", i, where, what)
    end
  end
  return concat(lines, "\n") .. "\n"
end


return M
