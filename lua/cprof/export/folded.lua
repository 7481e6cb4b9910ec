--- cprof.export.folded: Brendan Gregg's collapsed stacks, which flamegraph.pl, inferno,
--- speedscope and many other tools read.
--
--   main.lua:0(<main chunk>);main.lua:5(work);main.lua:10(fib) 60000000
--
-- One line per call path with a nonzero self value: the full names of its functions from the
-- root down, joined by ";" (a ";", a line break or another control character inside a name
-- becomes a space, and bytes that are not UTF-8 U+FFFD: cprof.sanitize), one space,
-- and the value as a whole number: nanoseconds for time, else calls, bytes or allocations.
-- With a base profile (opts.base) each line has two numbers, base then this profile, as
-- difffolded.pl writes them for flamegraph.pl's differential graphs; paths found in one
-- profile only have 0 in the other.

local _ENV = require("cprof.env")()

local M = {}

local export = require("cprof.export")

M.restricts = true
M.diff = true

local concat, sgsub = table.concat, string.gsub
local to_utf8 = require("cprof.sanitize").utf8

-- The frame names as they can appear in a stack: ";" separates frames, a line ends a stack,
-- and flamegraph.pl copies names into XML, where control characters are not allowed.
local function names(m)
  local out = {}
  for f = 1, m.F.n do out[f] = (sgsub(to_utf8(m:label(f)), "[;%z\1-\31\127]", " ")) end
  return out
end

-- Calls emit(stack, k) for every node whose value is not 0 (stack: the names from the root).
local function stacks(m, values, incl, emit)
  local label, frame, parts = names(m), m.frame, {}
  m:walk(m:children(), function(k, depth)
    if incl[k] == 0 then return false end
    parts[depth] = label[frame[k]]
    if values[k] ~= 0 then emit(concat(parts, ";", 1, depth), k) end
  end)
end

function M.write(m, sink, opts, weight, base)
  m:need_tree("folded")
  local w = export.buffer(sink)
  local values = m:integers(weight, m:restrict(m:weight(weight), opts.patterns))
  local lines = 0
  if not base then
    stacks(m, values, m:inclusive(values), function(stack, k)
      w.put(stack .. " " .. string.format("%d", values[k]) .. "\n")
      lines = lines + 1
    end)
    w.flush()
    return { format = "folded", lines = lines }
  end
  base:need_tree("folded")
  local bvalues = base:integers(weight, base:restrict(base:weight(weight), opts.patterns))
  local to_base, matched = m:align(base)
  -- A path this profile has must be written even where only the base has a value.
  local both = {}
  for k = 1, m.n do
    local j = to_base[k]
    both[k] = values[k] + (j and bvalues[j] or 0)
  end
  stacks(m, both, m:inclusive(both), function(stack, k)
    local j = to_base[k]
    w.put(string.format("%s %d %d\n", stack, j and bvalues[j] or 0, values[k]))
    lines = lines + 1
  end)
  local only = {}
  for j = 1, base.n do only[j] = matched[j] and 0 or bvalues[j] end
  stacks(base, only, base:inclusive(bvalues), function(stack, j)
    w.put(string.format("%s %d 0\n", stack, bvalues[j]))
    lines = lines + 1
  end)
  w.flush()
  return { format = "folded", lines = lines }
end

return M
