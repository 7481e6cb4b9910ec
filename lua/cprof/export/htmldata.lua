--- cprof.export.htmldata: what the HTML report shows, as one document of plain tables, which
--- cprof.export.html writes into the page as JSON and lua/cprof/export/html/report.js draws.
--
--   htmldata.document(m, opts, weight, base)   a profile's document (base: a model to compare)
--   htmldata.series(list, opts)                the memory series of several dumps' summaries
--
-- The numbers come from the code that prints them: the table from the Stats rows of
-- cprof.report.rows and the callers and callees from the Stats in pstats' order (what
-- cprof-stats prints), line hits and the source text from
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
local sortkeys = require("cprof.sortkeys")
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
  -- fn and label hold only the frames that need them, by number: most frames' name is their
  -- short name, and their label their row's name
  local out = { short = {}, fn = {}, label = {}, file = {}, line = {}, color = {}, row = {} }
  for f = 1, F.n do
    local short, full = m:name(f), text(F.name[f])
    local shown = display(short)
    out.short[f] = shown
    -- what a search matches: the function's name, where the short name adds a line or a file
    if full ~= shown then out.fn[tostring(f - 1)] = full end
    if F.kind[f] == "C" then
      out.file[f], out.line[f] = -1, 0
    else
      out.file[f], out.line[f] = file(text(F.file[f])), F.line[f]
    end
    out.color[f] = color(palette.frame(F.kind[f], F.file[f], short))
    local row = row_of[m:label(f)]
    out.row[f] = row or -1
    if not row then out.label[tostring(f - 1)] = display(m:label(f)) end
  end
  return out, files
end

-- The nodes in the order of a walk of the tree, each node's children the largest first by the
-- values `self_w` (as m:children orders them: the page need not sort them for that weight), and
-- each node's number in that order.
local function walk_order(m, self_w)
  local order, index = {}, { [0] = 0 }
  m:walk(m:children(m:inclusive(self_w)), function(k)
    order[#order + 1] = k
    index[k] = #order
  end)
  return order, index
end

-- The nodes in that order for `weight`: each one's distance to its parent (up[i] = i - parent:
-- small numbers), its frame, and its own value of each weight.  Also returns the weights' units,
-- and the order and its index.
local function tree_doc(m, names, patterns, weight)
  local self, units = {}, {}
  for _, name in ipairs(names) do
    self[name], units[name] = m:integers(name, m:restrict(m:weight(name), patterns))
  end
  local order, index = walk_order(m, self[weight])
  local up, frame, values = {}, {}, {}
  for i, k in ipairs(order) do
    up[i], frame[i] = i - index[m.parent[k]], m.frame[k] - 1
  end
  for name, v in pairs(self) do
    local t = {}
    for i, k in ipairs(order) do t[i] = v[k] end
    values[name] = t
  end
  return { up = up, frame = frame, self = values, sorted = weight }, units, order, index
end

-- A differential graph's numbers per weight that both profiles have: each node's base value
-- (null: a path the base lacks), its change in points of the total and its colour (as
-- palette.change gives it with no threshold: the page leaves the changes under its threshold
-- neutral, as palette.change does).
local function diff_doc(m, base, opts, names, color, order)
  local doc = { weights = {}, neutral = palette.change(0, 1, 0) }
  for _, name in ipairs(names) do
    if not model_mod.WEIGHTS[name].memory or base:has_memory() then
      local incl = m:inclusive(m:restrict(m:weight(name), opts.patterns))
      local D = palette.compare(m, base, incl, name, opts, "html")
      local was, pct, fill = {}, {}, {}
      for i, k in ipairs(order) do
        local j = D.to_base[k]
        local v = j and D.binc[j]
        if v and name == "time" then v = model_mod.nanoseconds(v) end
        was[i] = v or NULL
        pct[i] = tonumber(sformat("%.6g", D.pct[k]))
        fill[i] = color(palette.change(D.pct[k], D.max, 0))
      end
      doc.weights[name] = { base = was, pct = pct, fill = fill }
      doc.threshold, doc.normalize, doc.base_only = D.threshold, D.normalize, D.base_only
    end
  end
  return doc
