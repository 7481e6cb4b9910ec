--- cprof.export.chrome: Chrome's Trace Event Format (Perfetto UI, chrome://tracing, speedscope;
--- SPEC.md §7e).
--
-- A profile made with trace = true (its data has a `trace` group) is written as what it is: a
-- time line of real calls, one "B" event per call and one "E" per return at the times they
-- happened (less the calibrated bias of the events before them, as the reports' times: cprof.bias),
-- one track (tid) per coroutine (tid 1 the main thread).  The trace keeps the newest
-- events (Profile's trace_size): a frame whose call was overwritten but whose return is there
-- gets its "B" at the time of its track's first event, ahead of it (that event then comes
-- one step later, as below: whatever it is, a return included, it finds its frame open), and
-- a frame still open when the profile was written gets its "E" at the last event's time, so
-- every B has its E.
-- meta.trace_dropped says how many events were overwritten (otherData.trace_dropped).
--
-- Without a trace, cprof keeps totals per call path, not the order of calls: the call tree is
-- laid out on a synthetic time line, as "X" (complete) events.  Each node is one event, as long
-- as all its calls together (its inclusive time); a node's children follow one another from its
-- start, the largest first, and its own time fills the rest.  The file says so in its
-- metadata: the process is named "cprof: aggregated call tree (not a trace)", and
-- otherData.cprof explains the layout.  Coroutines (cprof.export.model's threads) get their own
-- tid and a thread_name; a coroutine's body starts where the coroutine.resume that runs it
-- starts.
--
-- ts and dur are microseconds, written as multiples of 1/1024 µs (about a nanosecond): such
-- numbers are exact in binary, so a reader's ts + dur is exactly the next sibling's ts and
-- nothing seems to overlap (three decimals of µs are not: 0.1 + 0.2 is more than 0.3 in
-- doubles, and speedscope then ends a frame inside its sibling).  In a trace, events of one
-- thread that would fall on the same multiple are written one multiple apart, in their order:
-- readers that sort events by time (speedscope) keep their nesting.  An event's name is the
-- function's short name (cprof.export.model's m:name: its name, with its line and file only
-- where two functions share it), with no args: speedscope adds the args to the name it shows,
-- and matches a "B" with its "E" by name.

local _ENV = require("cprof.env")()

local M = {}

local export = require("cprof.export")
local cjson = require("cjson")

M.restricts = true
M.WEIGHTS = { time = true }
M.WEIGHTS_TEXT = "a trace is a time line"

local sformat, tostring, tonumber, ipairs, type = string.format, tostring, tonumber, ipairs, type
local floor, sgsub = math.floor, string.gsub
local encode = cjson.encode
local fail = require("cprof.export.model").fail
local to_utf8 = require("cprof.sanitize").utf8

local LAYOUT = "aggregated call tree on a synthetic time line, not a trace: each event is one"
  .. " call path, as long as all its calls together; children follow one another from their"
  .. " parent's start, largest first, and the parent's own time fills the rest"

-- The events' common part per frame: '{"name":...,"cat":...,"ph":"<ph>","pid":1'.
local function heads(m, ph)
  local F, head = m.F, {}
  for f = 1, F.n do
    local kind = F.kind[f]
    head[f] = '{"name":' .. encode(m:name(f)) .. ',"cat":"' .. (kind == "C" and "C" or
      kind == "main" and "main" or "Lua") .. '","ph":"' .. ph .. '","pid":1'
  end
  return head
end

-- Time in multiples of 1/1024 µs (see the top of this file) as the text of a number of µs:
-- exact, since %.10f prints a multiple of 2^-10 below 2^53 with every digit it has.
local function micros(q)
  local s = sformat("%.10f", q / 1024)
  return (sgsub(sgsub(s, "0+$", ""), "%.$", ""))
end

-- Whole nanoseconds in multiples of 1/1024 µs: round(x * 1.024), in steps that keep it exact
-- below 2^53; two different times stay different.
local function ns_ticks(x)
  return floor(x / 125) * 128 + floor(((x % 125) * 128 + 62) / 125)
end

local function command_of(m)
  return to_utf8(tostring(m.meta.command or ""))
end

local function process_name(w, what, command)
  w.put('{"traceEvents":[{"name":"process_name","ph":"M","pid":1,"tid":1,"args":{"name":'
    .. encode(what .. (command ~= "" and ": " .. command or "")) .. "}}")
end

local function thread_name(w, tid, name)
  w.put(sformat(',{"name":"thread_name","ph":"M","pid":1,"tid":%d,"args":{"name":', tid)
    .. encode(name) .. "}}")
end

-- The trace's columns, checked: a data table may come from anywhere (a dump's reader checks
-- the types and the node indexes, not what the values mean).
local function trace_columns(m)
  local T = m.d.trace
  local n = type(T) == "table" and T.n
  if type(n) ~= "number" or n < 0 or n % 1 ~= 0 then
    fail("the trace's n is %s, not a count of events", tostring(n))
  end
  local cols = {}
  for _, c in ipairs({ "event", "thread", "node", "time" }) do
    if type(T[c]) ~= "table" then fail("the trace has no %s column", c) end
    cols[c] = T[c]
  end
  local last, nodes = {}, m.origin and m.origin.n or m.n
  for i = 1, n do
    local ev, th, node, t = cols.event[i], cols.thread[i], cols.node[i], cols.time[i]
    if ev ~= 0 and ev ~= 1 then
      fail("the trace's event %d is %s (0 a call, 1 a return)", i, tostring(ev))
    end
    if type(th) ~= "number" or th < 1 or th % 1 ~= 0 then
      fail("the trace's event %d is in thread %s, not a thread number", i, tostring(th))
    end
    if type(node) ~= "number" or node < 1 or node > nodes or node % 1 ~= 0 then
      fail("the trace's event %d is of node %s, not one of the %d nodes", i, tostring(node), nodes)
    end
    if type(t) ~= "number" or t ~= t or (last[th] and t < last[th]) then
      fail("the trace's event %d has time %s, before its thread's previous event", i,
        tostring(t))
    end
    last[th] = t
  end
  return n, cols
end

-- The real time line of a profile made with trace = true (see the top of this file).  Only the
-- nodes `keep` says yes to are written (restrictions and hidden frames; keep[k] is the model's
-- node to name it by), so that B and E still pair up.
local function write_trace(m, sink, keep)
  local n, cols = trace_columns(m)
  local event, thread, node, time = cols.event, cols.thread, cols.node, cols.time
  local frame = m.frame
  -- First pass: per thread, the returns whose calls were overwritten (outermost last), the
  -- frames still open at the end, its first time and first frame; and the last time.  Nodes
  -- are the data's own (m.origin's), so that a message names the node of the file.
  local open, before, first_t, first_k, last_t, tids = {}, {}, {}, {}, 0, {}
  for i = 1, n do
    local th, x = thread[i], node[i]
    if keep[x] then
      local st = open[th]
      if not st then
        st = {}
        open[th], before[th], first_t[th], first_k[th] = st, {}, time[i], keep[x]
        tids[#tids + 1] = th
      end
      if event[i] == 0 then
        st[#st + 1] = x
      elseif #st == 0 then
        before[th][#before[th] + 1] = x
      elseif st[#st] ~= x then
        fail("the trace's event %d returns from node %d but node %d is the one open in thread %d",
          i, x, st[#st], th)
      else
        st[#st] = nil
      end
      if time[i] > last_t then last_t = time[i] end
    end
  end
  table.sort(tids)
  local B, E = heads(m, "B"), heads(m, "E")
  local w = export.buffer(sink)
  -- the last time written in each thread, in 1/1024 µs: the next one is at least one later
  local at = {}
  local function put(head, x, th, t)
    local q = floor(t * 1.024e9 + 0.5)
    if at[th] and q <= at[th] then q = at[th] + 1 end
    at[th] = q
    w.put("," .. head[frame[keep[x]]] .. sformat(',"tid":%d,"ts":', th) .. micros(q) .. "}")
  end
  process_name(w, "cprof: trace", command_of(m))
  for _, th in ipairs(tids) do
    local b = before[th]
    local body = #b > 0 and keep[b[#b]] or first_k[th]
    thread_name(w, th, th == 1 and "main" or sformat("coroutine %d %s", th, m:name(frame[body])))
  end
  local calls = 0
  for _, th in ipairs(tids) do
    local b = before[th]
    for j = #b, 1, -1 do put(B, b[j], th, first_t[th]) end
    calls = calls + #b
  end
  for i = 1, n do
    local x = node[i]
    if keep[x] then
      local ev = event[i]
      put(ev == 0 and B or E, x, thread[i], time[i])
      calls = calls + 1 - ev
    end
  end
  for _, th in ipairs(tids) do
    local st = open[th]
    for j = #st, 1, -1 do put(E, st[j], th, last_t) end
  end
  w.put('],"displayTimeUnit":"ms","otherData":{"exporter":"cprof","cprof":"trace"'
    .. ',"command":' .. encode(command_of(m))
    .. sformat(',"trace_size":%d,"trace_dropped":%d,"start_time":%.6f}}\n',
      tonumber(m.meta.trace_size) or 0, tonumber(m.meta.trace_dropped) or 0,
      tonumber(m.meta.start_time) or 0))
  w.flush()
  return { format = "chrome", events = 2 * calls, calls = calls, trace = true }
end

function M.write(m, sink, opts)
  m:need_tree("chrome")
  if m.d.trace ~= nil then return write_trace(m, sink, m:kept(opts.patterns)) end
  local ns = m:integers("time", m:restrict(m:weight("time"), opts.patterns))
  local incl = m:inclusive(ns)
  local kids = m:children(incl)
  local first, child = kids.first, kids.child
  local thread, names = m:threads()
  local frame = m.frame

  local start = { [0] = 0 }
  for p = 0, m.n do
    local pos = start[p]
    for i = first[p], first[p + 1] - 1 do
      local c = child[i]
      start[c] = pos
      pos = pos + incl[c]
    end
  end

  local head = heads(m, "X")

  local w = export.buffer(sink)
  local command = command_of(m)
  process_name(w, "cprof: aggregated call tree (not a trace)", command)
  for t, name in ipairs(names) do thread_name(w, t, name) end
  local events = 0
  for k = 1, m.n do
    if incl[k] > 0 then
      events = events + 1
      local q = ns_ticks(start[k])
      w.put("," .. head[frame[k]] .. sformat(',"tid":%d,"ts":', thread[k]) .. micros(q)
        .. ',"dur":' .. micros(ns_ticks(start[k] + incl[k]) - q) .. "}")
    end
  end
  w.put('],"displayTimeUnit":"ms","otherData":{"exporter":"cprof","cprof":' .. encode(LAYOUT)
    .. ',"command":' .. encode(command)
    .. sformat(',"total_time":%.9g,"start_time":%.6f}}\n', tonumber(m.meta.total_time) or 0,
      tonumber(m.meta.start_time) or 0))
  w.flush()
  return { format = "chrome", events = events }
end

return M
