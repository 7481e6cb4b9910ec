--- cprof.bias: subtracting the calibrated cost per event from a profile, at report time.
--
-- cprof stops the profile's clock while its hook runs, but part of every event's cost lies in
-- Lua's hook dispatch outside the hook: `bias` seconds per event (Profile:calibrate measures
-- it). Half of an event's cost falls before the hook reads the clock and half after, so:
--
--   * a function's own time holds one event per call it received (its call's second half and
--     its return's first half) and one per call it made (that call's first half and that
--     return's second half): tottime -= bias * (ncalls + calls made);
--   * its cumulative time holds, per outermost activation, one event, and two per call made
--     anywhere beneath it: found exactly in the call tree, where recursion is folded so that a
--     function's nodes are its outermost activations.
--
-- A time that would go negative is set to 0 and counted (meta.bias_clamped): the bias is then
-- too large for that function, as profile.py's comments warn.

local profdata = require "cprof.profdata"

local M = {}

local function clamp(x, counter)
  if x < 0 then
    counter.n = counter.n + 1
    return 0
  end
  return x
end

local function copy(t)
  local out = {}
  for k, v in pairs(t) do out[k] = v end
  return out
end

--- Events inside each node's cumulative time, and calls made directly by each node.
local function tree_events(nodes)
  local n = nodes.n or 0
  local subtree, direct = {}, {}
  for k = 1, n do subtree[k], direct[k] = nodes.ncalls[k], 0 end
  for k = n, 1, -1 do -- parents come before children
    local p = nodes.parent[k]
    if p ~= 0 then
      subtree[p] = subtree[p] + subtree[k]
      direct[p] = direct[p] + nodes.ncalls[k]
    end
  end
  local cum = {}
  for k = 1, n do cum[k] = nodes.pcalls[k] + 2 * (subtree[k] - nodes.pcalls[k]) end
  return cum, direct
end

--- apply(d, bias): a copy of profile data `d` (the columnar form of Profile:snapshot() and of
--- dumps) with `bias` seconds per event subtracted; bias defaults to d.meta.bias.
function M.apply(d, bias)
  profdata.check(d)
  local meta = copy(type(d.meta) == "table" and d.meta or {})
  bias = bias or meta.bias or 0
  if bias == 0 or meta.bias_applied then return d end
  local frames, edges, nodes = d.frames, d.edges or { n = 0 }, d.nodes or { n = 0 }
  local clamped = { n = 0 }

  local made = {}
  for i = 1, frames.n do made[i] = 0 end
  for e = 1, edges.n do made[edges.caller[e]] = made[edges.caller[e]] + edges.ncalls[e] end

  local node_cum, node_direct = tree_events(nodes)
  local frame_cum = {}
  for k = 1, nodes.n do
    local f = nodes.frame[k]
    frame_cum[f] = (frame_cum[f] or 0) + node_cum[k]
  end

  local f2 = copy(frames)
  f2.tottime, f2.cumtime = {}, {}
  for i = 1, frames.n do
    f2.tottime[i] = clamp(frames.tottime[i] - bias * (frames.ncalls[i] + made[i]), clamped)
    -- Without a tree (a profile merged from other tools), cumulative time keeps the own events.
    local cum = frame_cum[i] or (frames.ncalls[i] + made[i])
    f2.cumtime[i] = clamp(frames.cumtime[i] - bias * cum, clamped)
  end

  local e2 = copy(edges)
  e2.tottime, e2.cumtime = {}, {}
  for e = 1, edges.n do
    -- An edge's share of its callee's events, by its share of the callee's calls.
    local g, share = edges.callee[e], 0
    if frames.ncalls[g] > 0 then share = edges.ncalls[e] / frames.ncalls[g] end
    local own = frames.ncalls[g] + made[g]
    e2.tottime[e] = clamp(edges.tottime[e] - bias * own * share, clamped)
    e2.cumtime[e] = clamp(edges.cumtime[e] - bias * (frame_cum[g] or own) * share, clamped)
  end

  local n2 = copy(nodes)
  n2.tottime, n2.cumtime = {}, {}
  for k = 1, nodes.n do
    n2.tottime[k] = clamp(nodes.tottime[k] - bias * (nodes.ncalls[k] + node_direct[k]), clamped)
    n2.cumtime[k] = clamp(nodes.cumtime[k] - bias * node_cum[k], clamped)
  end

  meta.bias = bias
  meta.bias_applied = true
  meta.bias_clamped = clamped.n
  local out = copy(d)
  out.meta, out.frames, out.edges, out.nodes = meta, f2, e2, n2
  return out
end

return M
