-- bench/lib/workloads.lua -- the workloads and helpers that the bench scripts share.  Not a script: `make bench` runs bench/*.lua only.
--
--   local W = assert(loadfile(bench_dir .. "/lib/workloads.lua"))(bench_dir)
--   W.workloads      fib, methods, strings, coro, and wrap when asked for (see below)
--   W.median(list)   W.calibrate(w, measure, target)   W.pick(samples, limit)
--   W.usage(script, text)   W.options(args, spec, defaults, quick, usage)
--   W.first_line(err)   W.read_cost(p, n)   W.timers(cprof, all, only, usage, describe)
--   W.quartiles(list)   W.shell_quote(s)   W.read_command(cmd)   W.interpreter(args)
--   W.spread(list)   W.GOAL, W.BIAS_GOAL
--   W.side_by_side_options(args, extra, defaults, quick, usage)   W.run_mode(mode, fn)
--   W.child_or_selected(opts, groups, modes_of, usage)   W.print_head(title, cprof, opts)
--   W.ratios(times, name, ref)   W.interleave(what, modes, fn, reps, seen)   W.fmt_iqr(list)
--   W.instruction_counter(opts, script, note)   W.child_ir(interp, script, child, size, procs, env)
--
-- A workload is a table:
--   name, what      short name and a one-line description
--   size            a small starting size (a few milliseconds)
--   label(size)     the size for humans ("fib(35)", "1000 lines")
--   calls(size)     call events one run produces (Lua and C functions)
--   resize(size, f) a size that should take about f times as long
--   make(size)      a function that does the work and returns a checksum,
--                   the same in every mode
--   optional        run only when named (--only), not by default
--
-- Plain Lua 5.1 syntax, so that the scripts run under LuaJIT as well.

local bench_dir = ... or "."

local M = {}

local function resize_linear(size, f)
  return math.max(1, math.floor(size * f + 0.5))
end

-- (a) recursive fib from examples/fib.lua
CPROF_FIB_NO_MAIN = true
local fib = dofile(bench_dir .. "/../examples/fib.lua")
M.fib = fib
M.fib_path = bench_dir .. "/../examples/fib.lua"

local PHI = (1 + math.sqrt(5)) / 2

local function fib_value(n)
  local a, b = 0, 1
  for _ = 1, n do a, b = b, a + b end
  return a
end

--- Calls that fib(n) makes: 2*fib(n+1) - 1.
function M.fib_calls(n)
  return 2 * fib_value(n + 1) - 1
end

-- (b) method calls on objects with metatables, with an inherited __index chain
local Vec = {}
Vec.__index = Vec

function Vec.new(x, y)
  return setmetatable({ x = x, y = y }, Vec)
end

function Vec:add(o)
  self.x = self.x + o.x
  self.y = self.y + o.y
  return self
end

function Vec:dot(o)
  return self.x * o.x + self.y * o.y
end

local Particle = setmetatable({}, { __index = Vec })
Particle.__index = Particle

function Particle.new(x, y, vx, vy)
  local p = setmetatable({ x = x, y = y }, Particle)
  p.v = Vec.new(vx, vy)
  return p
end

function Particle:step()
  self:add(self.v)                  -- inherited from Vec
  return self:dot(self.v) * 1e-6    -- inherited from Vec
end

local NPARTICLES = 64

-- (d) producer/consumer coroutine pair
local cocreate, coresume, coyield, cowrap =
  coroutine.create, coroutine.resume, coroutine.yield, coroutine.wrap

M.workloads = {
  {
    name = "fib",
    what = "recursive fib(N) from examples/fib.lua",
    size = 20,
    label = function(n) return "fib(" .. n .. ")" end,
    resize = function(n, f)
      return math.max(10, n + math.floor(math.log(f) / math.log(PHI) + 0.5))
    end,
    calls = M.fib_calls,
    make = function(n) return function() return fib(n) end end,
  },
  {
    name = "methods",
    what = "obj:method() calls through metatables (3 calls/step)",
    size = 10000,
    label = function(n) return n .. " steps" end,
    resize = resize_linear,
    calls = function(n) return 3 * n + 4 * NPARTICLES end,
    make = function(n)
      return function()
        local ps = {}
        for i = 1, NPARTICLES do
          ps[i] = Particle.new(i, -i, i % 7 - 3, i % 5 - 2)
        end
        local acc = 0
        for i = 1, n do
          acc = acc + ps[i % NPARTICLES + 1]:step()
        end
        return acc
      end
    end,
  },
  {
    name = "strings",
    what = "string building, 2 C calls per 32 concatenations",
    size = 1000,
    label = function(n) return n .. " lines" end,
    resize = resize_linear,
    calls = function(n) return 2 * n end,
    make = function(n)
      local concat, rep = table.concat, string.rep
      return function()
        local parts, total = {}, 0
        for i = 1, n do
          for j = 1, 32 do
            parts[j] = "key" .. j .. "=" .. (i + j)
          end
          local line = concat(parts, ";")
          total = total + #line + #rep("-", 16 + i % 48)
        end
        return total
      end
    end,
  },
  {
    name = "coro",
    what = "producer/consumer coroutine pair (4 C calls/item)",
    size = 10000,
    label = function(n) return n .. " items" end,
    resize = resize_linear,
    -- create + wrap, n+1 resumes, n calls of the consumer, both coroutine
    -- bodies starting once, n yields in each
    calls = function(n) return 4 * n + 5 end,
    make = function(n)
      return function()
        local producer = cocreate(function()
          for i = 1, n do coyield(i) end
        end)
        local total = 0
        local consumer = cowrap(function(item)
          while true do
            total = total + item % 97
            item = coyield()
          end
        end)
        while true do
          local _, item = coresume(producer)
          if item == nil then break end
          consumer(item)
        end
        return total
      end
    end,
  },
  {
    name = "wrap",
    what = "a generator made by coroutine.wrap (2 C calls/item)",
    optional = true,
    size = 10000,
    label = function(n) return n .. " items" end,
    resize = resize_linear,
    -- wrap, the body starting once, n calls of the generator, n yields
    calls = function(n) return 2 * n + 2 end,
    make = function(n)
      return function()
        local gen = cowrap(function()
          for i = 1, n do coyield(i) end
        end)
        local total = 0
        for _ = 1, n do total = total + gen() % 97 end
        return total
      end
    end,
  },
}

--- The workloads named in `only` (a set), all but the optional ones when it is nil.
function M.select(only)
  local out = {}
  for _, w in ipairs(M.workloads) do
    if (not only and not w.optional) or (only and only[w.name]) then out[#out + 1] = w end
  end
  return out
end

function M.median(list)
  if #list == 0 then return nil end
  local s = {}
  for i, v in ipairs(list) do s[i] = v end
  table.sort(s)
  local m = math.floor((#s + 1) / 2)
  if #s % 2 == 1 then return s[m] end
  return (s[m] + s[m + 1]) / 2
end

--- Issue 14's goals, which accuracy.lua and accuracy_series.lua judge: every calibrated total
--- and share within GOAL, each kind of the bias model within BIAS_GOAL of its median.
M.GOAL, M.BIAS_GOAL = 0.10, 0.20

--- The spread of a list as issue 14 judges a kind of the bias model over calibrations or
--- runs: the largest distance of a value from the median, over the median (nil when the median
--- is 0), and that distance and the median.
function M.spread(list)
  local med, dev = M.median(list), 0
  for _, v in ipairs(list) do dev = math.max(dev, math.abs(v - med)) end
  return med ~= 0 and dev / math.abs(med) or nil, dev, med
end

--- Grows workload `w` from w.size until measure(w.make(size)) takes about
--- `target` seconds.  Returns the size, its time, and every (size, time) pair
--- tried, smallest first, for W.pick.
function M.calibrate(w, measure, target)
  local size = w.size
  local t = measure(w.make(size))
  local samples = { { size = size, t = t } }
  while t < target do
    local f = target / math.max(t, 1e-4)
    f = math.min(math.max(1.1 * f, 1.2), 20)
    local next_size = w.resize(size, f)
    if next_size <= size then next_size = size + 1 end
    size = next_size
    t = measure(w.make(size))
    samples[#samples + 1] = { size = size, t = t }
  end
  return size, t, samples
end

--- The largest sample that took at most `limit` seconds (the first if none did).
function M.pick(samples, limit)
  local best = samples[1]
  for _, s in ipairs(samples) do
    if s.t <= limit and s.size > best.size then best = s end
  end
  return best.size, best.t
end

--- Parses --key=value and --flag arguments against `spec` (key -> "number",
--- "string", "set" or "flag"); calls usage(msg) on anything else.
function M.parse_args(args, spec, opts, usage)
  for _, a in ipairs(args or {}) do
    local k, v = string.match(a, "^%-%-([%w-]+)=(.*)$")
    local flag = string.match(a, "^%-%-([%w-]+)$")
    if a == "--help" or a == "-h" then
      usage()
    elseif flag and spec[flag] == "flag" then
      opts[flag] = true
    elseif k and spec[k] == "number" then
      opts[k] = tonumber(v) or usage("bad value for --" .. k .. ": " .. v)
    elseif k and spec[k] == "string" then
      opts[k] = v
    elseif k and spec[k] == "set" then
      local set, list = {}, {}
      for name in string.gmatch(v, "[^,%s]+") do
        set[name] = true
        list[#list + 1] = name
      end
      opts[k] = set
      opts[k .. "_list"] = list
    else
      usage("unknown argument " .. a)
    end
  end
  return opts
end

--- A usage function for `script`: usage(msg) prints msg (if any) and `text` to
--- stderr, then exits (status 2 after a message, else 0).
function M.usage(script, text)
  return function(msg)
    if msg then io.stderr:write(script, ": ", msg, "\n") end
    io.stderr:write(text)
    os.exit(msg and 2 or 0)
  end
end

--- The options: --quick's values (`quick`) or `defaults`, overridden by the
--- arguments (parsed by M.parse_args against `spec`), with reps a whole number
--- from 1.
function M.options(args, spec, defaults, quick, usage)
  local given = M.parse_args(args, spec, {}, usage)
  local opts = {}
  for k, v in pairs(given.quick and quick or defaults) do opts[k] = v end
  for k, v in pairs(given) do opts[k] = v end
  opts.reps = math.max(1, math.floor(opts.reps))
  return opts
end

--- The quartiles of a list (linear interpolation): q1, median, q3.
function M.quartiles(list)
  local t = {}
  for i, v in ipairs(list) do t[i] = v end
  table.sort(t)
  local function q(p)
    local x = 1 + (#t - 1) * p
    local i = math.floor(x)
    return t[i] + (t[math.min(i + 1, #t)] - t[i]) * (x - i)
  end
  return q(0.25), q(0.5), q(0.75)
end

--- s as one word for the shell.
function M.shell_quote(s)
  return "'" .. string.gsub(s, "'", "'\\''") .. "'"
end

--- The interpreter of a script's `arg` table: its word at the lowest negative index (nil when
--- there is none).
function M.interpreter(args)
  if type(args) ~= "table" then return nil end
  local lo = 0
  while args[lo - 1] ~= nil do lo = lo - 1 end
  if lo < 0 then return args[lo] end
end

--- What the command `cmd` prints on stdout, or nil when it cannot be started.
function M.read_command(cmd)
  local f = io.popen(cmd, "r")
  if not f then return nil end
  local out = f:read("*a")
  f:close()
  return out
end

--- The options of a script that times modes side by side and counts their instructions in
--- children of itself (bench/lines.lua, bench/recursion.lua): --reps, --n, --callgrind-n,
--- --no-callgrind, --only, --quick, --child, and those of `extra` (a spec as M.options's).
function M.side_by_side_options(args, extra, defaults, quick, usage)
  local spec = { reps = "number", n = "number", ["callgrind-n"] = "number",
                 ["no-callgrind"] = "flag", only = "set", quick = "flag", child = "string" }
  for k, v in pairs(extra or {}) do spec[k] = v end
  local opts = M.options(args, spec, defaults, quick, usage)
  opts.n = math.max(1, math.floor(opts.n))
  opts["callgrind-n"] = math.max(2, math.floor(opts["callgrind-n"]))
  return opts
end

--- For a script of groups (each with a name) of modes (modes_of(group): a list of tables with
--- a name): with --child=GROUP/MODE, runs that mode once at --n (group.work or group.make
--- makes the function), writes "result ..." and returns nil; else the groups --only selects.
function M.child_or_selected(opts, groups, modes_of, usage)
  if opts.child then
    local g, m = string.match(opts.child, "^([^/]+)/(.+)$")
    for _, group in ipairs(groups) do
      for _, mode in ipairs(modes_of(group)) do
        if group.name == g and mode.name == m then
          local _, r = M.run_mode(mode, (group.work or group.make)(opts.n))
          io.write("result ", r, "\n")
          return nil
        end
      end
    end
    usage("--child: no mode " .. opts.child)
  end
  local selected = {}
  for _, g in ipairs(groups) do
    if not opts.only or opts.only[g.name] then selected[#selected + 1] = g end
  end
  if #selected == 0 then usage("--only selects nothing") end
  return selected
end

--- The head of a side-by-side script's output: its title, the Lua, cprof and timer, the rounds.
function M.print_head(title, cprof, opts)
  local jit = rawget(_G, "jit")
  print(title)
  print(string.format("Lua: %s%s; cprof %s, timer %s", _VERSION, jit and (", " .. jit.version) or "",
    tostring(cprof._VERSION), cprof.Profile():getstats().timer))
  print(string.format("%d interleaved rounds at n = %d; CPU seconds (os.clock); ratios: median over"
    .. " the rounds of each round's ratio, with the interquartile range", opts.reps, opts.n))
end

--- Each round's time of mode `name` over that of mode `ref` (times as M.interleave's).
function M.ratios(times, name, ref)
  local out = {}
  for r, t in ipairs(times[name]) do out[r] = t / times[ref][r] end
  return out
end

--- One run of `fn` in `mode` ({ make = function returning a fresh profile } or {} for none),
--- the profile made, enabled and disabled outside the timing: CPU seconds, fn's result and
--- the profile.
function M.run_mode(mode, fn)
  collectgarbage("collect")
  local jit = rawget(_G, "jit")
  if jit then jit.flush() end
  local p = mode.make and mode.make()
  if p then p:enable() end
  local c0 = os.clock()
  local r = fn()
  local c1 = os.clock()
  if p then p:disable() end
  return c1 - c0, r, p
end

--- `reps` rounds of fn in every mode of the list `modes` (each a table with a name), each round
--- in a rotated order so that a drift of the machine's speed hits every mode alike: { [mode
--- name] = { seconds per round } }.  Every run must compute the same result (an error names
--- `what` otherwise); seen(mode, p) is called after each run with its profile, if given.
function M.interleave(what, modes, fn, reps, seen)
  local times, want = {}, nil
  for _, m in ipairs(modes) do times[m.name] = {} end
  for r = 1, reps do
    for i = 0, #modes - 1 do
      local m = modes[(i + r) % #modes + 1]
      local t, result, p = M.run_mode(m, fn)
      if want == nil then want = result end
      if result ~= want then
        error(string.format("%s: mode %s computed %s, not %s", what, m.name, tostring(result),
          tostring(want)))
      end
      table.insert(times[m.name], t)
      if seen then seen(m, p) end
    end
  end
  return times
end

--- A list of ratios as "median (first quartile-third quartile)".
function M.fmt_iqr(list, digits)
  local q1, q2, q3 = M.quartiles(list)
  local d = digits or 2
  return string.format("%6." .. d .. "f (%." .. d .. "f-%." .. d .. "f)", q2, q1, q3)
end

--- The instruction counts of a side-by-side script: after an empty line and one that says how
--- they are made (and `note`), a function count(child, env) that gives the count of
--- `script --child=CHILD` at --callgrind-n minus at 1 (M.child_ir); nil when they are skipped
--- (--no-callgrind, or no valgrind), having said so.
function M.instruction_counter(opts, script, note)
  print("")
  local interp = arg and arg[-1]
  local have = M.read_command("command -v valgrind 2>/dev/null") or ""
  if opts["no-callgrind"] then return print("instruction counts skipped (--no-callgrind)") end
  if not interp or not string.match(have, "%S") then
    return print("instruction counts skipped: valgrind is not installed")
  end
  local n, procs = opts["callgrind-n"], opts.quick and 1 or 3
  print(string.format("Instruction counts (valgrind --tool=callgrind): n = %d minus n = 1, a child"
    .. " interpreter per mode, median of %d processes%s", n, procs, note or ""))
  return function(child, env)
    return M.child_ir(interp, script, child, n, procs, env)
      - M.child_ir(interp, script, child, 1, procs, env)
  end
end

--- Valgrind's instruction count of one run of `script --child=CHILD --n=SIZE` under the
--- interpreter `interp`, with environment `env` ("VAR=value ..." or ""): the median of `procs`
--- processes (Lua 5.4 seeds its string hashes with the time and with addresses, so a count
--- moves by up to ~1% between processes).  The child prints "result ..." when it ran; an error
--- with its output when it did not.
function M.child_ir(interp, script, child, size, procs, env)
  local irs = {}
  for i = 1, procs do
    local out = M.read_command(string.format(
      "%s valgrind --tool=callgrind --callgrind-out-file=/dev/null %s %s --child=%s --n=%d 2>&1",
      env or "", M.shell_quote(interp), M.shell_quote(script), M.shell_quote(child), size)) or ""
    irs[i] = string.match(out, "result %S+") and tonumber(string.match(out, "Collected%s*:%s*(%d+)"))
    if not irs[i] then error(child .. ": the child failed:\n" .. out) end
  end
  return M.median(irs)
end

--- The first line of an error message.
function M.first_line(err)
  return (string.match(tostring(err), "^[^\n]*"))
end

--- The cost of one reading of profile p's timer, through p:now(), minus a
--- plain C call: CPU seconds, over n readings.
function M.read_cost(p, n)
  local now, cpu_clock = p.now, os.clock
  local c0 = cpu_clock()
  for _ = 1, n do now(p) end
  local c1 = cpu_clock()
  for _ = 1, n do rawequal(p, p) end
  local c2 = cpu_clock()
  return math.max(0, ((c1 - c0) - (c2 - c1)) / n)
end

--- The timers of `all` that `only` selects (a set; nil: all of them) and that
--- cprof can make: a list of { name =, default = bool }, each passed with a
--- profile that uses it to describe(t, p) first; "name: why" of the others;
--- and cprof's default timer.  A name in `only` that is not in `all` is a
--- usage error.
function M.timers(cprof, all, only, usage, describe)
  local default_timer = cprof.Profile():getstats().timer
  local timers, notes = {}, {}
  for _, name in ipairs(all) do
    if not only or only[name] then
      local ok, p = pcall(cprof.Profile, { timer = name })
      if ok then
        local t = { name = name, default = name == default_timer }
        describe(t, p)
        timers[#timers + 1] = t
      else
        notes[#notes + 1] = name .. ": " .. M.first_line(p)
      end
    end
  end
  if only then
    for name in pairs(only) do
      local known = false
      for _, t in ipairs(all) do known = known or t == name end
      if not known then usage("unknown timer " .. name) end
    end
  end
  return timers, notes, default_timer
end

return M
