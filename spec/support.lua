-- Helpers shared by the specs: finding rows in getstats() tables and checking that times add up.
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

return support
