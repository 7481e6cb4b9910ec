--- cprof.export.pprof: profile.proto, gzipped, as `go tool pprof`, Pyroscope and Parca read it
--- (github.com/google/pprof, proto/profile.proto; shared/reference/pstats/SPEC.md §7d).
--
-- Each node of the call tree is one sample: its call path as locations (leaf first) and its
-- own values, one per sample type: calls/count, time/nanoseconds, and on memory profiles
-- alloc/bytes, allocs/count, live/bytes.  pprof's flat column is then the self value and
-- its cum column the inclusive one, recursion included (pprof counts a function once per
-- stack).  The calls are the node's own calls, which pprof sums up the stack like any value:
-- in pprof, a calls "cum" is not a call count (a comment in the file says so).  The weight
-- picks the default sample type.  One location per function, at its line defined; the
-- profile's start and duration come from the dump; one mapping, with has_functions set, so
-- that pprof looks for no binary.

local _ENV = require("cprof.env")()

local M = {}

local export = require("cprof.export")
local binary = require("cprof.export.binary")

M.binary = true
M.restricts = true

local varint, gzip = binary.varint, binary.gzip
local floor, tostring, tonumber, ipairs, sgsub = math.floor, tostring, tonumber, ipairs, string.gsub
local to_utf8 = require("cprof.sanitize").utf8

