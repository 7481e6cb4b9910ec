--- cprof.bias: subtracting the calibrated cost of each kind of event from a profile, at report
--- time.
--
-- cprof stops the profile's clock while its hook runs, but part of every event's cost lies in
-- Lua's hook dispatch outside the hook. That cost differs by kind of event, so the bias is a
-- model, seconds per kind (Profile:calibrate measures it, cprof.calibrate explains how):
--
--   lua_call   a call of a Lua function, its return included (a call and its return are never
--              measured apart: every call returns once)
--   c_call     the same for a C function
--   switch     a coroutine round trip through coroutine.resume, beyond the cost of that call
--   wrap       the same through a function made by coroutine.wrap, whose hook also finds the
--              coroutine's body on every call (docs/SEMANTICS.md, "Names"): about 30 ns more
--              than a resume on the bench machine, which one kind for both could not fit
--   line       one line event (profiles with lines = true)
--
-- A number b is profile.py's bias, seconds per event: lua_call and c_call 2b, line b, switch
-- and wrap 0.
--
-- Where each cost lands: half of a call's cost falls before the hook reads the clock (in the
-- caller's time), half after (in the callee's), and the same for its return, so a call charges
-- half its kind's bias to the caller's own time and half to the callee's; a switch or a wrap
-- round trip is charged to the resuming function's frame (on LuaJIT, whose resume ends at the
-- switch, docs/SEMANTICS.md: half to the frame that called it, half where the coroutine went
-- on; counts below), a line event to its function. A
-- cumulative time holds, per outermost activation, half its own call, and every call, round
-- trip and line beneath it in full: found exactly in the call tree, in the function's nodes
-- that no node of it holds (the tree keeps recursion up to a depth, and folds it past that
-- depth into the deepest node), which are its outermost activations (line events are shared
-- among a function's nodes by their calls).
--
-- A time that would go negative is set to 0 and counted (meta.bias_clamped): the bias is then
-- too large for that function, as profile.py's comments warn.

local _ENV = require("cprof.env")()

local profdata = require "cprof.profdata"
local args = require "cprof.args"

local M = {}

--- The kinds of event the model tells apart, in the order reports name them.
M.KINDS = { "lua_call", "c_call", "switch", "wrap", "line" }
local KINDS = M.KINDS
local IS_KIND = {}
for _, k in ipairs(KINDS) do IS_KIND[k] = true end

-- Keys a model table may hold besides the kinds: what Profile:calibrate and the cache add.
local MODEL_INFO = { err = "table", confidence = "number", date = "string", timer = "string",
                     lua_version = "string", cprof_version = "string", source = "string",
                     probe = "number", full_speed = "number", blocks = "number",
                     attempts = "number", processes = "table",
                     remeasured = "number" }

-- The kind of coroutine round trip each call of frame i makes, if any.
local TRIP = { resume = "switch", wrap = "wrap" }
local function round_trip(frames, i)
  return frames.kind[i] == "C" and TRIP[profdata.runs_coroutine(frames.name[i])] or nil
end

--- The bias costs of a typical machine per Lua and timer, for the report's estimate of the
--- overhead still in an uncalibrated profile: the machine's model (the median of 5 processes'
--- calibrations, as CPROF_CALIBRATE=save keeps it) of the bench machine, rounded; bench/results/
--- 2026-12-07-typical-costs.md has the runs. A kind that measured below 0 there (a C call
--- with tsc on Lua 5.4: the hook keeps a little more than its own time off the clock) counts
--- as none, the estimate being of what is left in. The cpu and thread timers read the clock
--- with a system call, part of whose cost lands outside the hook's measured time: 10-20 times
--- tsc's per event. `at_least`: the programs of bench/accuracy.lua held more overhead than
--- these costs account for (the system call's cost varies with the code around it; LuaJIT's
--- coroutines land theirs in other frames), so the report says "or more".
M.TYPICAL = {
  ["Lua 5.4"] = {
    tsc = { lua_call = 14e-9, c_call = 0, switch = 25e-9, wrap = 28e-9, line = 12e-9 },
    monotonic = { lua_call = 32e-9, c_call = 6e-9, switch = 23e-9, wrap = 27e-9, line = 20e-9 },
    cpu = { lua_call = 240e-9, c_call = 180e-9, switch = 68e-9, wrap = 88e-9, line = 110e-9,
            at_least = true },
    thread = { lua_call = 230e-9, c_call = 180e-9, switch = 84e-9, wrap = 70e-9, line = 110e-9,
               at_least = true },
  },
  LuaJIT = {
    tsc = { lua_call = 13e-9, c_call = 2e-9, switch = 66e-9, wrap = 86e-9, line = 17e-9,
            at_least = true },
    monotonic = { lua_call = 27e-9, c_call = 8e-9, switch = 64e-9, wrap = 90e-9, line = 24e-9,
                  at_least = true },
    cpu = { lua_call = 230e-9, c_call = 80e-9, switch = 190e-9, wrap = 1260e-9, line = 130e-9,
            at_least = true },
    thread = { lua_call = 230e-9, c_call = 79e-9, switch = 180e-9, wrap = 1250e-9, line = 130e-9,
               at_least = true },
  },
}

