-- bench/accuracy_series.lua -- does bench/accuracy.lua agree with itself from run to run?
--
--   eval "$(make -s env)"
--   lua5.4 bench/accuracy_series.lua [--runs=6] [--lock=FILE] [accuracy.lua's options]
--   lua5.4 bench/accuracy_series.lua --from=FILE
--
-- Issue 14's acceptance is about three consecutive runs of bench/accuracy.lua: in each, every
-- judged total and share within 10%; between them, each kind of the bias model subtracted
-- within 20% of the three's median. This runs accuracy.lua `runs` times in a row, each a fresh
-- process of this interpreter (under `flock FILE` with --lock, so that no other timing runs at
-- once), printing their output, and reads the `series:` line each ends with; --from reads those
-- lines from a file instead (a series' saved output). It then prints per run the judge and the
-- model subtracted, per window of three consecutive runs each kind's spread (the largest
-- distance of a run's value from the window's median, over that median, as accuracy.lua judges
-- its calibrations; a kind whose median is 0 is not judged) and whether the window meets every
-- point, and how many windows do. When the runs subtracted the machine's model (--processes
-- above 1), the same for the model each run's own first calibration would have been (its
-- `own` columns). Plain Lua 5.1 syntax: it runs under LuaJIT too.

local script_dir = arg and arg[0] and string.match(arg[0], "^(.*)[/\\]") or "."
local W = assert(loadfile(script_dir .. "/lib/workloads.lua"))(script_dir)

local GOAL, BIAS_GOAL = W.GOAL, W.BIAS_GOAL
local KINDS = require("cprof.bias").KINDS