-- Protobuf fields: a key (field number, wire type), then a varint or a length and bytes.
local function key(field, wire) return varint(field * 8 + wire) end
local function vfield(field, v) return key(field, 0) .. varint(v) end
local function bfield(field, bytes) return key(field, 2) .. varint(#bytes) .. bytes end

local SAMPLE_TYPES = {
  { weight = "calls", type = "calls", unit = "count" },
  { weight = "time", type = "time", unit = "nanoseconds" },
  { weight = "alloc", type = "alloc", unit = "bytes" },
  { weight = "allocs", type = "allocs", unit = "count" },
  { weight = "live", type = "live", unit = "bytes" },
}

local COMMENTS = {
  "cprof: a deterministic profile. Each sample is one call path of the call tree with its"
    .. " totals, not a statistical sample.",
  "calls: the calls of the path's last function; pprof adds them up the stack, so a cum"
    .. " of calls is not a number of calls.",
}

function M.write(m, sink, opts, weight)
  m:need_tree("pprof")
  local types = {}
  for _, t in ipairs(SAMPLE_TYPES) do
    if t.weight == "time" or t.weight == "calls" or m:has_memory() then types[#types + 1] = t end
  end
  m:weight(weight) -- a memory weight on a profile without memory says so here
  local values = {}
  for i, t in ipairs(types) do
    values[i] = m:integers(t.weight, m:restrict(m:weight(t.weight), opts.patterns))
  end
  local ntypes = #types

  -- protobuf strings are UTF-8: bytes of a name that are not become U+FFFD (cprof.sanitize);
  -- pprof's reports are one line per function: a line break in a name becomes a space
  local strings, nstrings, index = { "" }, 1, { [""] = 0 }
  local function str(s)
    s = sgsub(to_utf8(tostring(s)), "[\r\n]", " ")
    local i = index[s]
    if i then return i end
    nstrings = nstrings + 1
    strings[nstrings] = s
    index[s] = nstrings - 1
    return nstrings - 1
  end

  -- Protobuf pieces gather into large strings before the gzip layer sees them (its CRC costs
  -- per call), and the gzip blocks before the sink does.
  local out = export.buffer(sink)
  local gz = gzip(out.put)
  local raw = export.buffer(gz.write)
  local put = raw.put

  for _, t in ipairs(types) do put(bfield(1, vfield(1, str(t.type)) .. vfield(2, str(t.unit)))) end

  -- A node is a sample when one of its values is not 0; its path needs the locations of
  -- every function above it.
  local F, parent, frame = m.F, m.parent, m.frame
  local sampled, needed = {}, {}
  for k = 1, m.n do
    local any = false
    for i = 1, ntypes do any = any or values[i][k] ~= 0 end
    sampled[k], needed[k] = any, any
  end
  for k = m.n, 1, -1 do
    if needed[k] and parent[k] > 0 then needed[parent[k]] = true end
  end
  -- Location (and function) ids by how many nodes have the function, most first: the ids that
  -- fill the paths are then mostly one or two bytes long.
  local uses, order = {}, {}
  for k = 1, m.n do
    if needed[k] then
      local f = frame[k]
      if not uses[f] then
        uses[f] = 0
        order[#order + 1] = f
      end
      uses[f] = uses[f] + 1
    end
  end
  table.sort(order, function(a, b)
    if uses[a] ~= uses[b] then return uses[a] > uses[b] end
    return a < b
  end)
  local loc = {}
  for i, f in ipairs(order) do

    loc[f] = varint(i)
  end

  -- The varints of small numbers (lengths, most call counts), made once.
  local small = {}
  local function var(n)
    if n >= 16384 then return varint(n) end
    local v = small[n]
    if not v then
      v = varint(n)
      small[n] = v
    end
    return v
  end
  -- path[k]: node k's location ids, leaf first, as packed varints; kept only for nodes with
  -- children (parents come first).  Every string made here costs: a sample is one concat.
  local inner = {}
  for k = 1, m.n do inner[parent[k]] = true end
  local path = { [0] = "" }
  local samples = 0
  local v1, v2 = values[1], values[2]
  for k = 1, m.n do
    if needed[k] then
      local l, up = loc[frame[k]], path[parent[k]]
      if inner[k] then path[k] = l .. up end
      if sampled[k] then
        local a, b = var(v1[k]), var(v2[k])
        for i = 3, ntypes do b = b .. var(values[i][k]) end
        local lp, lv = var(#l + #up), var(#a + #b)
        put("\18" .. var(2 + #lp + #l + #up + #lv + #a + #b) .. "\10" .. lp .. l .. up .. "\18" .. lv
          .. a .. b)
        samples = samples + 1
      end
    end
  end
  path = nil

  local command = tostring(m.meta.command or "")
  local program = string.match(command, "^(%S+)") or "lua"
  put(bfield(3, vfield(1, 1) .. vfield(5, str(program)) .. vfield(7, 1)))
  for i, f in ipairs(order) do
    local line = F.kind[f] == "C" and 0 or F.line[f]
    put(bfield(4, vfield(1, i) .. vfield(2, 1) .. bfield(4, vfield(1, i) .. vfield(2, line))))
  end
  for i, f in ipairs(order) do
    local file = F.kind[f] == "C" and "[C]" or F.file[f]
    local line = F.kind[f] == "C" and 0 or F.line[f]
    -- the full name as system_name, but only where it is not the name: pprof takes a
    -- function whose two names are one for a C++ symbol left to demangle, and cuts what looks
    -- like its arguments and template parameters: "(<main chunk>)"
    local name, label = str(m:name(f)), str(m:label(f))
    put(bfield(5, vfield(1, i) .. vfield(2, name) .. (label ~= name and vfield(3, label) or "")
      .. vfield(4, str(file)) .. vfield(5, line)))
  end
  local start = tonumber(m.meta.start_time) or 0
  local total = tonumber(m.meta.total_time) or 0
  if start > 0 then put(vfield(9, floor(start * 1e9))) end
  if total > 0 then put(vfield(10, floor(total * 1e9 + 0.5))) end
  put(bfield(11, vfield(1, str("time")) .. vfield(2, str("nanoseconds"))))
  put(vfield(12, 1))
  for _, c in ipairs(COMMENTS) do put(vfield(13, str(c))) end
  if command ~= "" then put(vfield(13, str("command: " .. command))) end
  put(vfield(14, str(weight)))
  for i = 1, nstrings do put(bfield(6, strings[i])) end
  raw.flush()
  gz.close()
  out.flush()
  return { format = "pprof", samples = samples }
end

return M
