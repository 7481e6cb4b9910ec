--- cprof.export.htmldata: what the HTML report shows, as one document of plain tables, which
--- cprof.export.html writes into the page as JSON and lua/cprof/export/html/report.js draws.
--
--   htmldata.document(m, opts, weight, base)   a profile's document (base: a model to compare)
--   htmldata.series(list, opts)                the memory series of several dumps' summaries
--
-- The numbers come from the code that prints them: the table, callers and callees from the
-- Stats rows of cprof.report.rows (what cprof-stats prints), line hits and the source text from
-- cprof.report.lines, leaks from cprof.report.memctx, the diff's rows from cprof.report.diff,
-- the call tree's values from cprof.export.model's weights (time in whole nanoseconds, as
-- speedscope gets them), the colours and a diff's changes from cprof.export.palette.  Weights
-- are listed by name, each node's values under it: another weight (samples) is one more entry.
-- Every text shown is a name through sanitize.display; frames, nodes, files and colours are
-- numbered from 0, as the page counts.

local _ENV = require("cprof.env")()

local M = {}

local model_mod = require("cprof.export.model")
local palette = require("cprof.export.palette")
local sanitize = require("cprof.sanitize")
local funckey = require("cprof.funckey")
local cjson = require("cjson")

local type, ipairs, pairs, next, tostring, tonumber = type, ipairs, pairs, next, tostring, tonumber
local sformat, concat, sort, sgsub, ssplit = string.format, table.concat, table.sort, string.gsub,
  string.gmatch
local display = sanitize.display

local NULL = cjson.null

local function text(s) return display(tostring(s)) end

-- A list of distinct strings and the function that gives a string's number in it (from 0).
local function interner()
  local list, index = {}, {}
  return list, function(s)
    local i = index[s]
    if not i then
      i = #list
      list[i + 1], index[s] = s, i
    end
    return i
  end
end

