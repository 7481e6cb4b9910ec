-- The reader checks of the exports: every export of a dump written and opened in its real
-- reader, and what the reader shows compared with cprof-stats' own numbers.  The export specs
-- run them (spec/export_checks_spec.lua) and tools/check-exports.lua runs them on any dump.
--
--   local checks = require "spec.export_checks"
--   for _, r in ipairs(checks.run({ "a.prof", ... })) do print(r.dump, r.format, r.status, r.detail) end
--
-- r.status is "passed", "failed" or "skipped" (its reader is missing: make export-readers).
-- cprof's numbers are those of cprof.stats on the dump, as cprof-stats prints them, each
-- function under the name the format writes (bytes that are not UTF-8 as U+FFFD; functions
-- written under one name added up, as a reader that meets one name twice adds them):
--   pstats      python3's pstats reads it (strings decoded strictly): every function's ncalls,
--               pcalls, tottime, cumtime and callers, and the totals
--   callgrind   callgrind_annotate: self cost is tottime, inclusive cost cumtime; the total
--   pprof       go tool pprof -top: flat is tottime, cum cumtime
--   speedscope  strict JSON, speedscope's file-format schema, and speedscope's own importer (in
--               Chromium, what its Export writes of what it imported): self is tottime, total
--               cumtime, and its importer warns of nothing
--   folded      strict UTF-8, and speedscope's importer: the same
--   chrome      strict JSON, and speedscope's importer: the same, no warning (an event out of
--               its nest makes one); for a trace, the times of its own events
--   svg         strict UTF-8 XML (python3's parser)
-- A cumtime is compared where a view of call paths can show it: not for a function in a cycle
-- of two or more functions (the engine folds the inner calls into the outer node:
-- docs/EXPORTS.md, "Recursion"), nor, in the formats with one profile per coroutine
-- (speedscope, chrome), for a function that runs a coroutine (that time is in the
-- coroutine's profile).  Times agree within what rounding each node's time to a nanosecond
-- can make: a nanosecond for each node of the function and below.
local S = require "spec.support"
local X = require "spec.export_support"
local cjson = require "cjson"
local export = require "cprof.export"
local stats_mod = require "cprof.stats"
local funckey = require "cprof.funckey"
local to_utf8 = require("cprof.sanitize").utf8

local M = {}

M.FORMATS = export.FORMATS
local SUFFIX = { svg = ".svg", folded = ".folded", pstats = ".pstats", callgrind = ".callgrind",
                 speedscope = ".speedscope.json", pprof = ".pb.gz", chrome = ".trace.json",
                 html = ".html" }

-------------------------------------------------------------------------------------------------
-- The readers' command lines

-- python3 FILE MODE PATH: "pstats" prints the stats dict and totals as JSON; "json", "utf8" and
-- "xml" parse the file strictly and print "ok".
local PYTHON = [==[
import json, sys
mode, path = sys.argv[1], sys.argv[2]
if mode == "pstats":
    import pstats
    st = pstats.Stats(path)
    rows = [[k[0], k[1], k[2], v[0], v[1], v[2], v[3],
             [[c[0], c[1], c[2], e[0], e[1], e[2], e[3]] for c, e in v[4].items()]]
            for k, v in st.stats.items()]
    doc = {"total_calls": st.total_calls, "prim_calls": st.prim_calls, "total_tt": st.total_tt,
           "rows": rows}
    sys.stdout.buffer.write(json.dumps(doc, ensure_ascii=False).encode("utf-8"))
else:
    text = open(path, "rb").read().decode("utf-8", "strict")
    if mode == "json":
        json.loads(text)
    elif mode == "xml":
        import xml.etree.ElementTree as ET
        ET.fromstring(text.encode("utf-8"))
    print("ok")
]==]

-- speedscope's file-format schema checked by ajv: one line per file, "valid" or "invalid ...".
M.SCHEMA_CHECK = [[
const path = require('path'), fs = require('fs');
const Ajv = require(path.join(process.argv[2], 'node_modules', 'ajv'));
const schema = JSON.parse(fs.readFileSync(path.join(process.argv[2],
  'node_modules', 'speedscope', 'dist', 'release', 'file-format-schema.json'), 'utf8'));
const validate = new Ajv({ allErrors: true, strict: false }).compile(schema);
for (const f of process.argv.slice(3)) {
  const ok = validate(JSON.parse(fs.readFileSync(f, 'utf8')));
  console.log(ok ? 'valid' : 'invalid ' + JSON.stringify(validate.errors));
}
]]

local function script(name, text)
  local path = S.tmpname(name)
  S.write_file(path, text)
  return path
end

--- Runs the Python helper above; its output, or an error.
local function python(mode, path)
  local py = assert(X.reader("python3"))
  local file = script(".py", PYTHON)
  local out, err, status = X.run(py .. " " .. S.q(file) .. " " .. mode .. " " .. S.q(path))
  os.remove(file)
  -- the last line of Python's traceback says what is wrong
  if status ~= 0 then error(("python3 %s: %s"):format(mode, err:gsub("%s+$", ""):match("[^\n]*$")), 0) end
  return out
end

--- speedscope's schema on `files`: "valid" or "invalid ..." for each, in order.
function M.schema(files)
  local file = script(".js", M.SCHEMA_CHECK)
  local cmd = "node " .. S.q(file) .. " " .. S.q(S.absolute(X.READERS))
  for _, f in ipairs(files) do cmd = cmd .. " " .. S.q(f) end
  local out, err, status = X.run(cmd)
  os.remove(file)
  assert(status == 0, "ajv: " .. tostring(err))
  local lines = {}
  for line in out:gmatch("[^\n]+") do lines[#lines + 1] = line end
  return lines
end

--- callgrind_annotate's table of functions: { ["file:function"] = { costs... } } and the
--- program's totals; or nil and why it is missing.
function M.annotate(path, inclusive)
  local cmd, why = X.reader("callgrind_annotate")
  if not cmd then return nil, why end
  local out, err, status = X.run(cmd .. " --threshold=100 --auto=no --inclusive="
    .. (inclusive and "yes" or "no") .. " " .. S.q(path))
  assert(status == 0, err)
  local rows, totals = {}, nil
  for line in out:gmatch("[^\n]+") do
    local nums, name = line:match("^([%d,%s%(%)%.%%]+)  (%S.*)$")
    if nums then
      local costs = {}
      -- "." is a cost of 0
      for n in nums:gsub("%b()", ""):gmatch("[%d,.]+") do costs[#costs + 1] = tonumber((n:gsub(",", ""))) or 0 end
      if name == "PROGRAM TOTALS" then totals = costs else rows[name] = costs end
    end
  end
  return rows, totals
end

--- go tool pprof -top: { [function] = { flat, cum } } in the unit asked for (the rows of one
--- name added), and its whole output; or nil and why it is missing.
function M.pprof_top(path, args)
  local go, why = X.reader("go")
  if not go then return nil, why end
  local out, err, status = X.run(go .. " tool pprof -top -nodefraction=0 -edgefraction=0 -nodecount=1000000 "
    .. args .. " " .. S.q(path))
  assert(status == 0, err)
  local rows = {}
  -- flat flat% sum% cum cum% name; a value has its unit after it, a share may be 2.6e-05%
  local num = "([%d.]+)%a*"
  local share = "%s+[%d.e+-]+%%"
  for line in out:gmatch("[^\n]+") do
    local flat, cum, name = line:match("^%s*" .. num .. share .. share .. "%s+" .. num .. share .. "%s%s(.+)$")
    if flat then
      -- two functions of one name (chunks with the same chunk name) may be two rows
      local r = rows[name] or { 0, 0 }
      rows[name] = { r[1] + tonumber(flat), r[2] + tonumber(cum) }
    end
  end
  return rows, out
end

-------------------------------------------------------------------------------------------------
-- cprof's numbers

-- pstats' func_std_string of a key as the exports write it.
local function written_label(file, line, name)
  return funckey.func_std_string(funckey.func_key(to_utf8(tostring(file)), line, to_utf8(tostring(name))))
end

local function add_row(rows, label, r)
  local old = rows[label]
  if not old then
    old = { 0, 0, 0, 0, callers = {} }
    rows[label] = old
  end
  for i = 1, 4 do old[i] = old[i] + r[i] end
  return old
end

-- The frames in a cycle of two or more functions (a strongly connected component of the
-- graph of calls), found with Tarjan's algorithm, without recursion.
local function in_cycles(F, E)
  local out = {}
  for f = 1, F.n do out[f] = {} end
  for e = 1, E.n do
    local a, b = E.caller[e], E.callee[e]
    if E.ncalls[e] ~= 0 and a ~= b then out[a][#out[a] + 1] = b end
  end
  local index, low, on, stack, cyclic, n = {}, {}, {}, {}, {}, 0
  for root = 1, F.n do
    if not index[root] then
      local work = { { root, 1 } }
      n = n + 1
      index[root], low[root], on[root] = n, n, true
      stack[#stack + 1] = root
      while #work > 0 do
        local top = work[#work]
        local v, i = top[1], top[2]
        local w = out[v][i]
        if w then
          top[2] = i + 1
          if not index[w] then
            n = n + 1
            index[w], low[w], on[w] = n, n, true
            stack[#stack + 1] = w
            work[#work + 1] = { w, 1 }
          elseif on[w] and index[w] < low[v] then
            low[v] = index[w]
          end
        else
          work[#work] = nil
          if #work > 0 then
            local u = work[#work][1]
            if low[v] < low[u] then low[u] = low[v] end
          end
          if low[v] == index[v] then
            local size, members = 0, {}
            repeat
              local x = table.remove(stack)
              on[x] = nil
              size = size + 1
              members[size] = x
            until x == v
            if size > 1 then
              for _, x in ipairs(members) do cyclic[x] = true end
            end
          end
        end
      end
    end
  end
  return cyclic
end

--- cprof's numbers for `dump` (see the top of this file): c.st (its Stats), c.m (its export
--- model), c.rows (written label -> { pcalls, ncalls, tottime, cumtime, callers = { written
--- label -> { ncalls, pcalls, tottime, cumtime } } }), and per frame: c.row[f] (cprof-stats'
--- row, nil for a function that completed no call), c.cyclic[f], c.resumes[f] (runs a
--- coroutine), c.starts[f] (calls a coroutine's body: coroutine.resume, a coroutine.wrap
--- function), c.slack[f] and c.self_slack[f] (seconds of rounding its total and its self
--- time may differ by).
function M.cprof(dump)
  local st = stats_mod.new(dump)
  st:get_top_level_stats()
  local c = { st = st, rows = {}, row = {}, cyclic = {}, resumes = {}, starts = {}, slack = {},
              self_slack = {} }
  local by_label = {}
  for _, key in ipairs(st.order) do
    local r = st.stats[key]
    by_label[funckey.func_std_string(key)] = r
    local row = add_row(c.rows, written_label(key[1], key[2], key[3]), r)
    for ck, e in pairs(r[5]) do add_row(row.callers, written_label(ck[1], ck[2], ck[3]), e) end
  end
  local m = export.model(dump)
  c.m = m
  local F = m.F
  for f = 1, F.n do c.row[f] = by_label[m:label(f)] end
  c.cyclic = in_cycles(F, m.d.edges)
  -- nodes below each node (itself included), and the frames that run a coroutine: those on
  -- the path to a coroutine's body
  local size, parent, frame = {}, m.parent, m.frame
  for k = 1, m.n do size[k] = 1 end
  for k = m.n, 1, -1 do
    local p = parent[k]
    if p > 0 then size[p] = size[p] + size[k] end
  end
  local _, _, top = m:threads()
  local runs = {}
  for k = 1, m.n do
    if top[k] then
      local p = parent[k]
      if p > 0 then c.starts[frame[p]] = true end
      while p > 0 and not runs[p] do
        runs[p] = true
        p = parent[p]
      end
    end
  end
  for f = 1, F.n do c.slack[f], c.self_slack[f] = 2e-9, 2e-9 end
  for k = 1, m.n do
    local f = frame[k]
    c.slack[f] = c.slack[f] + 2e-9 * size[k]
    c.self_slack[f] = c.self_slack[f] + 2e-9
    if runs[k] then c.resumes[f] = true end
  end
  local E = m.d.edges
  for e = 1, E.n do
    local f = E.caller[e]
    c.slack[f] = c.slack[f] + 1e-9
  end
  return c
end

-------------------------------------------------------------------------------------------------
-- Comparing

local function close(a, b, slack)
  return math.abs(a - b) <= slack + 1e-9 * math.max(math.abs(a), math.abs(b))
end

--- A list of problems, kept short: add(fmt, ...) one, text() the first few and how many
--- there were (nil for none).
function M.problems()
  local list, n = {}, 0
  return {
    add = function(fmt, ...)
      n = n + 1
      if n <= 3 then list[#list + 1] = fmt:format(...) end
    end,
    text = function()
      if n == 0 then return nil end
      return table.concat(list, "; ") .. (n > 3 and ("; and %d more"):format(n - 3) or "")
    end,
  }
end

-- cprof's numbers per name as a format writes it (name_of(f)): { self, total, slack,
-- self_slack, cyclic, resumes } with the rows of one label counted once.
local function by_name(c, name_of)
  local out, seen = {}, {}
  local m = c.m
  for f = 1, m.F.n do
    local name = name_of(f)
    local g = out[name]
    if not g then
      g = { self = 0, total = 0, slack = 0, self_slack = 0, functions = 0 }
      out[name] = g
    end
    local r = c.row[f]
    local label = m:label(f)
    if r and not seen[label] then
      seen[label] = true
      g.self, g.total, g.functions = g.self + r[3], g.total + r[4], g.functions + 1
    end
    g.slack, g.self_slack = g.slack + c.slack[f], g.self_slack + c.self_slack[f]
    g.cyclic = g.cyclic or c.cyclic[f]
    g.resumes = g.resumes or c.resumes[f]
    g.starts = g.starts or c.starts[f]
  end
  return out
end

-- Compares a reader's { [name] = { self = s, total = s } } (seconds) with cprof's: every
-- name it shows is cprof's, self times equal, totals where they can be (see the top).  `how`:
-- "threads" for one profile per coroutine, "spans" for one time line per coroutine (Chrome's:
-- there the call that starts a coroutine's body lasts while the body runs, in its own thread,
-- and its self time holds the body's).  Returns the number of names compared.
local function compare(c, shown, name_of, how, bad)
  local per_thread = how == "threads" or how == "spans"
  local want = by_name(c, name_of)
  local n = 0
  for name, got in pairs(shown) do
    if not want[name] then bad.add("%q is no function of the profile", name) end
  end
  for name, w in pairs(want) do
    local got = shown[name] or { self = 0, total = 0 }
    if w.functions > 0 then
      n = n + 1
      if not (how == "spans" and w.starts) and not close(got.self, w.self, w.self_slack) then
        bad.add("%s: self %.9f, cprof's tottime %.9f", name, got.self, w.self)
      end
      if not w.cyclic and not (per_thread and w.resumes) and not close(got.total, w.total, w.slack) then
        bad.add("%s: total %.9f, cprof's cumtime %.9f", name, got.total, w.total)
      end
    end
  end
  return n
end

-------------------------------------------------------------------------------------------------
-- The checks, one per format: check(c, path, browser) returns a detail text or raises an error
-- (a list of problems); browser(path) is what speedscope's importer made of a file.

local check = {}

function check.pstats(c, path)
  local doc = cjson.decode(python("pstats", path))
  local bad = M.problems()
  local st, seen = c.st, 0
  for _, r in ipairs(doc.rows) do
    local label = written_label(r[1], r[2], r[3])
    local want = c.rows[label]
    seen = seen + 1
    if not want then
      bad.add("%s is no function of the profile", label)
    else
      if r[4] ~= want[1] or r[5] ~= want[2] or not close(r[6], want[3], 1e-12) or not close(r[7], want[4], 1e-12) then
        bad.add("%s: %s/%s calls, %.9f, %.9f; cprof-stats %s/%s, %.9f, %.9f", label, r[5], r[4], r[6], r[7],
          want[2], want[1], want[3], want[4])
      end
      local ncallers = 0
      for _, e in ipairs(r[8]) do
        local cl = written_label(e[1], e[2], e[3])
        local we = want.callers[cl]
        ncallers = ncallers + 1
        if not we or e[4] ~= we[1] or e[5] ~= we[2] or not close(e[6], we[3], 1e-12)
           or not close(e[7], we[4], 1e-12) then
          bad.add("%s: its caller %s differs", label, cl)
        end
      end
      local nwant = 0
      for _ in pairs(want.callers) do nwant = nwant + 1 end
      if nwant ~= ncallers then bad.add("%s: %d callers, cprof-stats %d", label, ncallers, nwant) end
    end
  end
  local nrows = 0
  for _ in pairs(c.rows) do nrows = nrows + 1 end
  if seen ~= nrows then bad.add("%d functions, cprof-stats %d", seen, nrows) end
  if doc.total_calls ~= st.total_calls or doc.prim_calls ~= st.prim_calls or not close(doc.total_tt, st.total_tt, 1e-12) then
    bad.add("totals %s calls (%s primitive) in %.9f s, cprof-stats %s (%s) in %.9f s", doc.total_calls,
      doc.prim_calls, doc.total_tt, st.total_calls, st.prim_calls, st.total_tt)
  end
  if bad.text() then error(bad.text(), 0) end
  return ("python3 pstats: %d functions, %d calls, callers equal"):format(seen, doc.total_calls)
end

-- A name as callgrind writes it on one line.
local function one_line(s)
  return (to_utf8(tostring(s)):gsub("[\r\n]", " "))
end

function check.callgrind(c, path)
  local incl, totals = M.annotate(path, true)
  local self = M.annotate(path, false)
  local m, F = c.m, c.m.F
  local function name_of(f)
    local file = F.kind[f] == "C" and "[C]" or tostring(F.file[f])
    if file == "" then file = "???" end
    return one_line(file) .. ":" .. one_line(m:name(f))
  end
  local shown = {}
  for name, costs in pairs(incl) do
    shown[name] = { self = (self[name] or { 0 })[1] * 1e-9, total = costs[1] * 1e-9 }
  end
  local bad = M.problems()
  local n = compare(c, shown, name_of, nil, bad)
  if not totals or not close(totals[1] * 1e-9, c.st.total_tt, 1e-9 * F.n) then
    bad.add("total %s ns, cprof-stats %.9f s", tostring(totals and totals[1]), c.st.total_tt)
  end
  if bad.text() then error(bad.text(), 0) end
  return ("callgrind_annotate: %d functions"):format(n)
end

function check.pprof(c, path)
  local rows = assert(M.pprof_top(path, "-unit=ns"))
  local shown = {}
  for name, r in pairs(rows) do shown[name] = { self = r[1] * 1e-9, total = r[2] * 1e-9 } end
  local bad = M.problems()
  local n = compare(c, shown, function(f) return one_line(c.m:name(f)) end, nil, bad)
  if bad.text() then error(bad.text(), 0) end
  return ("go tool pprof -top: %d functions"):format(n)
end

local SECONDS = { nanoseconds = 1e-9, microseconds = 1e-6, none = 1e-9 }

--- What speedscope's importer said besides its usual lines (its version, the importer it
--- chose, how long it took): its warnings ("Tried to end ...", "... was still open ...").
function M.warnings(result)
  local out = {}
  for _, line in ipairs(result.log) do
    if not line:match("^speedscope v") and not line:match("^Importing as ") and not line:match("^import: ") then
      out[#out + 1] = line
    end
  end
  return out
end

--- speedscope's numbers of a file (a browser job's result with `save`): each name's self and
--- total time (seconds; folded values, without a unit, as nanoseconds) added up over its
--- profiles, and the number of profiles.
function M.speedscope_times(result)
  if result.error then error("speedscope: " .. result.error, 0) end
  local shown = {}
  for _, p in ipairs(result.saved) do
    local unit = assert(SECONDS[p.unit], "unit " .. tostring(p.unit))
    for name, v in pairs(p.frames) do
      local s = shown[name] or { self = 0, total = 0 }
      s.self, s.total = s.self + v.self * unit, s.total + v.total * unit
      shown[name] = s
    end
  end
  return shown, #result.saved
end

-- speedscope's numbers of a file, its warnings added to `bad`.
local function imported(result, bad)
  local shown, profiles = M.speedscope_times(result)
  for _, line in ipairs(M.warnings(result)) do bad.add("speedscope says: %s", line:sub(1, 200)) end
  return shown, profiles
end

function check.speedscope(c, path, browser)
  python("json", path)
  local valid = M.schema({ path })[1]
  local bad = M.problems()
  if valid ~= "valid" then bad.add("speedscope's schema: %s", valid:sub(1, 300)) end
  local shown, profiles = imported(browser(path), bad)
  local n = compare(c, shown, function(f) return c.m:name(f) end, "threads", bad)
  if bad.text() then error(bad.text(), 0) end
  return ("strict JSON, schema, speedscope: %d functions in %d profiles"):format(n, profiles)
end

function check.folded(c, path, browser)
  python("utf8", path)
  local bad = M.problems()
  local shown = imported(browser(path), bad)
  local m = c.m
  local n = compare(c, shown, function(f) return (to_utf8(m:label(f)):gsub("[;%z\1-\31\127]", " ")) end,
    nil, bad)
  if bad.text() then error(bad.text(), 0) end
  return ("strict UTF-8, speedscope: %d functions"):format(n)
end

--- Self and total time (seconds) of each name in a trace's B/E events (a decoded Chrome
--- trace), its total counted once however deep it is on its thread's stack; events out of
--- their nest are added to `bad` (M.problems()).
function M.trace_times(doc, bad)
  local shown, threads = {}, {}
  for _, e in ipairs(doc.traceEvents) do
    if e.ph == "B" or e.ph == "E" then
      local t = threads[e.tid]
      if not t then
        t = { stack = {}, depth = {}, since = {}, last = e.ts }
        threads[e.tid] = t
      end
      if e.ts < t.last then bad.add("event at %s before its thread's previous one", e.ts) end
      local stack = t.stack
      if #stack > 0 then
        local s = shown[stack[#stack]]
        s.self = s.self + (e.ts - t.last) * 1e-6
      end
      t.last = e.ts
      shown[e.name] = shown[e.name] or { self = 0, total = 0 }
      local d = t.depth[e.name] or 0
      if e.ph == "B" then
        stack[#stack + 1] = e.name
        if d == 0 then t.since[e.name] = e.ts end
        t.depth[e.name] = d + 1
      elseif stack[#stack] ~= e.name then
        bad.add("an E of %s where %s is open", e.name, tostring(stack[#stack]))
      else
        stack[#stack] = nil
        t.depth[e.name] = d - 1
        if d == 1 then shown[e.name].total = shown[e.name].total + (e.ts - t.since[e.name]) * 1e-6 end
      end
    end
  end
  return shown
end

function check.chrome(c, path, browser)
  python("json", path)
  local bad = M.problems()
  local shown, profiles = imported(browser(path), bad)
  local doc = cjson.decode(S.read_file(path))
  local n
  if doc.otherData.cprof == "trace" then
    -- a ring of the newest events: compared with the events themselves, not with cprof-stats
    local own = M.trace_times(doc, bad)
    n = 0
    for name, w in pairs(own) do
      n = n + 1
      local got = shown[name] or { self = 0, total = 0 }
      if not close(got.self, w.self, 1e-9) or not close(got.total, w.total, 1e-9) then
        bad.add("%s: speedscope %.9f/%.9f, the events %.9f/%.9f", name, got.self, got.total, w.self, w.total)
      end
    end
  else
    n = compare(c, shown, function(f) return c.m:name(f) end, "spans", bad)
  end
  if bad.text() then error(bad.text(), 0) end
  return ("strict JSON, speedscope: %d functions in %d profiles%s"):format(n, profiles,
    doc.otherData.cprof == "trace" and " (a trace: against its own events)" or "")
end

function check.svg(_, path)
  python("xml", path)
  return "strict UTF-8 XML"
end

-- The page's table against cprof-stats' rows: the same functions with the same calls.
function check.html(c, path)
  python("utf8", path)
  local doc = X.html_doc(S.read_file(path))
  local bad = M.problems()
  local rows, names, nrows, calls = doc.table.rows, doc.table.names, 0, 0
  for _ in pairs(c.rows) do nrows = nrows + 1 end
  if #rows ~= nrows then bad.add("%d rows, cprof-stats %d functions", #rows, nrows) end
  for i, r in ipairs(rows) do
    calls = calls + r[1]
    local want = c.rows[names[i]]
    if want and (r[1] ~= want[2] or r[2] ~= want[1]) then
      bad.add("%s: %s/%s calls, cprof-stats %s/%s", names[i], r[1], r[2], want[2], want[1])
    end
  end
  if calls ~= c.st.total_calls then bad.add("%d calls in all, cprof-stats %d", calls, c.st.total_calls) end
  if bad.text() then error(bad.text(), 0) end
  return ("strict UTF-8, its table: %d functions, %d calls"):format(#rows, calls)
end

-- The reader each format needs, and what it needs besides.
local READERS = { pstats = { "python3" }, callgrind = { "callgrind_annotate" }, pprof = { "go" },
                  speedscope = { "python3", "node", "chromium" }, folded = { "python3", "node", "chromium" },
                  chrome = { "python3", "node", "chromium" }, svg = { "python3" },
                  html = { "python3" } }
local IN_BROWSER = { speedscope = true, folded = true, chrome = true }

local function missing(format)
  for _, r in ipairs(READERS[format]) do
    local ok, why = X.reader(r)
    if not ok then return why end
  end
  return nil
end

-- The checks of one dump: every export written, speedscope's importer run once on the files
-- it reads, then each checked.
local function run_one(dump, done)
  local ok, c = pcall(M.cprof, dump)
  if not ok then
    done({ dump = dump, format = "cprof-stats", status = "failed", detail = tostring(c) })
    return
  end
  local dir = S.new_dir()
  local results, jobs, index = {}, {}, {}
  for i, format in ipairs(M.FORMATS) do
    local r = { dump = dump, format = format, path = dir .. "/export" .. SUFFIX[format] }
    results[i] = r
    local why = missing(format)
    local wrote, err = pcall(export.export, format, dump, r.path)
    if why then
      r.status, r.detail = "skipped", why
    elseif not wrote then
      r.status, r.detail = "failed", "the export: " .. tostring(err)
    elseif IN_BROWSER[format] then
      jobs[#jobs + 1] = { kind = "speedscope", file = r.path, save = true }
      index[r.path] = #jobs
    end
  end
  local bok, res = true, {}
  if #jobs > 0 then bok, res = pcall(X.browser, jobs) end
  local function browser(path)
    if not bok then error(res, 0) end
    return res[index[path]]
  end
  for _, r in ipairs(results) do
    if not r.status then
      local cok, detail = pcall(check[r.format], c, r.path, browser)
      r.status, r.detail = cok and "passed" or "failed", tostring(detail)
    end
    r.path = nil
    done(r)
  end
  S.remove_dir(dir)
end

--- Writes every export of each dump of `dumps` into a temporary folder and checks it (see
--- the top of this file); `report(result)`, when given, is called as each result is known.
--- Returns the results: { dump, format, status, detail }.
function M.run(dumps, report)
  local results = {}
  for _, dump in ipairs(dumps) do
    run_one(dump, function(r)
      results[#results + 1] = r
      if report then report(r) end
    end)
  end
  return results
end

return M