end

---------------------------------------------------------------------------
-- The table of functions

-- Seconds as the page counts time: whole nanoseconds (short in JSON, exact to the ns).
local ns = model_mod.nanoseconds
local function ns_of(x) return x == nil and NULL or ns(x) end

-- The callers and callees of the table's functions (`keys`, a row each; `index`: a key's row),
-- as cprof-stats --callers and --callees print them: each caller->callee edge of Stats `st` once,
-- grouped by callee in the rows' order, each group in pstats' order of call dicts
-- (sortkeys.sorted_keys): row r's callers are edges first[r] .. first[r + 1] - 1.  Per edge: its
-- caller (a row, or the name of a function no row has), ncalls, its calls that were recursive
-- (ncalls - pcalls: mostly 0), tottime and cumtime in ns (a profile.py edge has its count
-- only).  A function's callees are the edges it is the caller of (pstats' calc_callees), listed
-- in `out` the same way: row r's are out[out_first[r] .. out_first[r + 1] - 1].
local function edges_doc(doc, st, keys, index)
  local named = {}
  for key, r in pairs(st.stats) do
    named[key] = true
    for k in pairs(r[5]) do named[k] = true end
  end
  local rank = {}
  for i, k in ipairs(sortkeys.sorted_keys(named)) do rank[k] = i end
  local E = { first = {}, caller = {}, ncalls = {}, recursive = {}, tottime = {}, cumtime = {},
              out = {}, out_first = {} }
  local callee_of, out_of = {}, {}
  local function ranked(a, b) return rank[a] < rank[b] end
  for at, key in ipairs(keys) do
    E.first[at] = #E.caller
    local r = st.stats[key]
    if r then
      local dict, callers = r[5], {}
      for k in pairs(dict) do callers[#callers + 1] = k end
      sort(callers, ranked)
      for _, k in ipairs(callers) do
        local e, j = dict[k], #E.caller + 1
        E.caller[j] = index[k] or text(funckey.func_std_string(k))
        if type(e) == "table" then
          E.ncalls[j], E.recursive[j], E.tottime[j], E.cumtime[j] = e[1], e[1] - e[2], ns(e[3]), ns(e[4])
        else
          E.ncalls[j], E.recursive[j], E.tottime[j], E.cumtime[j] = e, NULL, NULL, NULL
        end
        callee_of[j] = key
        local out = out_of[k] or {}
        out_of[k] = out
        out[#out + 1] = j
      end
    end
  end
  E.first[#keys + 1] = #E.caller
  local function by_callee(a, b) return rank[callee_of[a]] < rank[callee_of[b]] end
  for at, key in ipairs(keys) do
    E.out_first[at] = #E.out
    local out = out_of[key]
    if out then
      sort(out, by_callee)
      for _, j in ipairs(out) do E.out[#E.out + 1] = j - 1 end
    end
  end
  E.out_first[#keys + 1] = #E.out
  doc.edges = E
end

local PSTATS_COLUMNS = {
  { label = "ncalls", fmt = "calls", v = 0, pc = 1, title = "calls; calls/primitive calls where recursion made more" },
  { label = "tottime", fmt = "ns", v = 2, title = "seconds in the function itself" },
  { label = "percall", fmt = "ns", v = 2, per = 0, title = "tottime per call" },
  { label = "cumtime", fmt = "ns", v = 3, title = "seconds in the function and the functions it called" },
  { label = "percall", fmt = "ns", v = 3, per = 1, title = "cumtime per primitive call" },
}
local MEMORY_COLUMNS = {
  { label = "allocs", v = 4, title = "allocations" }, { label = "bytes", v = 5, title = "bytes allocated" },
  { label = "frees", v = 6 }, { label = "live bytes", v = 7, title = "bytes still live when the profile was written" },
  { label = "min", v = 8, blank = 4, title = "the smallest allocation" },
  { label = "max", v = 9, blank = 4, title = "the largest allocation" },
}

-- The pstats table (cprof-stats' columns; with memory, cprof-stats --memory's too).
local function stats_table(st)
  local rows, index, keys = st:entries(), {}, {}
  for i, r in ipairs(rows) do index[r.key], keys[i] = i - 1, r.key end
  local doc = { columns = {}, rows = {}, names = {}, sort = 3 }
  for _, c in ipairs(PSTATS_COLUMNS) do doc.columns[#doc.columns + 1] = c end
  if st.memory then
    for _, c in ipairs(MEMORY_COLUMNS) do doc.columns[#doc.columns + 1] = c end
  end
  for i, r in ipairs(rows) do
    local row = { r.ncalls, r.pcalls, ns(r.tottime), ns(r.cumtime) }
    if st.memory then
      for _, c in ipairs({ "alloc_count", "alloc_bytes", "free_count", "live_bytes", "min_size", "max_size" }) do
        row[#row + 1] = r[c]
      end
    end
    doc.rows[i], doc.names[i] = row, text(r.stdname)
  end
  edges_doc(doc, st, keys, index)
  return doc, rows
end

local DIFF_COLUMNS = {
  { label = "ncalls", fmt = "n", v = 0, title = "calls in this profile" },
  { label = "base", fmt = "n", v = 1, title = "calls in the base" },
  { label = "change", fmt = "dn", v = 2, signed = true },
  { label = "tottime", fmt = "ns", v = 3, title = "seconds in the function itself, in this profile" },
  { label = "base", fmt = "ns", v = 4, title = "tottime in the base" },
  { label = "change", fmt = "dns", v = 5, signed = true },
  { label = "%", fmt = "pct", v = 6, signed = true, title = "the change in percent of the base's tottime" },
  { label = "cumtime", fmt = "ns", v = 7, title = "seconds in the function and its callees, in this profile" },
  { label = "base", fmt = "ns", v = 8, title = "cumtime in the base" },
  { label = "change", fmt = "dns", v = 9, signed = true },
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
  local index, keys = {}, {}
  for i, r in ipairs(rows) do index[r.key], keys[i] = i - 1, r.key end
  local doc = { columns = DIFF_COLUMNS, rows = {}, names = {}, sort = 5 }
  for i, r in ipairs(rows) do
    local a, b = r.new or {}, r.base or {}
    doc.rows[i] = { a.ncalls or NULL, b.ncalls or NULL, r.d_ncalls, ns_of(a.tottime), ns_of(b.tottime),
      ns(r.d_tottime), percent(r.d_tottime, b.tottime), ns_of(a.cumtime), ns_of(b.cumtime), ns(r.d_cumtime),
      percent(r.d_cumtime, b.cumtime) }
    doc.names[i] = text(r.name)
  end
  edges_doc(doc, st, keys, index)
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
-- now, and its functions, each { row, first line, last line, its records { line, hits, time in
-- ns } } (what cprof-stats --lines prints for it; the page sums them per line for the file).
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
        records[j] = { l, lines[l].hits, ns(lines[l].time) }
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

local function memory_doc(m, st, patterns, index)
  local doc = { totals = require("cprof.report.memory").totals_line(st), leaks = {} }
  if m:has_memory() and m.n > 0 then
    local memctx = require("cprof.report.memctx")
    local rows, _, raw_only, raw_bytes = memctx.leak_rows(m, patterns)
    local leaks = {}
    for i, r in ipairs(rows) do
      leaks[i] = { index[r.k], r.blocks, r.bytes, m.N.alloc_count[r.k], m.N.free_count[r.k], r.types }
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
  local order, index
  if m:has_tree() then
    local units
    doc.tree, units, order, index = tree_doc(m, names, opts.patterns, weight)
    for i, name in ipairs(names) do
      doc.weights[i] = { name = name, label = model_mod.WEIGHTS[name].label, unit = units[name] }
    end
    if base then doc.diff = diff_doc(m, base, opts, names, color, order) end
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
  if m:has_memory() or st.memory then doc.memory = memory_doc(m, st, opts.patterns, index) end
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
           frames = { short = {}, fn = {}, label = {}, file = {}, line = {}, color = {}, row = {} },
           series = { files = files, columns = columns,
                      colors = summary.COLORS } }
end

return M
