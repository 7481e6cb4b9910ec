--- cprof.calibrate: measuring the bias model (cprof.bias) on this machine, and keeping it.
--
-- Each kind of event has a workload made of it: a loop calling an empty Lua function and a
-- binary recursion, half of the calls each (lua_call), a loop calling a C function (c_call),
-- resuming two coroutines in turn, each yielding (switch), calling two functions made by
-- coroutine.wrap in turn, whose bodies yield (wrap), a loop of line events in a profile with
-- lines on (line). A workload runs ROUNDS times unprofiled (C calls and coroutines SPLIT times
-- as often, each run as many times shorter; C calls in PARTS profiles, apart in time), timed
-- with the profile's timer, and as many times under a profile of the same timer, the two
-- interleaved (in alternating order) so that a busy moment of a shared machine hits both alike.
-- The profiled run reports the workload's cumulative time. The shift between the two samples is
-- their Hodges–Lehmann estimate, the median of all pairwise differences profiled −
-- unprofiled, which a few disturbed runs do not move; its 95% confidence interval comes from the
-- same sorted differences (the Mann–Whitney bounds). The shift, less what the kinds measured
-- before account for (the profiles' own counts of each kind, cprof.bias.counts), divided by the
-- count of the workload's kind, is that kind's bias; its uncertainty is half the interval's
-- width, plus what the kinds before it contribute. All of this is done in BLOCKS blocks, the
-- kinds before each kind subtracted at their final values.
--
-- Only the rounds run at the machine's full speed count. A virtual machine can be slowed by its
-- host as a whole, by 1.6-1.9 times for stretches of 10 ms to a second (on the bench machine, a
-- quarter of the time), and in such a stretch every event hides about 23 ns more than at full
-- speed, whatever its kind (bench/README.md, "Accuracy"): a model measured partly in one would
-- be a mix of the two machines, different in every run. A probe (prober: a profiled loop of Lua
-- and C calls) timed before and after each round tells: a round counts when both are within
-- FULL_SPEED of the probes' fast end (their 1st percentile over the whole calibration). A block
-- (each of a kind's PARTS in it) votes with its full-speed rounds if it has MIN_ROUNDS of them,
-- and each kind is the lower quartile of the votes; blocks are added (up to MAX_BLOCKS) until
-- each kind has VOTES of them (per part), and (up to DENSE_BLOCKS) until each kind has as many
-- with half their rounds at full speed. When none votes, all blocks do, with all their rounds:
-- a machine slow the whole time is measured as it is.
--
-- What an event hides depends on the process too (where ASLR puts the C stack against the
-- libraries, the string hash's seed), by more than a calibration's uncertainty: the model kept
-- for the machine (machine) is the median of PROCESSES fresh processes of the same interpreter,
-- each calibrating and saving its model to a temporary file the parent reads, one after the
-- other. It is kept per timer, Lua and cprof version in $XDG_CACHE_HOME/cprof (else
-- ~/.cache/cprof), one text file of `key = value` lines, which profiles with no bias of their
-- own then use.

local _ENV = require("cprof.env")()

local bias = require "cprof.bias"
local args = require "cprof.args"
local core = require("cprof.version").core()

local M = {}

--- Rounds of a block for each kind (SPLIT: some have more): one unprofiled and one profiled run
--- each.
M.ROUNDS = 101
--- Kinds measured in SPLIT[kind] times as many rounds, each SPLIT[kind] times shorter: a C call
--- hides about -4 ns of its 20, a coroutine round trip about 20 of its 95, and their profiled
--- runs vary by about 8% from one to the next (the unprofiled ones by 0.5-2%), in proportion to
--- their length. Longer runs left the interval as it was; shorter ones narrow it with the square
--- root of their number: +-2.0-2.8 ns became +-1.1-1.4 for 7% more time (bench/README.md,
--- "Accuracy").
M.SPLIT = { c_call = 4, switch = 3, wrap = 3 }
--- Kinds whose rounds in a block are shared among PARTS[kind] profiles measured apart in time
--- (the first part of every kind, then the second of those with two), each part voting on its
--- own. A C call's bias is small (-4.8 ns), so that the judge's +-20% is +-0.9 ns, and its votes
--- in one calibration spread by 0.4 ns (standard deviation), partly from block to block: the
--- lower quartile of five left 4 processes of 27 with a calibration more than 20% from the
--- others. Two parts a block, in runs 4 times shorter (SPLIT), side by side: the median spread
--- of a process's five calibrations +-9% -> +-6% (27 processes each way; 4 -> 3 such
--- processes), under a choppy load +-20% -> +-10% (15; 7 -> 0), for 7% more CPU time (13%
--- under the load). More runs in one part (SPLIT 4, 6 or 8) or three parts one after the other
--- did not narrow it clearly: neighbouring runs share their noise (bench/README.md, "Accuracy").
M.PARTS = { c_call = 2 }
--- Rounds run first and not kept.
M.WARMUP = 10
--- Blocks of measurements of every kind: a block that a busy neighbour slowed as a whole (a kind
--- then measures up to twice its cost, with a narrow interval) is outvoted.
M.BLOCKS = 5
--- A round is at full speed when its probes took at most this times the probes' fast end: the
--- bench machine's full speed spreads over 1.0-1.25 times its fastest probe, a slowed host's
--- starts at 1.6.
M.FULL_SPEED = 1.3
--- Full-speed rounds a block (a part of it) needs to vote.
M.MIN_ROUNDS = 21
--- Votes each kind needs, per part: more blocks are measured while one lacks them (a slow
--- stretch of the host can last seconds), up to MAX_BLOCKS in all.
M.VOTES, M.MAX_BLOCKS = 3, 15
--- Blocks measured, at most, while a kind has fewer than VOTES blocks with half its rounds at
--- full speed: in a choppy stretch a block votes with a few of its rounds, and a kind's five
--- calibrations of one process spread by up to +-20-100%, which more votes narrow (the lower
--- quartile is then of more of them); a block still votes with MIN_ROUNDS (a vote only for blocks
--- with half their rounds at full speed left fewer and spread them more: bench/README.md,
--- "Accuracy"). Each block costs about 0.3 s, in the calibrations that need it.
M.DENSE_BLOCKS = 8
--- Iterations of the probe's loop: about 15 µs on the bench machine.
M.PROBE = 60
--- CPU seconds of probes after the blocks: a slow stretch of the host can outlast a whole
--- calibration, which then knows no faster speed and measures every kind at about three times
--- its cost (1 first calibration in 15 on the bench machine: bench/README.md, "Accuracy"). When
--- these probes find the machine faster (by FULL_SPEED), the blocks are measured again, up to
--- RETRIES times.
M.CONFIRM, M.RETRIES = 0.25, 2
--- Calls of each kind by default, and at most.
M.DEFAULT_CALLS, M.MAX_CALLS = 200000, 10000000
local Z95 = 1.959964

-- The workloads: the same loop shape for every kind, so they differ by the events alone.
local nop_c = core.hooked -- a cheap C function, not one of cprof's methods (which no hook sees)
local resume, yield, create, wrap = coroutine.resume, coroutine.yield, coroutine.create,
                                    coroutine.wrap
local function yielder(m) for _ = 1, m do yield() end end

local function nop() end
-- a binary recursion of depth 10: 177 calls
local function tree(k)
  if k < 2 then return k end
  return tree(k - 1) + tree(k - 2)
end

local WORK = {
  -- Half the calls from a flat loop, half from a recursion. A Lua call hides more in a deep,
  -- branching recursion than in a loop (fib 12.5-13.5 ns, a loop 10-11): the loop alone left
  -- fib at +5..+23% after calibration, and moved from 10 to 18 ns with the process, the mix
  -- 11.1-12.8 (8 processes side by side each way; bench/README.md, "Accuracy").
  lua_call = function(m)
    for _ = 1, m / 2 do nop() end
    for _ = 1, m / 354 do tree(10) end
  end,
  c_call = function(m) for _ = 1, m do nop_c() end end,
  -- The coroutines end: one left suspended would keep cprof's hook, and later profiles would
  -- find it among their threads. Two in turn: one coroutine resumed again and again hid 7-12 ns
  -- a round trip in some processes and 17-28 in others, two in turn 18-22 in every one
  -- (bench/README.md, "Accuracy"); programs alternate among coroutines (a producer and its
  -- consumer, a scheduler's tasks).
  switch = function(m)
    local a, b = create(yielder), create(yielder)
    for _ = 0, m / 2 do resume(a, m / 2); resume(b, m / 2) end
  end,
  wrap = function(m)
    local a, b = wrap(yielder), wrap(yielder)
    for _ = 0, m / 2 do a(m / 2); b(m / 2) end
  end,
  line = function(m)
    local x = 0
    for i = 1, m do x = i end
    return x
  end,
}

local function probe_leaf(i)
  nop_c()
  return i % 7
end
local function probe_work(k)
  local x = 0
  for i = 1, k do x = x + probe_leaf(i) end
  return x
end

--- prober(p): a function that returns the seconds, by profile p's timer, of a fixed loop of Lua
--- and C calls run under a profile of its own: the speed now of what a profile does. (A loop of
--- arithmetic alone missed stretches in which the host slowed calls and cprof's hook, but not
--- it: bench/README.md, "Accuracy".)
function M.prober(p)
  args.check(getmetatable(p) == core.metatable, p, 1, "prober", "cprof.Profile")
  local now, q = core.methods.now, p:sibling(false)
  q:bias(0)
  -- timed the second time: the first warms the caches, which the round before left cold
  return function()
    q:runcall(probe_work, M.PROBE)
    local t0 = now(p)
    q:runcall(probe_work, M.PROBE)
    return now(p) - t0
  end
end

--- fastest(probes): the fast end of a list of probe times, their 1st percentile (the very
--- fastest may be a glitch of the timer).
function M.fastest(probes)
  args.check(type(probes) == "table", probes, 1, "fastest", "list of probe times")
  local s = {}
  for i, v in ipairs(probes) do s[i] = v end
  table.sort(s)
  return s[math.max(1, math.floor(#s / 100))]
end

--- at_full_speed(speed, fastest): the indices of the rounds whose speed (the slower of the
--- probes around each) is within FULL_SPEED of `fastest`.
function M.at_full_speed(speed, fastest)
  args.check(type(speed) == "table", speed, 1, "at_full_speed", "list of round speeds")
  args.check(type(fastest) == "number", fastest, 2, "at_full_speed", "number")
  local kept = {}
  for r, v in ipairs(speed) do
    if v <= M.FULL_SPEED * fastest then kept[#kept + 1] = r end
  end
  return kept
end

--- pick(t, idx): the elements of list t at the indices idx, in order.
function M.pick(t, idx)
  args.check(type(t) == "table", t, 1, "pick", "table")
  args.check(type(idx) == "table", idx, 2, "pick", "list of indices")
  local out = {}
  for i, r in ipairs(idx) do out[i] = t[r] end
  return out
end

--- full_speed(blocks, fastest): the samples that vote, from blocks of rounds { prof = {...},
--- plain = {...}, speed = {...} }: per block with at least MIN_ROUNDS rounds at full speed
--- (at_full_speed), { prof, plain } of those rounds; when no block has that many, every block
--- with all its rounds. The second result says which (true: full speed).
function M.full_speed(blocks, fastest)
  args.check(type(blocks) == "table", blocks, 1, "full_speed", "list of blocks")
  args.check(type(fastest) == "number", fastest, 2, "full_speed", "number")
  local votes = {}
  for _, b in ipairs(blocks) do
    local kept = M.at_full_speed(b.speed, fastest)
    if #kept >= M.MIN_ROUNDS then
      votes[#votes + 1] = { prof = M.pick(b.prof, kept), plain = M.pick(b.plain, kept) }
    end
  end
  if #votes > 0 then return votes, true end
  for i, b in ipairs(blocks) do votes[i] = { prof = b.prof, plain = b.plain } end
  return votes, false
end

-- The frame of Lua function f in data d.
local function frame_of(d, f)
  local line = debug.getinfo(f, "S").linedefined
  for i = 1, d.frames.n do
    if d.frames.kind[i] ~= "C" and d.frames.line[i] == line
       and string.find(d.frames.file[i], "calibrate", 1, true) then
      return i
    end
  end
end

local function sorted(t)
  local s = {}
  for i, v in ipairs(t) do s[i] = v end
  table.sort(s)
  return s
end

-- How many of the differences xs[i] - ys[j] (both lists sorted) are at most t: as xs[i] grows,
-- so does the least ys[j] that counts, so one pass over each list does.
local function at_most(xs, ys, t)
  local n, j, m = 0, 1, #ys
  for i = 1, #xs do
    local least = xs[i] - t
    while j <= m and ys[j] < least do j = j + 1 end
    n = n + m - j + 1
  end
  return n
end

-- The k-th smallest difference xs[i] - ys[j] (sorted lists), without making the #xs * #ys of
-- them: bisection on the value, keeping fewer than k differences at most lo and k or more at
-- most hi, until exactly k - 1 are at most lo or no float lies between the two; the answer is
-- then the least difference above lo.
local function kth(xs, ys, k)
  local lo, hi = xs[1] - ys[#ys], xs[#xs] - ys[1]
  if k <= 1 or hi == lo then return lo end
  lo = lo - (hi - lo)
  while true do
    local mid = lo + (hi - lo) / 2
    if mid <= lo or mid >= hi then break end
    local c = at_most(xs, ys, mid)
    if c >= k then
      hi = mid
    else
      lo = mid
      if c == k - 1 then break end
    end
  end
  local best, j, m = math.huge, 1, #ys
  for i = 1, #xs do
    -- the largest ys[j] whose difference is above lo: the least one of this xs[i]
    local bound = xs[i] - lo
    while j <= m and ys[j] < bound do j = j + 1 end
    if j > 1 and xs[i] - ys[j - 1] < best then best = xs[i] - ys[j - 1] end
  end
  return best
end

--- Hodges–Lehmann: the median of x[i] - y[j] over all pairs, and its 95% confidence interval,
--- selected among the pairs rather than sorted: the coroutines' 303 rounds make 91,809 pairs, a
--- sort of which took 65 ms.
function M.shift(x, y)
  args.check(type(x) == "table", x, 1, "shift", "list of numbers")
  args.check(type(y) == "table", y, 2, "shift", "list of numbers")
  local xs, ys = sorted(x), sorted(y)
  local n1, n2 = #xs, #ys
  local n = n1 * n2
  local med = n % 2 == 1 and kth(xs, ys, (n + 1) / 2)
              or (kth(xs, ys, n / 2) + kth(xs, ys, n / 2 + 1)) / 2
  local k = math.floor(n1 * n2 / 2 - Z95 * math.sqrt(n1 * n2 * (n1 + n2 + 1) / 12))
  if k < 0 then k = 0 end
  return med, kth(xs, ys, k + 1), kth(xs, ys, n - k)
end

-- One kind: the workload `m` calls long, `rounds` times each way. Returns the profiled and
-- unprofiled seconds and the counts of each kind inside the workload's cumulative time (of one
-- run). The profiled runs follow each other in one profile, each measured by how much it added
-- to the workload's cumulative time: a profile's first events cost more than the later ones (its
-- tables are new, the hook measures its own time on each of its first 256 events), and that
-- start, a few microseconds once per profile, would otherwise be counted in every run, and so in
-- the bias of every event of a long profile. Each round's speed is the slower of the probes
-- before and after it (all of them are added to `probes`).
local function sample(clock, q, work, m, rounds, probe, probes)
  local raw_snapshot, now = core.methods.snapshot, core.methods.now
  local prof, plain, speed, counts, before = {}, {}, {}, nil, 0
  local last = probe()
  -- the first rounds of a process run slower (caches, the allocator, the hook's first events):
  -- WARMUP rounds are not kept
  for r = 1 - M.WARMUP, rounds do
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
    local after = probe()
    if r > 0 then
      speed[#speed + 1] = math.max(last, after)
      probes[#probes + 1] = after
    end
    last = after
  end
  return { prof = prof, plain = plain, speed = speed }, counts
end

-- One block: every kind measured, each part on a fresh profile, in passes (the first part of
-- every kind, then the second of the kinds with two, ...): per kind, the rounds of each part and
-- the counts of every kind in the workload.
local function block(p, m, probe, probes)
  local out, passes = {}, 1
  for _, kind in ipairs(bias.KINDS) do
    out[kind] = { parts = {} }
    passes = math.max(passes, M.PARTS[kind] or 1)
  end
  for pass = 1, passes do
    for _, kind in ipairs(bias.KINDS) do
      local split, parts = M.SPLIT[kind] or 1, M.PARTS[kind] or 1
      if pass <= parts then
        local q = p:sibling(kind == "line")
        q:bias(0)
        out[kind].parts[pass], out[kind].counts =
          sample(p, q, WORK[kind], math.max(1, math.floor(m / split)),
                 math.ceil(M.ROUNDS * split / parts), probe, probes)
      end
    end
  end
  return out
end

local function median(t)
  local s, n = sorted(t), #t
  return n % 2 == 1 and s[(n + 1) / 2] or (s[n / 2] + s[n / 2 + 1]) / 2
end

-- A disturbance the probe misses only ever adds time, to a C call's negative bias too (of 1,196
-- votes, 48 lay more than 1 ns above their calibration's median, 26 below): the lower quartile
-- of the votes, not their median (the second lowest of five, the third of ten).
local function lower_quartile(t)
  return sorted(t)[math.floor((#t + 3) / 4)]
end

--- measure(p, n): the model of profile p's timer, each kind measured over about n calls in each
--- of BLOCKS blocks: { lua_call, c_call, switch, wrap, line = seconds, err = { kind = seconds },
--- confidence = 0.95, probe = seconds, full_speed = the share of rounds that counted, blocks,
--- attempts = the times the blocks were measured (CONFIRM) }: per
--- kind, the lower quartile of the votes' estimates (full_speed), with the median of their
--- uncertainties. A kind whose events this Lua does not send (LuaJIT's coroutine.resume is a
--- built-in that calls no hook) is 0 with no uncertainty.
function M.measure(p, n)
  local m = math.max(1, math.ceil(n / M.ROUNDS))
  local blocks, probes, probe = {}, {}, M.prober(p)
  local function faster_now()
    local after, t0 = {}, os.clock()
    repeat after[#after + 1] = probe() until os.clock() - t0 >= M.CONFIRM
    return M.FULL_SPEED * M.fastest(after) < M.fastest(probes)
  end
  -- a kind's parts of every block, in order
  local function rounds_of(kind)
    local r = {}
    for _, bk in ipairs(blocks) do
      for _, part in ipairs(bk[kind].parts) do r[#r + 1] = part end
    end
    return r
  end
  -- Every kind has VOTES votes per part (MIN_ROUNDS rounds at full speed) and, while fewer than
  -- DENSE_BLOCKS blocks were measured, as many with half their rounds at full speed: counted,
  -- not gathered as full_speed gathers the votes' samples.
  local function enough()
    local fastest = M.fastest(probes)
    for _, kind in ipairs(bias.KINDS) do
      local voting, dense, need = 0, 0, M.VOTES * (M.PARTS[kind] or 1)
      for _, part in ipairs(rounds_of(kind)) do
        local kept = #M.at_full_speed(part.speed, fastest)
        if kept >= M.MIN_ROUNDS then voting = voting + 1 end
        if 2 * kept >= #part.speed then dense = dense + 1 end
      end
      if voting < need or (#blocks < M.DENSE_BLOCKS and dense < need) then return false end
    end
    return true
  end
  local attempts = 0
  repeat
    attempts, blocks, probes = attempts + 1, {}, {}
    repeat
      blocks[#blocks + 1] = block(p, m, probe, probes)
    until #blocks >= M.BLOCKS and (#blocks >= M.MAX_BLOCKS or enough())
  until attempts > M.RETRIES or not faster_now()
  local fastest = M.fastest(probes)
  local model = { err = {}, confidence = 0.95, source = "calibrate", probe = fastest,
                  attempts = attempts }
  local counted, all = 0, 0
  -- Each kind less what the kinds before it account for, taken at their final values rather
  -- than at their own block's: a block that measured c_call twice too high would otherwise pass
  -- that on, doubled and with the opposite sign, to switch and wrap (whose round trips hold two
  -- C calls each).
  for _, kind in ipairs(bias.KINDS) do
    local rounds = rounds_of(kind)
    local votes, full = M.full_speed(rounds, fastest)
    -- the counts are those of one run, the same in every block
    local counts = blocks[1][kind].counts
    local count, known, known_err = counts[kind], 0, 0
    for k, c in pairs(counts) do
      if k ~= kind and model[k] then
        known = known + model[k] * c
        known_err = known_err + model.err[k] * c
      end
    end
    local est, err = {}, {}
    for b, v in ipairs(votes) do
      if full then counted = counted + #v.prof end
      if count > 0 then
        local shift, lo, hi = M.shift(v.prof, v.plain)
        est[b], err[b] = (shift - known) / count, ((hi - lo) / 2 + known_err) / count
      else
        est[b], err[b] = 0, 0
      end
    end
    for _, r in ipairs(rounds) do all = all + #r.prof end
    model[kind], model.err[kind] = lower_quartile(est), median(err)
  end
  model.full_speed, model.blocks = counted / all, #blocks
  return model
end

---------------------------------------------------------------------------
-- The machine's model: the median of several processes
---------------------------------------------------------------------------

--- Processes the machine's model is measured in (cprof.save_calibration): a kind's cost varies
--- with the process (where ASLR puts the C stack against the libraries, the string hash's
--- seed): the calibrations' `switch` spread over 10.1-19.8 ns in 56 processes of the bench
--- machine, `lua_call` over 11.3-12.5 with 1 process in 12 at 16+, each process measuring its
--- own closely (bench/README.md, "Accuracy").
M.PROCESSES = 5

--- combine(models): the machine's model from models measured in separate processes: per kind
--- the median of their values, and as its uncertainty the larger of their median uncertainty
--- and half the range of the middle half of the values (the 2nd to the 4th of 5), which a
--- single odd process does not widen; `processes` lists each kind's values in order.
function M.combine(models)
  args.check(type(models) == "table", models, 1, "combine", "list of models")
  local m = { err = {}, processes = {},
              source = string.format("median of %d processes", #models) }
  for _, k in ipairs(bias.KINDS) do
    local vals, errs = {}, {}
    for i, x in ipairs(models) do vals[i], errs[i] = x[k] or 0, x.err and x.err[k] or 0 end
    local s, cut = sorted(vals), math.floor(#vals / 4)
    m[k], m.processes[k] = median(vals), vals
    m.err[k] = math.max(median(errs), (s[#s - cut] - s[cut + 1]) / 2)
  end
  return m
end

--- child(timer, n, path): what each process measuring for the machine's model runs: a
--- calibration of `n` calls with `timer`, saved to `path`.
function M.child(timer, n, path)
  local m = require("cprof").Profile { timer = timer, bias = 0 }:calibrate(n)
  local ok, err = M.save(m, path)
  if not ok then error(err, 0) end
end

--- child_command(interpreter, timer, n, path): the shell command of a child process: the
--- interpreter with no LUA_INIT (-E: a cprof.auto there would profile it), this process's module
--- paths (a program may have set them in code) and its JIT's state (a calibration of LuaJIT with
--- the JIT on or off measures different code).
function M.child_command(interpreter, timer, n, path)
  local words = { args.shell_word(interpreter), "-E" }
  local jit = rawget(_G, "jit")
  if type(jit) == "table" and type(jit.status) == "function" and not jit.status() then
    words[#words + 1] = "-joff"
  end
  words[#words + 1] = "-e"
  words[#words + 1] = args.shell_word(
    string.format("package.path, package.cpath = %q, %q require('cprof.calibrate').child(%q, %d, %q)", package.path, package.cpath, timer, n, path))
  return table.concat(words, " ")
end

-- One child process's model: the command run with its stdout discarded and its stderr and exit
-- status read (the last line), its model read from a temporary file removed on every path.
local function in_child(interpreter, timer, n)
  local path = os.tmpname()
  local cmd = M.child_command(interpreter, timer, n, path)
  local p = io.popen(cmd .. " 2>&1 >/dev/null; printf '\\n%s\\n' \"$?\"", "r")
  local out = p and p:read("*a") or ""
  if p then p:close() end
  local said, status = string.match(out, "^(.-)%s*\n(%d+)\n$")
  local m, err
  if tonumber(status) ~= 0 then
    err = "exit status " .. tostring(status or "unknown")
  else
    local f = io.open(path, "r")
    local wrote = f and f:read(1)
    if f then f:close() end
    if wrote then m, err = M.load(path) else err = "it wrote no model" end
  end
  os.remove(path)
  if m then return m end
  said = said and said ~= "" and (": " .. said) or ""
  error(string.format("cprof: calibration in a child process failed (%s): %s%s", err, cmd, said), 0)
end

--- machine(timer, n, k, interpreter, here [, progress]): the machine's model, measured in k fresh processes
--- of `interpreter` one after the other (two measuring at once would disturb each other) and
--- combined (combine); measured in this process by here() when that cannot be done (k is 1, no
--- interpreter is known as with an embedding host, the timer is a function, which a child
--- cannot have, or io.popen is missing), with source "1 process" (nil when every kind is 0). A
--- process whose probe (its fastest, Profile:calibrate's `probe`) took more than FULL_SPEED
--- times the fastest process's is measured again (`remeasured` counts them). A child that
--- fails raises an error naming its command and what it said on stderr. progress(i, k, model,
--- again), when given, is called as each process ends (again: it measured process i again),
--- for a calibration that takes a while to say where it is.
function M.machine(timer, n, k, interpreter, here, progress)
  local function ended(i, of, m, again)
    if progress then progress(i, of, m, again) end
    return m
  end
  if k <= 1 or type(interpreter) ~= "string" or type(timer) ~= "string"
     or type(io.popen) ~= "function" then
    local m = here()
    if m then m.source = "1 process" end
    return ended(1, 1, m, false)
  end
  local models, again = {}, 0
  for i = 1, k do models[i] = ended(i, k, in_child(interpreter, timer, n), false) end
  -- A process the host slowed for its whole calibration measures every kind at about three
  -- times its cost (2 of 30 processes in bench/README.md, "Accuracy"), and its probe ran as
  -- slowly: measured again, RETRIES times at most.
  for _ = 1, M.RETRIES do
    local fastest, slow = math.huge, {}
    for _, m in ipairs(models) do fastest = math.min(fastest, m.probe or math.huge) end
    for i, m in ipairs(models) do
      if m.probe and m.probe > M.FULL_SPEED * fastest then slow[#slow + 1] = i end
    end
    if #slow == 0 then break end
    for _, i in ipairs(slow) do models[i] = ended(i, k, in_child(interpreter, timer, n), true) end
    again = again + #slow
  end
  local m = M.combine(models)
  m.remeasured = again
  return m
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
  return (string.gsub(tostring(s), "[^%w%.%-]", "_"))
end

--- The file of the model for a timer, Lua version and cprof version, in folder `dir`.
function M.path(dir, timer, lua_version, cprof_version)
  args.check(type(dir) == "string", dir, 1, "path", "string")
  return string.format("%s/calibration-%s-%s-%s.txt", dir, file_word(timer), file_word(lua_version),
                                                file_word(cprof_version))
end

local FILE_KEYS = { "date", "timer", "lua_version", "cprof_version", "confidence", "probe" }

--- Writes model m (with its date, timer and versions, and its values in each process as
--- comments) to `path`, through a temporary file
--- renamed at the end, making its folder; returns path, or nil and a message naming the file.
function M.save(m, path)
  args.check(type(m) == "table", m, 1, "save", "model table")
  args.check(type(path) == "string", path, 2, "save", "string")
  local dir = string.match(path, "^(.*)/[^/]*$")
  if dir and dir ~= "" then os.execute("mkdir -p " .. args.shell_word(dir) .. " 2>/dev/null") end
  local lines = { "# cprof's bias model (docs/MANUAL.md, Calibration): seconds per event" }
  for _, k in ipairs(FILE_KEYS) do
    if m[k] ~= nil then lines[#lines + 1] = string.format("%s = %s", k, tostring(m[k])) end
  end
  for _, k in ipairs(bias.KINDS) do
    lines[#lines + 1] = string.format("%s = %.6g", k, m[k] or 0)
    if m.err and m.err[k] then lines[#lines + 1] = string.format("%s_err = %.3g", k, m.err[k]) end
  end
  -- as comments, which readers skip: a file of an older cprof refused keys it did not know
  if m.processes then
    lines[#lines + 1] = string.format("# measured in %d processes, each kind in each:", 
      #m.processes[bias.KINDS[1]])
    for _, k in ipairs(bias.KINDS) do
      local vals = {}
      for i, v in ipairs(m.processes[k]) do vals[i] = string.format("%.6g", v) end
      lines[#lines + 1] = string.format("# %s = %s", k, table.concat(vals, " "))
    end
  end
  local tmp = path .. ".tmp" .. tostring(core.getpid and core.getpid() or os.time())
  local f, err = io.open(tmp, "w")
  if not f then return nil, "cprof: cannot write the calibration " .. tostring(err) end
  local ok, werr = f:write(table.concat(lines, "\n"), "\n")
  local cok, cerr = f:close()
  if not ok or not cok then
    os.remove(tmp)
    return nil, string.format("cprof: cannot write the calibration %s: %s", path, tostring(werr or cerr))
  end
  local rok, rerr = os.rename(tmp, path)
  if not rok then
    os.remove(tmp)
    return nil, string.format("cprof: cannot write the calibration %s: %s", path, tostring(rerr))
  end
  return path
end

--- Reads a model file: the model (with source "saved DATE"), nil when there is no such file,
--- or nil and a message naming the file and line when it is not one cprof wrote.
function M.load(path)
  args.check(type(path) == "string", path, 1, "load", "string")
  local f = io.open(path, "r")
  if not f then return nil end
  local m, err, ln, at = { err = {} }, nil, 0, nil
  for line in f:lines() do
    ln = ln + 1
    at = ":" .. ln
    if not string.find(line, "^#") and string.find(line, "%S") then
      local k, v = string.match(line, "^([%w_]+) = (.*)$")
      local kind = k and (string.match(k, "^(.*)_err$") or k)
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
  return nil, string.format("cprof: %s%s: %s", path, at or "", err)
end

return M