-- Everything printed into one string: a report printer's `out` made a string.
local function printed(print_with)
  local parts = {}
  print_with(function(s) parts[#parts + 1] = s end)
  return concat(parts)
end

---------------------------------------------------------------------------
-- The call tree

-- The weights this profile has, in model.WEIGHT_NAMES' order.
local function weight_names(m)
  local out = {}
  for _, name in ipairs(model_mod.WEIGHT_NAMES) do
    if not model_mod.WEIGHTS[name].memory or m:has_memory() then out[#out + 1] = name end
  end
  return out
end

local function frames_doc(m, row_of, color)
  local F = m.F
  local files, file = interner()
  local out = { short = {}, fn = {}, label = {}, file = {}, line = {}, color = {}, row = {} }
  for f = 1, F.n do
    local short, full = m:name(f), text(F.name[f])
    local shown = display(short)
    out.short[f] = shown
    -- what a search matches: the function's name, where the short name adds a line or a file
    out.fn[f] = full ~= shown and full or NULL
    out.label[f] = display(m:label(f))
    if F.kind[f] == "C" then
      out.file[f], out.line[f] = -1, 0
    else
      out.file[f], out.line[f] = file(text(F.file[f])), F.line[f]
    end
    out.color[f] = color(palette.frame(F.kind[f], F.file[f], short))
    out.row[f] = row_of[m:label(f)] or -1
  end
  return out, files
end

local function tree_doc(m, names, patterns)
  local parent, frame, self, units = {}, {}, {}, {}
  for k = 1, m.n do
    parent[k], frame[k] = m.parent[k], m.frame[k] - 1
  end
  for _, name in ipairs(names) do
    self[name], units[name] = m:integers(name, m:restrict(m:weight(name), patterns))
  end
  return { parent = parent, frame = frame, self = self }, units
end

-- A differential graph's numbers per weight that both profiles have: each node's base value
-- (null: a path the base lacks), its change in points of the total and its colour (as
-- palette.change gives it with no threshold: the page leaves the changes under its threshold
-- neutral, as palette.change does).
local function diff_doc(m, base, opts, names, color)
  local doc = { weights = {}, neutral = palette.change(0, 1, 0) }
  for _, name in ipairs(names) do
    if not model_mod.WEIGHTS[name].memory or base:has_memory() then
      local incl = m:inclusive(m:restrict(m:weight(name), opts.patterns))
      local D = palette.compare(m, base, incl, name, opts, "html")
      local was, pct, fill = {}, {}, {}
      for k = 1, m.n do
        local j = D.to_base[k]
        local v = j and D.binc[j]
        if v and name == "time" then v = model_mod.nanoseconds(v) end
        was[k] = v or NULL
        pct[k] = tonumber(sformat("%.6g", D.pct[k]))
        fill[k] = color(palette.change(D.pct[k], D.max, 0))
      end
      doc.weights[name] = { base = was, pct = pct, fill = fill }
      doc.threshold, doc.normalize, doc.base_only = D.threshold, D.normalize, D.base_only
    end
  end
  return doc
end

---------------------------------------------------------------------------
-- The table of functions

-- An edge of a callers or callees dict: { row (or the name when no row has it), ncalls,
-- pcalls, tottime, cumtime } (a profile.py edge has its count only).
local function edges_doc(list, index)
  local out = {}
  for i, e in ipairs(list) do
    out[i] = { index[e.key] or text(e.stdname), e.ncalls, e.pcalls or NULL, e.tottime or NULL,
               e.cumtime or NULL }
  end
  return out
end

local PSTATS_COLUMNS = {
  { label = "ncalls", fmt = "calls", v = 0, pc = 1, title = "calls; calls/primitive calls where recursion made more" },
  { label = "tottime", fmt = "s", v = 2, title = "seconds in the function itself" },
  { label = "percall", fmt = "s", v = 2, per = 0, title = "tottime per call" },
  { label = "cumtime", fmt = "s", v = 3, title = "seconds in the function and the functions it called" },
  { label = "percall", fmt = "s", v = 3, per = 1, title = "cumtime per primitive call" },
}
local MEMORY_COLUMNS = {
  { label = "allocs", v = 4, title = "allocations" }, { label = "bytes", v = 5, title = "bytes allocated" },
  { label = "frees", v = 6 }, { label = "live bytes", v = 7, title = "bytes still live when the profile was written" },
  { label = "min", v = 8, blank = 4, title = "the smallest allocation" },
  { label = "max", v = 9, blank = 4, title = "the largest allocation" },
}

-- The pstats table (cprof-stats' columns; with memory, cprof-stats --memory's too).
local function stats_table(st)
  local t = st:report_table({ callers = true, callees = true })
  local index = {}
  for i, r in ipairs(t.rows) do index[r.key] = i - 1 end
  local doc = { columns = {}, rows = {}, names = {}, callers = {}, callees = {}, sort = 3 }
  for _, c in ipairs(PSTATS_COLUMNS) do doc.columns[#doc.columns + 1] = c end
  if st.memory then
    for _, c in ipairs(MEMORY_COLUMNS) do doc.columns[#doc.columns + 1] = c end
  end
  for i, r in ipairs(t.rows) do
    local row = { r.ncalls, r.pcalls, r.tottime, r.cumtime }
    if st.memory then
      for _, c in ipairs({ "alloc_count", "alloc_bytes", "free_count", "live_bytes", "min_size", "max_size" }) do
        row[#row + 1] = r[c]
      end
    end
    doc.rows[i], doc.names[i] = row, text(r.stdname)
    doc.callers[i], doc.callees[i] = edges_doc(r.callers, index), edges_doc(r.callees, index)
  end
  return doc, t.rows
end

local DIFF_COLUMNS = {
  { label = "ncalls", fmt = "n", v = 0, title = "calls in this profile" },
  { label = "base", fmt = "n", v = 1, title = "calls in the base" },
  { label = "change", fmt = "dn", v = 2, signed = true },
  { label = "tottime", fmt = "s", v = 3, title = "seconds in the function itself, in this profile" },
  { label = "base", fmt = "s", v = 4, title = "tottime in the base" },
  { label = "change", fmt = "ds", v = 5, signed = true },
  { label = "%", fmt = "pct", v = 6, signed = true, title = "the change in percent of the base's tottime" },
  { label = "cumtime", fmt = "s", v = 7, title = "seconds in the function and its callees, in this profile" },
  { label = "base", fmt = "s", v = 8, title = "cumtime in the base" },
  { label = "change", fmt = "ds", v = 9, signed = true },
  { label = "%", fmt = "pct", v = 10, signed = true, title = "the change in percent of the base's cumtime" },
}

-- A change in percent of the base's value, as cprof-stats --diff gives it (null: "new").
local function percent(d, was)
  if was == nil or was == 0 then return d == 0 and 0 or NULL end
  return 100 * d / was
end

-- cprof-stats --diff's rows, with the callers and callees this profile has.
local function diff_table(st, bst)
  local rows = require("cprof.report.diff").rows(st, bst)
  local own = st:report_table({ callers = true, callees = true }).rows
  local index, edges = {}, {}
  for i, r in ipairs(rows) do index[r.key] = i - 1 end
  for _, r in ipairs(own) do edges[r.key] = r end
  local doc = { columns = DIFF_COLUMNS, rows = {}, names = {}, callers = {}, callees = {}, sort = 5 }
  for i, r in ipairs(rows) do
    local a, b = r.new or {}, r.base or {}
    doc.rows[i] = { a.ncalls or NULL, b.ncalls or NULL, r.d_ncalls, a.tottime or NULL, b.tottime or NULL,
      r.d_tottime, percent(r.d_tottime, b.tottime), a.cumtime or NULL, b.cumtime or NULL, r.d_cumtime,
      percent(r.d_cumtime, b.cumtime) }
    doc.names[i] = text(r.name)
    local e = edges[r.key]
    doc.callers[i] = e and edges_doc(e.callers, index) or {}
    doc.callees[i] = e and edges_doc(e.callees, index) or {}
  end
  return doc, rows
end

---------------------------------------------------------------------------
-- Lines and sources

-- A source line as shown: its tabs kept (the page sets their width), the rest as labels are.
local function source_text(line)
  local parts = {}
  for piece in ssplit(line .. "\t", "([^\t]*)\t") do parts[#parts + 1] = display(piece) end
  return concat(parts, "\t")
end

-- The files of the functions with line records, the hottest first: each with its text read
-- now, and its functions, each { row, first line, last line, its records { line, hits, time }
-- } (what cprof-stats --lines prints for it; the page sums them per line for the whole file).
local function lines_doc(st, keys)
  local lines_mod = require("cprof.report.lines")
  local files, list = {}, {}
  for i, key in ipairs(keys) do
    local lines = st.lines[key]
    if lines and next(lines) ~= nil then
      local name = key[1]
      local f = files[name]
      if not f then
        f = { funcs = {}, time = 0, key = name }
        files[name] = f
        list[#list + 1] = f
      end
      local nums, records = {}, {}
      for l in pairs(lines) do nums[#nums + 1] = l end
      sort(nums)
      for j, l in ipairs(nums) do
        records[j] = { l, lines[l].hits, lines[l].time }
        f.time = f.time + lines[l].time
      end
      local first, last = lines_mod.span(st, key, nums)
      f.funcs[#f.funcs + 1] = { i - 1, first, last, records }
    end
  end
  sort(list, function(a, b)
    if a.time ~= b.time then return a.time > b.time end
    return tostring(a.key) < tostring(b.key)
  end)
  local out = {}
  for i, f in ipairs(list) do
    local src, err = lines_mod.source_lines(f.key), NULL
    local shown = NULL
    if src then
      shown = {}
      for j, line in ipairs(src) do shown[j] = source_text(line) end
    else
      err = sformat("%s could not be read when this report was made: its lines are shown without"
        .. " their text.", text(f.key))
    end
    out[i] = { name = text(f.key), funcs = f.funcs, text = shown, error = err }
  end
  return { files = out }
end

---------------------------------------------------------------------------
-- Memory

local function memory_doc(m, st, patterns)
  local doc = { totals = require("cprof.report.memory").totals_line(st), leaks = {} }
  if m:has_memory() and m.n > 0 then
    local memctx = require("cprof.report.memctx")
    local rows, _, raw_only, raw_bytes = memctx.leak_rows(m, patterns)
    local leaks = {}
    for i, r in ipairs(rows) do
      leaks[i] = { r.k, r.blocks, r.bytes, m.N.alloc_count[r.k], m.N.free_count[r.k], r.types }
    end
    doc.leaks = leaks
    if raw_only > 0 then doc.raw = memctx.raw_note(raw_only, raw_bytes) end
  end
  if st.allocator then
    doc.allocator = printed(function(out) require("cprof.report.memory").print_allocator(st, out) end)
  end
  return doc
end

---------------------------------------------------------------------------
-- The document

-- The lines cprof-stats prints above its table (totals, calibration, what was lost), as notes.
local function notes(st)
  local head = printed(function(out) require("cprof.report.text").print_stats(st, out, { n = 1, 0 }) end)
  local out = {}
  for line in ssplit(head, "[^\n]+") do
    local s = sgsub(sgsub(line, "^%s+", ""), "^cprof: ", "")
    out[#out + 1] = text(s)
  end
  return out
end

local function subtitle(m, opts, weight_label, base)
  local meta, sub = m.meta, {}
  if type(meta.lua_version) == "string" then sub[#sub + 1] = text(meta.lua_version) end
  if type(meta.timer) == "string" then sub[#sub + 1] = "timer " .. text(meta.timer) end
  if type(meta.start_time) == "number" then
    sub[#sub + 1] = "started " .. require("cprof.pyfmt").ctime(meta.start_time)
  end
  if #opts.patterns > 0 then sub[#sub + 1] = "only paths through " .. text(concat(opts.patterns, " or ")) end
  if opts.hide and #opts.hide > 0 then sub[#sub + 1] = "hidden: " .. text(concat(opts.hide, ", ")) end
  if base then
    local command = tostring(base.meta.command or "")
    sub[#sub + 1] = "compared with " .. (command ~= "" and text(command) or "the base")
  end
  return sub
end

--- The document of model `m` (opts: title, icicle, patterns, hide, threshold, normalize; weight:
--- the one drawn first; base: a model to compare with, or nil).
function M.document(m, opts, weight, base)
  local stats = require("cprof.stats")
  local st = stats.new(m.d)
  local colors, color = interner()
  local doc = { version = 1, weight = weight, icicle = opts.icicle == true, merged = palette.MERGED }
  local command = tostring(m.meta.command or "")
  doc.title = text(opts.title or ((base and "Differential profile" or "Profile")
    .. (command ~= "" and ": " .. command or "")))
  doc.subtitle = subtitle(m, opts, weight, base)
  doc.notes = notes(st)

  local keys, row_rows = {}, nil
  if base then
    doc.table, row_rows = diff_table(st, stats.new(base.d))
  else
    doc.table, row_rows = stats_table(st)
  end
  local row_of = {}
  for i, r in ipairs(row_rows) do
    keys[i] = r.key
    row_of[funckey.func_std_string(r.key)] = i - 1
  end
  doc.frames, doc.files = frames_doc(m, row_of, color)

  local names = weight_names(m)
  doc.weights = {}
  if m:has_tree() then
    local units
    doc.tree, units = tree_doc(m, names, opts.patterns)
    for i, name in ipairs(names) do
      doc.weights[i] = { name = name, label = model_mod.WEIGHTS[name].label, unit = units[name] }
    end
    if base then doc.diff = diff_doc(m, base, opts, names, color) end
  else
    doc.no_tree = m.no_tree and text(m.no_tree) or "the profile has no call tree"
  end
  if doc.diff then
    doc.legend = { { palette.change(1, 1, 0), "grew" }, { palette.change(-1, 1, 0), "shrank" },
                   { doc.diff.neutral, "changed by less than the threshold" } }
  else
    doc.legend = palette.LEGEND
  end
  if st:has_lines() then doc.lines = lines_doc(st, keys) end
  if m:has_memory() or st.memory then doc.memory = memory_doc(m, st, opts.patterns) end
  doc.colors = colors
  return doc
end

--- The document of a memory series: `list` as cprof.report.summary.read gives them.
function M.series(list, opts)
  local summary = require("cprof.report.summary")
  local files, columns = {}, {}
  for i, s in ipairs(list) do files[i] = text(s.file) end
  local charted = {}
  for _, c in ipairs(summary.CHARTED) do charted[c] = true end
  for i, c in ipairs(summary.COLUMNS) do
    local values = {}
    for j, s in ipairs(list) do values[j] = c[2](s) or NULL end
    columns[i] = { name = c[1], values = values, chart = charted[i] == true }
  end
  return { version = 1, title = text(opts.title or ("Memory over " .. #list .. " dumps")), weights = {},
           subtitle = {}, notes = {},
           frames = { label = {}, short = {}, fn = {}, file = {}, line = {}, color = {}, row = {} },
           series = { files = files, columns = columns,
                      colors = summary.COLORS } }
end

return M
