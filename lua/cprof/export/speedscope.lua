--- cprof.export.speedscope: speedscope's JSON file format
--- (https://www.speedscope.app/file-format-schema.json; SPEC.md §7c).
--
-- One "sampled" profile per thread the call tree separates: the main one, then one per
-- coroutine body (cprof.export.model's threads: the functions coroutine.resume and
-- coroutine.wrap's functions start), its stacks starting at the body.  Each node with a value
-- is one sample: its stack (frame indices, root first) and its self value as the weight, in
-- nanoseconds for time ("none" for calls and allocations, "bytes" for bytes).  speedscope's
-- Left Heavy and Sandwich views then show the same totals as cprof-stats.  JSON is UTF-8:
-- bytes of a name that are not become U+FFFD (cprof.sanitize).

local _ENV = require("cprof.env")()

local M = {}

local export = require("cprof.export")
local cjson = require("cjson")

M.restricts = true

local concat, sformat, tostring, ipairs = table.concat, string.format, tostring, ipairs
local encode = cjson.encode
local to_utf8 = require("cprof.sanitize").utf8

local UNITS = { time = "nanoseconds", calls = "none", alloc = "bytes", allocs = "none",
                live = "bytes" }

-- The strings of `items` joined by commas, a few thousand per write.
local function list(w, items)
  local n = #items
  for i = 1, n, 4096 do
    if i > 1 then w.put(",") end
    w.put(concat(items, ",", i, math.min(i + 4095, n)))
  end
end

function M.write(m, sink, opts, weight)
  m:need_tree("speedscope")
  local values = m:integers(weight, m:restrict(m:weight(weight), opts.patterns))
  local incl = m:inclusive(values)
  local thread, names, top = m:threads()
  local F, frame = m.F, m.frame

  local index, frames = {}, {}
  local samples, weights, totals = {}, {}, {}
  for t = 1, #names do samples[t], weights[t], totals[t] = {}, {}, 0 end
  local parts, start = {}, { [0] = 1 }
  m:walk(m:children(), function(k, depth)
    if incl[k] == 0 then return false end
    local f = frame[k]
    local i = index[f]
    if not i then
      i = #frames
      index[f] = i
      local fr = '{"name":' .. encode(m:name(f))
      if F.kind[f] ~= "C" then
        fr = fr .. ',"file":' .. encode(to_utf8(tostring(F.file[f]))) .. sformat(',"line":%d', F.line[f])
      end
      frames[i + 1] = fr .. "}"
    end
    parts[depth] = i
    start[depth] = top[k] and depth or start[depth - 1]
    local v = values[k]
    if v ~= 0 then
      local t = thread[k]
      local s = samples[t]
      s[#s + 1] = "[" .. concat(parts, ",", start[depth], depth) .. "]"
      local wt = weights[t]
      wt[#wt + 1] = sformat("%d", v)
      totals[t] = totals[t] + v
    end
  end)

  local w = export.buffer(sink)
  local command = to_utf8(tostring(m.meta.command or ""))
  w.put('{"$schema":"https://www.speedscope.app/file-format-schema.json","version":"0.0.1",'
    .. '"exporter":"cprof","name":' .. encode(command ~= "" and command or "cprof profile")
    .. ',"activeProfileIndex":0,"shared":{"frames":[')
  for i, fr in ipairs(frames) do
    if i > 1 then w.put(",") end
    w.put(fr)
  end
  w.put(']},"profiles":[')
  local written = 0
  for t = 1, #names do
    if t == 1 or #samples[t] > 0 then
      if written > 0 then w.put(",") end
      written = written + 1
      w.put('{"type":"sampled","name":' .. encode(names[t]) .. ',"unit":"' .. UNITS[weight]
        .. sformat('","startValue":0,"endValue":%d,"samples":[', totals[t]))
      list(w, samples[t])
      w.put('],"weights":[')
      list(w, weights[t])
      w.put("]}")
      samples[t], weights[t] = nil, nil
    end
  end
  w.put("]}\n")
  w.flush()
  return { format = "speedscope", profiles = written, frames = #frames }
end

return M
