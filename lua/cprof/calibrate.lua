--- cprof.calibrate: measuring the bias model (cprof.bias) on this machine, and keeping it.
--
-- Each kind of event has a workload made of it: a loop calling an empty Lua function
-- (lua_call), a C function (c_call), resuming a coroutine that yields (switch), calling a
-- function made by coroutine.wrap whose body yields (wrap), a loop of line events in a profile
-- with lines on (line). A workload runs ROUNDS times unprofiled, timed with the profile's timer,
-- and as many times under a profile of the same timer, the two interleaved (in alternating
-- order) so that a busy moment of a shared machine hits both alike.
-- The profiled run reports the workload's cumulative time. The shift between the two samples is
-- their Hodges–Lehmann estimate, the median of the ROUNDS² pairwise differences profiled −
-- unprofiled, which a few disturbed runs do not move; its 95% confidence interval comes from the
-- same sorted differences (the Mann–Whitney bounds). The shift, less what the kinds measured
-- before account for (the profiles' own counts of each kind, cprof.bias.counts), divided by the
-- count of the workload's kind, is that kind's bias; its uncertainty is half the interval's
-- width, plus what the kinds before it contribute. All of this is done in BLOCKS blocks, each
-- kind taking the lower quartile of its blocks' estimates, the kinds before it subtracted at
-- their final values.
--
-- The model is kept per timer, Lua and cprof version in $XDG_CACHE_HOME/cprof (else
-- ~/.cache/cprof), one text file of `key = value` lines, which profiles with no bias of their
-- own then use.

local bias = require "cprof.bias"
local args = require "cprof.args"
local core = require("cprof.version").core()

local M = {}

--- Rounds of a block for each kind: one unprofiled and one profiled run each.
M.ROUNDS = 101
--- Rounds run first and not kept.
M.WARMUP = 10
--- Blocks of measurements of every kind: a block that a busy neighbour slowed as a whole (a kind
--- then measures up to twice its cost, with a narrow interval) is outvoted.
M.BLOCKS = 5
--- Calls of each kind by default, and at most.
M.DEFAULT_CALLS, M.MAX_CALLS = 200000, 10000000
local Z95 = 1.959964

-- The workloads: the same loop shape for every kind, so they differ by the events alone.
local nop_c = core.hooked -- a cheap C function, not one of cprof's methods (which no hook sees)
local resume, yield, create, wrap = coroutine.resume, coroutine.yield, coroutine.create,
                                    coroutine.wrap
local function yielder(m) for _ = 1, m do yield() end end

local function nop() end

local WORK = {
  lua_call = function(m) for _ = 1, m do nop() end end,
  c_call = function(m) for _ = 1, m do nop_c() end end,
  -- the coroutine ends: one left suspended would keep cprof's hook, and later profiles would
  -- find it among their threads
  switch = function(m)
    local co = create(yielder)
    for _ = 0, m do resume(co, m) end
  end,
  wrap = function(m)
    local step = wrap(yielder)
    for _ = 0, m do step(m) end
  end,
  line = function(m)
    local x = 0
    for i = 1, m do x = i end
    return x
  end,
}

-- The frame of Lua function f in data d.
local function frame_of(d, f)
  local line = debug.getinfo(f, "S").linedefined
  for i = 1, d.frames.n do
    if d.frames.kind[i] ~= "C" and d.frames.line[i] == line
       and d.frames.file[i]:find("calibrate", 1, true) then
      return i
    end
  end
end

--- Hodges–Lehmann: the median of x[i] - y[j] over all pairs, and its 95% confidence interval.
function M.shift(x, y)
  local d = {}
  for i = 1, #x do
    for j = 1, #y do d[#d + 1] = x[i] - y[j] end
  end
  table.sort(d)
  local n = #d
  local med = n % 2 == 1 and d[(n + 1) / 2] or (d[n / 2] + d[n / 2 + 1]) / 2
  local n1, n2 = #x, #y
  local k = math.floor(n1 * n2 / 2 - Z95 * math.sqrt(n1 * n2 * (n1 + n2 + 1) / 12))
  if k < 0 then k = 0 end
  return med, d[k + 1], d[n - k]
end

-- One kind: the workload `m` calls long, ROUNDS times each way. Returns the profiled and
-- unprofiled seconds and the counts of each kind inside the workload's cumulative time (of one
-- run). The profiled runs follow each other in one profile, each measured by how much it added
-- to the workload's cumulative time: a profile's first events cost more than the later ones (its
-- tables are new, the hook measures its own time on each of its first 256 events), and that
-- start, a few microseconds once per profile, would otherwise be counted in every run, and so in
-- the bias of every event of a long profile.
local function sample(clock, q, work, m)
  local raw_snapshot, now = core.methods.snapshot, core.methods.now
  local prof, plain, counts, before = {}, {}, nil, 0
  -- the first rounds of a process run slower (caches, the allocator, the hook's first events):
  -- WARMUP rounds are not kept
  for r = 1 - M.WARMUP, M.ROUNDS do
    for pass = 1, 2 do
      if (pass == 1) == (r % 2 == 1) then
        local t0 = now(clock)
        work(m)
        if r > 0 then plain[#plain + 1] = now(clock) - t0 end
      else
        q:runcall(work, m)
        local d = raw_snapshot(q)
        local i = frame_of(d, work)
        if not i then error("cprof: calibrate: the profile missed the workload", 0) end
        if r > 0 then prof[#prof + 1] = d.frames.cumtime[i] - before end
        before = d.frames.cumtime[i]
        if not counts then
          local c = bias.counts(d)
          counts = {}
          for _, k in ipairs(bias.KINDS) do counts[k] = (c.frame_cum or c.frame_own)[k][i] end
        end
      end
    end
  end
  return prof, plain, counts
end

-- One block: every kind measured once, each on a fresh profile: per kind, the shift with its
-- interval and the counts of every kind in the workload.
local function block(p, m)
  local out = {}
  for _, kind in ipairs(bias.KINDS) do
    local q = p:sibling(kind == "line")
    q:bias(0)
    local prof, plain, counts = sample(p, q, WORK[kind], m)
    local est, lo, hi = M.shift(prof, plain)
    out[kind] = { shift = est, half = (hi - lo) / 2, counts = counts }
  end
  return out
end

local function sorted(t)
  local s = {}
  for i, v in ipairs(t) do s[i] = v end
  table.sort(s)
  return s
end

local function median(t)
  local s, n = sorted(t), #t
  return n % 2 == 1 and s[(n + 1) / 2] or (s[n / 2] + s[n / 2 + 1]) / 2
end

-- What disturbs a block (another process, a busy neighbour) only ever adds time, so the blocks'
-- lower quartile, not their median, is the estimate: the second lowest of five.
local function lower_quartile(t)
  return sorted(t)[math.floor((#t + 3) / 4)]
end

--- measure(p, n): the model of profile p's timer, each kind measured over about n calls in each
--- of BLOCKS blocks: { lua_call, c_call, switch, wrap, line = seconds, err = { kind = seconds },
--- confidence = 0.95 }: per kind, the lower quartile of the blocks' estimates, with the median of
--- their uncertainties. A kind whose events this Lua does not send (LuaJIT's coroutine.resume is a
--- built-in that calls no hook) is 0 with no uncertainty.
function M.measure(p, n)
  local m = math.max(1, math.ceil(n / M.ROUNDS))
  local blocks = {}
  for b = 1, M.BLOCKS do blocks[b] = block(p, m) end
  local model = { err = {}, confidence = 0.95, source = "calibrate" }
  -- Each kind less what the kinds before it account for, taken at their final values rather
  -- than at their own block's: a block that measured c_call twice too high would otherwise pass
  -- that on, doubled and with the opposite sign, to switch and wrap (whose round trips hold two
  -- C calls each), and the lower quartile would pick it there.
  for _, kind in ipairs(bias.KINDS) do
    local est, err = {}, {}
    for b, bk in ipairs(blocks) do
      local r = bk[kind]
      local count = r.counts[kind]
      if count > 0 then
        local known, known_err = 0, 0
        for k, c in pairs(r.counts) do
          if k ~= kind and model[k] then
            known = known + model[k] * c
            known_err = known_err + model.err[k] * c
          end
        end
        est[b], err[b] = (r.shift - known) / count, (r.half + known_err) / count
      else
        est[b], err[b] = 0, 0
      end
    end
    model[kind], model.err[kind] = lower_quartile(est), median(err)
  end
  return model
end

---------------------------------------------------------------------------
-- The cache
---------------------------------------------------------------------------

--- The folder of the kept models: $XDG_CACHE_HOME/cprof, else $HOME/.cache/cprof (nil: neither).
function M.dir()
  local x = os.getenv("XDG_CACHE_HOME")
  if x and x ~= "" then return x .. "/cprof" end
  local h = os.getenv("HOME")
  if h and h ~= "" then return h .. "/.cache/cprof" end
end

local function file_word(s)
  return (tostring(s):gsub("[^%w%.%-]", "_"))
end

--- The file of the model for a timer, Lua version and cprof version, in folder `dir`.
function M.path(dir, timer, lua_version, cprof_version)
  return ("%s/calibration-%s-%s-%s.txt"):format(dir, file_word(timer), file_word(lua_version),
                                                file_word(cprof_version))
end

local FILE_KEYS = { "date", "timer", "lua_version", "cprof_version", "confidence" }

--- Writes model m (with its date, timer and versions) to `path`, through a temporary file
--- renamed at the end, making its folder; returns path, or nil and a message naming the file.
function M.save(m, path)
  local dir = path:match("^(.*)/[^/]*$")
  if dir and dir ~= "" then os.execute("mkdir -p " .. args.shell_word(dir) .. " 2>/dev/null") end
  local lines = { "# cprof's bias model (docs/MANUAL.md, Calibration): seconds per event" }
  for _, k in ipairs(FILE_KEYS) do
    if m[k] ~= nil then lines[#lines + 1] = ("%s = %s"):format(k, tostring(m[k])) end
  end
  for _, k in ipairs(bias.KINDS) do
    lines[#lines + 1] = ("%s = %.6g"):format(k, m[k] or 0)
    if m.err and m.err[k] then lines[#lines + 1] = ("%s_err = %.3g"):format(k, m.err[k]) end
  end
  local tmp = path .. ".tmp" .. tostring(core.getpid and core.getpid() or os.time())
  local f, err = io.open(tmp, "w")
  if not f then return nil, "cprof: cannot write the calibration " .. tostring(err) end
  local ok, werr = f:write(table.concat(lines, "\n"), "\n")
  local cok, cerr = f:close()
  if not ok or not cok then
    os.remove(tmp)
    return nil, ("cprof: cannot write the calibration %s: %s"):format(path, tostring(werr or cerr))
  end
  local rok, rerr = os.rename(tmp, path)
  if not rok then
    os.remove(tmp)
    return nil, ("cprof: cannot write the calibration %s: %s"):format(path, tostring(rerr))
  end
  return path
end

--- Reads a model file: the model (with source "saved DATE"), nil when there is no such file,
--- or nil and a message naming the file and line when it is not one cprof wrote.
function M.load(path)
  local f = io.open(path, "r")
  if not f then return nil end
  local m, err, ln, at = { err = {} }, nil, 0, nil
  for line in f:lines() do
    ln = ln + 1
    at = ":" .. ln
    if not line:find("^#") and line:find("%S") then
      local k, v = line:match("^([%w_]+) = (.*)$")
      local kind = k and (k:match("^(.*)_err$") or k)
      local number = tonumber(v)
      if not k then
        err = "not a `key = value` line"
      elseif kind ~= k and number then
        m.err[kind] = number
      elseif k == "confidence" and number then
        m.confidence = number
      elseif k == "date" or k == "timer" or k == "lua_version" or k == "cprof_version" then
        m[k] = v
      elseif number then
        m[k] = number
      else
        err = "not a number"
      end
      if err then break end
    end
  end
  f:close()
  if not err then
    at = ""
    m.source = "saved " .. tostring(m.date or "(no date)")
    local ok, model = pcall(bias.model, m, "the calibration")
    if ok and model then return model end
    err = ok and "every kind is 0" or model
  end
  return nil, ("cprof: %s%s: %s"):format(path, at or "", err)
end

return M
