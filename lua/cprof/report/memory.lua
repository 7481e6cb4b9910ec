--- cprof.report.memory: the memory charged to each function (cprof's allocator) — allocations,
--- bytes, frees, live bytes, smallest and largest allocation — in print_stats' layout, and the
--- allocator snapshot of a dump, printed by cprof.report.allocator.
--
-- Each printer takes a Stats and `out`, a function that writes one string.

local _ENV = require("cprof.env")()

local funckey = require "cprof.funckey"
local profdata = require "cprof.profdata"
local pyfmt = require "cprof.pyfmt"
local restrictions = require "cprof.restrictions"
local allocator = require "cprof.report.allocator"
local text = require "cprof.report.text"

local M = {}

local type, ipairs, select = type, ipairs, select
local sformat, srep = string.format, string.rep
local int_str, rjust = pyfmt.int_str, pyfmt.rjust

local NO_MEMORY = profdata.zero_memory()

--- The header of the memory table (without newline).
function M.memory_title_line()
  return rjust("allocs", 9) .. " " .. rjust("bytes", 12) .. " " .. rjust("frees", 9) .. " "
    .. rjust("live bytes", 12) .. " " .. rjust("min", 8) .. " " .. rjust("max", 8) .. " "
    .. "filename:lineno(function)"
end

-- One row of the memory table (without newline): allocations, bytes allocated, frees, bytes
-- still live, the smallest and largest allocation (blank without allocations), the name.
local function memory_line(key, m)
  local sizes = m.alloc_count == 0
  return rjust(int_str(m.alloc_count), 9) .. " " .. rjust(int_str(m.alloc_bytes), 12) .. " "
    .. rjust(int_str(m.free_count), 9) .. " " .. rjust(int_str(m.alloc_bytes - m.free_bytes), 12)
    .. " " .. (sizes and srep(" ", 8) or rjust(int_str(m.min_size), 8))
    .. " " .. (sizes and srep(" ", 8) or rjust(int_str(m.max_size), 8))
    .. " " .. funckey.display_name(key)
end

--- The memory of all the functions of st summed, as one line (without newline).
function M.totals_line(st)
  local t = NO_MEMORY
  for _, key in ipairs(st.order) do t = profdata.add_memory(t, st.mem[key] or NO_MEMORY) end
  return sformat("%s allocations of %s bytes, %s frees of %s bytes, %s bytes live",
    int_str(t.alloc_count), int_str(t.alloc_bytes), int_str(t.free_count), int_str(t.free_bytes),
    int_str(t.alloc_bytes - t.free_bytes))
end

--- Stats:print_memory(...): file lines, the totals over all functions, then the table of the
--- functions left by the restrictions, in the current order.
function M.print_memory(st, out, sel)
  if not st:has_memory() then
    out("   cprof: the profile has no memory numbers (make it with cprof's allocator installed:" ..
        " cprof.memory.install(), or CPROF_MEMORY=1 with cprof.auto)\n\n")
    return
  end
  text.print_files(st, out)
  out("         " .. M.totals_line(st) .. "\n\n")
  local _, list, msg = restrictions.print_list(st, sel)
  if #list > 0 then
    out(msg .. "\n")
    out(M.memory_title_line() .. "\n")
    for _, f in ipairs(list) do out(memory_line(f, st.mem[f] or NO_MEMORY) .. "\n") end
    out("\n\n")
  end
  local meta = st.meta or {}
  if type(meta.memory_lost) == "number" and meta.memory_lost > 0 then
    out(sformat("   cprof: %s charged to no function (memory ran out while profiling)\n\n",
                text.count(meta.memory_lost, "allocation was", "allocations were")))
  end
end

--- Stats:print_allocator(): the allocator snapshot (cprof.memory.stats() when the dump was
--- written) as cprof.memory.report prints it, or one line when there is none.
function M.print_allocator(st, out)
  if st.allocator == nil then
    out("   cprof: the profile has no allocator snapshot (dumps written with cprof's allocator" ..
        " installed have one)\n\n")
    return
  end
  allocator.report(function(...)
    for i = 1, select("#", ...) do out((select(i, ...))) end
  end, st.allocator)
end

return M
