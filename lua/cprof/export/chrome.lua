--- cprof.export.chrome: Chrome's Trace Event Format (Perfetto UI, chrome://tracing, speedscope;
--- SPEC.md §7e), as "X" (complete) events.
--
-- cprof keeps totals per call path, not the order of calls, so this is no trace: the call
-- tree is laid out on a synthetic time line.  Each node is one event, as long as all its
-- calls together (its inclusive time); a node's children follow one another from its start,
-- the largest first, and its own time fills the rest.  The file says so in its metadata: the
-- process is named "cprof: aggregated call tree (not a trace)", and otherData.cprof explains
-- the layout.  Coroutines (cprof.export.model's threads) get their own tid and a thread_name;
-- a coroutine's body starts where the coroutine.resume that runs it starts.  ts and dur are
-- microseconds; args hold the function's file and line only, so that viewers that tell
-- functions apart by name and args (speedscope) see one function where cprof sees one.

local M = {}

local export = require("cprof.export")
local cjson = require("cjson")

M.restricts = true
M.WEIGHTS = { time = true }
M.WEIGHTS_TEXT = "a trace is a time line"

local sformat, tostring, tonumber, ipairs = string.format, tostring, tonumber, ipairs
local encode = cjson.encode

local LAYOUT = "aggregated call tree on a synthetic time line, not a trace: each event is one"
  .. " call path, as long as all its calls together; children follow one another from their"
  .. " parent's start, largest first, and the parent's own time fills the rest"

function M.write(m, sink, opts)
  m:need_tree("chrome")
  local ns = m:integers("time", m:restrict(m:weight("time"), opts.patterns))
  local incl = m:inclusive(ns)
  local kids = m:children(incl)
  local first, child = kids.first, kids.child
  local thread, names = m:threads()
  local F, frame = m.F, m.frame

  local start = { [0] = 0 }
  for p = 0, m.n do
    local pos = start[p]
    for i = first[p], first[p + 1] - 1 do
      local c = child[i]
      start[c] = pos
      pos = pos + incl[c]
    end
  end

  local head = {}
  for f = 1, F.n do
    local kind = F.kind[f]
    local args = kind == "C" and "" or
      (',"args":{"file":' .. encode(tostring(F.file[f])) .. sformat(',"line":%d}', F.line[f]))
    head[f] = '{"name":' .. encode(m:name(f)) .. ',"cat":"' .. (kind == "C" and "C" or
      kind == "main" and "main" or "Lua") .. '","ph":"X","pid":1' .. args
  end

  local w = export.buffer(sink)
  local command = tostring(m.meta.command or "")
  w.put('{"traceEvents":[{"name":"process_name","ph":"M","pid":1,"tid":1,"args":{"name":'
    .. encode("cprof: aggregated call tree (not a trace)" .. (command ~= "" and ": " .. command or ""))
    .. "}}")
  for t, name in ipairs(names) do
    w.put(sformat(',{"name":"thread_name","ph":"M","pid":1,"tid":%d,"args":{"name":', t)
      .. encode(name) .. "}}")
  end
  local events = 0
  for k = 1, m.n do
    if incl[k] > 0 then
      events = events + 1
      w.put("," .. head[frame[k]] .. sformat(',"tid":%d,"ts":%.3f,"dur":%.3f}', thread[k],
        start[k] / 1000, incl[k] / 1000))
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