--- typical(timer, lua_version): the typical costs (TYPICAL) of a profile of that timer (its
--- name, as meta.timer) on that Lua (meta.lua_version), or nil when cprof knows none.
function M.typical(timer, lua_version)
  local lua = profdata.on_luajit({ lua_version = lua_version }) and "LuaJIT" or lua_version
  local costs = M.TYPICAL[lua]
  return costs and costs[timer] or nil
end

local function finite(x)
  return type(x) == "number" and x == x and x ~= math.huge and x ~= -math.huge
end

--- model(b [, what]): the bias `b` (a number of seconds per event, or a table of seconds per
--- kind) as a table with every kind; nil when every kind is 0. Errors name `what` (default
--- "bias") and the bad key.
function M.model(b, what)
  what = what or "bias"
  if b == nil then return nil end
  local m = {}
  if type(b) == "number" then
    if not finite(b) then error(string.format("cprof: %s must be a finite number", what), 0) end
    m = { lua_call = 2 * b, c_call = 2 * b, switch = 0, wrap = 0, line = b }
  elseif type(b) == "table" then
    for k, v in pairs(b) do
      if IS_KIND[k] then
        if not finite(v) then
          error(string.format("cprof: %s.%s must be a finite number of seconds", what, tostring(k)), 0)
        end
        m[k] = v
      elseif MODEL_INFO[k] then
        if type(v) ~= MODEL_INFO[k] then
          error(string.format("cprof: %s.%s must be a %s", what, k, MODEL_INFO[k]), 0)
        end
        m[k] = v
      else
        error(string.format("cprof: %s: unknown key '%s' (the kinds are %s)", what, tostring(k),
          table.concat(KINDS, ", ")), 0)
      end
    end
    if m.err then
      local err = {}
      for k, v in pairs(m.err) do
        if not IS_KIND[k] or not finite(v) then
          error(string.format("cprof: %s.err must map kinds to numbers of seconds", what), 0)
        end
        err[k] = v
      end
      m.err = err
    end
  else
    error(string.format("cprof: %s must be a number of seconds per event or a table of seconds per kind (%s)", what, table.concat(KINDS, ", ")), 0)
  end
  local any = false
  for _, k in ipairs(KINDS) do
    m[k] = m[k] or 0
    any = any or m[k] ~= 0
  end
  return any and m or nil
end

--- The meta keys of model m (nil: none): bias_<kind>, bias_<kind>_err, bias_source.
function M.to_meta(meta, m)
  if not m then return meta end
  for _, k in ipairs(KINDS) do
    meta["bias_" .. k] = m[k]
    if m.err and m.err[k] then meta["bias_" .. k .. "_err"] = m.err[k] end
  end
  if m.source then meta.bias_source = m.source end
  return meta
end

--- The model of a profile's meta: its per-kind keys, else its number `bias`; nil when none.
function M.from_meta(meta)
  if type(meta) ~= "table" then return nil end
  local m, err, any = {}, {}, false
  for _, k in ipairs(KINDS) do
    local v = meta["bias_" .. k]
    if v ~= nil then
      if not finite(v) then error(string.format("cprof: meta.bias_%s must be a finite number", k), 0) end
      m[k], any = v, true
      local e = meta["bias_" .. k .. "_err"]
      if finite(e) then err[k] = e end
    end
  end
  if not any then return M.model(meta.bias or 0, "meta.bias") end
  if next(err) then m.err = err end
  if type(meta.bias_source) == "string" then m.source = meta.bias_source end
  return M.model(m, "meta.bias")
end

local function kind_of(frames, i)
  return frames.kind[i] == "C" and "c_call" or "lua_call"
end

-- The kinds counted per frame rather than per call.
local PER_FRAME = { "switch", "wrap", "line" }

local function zeros(n)
  local t = {}
  for _, k in ipairs(KINDS) do
    local col = {}
    for i = 1, n do col[i] = 0 end
    t[k] = col
  end
  return t
end

