--- cprof.export.html: a profile as one self-contained HTML report (docs/EXPORTS.md, "html").
--
-- The page holds everything it shows: its script and style (lua/cprof/export/html/report.js,
-- report.css, in the template report.html, installed next to this module), and the profile as
-- a JSON document (cprof.export.htmldata) in a <script type="application/json"> element.  It
-- opens from disk in a browser, fetches nothing (its Content-Security-Policy forbids every
-- request) and needs no server.  It draws a flame graph and an icicle of each weight (time,
-- calls; on memory profiles allocated and live bytes), zooms on a click, searches function
-- names, and shows the pstats table (sorted by any column, filtered), callers and callees, the
-- source with its line hits, leaks and the allocator, a diff, or a memory series.
--
-- The JSON is safe inside the page: names are valid UTF-8 (sanitize) and every "<" in it is
-- written \u003c, so no name can end the script element; the page puts text into the document
-- only as text (textContent), never as markup.
--
-- opts: title, icicle (the graph drawn top-down first), and with a base threshold and
-- normalize, as cprof.export.svg's.

local _ENV = require("cprof.env")()

local M = {}

local htmldata = require("cprof.export.htmldata")
local model_mod = require("cprof.export.model")
local cjson = require("cjson")

M.restricts = true
M.diff = true

local type, ipairs, pairs, next = type, ipairs, pairs, next
local sfind, ssub, smatch, sgsub, slower, sgmatch, sformat, concat, sort =
  string.find, string.sub, string.match, string.gsub, string.lower, string.gmatch, string.format,
  table.concat, table.sort
local floor, huge, mtype, tostring = math.floor, math.huge, math.type, tostring
local fail = model_mod.fail

-- The folder of the page's files: html/ next to this module, wherever it was installed.
local function folder()
  local source = debug.getinfo(1, "S").source
  local dir = type(source) == "string" and smatch(source, "^@(.-)html%.lua$")
  if not dir and package.searchpath then
    local path = package.searchpath("cprof.export.html", package.path)
    dir = path and smatch(path, "^(.-)html%.lua$")
  end
  if not dir then fail("html: cannot find the folder of cprof.export.html (its page's files are there)") end
  return dir .. "html/"
end

-- The file's lines without their indentation, blank lines and the lines that are a comment
-- (`comment`, a pattern): the sources stay readable, the page smaller.
local function compact(s, comment)
  local out = {}
  for line in sgmatch(s, "[^\n]+") do
    line = sgsub(line, "^%s+", "")
    if line ~= "" and not sfind(line, comment) then out[#out + 1] = line end
  end
  return concat(out, "\n")
end

local assets

local function read_assets()
  if assets then return assets end
  local dir, got = folder(), {}
  for _, name in ipairs({ "report.html", "report.css", "report.js" }) do
    local f = io.open(dir .. name, "rb")
    local s = f and f:read("*a")
    if f then f:close() end
    if type(s) ~= "string" then
      fail("html: cannot read %s%s (the page's files are installed with cprof's Lua modules)", dir, name)
    end
    got[name] = s
  end
  local js, css = compact(got["report.js"], "^//"), compact(got["report.css"], "^/%*.*%*/$")
  -- what would end their element early
  if sfind(slower(js), "</script", 1, true) or sfind(slower(css), "</style", 1, true) then
    fail("html: %sreport.js or report.css ends its own element", dir)
  end
  assets = { template = got["report.html"], css = css, js = js }
  return assets
end

-- `s` with `mark` replaced by `with` (plain text: no pattern, no % in the replacement).
local function put(s, mark, with)
  local i, j = sfind(s, mark, 1, true)
  if not i then fail("html: report.html lacks %s", mark) end
  return ssub(s, 1, i - 1) .. with .. ssub(s, j + 1)
end

-- A string in JSON for the page: cjson's escapes, its "\/" written "/" (cjson escapes every
-- "/", so a "\/" in its output is always that escape), and every "<" as \u003c, the same
-- character to JSON.parse: no name can write "</script" or "<!--" into the page.
local function json_string(s)
  return (sgsub(sgsub(cjson.encode(s), "\\/", "/"), "<", "\\u003c"))
end

-- A number in JSON: integers as they are, others with 10 significant digits (more than any view
-- shows), NaN and the infinities as null; a decimal comma of the C locale made a point.
local function json_number(x)
  if mtype and mtype(x) == "integer" then return tostring(x) end
  if x ~= x or x == huge or x == -huge then return "null" end
  if x == floor(x) and x > -2 ^ 53 and x < 2 ^ 53 then return sformat("%d", x) end
  return (sgsub(sformat("%.10g", x), ",", "."))
end

-- The document as JSON: tables with a first element (or none at all) are lists, the others
-- objects with their keys sorted, so that one profile always makes the same page.
local function json(v)
  local t = type(v)
  if t == "string" then return json_string(v) end
  if t == "number" then return json_number(v) end
  if t == "boolean" then return v and "true" or "false" end
  if v == cjson.null then return "null" end
  if t ~= "table" then fail("html: cannot write a %s in the page's data", t) end
  local parts = {}
  if v[1] ~= nil or next(v) == nil then
    for i = 1, #v do parts[i] = json(v[i]) end
    return "[" .. concat(parts, ",") .. "]"
  end
  local keys = {}
  for k in pairs(v) do keys[#keys + 1] = k end
  sort(keys)
  for i, k in ipairs(keys) do parts[i] = json_string(k) .. ":" .. json(v[k]) end
  return "{" .. concat(parts, ",") .. "}"
end

local function page(doc, sink)
  local a = read_assets()
  local html = put(put(a.template, "/*STYLE*/", a.css), "/*SCRIPT*/", a.js)
  local i, j = sfind(html, "/*DATA*/", 1, true)
  if not i then fail("html: report.html lacks /*DATA*/") end
  sink(ssub(html, 1, i - 1) .. json(doc) .. ssub(html, j + 1))
end

function M.write(m, sink, opts, weight, base)
  local doc = htmldata.document(m, opts, weight, base)
  page(doc, sink)
  return { format = "html", frames = m.F.n, nodes = m.n }
end

--- The memory series of several dumps (cprof.report.summary.read's summaries) as a report
--- with a line chart; sink takes strings.
function M.series(list, sink, opts)
  page(htmldata.series(list, opts or {}), sink)
  return { format = "html", dumps = #list }
end

return M