local usage = W.usage("accuracy_series.lua", [[
usage: lua bench/accuracy_series.lua [options] [accuracy.lua's options]
  --runs=N        runs of bench/accuracy.lua, one after the other (6)
  --lock=FILE     run each under `flock FILE`
  --from=FILE     read the runs' `series:` lines from FILE instead of running them
Every other argument is passed to bench/accuracy.lua (--processes=K, --quick, ...).
]])

local mine, passed = {}, {}
for _, a in ipairs(arg or {}) do
  local k = string.match(a, "^%-%-([%w-]+)")
  if k == "runs" or k == "lock" or k == "from" or a == "--help" or a == "-h" then
    mine[#mine + 1] = a
  else
    passed[#passed + 1] = W.shell_quote(a)
  end
end
local opts = W.parse_args(mine, { runs = "number", lock = "string", from = "string" },
                          { runs = 6 }, usage)
if opts.runs < 1 or opts.runs % 1 ~= 0 then usage("--runs must be a whole number, 1 or more") end

--- A `series:` line's numbers, by name (met, processes, model.<kind>, first.<kind>, and the
--- judged errors: <workload>.total, <split>.<part>.share, bias.<kind>.spread, own.*).
local function parse(line)
  local run = {}
  for k, v in string.gmatch(line, "([%w_.]+)=(%S+)") do run[k] = tonumber(v) end
  return run
end

local runs = {}
if opts.from then
  local f, err = io.open(opts.from, "r")
  if not f then
    io.stderr:write("accuracy_series.lua: ", tostring(err), "\n")
    os.exit(1)
  end
  for line in f:lines() do
    if string.find(line, "^series: ") then runs[#runs + 1] = parse(line) end
  end
  f:close()
  if #runs == 0 then
    io.stderr:write("accuracy_series.lua: ", opts.from, ": no `series:` line (of bench/accuracy.lua)\n")
    os.exit(1)
  end
else
  local cmd = table.concat({ opts.lock and ("flock " .. W.shell_quote(opts.lock)) or "",
    W.shell_quote(W.interpreter(arg) or "lua5.4"), W.shell_quote(script_dir .. "/accuracy.lua"),
    table.concat(passed, " ") }, " ")
  for r = 1, opts.runs do
    print(string.format("=== run %d of %d: %s", r, opts.runs, cmd))
    io.stdout:flush()
    local p = assert(io.popen(cmd .. " 2>&1", "r"))
    for line in p:lines() do
      print(line)
      io.stdout:flush()
      if string.find(line, "^series: ") then runs[r] = parse(line) end
    end
    p:close()
    if not runs[r] then
      io.stderr:write(("accuracy_series.lua: run %d (%s) printed no `series:` line\n"):format(r, cmd))
      os.exit(1)
    end
  end
  print("")
end

local function pct(x) return string.format("%+.1f%%", x * 100) end

--- The judged numbers of a run outside their goals: those named with `prefix` ("" or "own."),
--- each "name +x%", sorted.
local function outside(run, prefix)
  local out = {}
  for k, v in pairs(run) do
    local name = string.sub(k, #prefix + 1)
    local own = string.find(k, "^own%.") ~= nil
    if string.sub(k, 1, #prefix) == prefix and own == (prefix == "own.") then
      local goal = (string.find(name, "%.spread$") and BIAS_GOAL)
                   or ((string.find(name, "%.total$") or string.find(name, "%.share$")) and GOAL)
      if goal and not (v == v and math.abs(v) <= goal) then out[#out + 1] = name .. " " .. pct(v) end
    end
  end
  table.sort(out)
  return out
end

--- The spread of each kind of model `key` ("model" or "first") over runs i..i+2: per kind the
--- largest distance from their median over it (nil when the median is 0).
local function window(i, key)
  local spread = {}
  for _, k in ipairs(KINDS) do
    local vals = {}
    for j = i, i + 2 do vals[#vals + 1] = runs[j][key .. "." .. k] or 0 end
    spread[k] = W.spread(vals)
  end
  return spread
end

-- The per-run table and the windows of one way of calibrating: the model named `key`, the
-- errors named with `prefix`. Returns how many windows met every point, of how many.
local function summary(title, key, prefix)
  print(title)
  local function row(a, b, cells, rest)
    local t = {}
    for i, c in ipairs(cells) do t[i] = string.format(" %9s", c) end
    print((string.gsub(string.format("%-5s %-8s%s  %s", a, b, table.concat(t), rest), "%s+$", "")))
  end
  row("run", "judge", KINDS, "outside 10% (20% for a spread)")
  local bad = {}
  for r, run in ipairs(runs) do
    bad[r] = outside(run, prefix)
    local cells = {}
    for i, k in ipairs(KINDS) do cells[i] = string.format("%.1f", run[key .. "." .. k] or 0) end
    row(r, #bad[r] == 0 and "MET" or "NOT MET", cells, table.concat(bad[r], ", "))
  end
  local met, windows = 0, math.max(0, #runs - 2)
  if windows > 0 then
    row("runs", "window", KINDS, "every point")
  end
  for i = 1, windows do
    local spread, cells, why = window(i, key), {}, {}
    for j, k in ipairs(KINDS) do
      cells[j] = spread[k] and string.format("±%.0f%%", spread[k] * 100) or "-"
      if spread[k] and spread[k] > BIAS_GOAL then why[#why + 1] = k .. " spread" end
    end
    for r = i, i + 2 do
      if #bad[r] > 0 then why[#why + 1] = "run " .. r end
    end
    if #why == 0 then met = met + 1 end
    row(i .. "-" .. (i + 2), "", cells, #why == 0 and "yes" or ("no: " .. table.concat(why, ", ")))
  end
  return met, windows
end

local own = false
for k in pairs(runs[1]) do own = own or string.find(k, "^own%.") ~= nil end
if own then
  local m, n = summary("With each run's own first calibration (in its process; the `own` columns),"
                       .. " for comparison: its bias (ns)", "first", "own.")
  print(string.format("windows of three meeting every point with each run's own calibration: %d of %d",
                      m, n))
  print("")
end
local m, n = summary("Per run: the judge and the bias model subtracted (ns); per window of three"
                     .. " runs, each kind's spread", "model", "")
print(string.format("windows of three meeting every point: %d of %d", m, n))