--- counts(d): how many events of each kind each frame and each tree node holds, in units of the
--- model (a call's two halves are 0.5 each):
---   { frame_own = {kind → column}, frame_cum = ..., node_own = ..., node_cum = ... }
--- (frame_cum is nil for a frame no tree node has: its cumulative time keeps its own events.)
function M.counts(d)
  args.check(type(d) == "table" and type(d.frames) == "table", d, 1, "counts", "profile data")
  local frames, edges, nodes = d.frames, d.edges or { n = 0 }, d.nodes or { n = 0 }
  local nf, nn = frames.n, nodes.n or 0
  local fown, nown, ncum = zeros(nf), zeros(nn), zeros(nn)
  -- on LuaJIT a coroutine switch's frame ends at the switch, and the round trip's cost lands
  -- around it, in the frame that resumed and in the coroutine
  local on_jit = profdata.on_luajit(d.meta)

  local trips, hits = {}, {}
  for i = 1, nf do
    trips[i] = round_trip(frames, i)
    hits[i] = 0
  end
  local lines = d.lines
  if type(lines) == "table" then
    for r = 1, lines.n or 0 do
      local f = lines.frame[r]
      if hits[f] then hits[f] = hits[f] + lines.hits[r] end
    end
  end

  for i = 1, nf do
    local k = kind_of(frames, i)
    fown[k][i] = fown[k][i] + 0.5 * frames.ncalls[i]
    if trips[i] and not on_jit then fown[trips[i]][i] = frames.ncalls[i] end
    fown.line[i] = hits[i]
  end
  for e = 1, edges.n do
    local c, g = edges.caller[e], edges.callee[e]
    local k = kind_of(frames, g)
    fown[k][c] = fown[k][c] + 0.5 * edges.ncalls[e]
    -- LuaJIT without a call tree: the coroutine's half cannot be placed; all to the resumer
    if trips[g] and on_jit and nn == 0 then
      fown[trips[g]][c] = fown[trips[g]][c] + edges.ncalls[e]
    end
  end

  -- Nodes: calls received, recursion folded into the node (made by it), calls its children
  -- received; a frame's switches and lines shared among its nodes by their calls.
  local fcalls = {}
  for n = 1, nn do
    local f = nodes.frame[n]
    fcalls[f] = (fcalls[f] or 0) + nodes.ncalls[n]
  end
  local function trip_at(k, n, x)
    nown[k][n] = nown[k][n] + x
    if on_jit then fown[k][nodes.frame[n]] = fown[k][nodes.frame[n]] + x end
  end
  -- First, so that a parent has its children's round trips before its sums below. On LuaJIT
  -- half of a round trip is in the frame that called the resume (after the switch back), half
  -- where the coroutine went on: in its frame that called the yield it went on from, the switch
  -- being of the kind of the nearest one above that yield in the tree (a coroutine's body is a
  -- child of the frame that first resumed it), or, when it started, in that first resume.
  local starts = {}
  if on_jit then
    for n = 1, nn do
      local p = nodes.parent[n]
      if p ~= 0 then starts[p] = (starts[p] or 0) + nodes.ncalls[n] end
    end
  end
  for n = 1, nn do
    local f = nodes.frame[n]
    local parent = nodes.parent[n]
    local trips_here = trips[f] and fcalls[f] > 0 and frames.ncalls[f] * nodes.ncalls[n] / fcalls[f]
    if trips_here and not on_jit then
      trip_at(trips[f], n, trips_here)
    elseif trips_here then
      if parent ~= 0 then trip_at(trips[f], parent, 0.5 * trips_here) end
      if starts[n] then trip_at(trips[f], n, 0.5 * starts[n]) end
    elseif on_jit and parent ~= 0 and frames.kind[f] == "C" and frames.name[f] == "coroutine.yield" then
      local a = parent
      while a ~= 0 and not trips[nodes.frame[a]] do a = nodes.parent[a] end
      if a ~= 0 then trip_at(trips[nodes.frame[a]], parent, 0.5 * nodes.ncalls[n]) end
    end
  end
  for n = 1, nn do
    local f = nodes.frame[n]
    local k = kind_of(frames, f)
    local nc, pc = nodes.ncalls[n], nodes.pcalls[n]
    nown[k][n] = nown[k][n] + 0.5 * nc + 0.5 * (nc - pc)
    local share = fcalls[f] > 0 and nc / fcalls[f] or 0
    nown.line[n] = hits[f] * share
    local p = nodes.parent[n]
    if p ~= 0 then nown[k][p] = nown[k][p] + 0.5 * nc end
    -- the cumulative time holds half of the node's outermost calls, its inner ones in full
    ncum[k][n] = ncum[k][n] + (nc - pc) + 0.5 * pc
    for _, kk in ipairs(PER_FRAME) do ncum[kk][n] = ncum[kk][n] + nown[kk][n] end
  end
  for n = nn, 1, -1 do -- parents come before children
    local p = nodes.parent[n]
    if p ~= 0 then
      local k = kind_of(frames, nodes.frame[n])
      for _, kk in ipairs(KINDS) do ncum[kk][p] = ncum[kk][p] + ncum[kk][n] end
      -- the child's outermost calls are whole inside the parent
      ncum[k][p] = ncum[k][p] + 0.5 * nodes.pcalls[n]
    end
  end

  local fcum
  if nn > 0 then
    fcum = {}
    for _, k in ipairs(KINDS) do fcum[k] = {} end
    -- a function's cumulative time is its outermost calls': its nodes that no node of it holds
    local outer = profdata.outermost(nn, nodes.parent, nodes.frame)
    for n = 1, nn do
      local f = nodes.frame[n]
      for _, k in ipairs(KINDS) do
        fcum[k][f] = (fcum[k][f] or 0) + (outer[n] and ncum[k][n] or 0)
      end
    end
  end
  return { frame_own = fown, frame_cum = fcum, node_own = nown, node_cum = ncum }
end

--- The events of each kind in the whole profile: { kind → count } (the sum of frame_own).
function M.totals(c)
  args.check(type(c) == "table" and type(c.frame_own) == "table", c, 1, "totals",
             "counts (bias.counts)")
  local t = {}
  for _, k in ipairs(KINDS) do
    local s = 0
    for _, v in ipairs(c.frame_own[k]) do s = s + v end
    t[k] = s
  end
  return t
end

-- Seconds charged by model m for the counts of row i.
local function charge(m, counts, i)
  local s = 0
  for _, k in ipairs(KINDS) do s = s + m[k] * (counts[k][i] or 0) end
  return s
end

-- Seconds of model m (or its uncertainty) over counts { kind → n }.
local function over(m, t)
  local s = 0
  for _, k in ipairs(KINDS) do s = s + (m[k] or 0) * t[k] end
  return s
end

-- `lost` (a frame's own time) adds what could not be subtracted to counter.lost: the total is
-- the sum of those times.
local function clamp(x, counter, lost)
  if x < 0 then
    counter.n = counter.n + 1
    if lost then counter.lost = counter.lost - x end
    return 0
  end
  return x
end

local function copy(t)
  local out = {}
  for k, v in pairs(t) do out[k] = v end
  return out
end

-- The trace's columns when they are what a trace holds (the chrome export names what is wrong
-- with one that is not, and writes it as it is).
local function trace_of(d, nodes)
  local T = d.trace
  if type(T) ~= "table" or type(T.n) ~= "number" then return nil end
  for _, col in ipairs({ "event", "thread", "node", "time" }) do
    if type(T[col]) ~= "table" then return nil end
  end
  for i = 1, T.n do
    local x = T.node[i]
    if type(x) ~= "number" or not nodes.frame[x] or type(T.time[i]) ~= "number"
       or type(T.thread[i]) ~= "number" then
      return nil
    end
  end
  return T
end

-- The trace T with model m subtracted from its times (a copy; nil when none is to be made).
-- Each call and each return carries half its call's unit, of which half falls before the
-- hook read the clock and half after; each change of thread, half the round trip of the resume
-- or wrap call that began it (the other half is its return to the resumer). What came before an
-- event since the first one is taken off its time. Line events are not in the trace: their cost
-- stays. A time never goes below its thread's previous one; what would have is left in,
-- counted in *clamped.
local function trace_apply(T, frames, nodes, m, clamped)
  local time, thread, node, event = T.time, T.thread, T.node, T.event
  local out = { n = T.n, event = event, thread = thread, node = node, time = {} }
  -- per coroutine: the thread that resumed it and the kind of that round trip
  local before, last, resumer, trip_of, prev, prev_trip = 0, {}, {}, {}, nil, nil
  for i = 1, T.n do
    local th, f = thread[i], nodes.frame[node[i]]
    local half = 0.5 * m[kind_of(frames, f)]
    local switch = 0
    if prev and th ~= prev then
      if prev_trip then
        resumer[th], trip_of[th] = prev, prev_trip
        switch = 0.5 * m[prev_trip]
      elseif resumer[prev] == th then
        switch = 0.5 * m[trip_of[prev]]
      end
    end
    local taken = before + switch + 0.5 * half
    local t = time[i] - taken
    if last[th] and t < last[th] then
      clamped.n = clamped.n + 1
      t = last[th]
      taken = time[i] - t
    end
    out.time[i] = t
    last[th], before = t, taken + 0.5 * half
    prev, prev_trip = th, event[i] == 0 and round_trip(frames, f) or nil
  end
  -- the first event stays where it was: what came before the trace is not in it
  local shift = T.n > 0 and time[1] - out.time[1] or 0
  for i = 1, T.n do out.time[i] = out.time[i] + shift end
  return out
end

--- apply(d [, bias]): a copy of profile data `d` (the columnar form of Profile:snapshot() and of
--- dumps) with the bias subtracted; `bias` (a number or a table, as the option) defaults to the
--- data's own (its meta). The copy's meta says what was subtracted (bias_subtracted and its
--- bias_uncertainty, seconds); data with no bias gets the estimate of what it holds
--- (overhead_estimate, seconds, from the TYPICAL costs of its timer and Lua, with
--- overhead_at_least = true when those costs are a floor), or, when they are not known (a
--- Lua function or a host's timer), overhead_estimate = false; counted ticks
--- (`counter`) are no time and get neither. What the model
--- charged to functions whose own time was less (shown as 0) is not subtracted: bias_lost,
--- seconds of overhead the total still holds by the model. On LuaJIT, where a switch's cost
--- lands is split by assumption (half before, half after), which may leave some as bias_lost.
function M.apply(d, bias)
  profdata.check(d)
  local meta = copy(type(d.meta) == "table" and d.meta or {})
  if meta.bias_applied then return d end
  local m
  if bias ~= nil then m = M.model(bias) else m = M.from_meta(meta) end
  if not m then
    if meta.overhead_estimate ~= nil or meta.timer == nil or meta.timer == "counter" then
      return d
    end
    local typical = M.typical(meta.timer, meta.lua_version)
    meta.overhead_estimate = typical and over(typical, M.totals(M.counts(d))) or false
    meta.overhead_at_least = typical and typical.at_least or nil
    local out = copy(d)
    out.meta = meta
    return out
  end
  local frames, edges, nodes = d.frames, d.edges or { n = 0 }, d.nodes or { n = 0 }
  local c = M.counts(d)
  local totals = M.totals(c)
  local clamped = { n = 0, lost = 0 }
  local fown, fcum = c.frame_own, c.frame_cum

  local f2 = copy(frames)
  f2.tottime, f2.cumtime = {}, {}
  for i = 1, frames.n do
    f2.tottime[i] = clamp(frames.tottime[i] - charge(m, fown, i), clamped, true)
    local cum = fcum and fcum.lua_call[i] ~= nil and fcum or fown
    f2.cumtime[i] = clamp(frames.cumtime[i] - charge(m, cum, i), clamped)
  end

  local e2 = copy(edges)
  e2.tottime, e2.cumtime = {}, {}
  for e = 1, edges.n do
    -- An edge's share of its callee's events, by its share of the callee's calls.
    local g, share = edges.callee[e], 0
    if frames.ncalls[g] > 0 then share = edges.ncalls[e] / frames.ncalls[g] end
    local cum = fcum and fcum.lua_call[g] ~= nil and fcum or fown
    e2.tottime[e] = clamp(edges.tottime[e] - charge(m, fown, g) * share, clamped)
    e2.cumtime[e] = clamp(edges.cumtime[e] - charge(m, cum, g) * share, clamped)
  end

  local n2 = copy(nodes)
  n2.tottime, n2.cumtime = {}, {}
  for k = 1, nodes.n do
    n2.tottime[k] = clamp(nodes.tottime[k] - charge(m, c.node_own, k), clamped)
    n2.cumtime[k] = clamp(nodes.cumtime[k] - charge(m, c.node_cum, k), clamped)
  end

  if type(bias) == "table" or (bias == nil and meta.bias_lua_call ~= nil) then M.to_meta(meta, m) end
  meta.bias = type(bias) == "number" and bias or (type(meta.bias) == "number" and meta.bias or 0)
  meta.bias_applied = true
  meta.bias_clamped = clamped.n
  meta.bias_subtracted = over(m, totals) - clamped.lost
  meta.bias_lost = clamped.lost
  if m.err then meta.bias_uncertainty = over(m.err, totals) end
  local out = copy(d)
  out.meta, out.frames, out.edges, out.nodes = meta, f2, e2, n2
  local T = trace_of(d, nodes)
  if T then
    local tc = { n = 0 }
    out.trace = trace_apply(T, frames, nodes, m, tc)
    meta.trace_bias_clamped = tc.n
  end
  return out
end

return M
