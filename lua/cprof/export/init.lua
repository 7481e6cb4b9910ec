--- cprof.export: a profile written in the formats other tools read.
--
--   local export = require "cprof.export"
--   export.export(format, source, out [, opts])
--
-- format: one of export.FORMATS (a module cprof.export.<format> each):
--   svg         a self-contained flame graph (zoom, search, tooltips), docs/EXPORTS.md
--   html        a self-contained report: flame graph, table, callers, source, memory, diff
--   folded      Brendan Gregg's collapsed stacks (flamegraph.pl, speedscope, inferno)
--   pstats      Python's marshal dict (pstats, snakeviz, gprof2dot, pyprof2calltree)
--   callgrind   KCachegrind, QCacheGrind, callgrind_annotate
--   speedscope  speedscope's JSON file format
--   pprof       profile.proto, gzipped (go tool pprof, Pyroscope, Parca)
--   chrome      Trace Event JSON (Perfetto, chrome://tracing) on a synthetic time line
-- source: a Profile, a Stats, a data table (Profile:snapshot(), p:dump_data(), cprof.load),
--   a getstats() table, the name of a cprof dump or pstats file, or a list of these, added
--   together (call trees merged by path, as cprof.data.merge does).
-- out: a file name (written whole or not at all: to a temporary file, renamed when done) or
--   an object with :write(s) (io.stdout, a file handle).
-- opts (all optional):
--   weight    "time" (default), "calls", and on memory profiles "alloc", "allocs", "live"
--   patterns  a list of restrictions: only the call paths through a function whose name
--             matches (Lua patterns, "|" between alternatives) count
--   focus     the same (pprof's -focus): a pattern or a list of them
--   hide      a pattern or a list: matching functions leave the call tree, their own time
--             and memory charged to their callers (pprof's -hide; cprof.export.model)
--   base      a source to compare with: svg draws a differential flame graph, html a
--             differential report, folded writes two counts per stack (difffolded.pl's format)
--   title, icicle, width, minwidth    svg (cprof.export.svg); title and icicle html too
--   threshold, normalize              svg and html with a base: the change under which a path
--             stays white, and whether the base is scaled to this total (cprof.export.svg)
--
-- Sources without a call tree (pstats files, Stats objects, getstats() tables) can be
-- written as pstats and callgrind, and as html without its flame graph; the other formats say
-- so.

local _ENV = require("cprof.env")()

local M = {}

local data_mod = require("cprof.profdata")
local bias_mod = require("cprof.bias")
local model_mod = require("cprof.export.model")

local type, ipairs, pairs, tostring, pcall, error, getmetatable =
  type, ipairs, pairs, tostring, pcall, error, getmetatable
local concat, sformat = table.concat, string.format
local fail = model_mod.fail

M.FORMATS = { "svg", "html", "folded", "pstats", "callgrind", "speedscope", "pprof", "chrome" }
local KNOWN = {}
for _, f in ipairs(M.FORMATS) do KNOWN[f] = true end

--- The module that writes `format`, or an error naming the formats.
function M.format(format)
  if not KNOWN[format] then
    fail("unknown export format '%s' (%s)", tostring(format), concat(M.FORMATS, ", "))
  end
  return require("cprof.export." .. format)
end

---------------------------------------------------------------------------
-- Sources
---------------------------------------------------------------------------

local function is_profile(x)
  if type(x) ~= "userdata" and type(x) ~= "table" then return false end
  local ok, f = pcall(function() return x.report_data end)
  return ok and type(f) == "function"
end

local function read_file(path)
  local stats = require("cprof.stats")
  if stats.file_kind(path) == "pstats" then
    return data_mod.from_stats(stats.new(path)), path .. " is a pstats file"
  end
  return require("cprof.dump").read(path), nil
end

-- One source as profile data with the bias subtracted, and why it has no call tree (nil when
-- it has one).
local function one(source)
  if type(source) == "string" then
    local d, why = read_file(source)
    return bias_mod.apply(d), why
  end
  if is_profile(source) then
    return source:report_data(), nil
  end
  if type(source) == "table" then
    local stats = require("cprof.stats")
    if getmetatable(source) == stats.Stats then
      -- The call trees of its sources when they all had one (Stats.trees), else its functions.
      if source.trees and #source.trees > 0 then return M.data(source.trees) end
      return data_mod.from_stats(source), "it is a Stats object whose sources had no call tree"
    end
    if source.frames ~= nil then
      local d = bias_mod.apply(source)
      local nodes = d.nodes
      if (type(nodes) ~= "table" or nodes.n == 0) and (d.frames.n or 0) > 0 then
        return d, "its data has no nodes"
      end
      return d, nil
    end
    if source.entries ~= nil then
      return data_mod.from_stats(source), "it is a getstats() table"
    end
  end
  fail("cannot export %s (a Profile, a Stats, profile data, a getstats() table, a file name,"
    .. " or a list of these)", tostring(source))
end

local function is_list(source)
  return type(source) == "table" and getmetatable(source) == nil and source.frames == nil
    and source.entries == nil and source[1] ~= nil
end

--- The profile data of `source` (see the top of this file): bias subtracted, several sources
--- added; and why it has no call tree, or nil when it has one.
function M.data(source)
  if not is_list(source) then return one(source) end
  local all, why = {}, nil
  for i, s in ipairs(source) do
    local d, w = one(s)
    all[i] = d
    why = why or w
  end
  if #all == 1 then return all[1], why end
  return data_mod.merge((table.unpack or unpack)(all)), why
end

--- The model (cprof.export.model) of `source`; a format that needs the tree calls
--- m:need_tree(), which explains which source had none.
function M.model(source)
  local d, why = M.data(source)
  local m = model_mod.new(d)
  m.no_tree = why
  return m
end

---------------------------------------------------------------------------
-- Output
---------------------------------------------------------------------------

--- A writer that gathers small strings and writes them to `sink` (a function) in large
--- pieces: the formats emit millions of short strings.
function M.buffer(sink)
  local buf, n, size = {}, 0, 0
  local w = {}
  function w.put(s)
    n = n + 1
    buf[n] = s
    size = size + #s
    if size >= 65536 then
      sink(concat(buf, "", 1, n))
      for i = n, 1, -1 do buf[i] = nil end
      n, size = 0, 0
    end
  end
  function w.flush()
    if n > 0 then
      sink(concat(buf, "", 1, n))
      for i = n, 1, -1 do buf[i] = nil end
      n, size = 0, 0
    end
  end
  return w
end

local function stream_sink(stream, name)
  return function(s)
    local ok, err = stream:write(s)
    if not ok then fail("%s: %s", name, tostring(err)) end
  end
end

--- export.check_output(path): raises an error when `path` cannot name the file to write:
--- empty, or a directory ("cprof: <path>: <reason>", said here in the words of an export: the
--- dump writer would speak of a dump).
function M.check_output(path)
  if path == "" then fail("the output file name is empty") end
  if require("cprof.dump").file_type(path) == "directory" then
    error(sformat("cprof: %s: a directory, not a file to write", path), 0)
  end
end

--- export.write_file(path, bytes [, binary]): writes `bytes` to the file `path` as a dump is
--- written (cprof.dump.write_file: replaced only once complete, a symbolic link followed,
--- /dev/null or a FIFO written through); without cprof.core, through a temporary file next to
--- it, renamed over it once written.  An error leaves no file and no half-written one, and
--- raises "cprof: <path>: <reason>".
function M.write_file(path, bytes, binary)
  M.check_output(path)
  if require("cprof.dump").write_file(path, bytes) then return end
  local tmp = path .. ".cprof-tmp"
  local f, err = io.open(tmp, binary and "wb" or "w")
  if not f then error("cprof: " .. tostring(err), 0) end
  local ok, werr = f:write(bytes)
  local cok, cerr = f:close()
  local rok, rerr = false, nil
  if ok and cok then rok, rerr = os.rename(tmp, path) end
  if rok then return end
  os.remove(tmp)
  if rerr then error("cprof: " .. tostring(rerr), 0) end
  error(sformat("cprof.export: %s: %s", path, tostring(werr or cerr)), 0)
end

-- Runs write(sink) into the file `path` (M.write_file).
local function to_file(path, binary, write)
  M.check_output(path)
  local parts = {}
  write(function(s) parts[#parts + 1] = s end)
  M.write_file(path, concat(parts), binary)
end

-- A list option: nil, a string or a list of strings.
local function list(opts, name)
  local v = opts[name]
  if v == nil then return {} end
  if type(v) == "string" then return { v } end
  if type(v) ~= "table" then fail("option %s must be a pattern or a list of them, not a %s", name, type(v)) end
  for i, p in ipairs(v) do
    if type(p) ~= "string" then fail("option %s: item %d is a %s, not a pattern", name, i, type(p)) end
  end
  return v
end

--- The options of a view of the call tree with `patterns` made the list of restrictions and
--- focus patterns together (both keep the paths through a match: pprof's -focus), and `hide`
--- a list (pprof's -hide: cprof.export.model's m:hide).
function M.tree_options(opts)
  local out = {}
  for k, v in pairs(opts) do out[k] = v end
  local patterns = {}
  for _, name in ipairs({ "patterns", "focus" }) do
    for _, p in ipairs(list(opts, name)) do patterns[#patterns + 1] = p end
  end
  out.patterns, out.hide, out.focus = patterns, list(opts, "hide"), nil
  return out
end

--- export.export(format, source, out [, opts]): see the top of this file.  Returns the
--- summary the format gives (svg: { frames, merged }; others: a table with at least format).
function M.export(format, source, out, opts)
  opts = opts or {}
  if type(opts) ~= "table" then fail("options must be a table, not a %s", type(opts)) end
  local mod = M.format(format)
  local weight = opts.weight or "time"
  if not model_mod.WEIGHTS[weight] then
    fail("unknown weight '%s' (%s)", tostring(weight), concat(model_mod.WEIGHT_NAMES, ", "))
  end
  if mod.WEIGHTS and not mod.WEIGHTS[weight] then
    fail("%s: weight '%s' does not apply (%s)", format, weight, mod.WEIGHTS_TEXT)
  end
  if opts.base ~= nil and not mod.diff then
    fail("%s cannot compare two profiles (svg, html and folded can)", format)
  end
  opts = M.tree_options(opts)
  if (#opts.patterns > 0 or #opts.hide > 0) and not mod.restricts then
    fail("%s holds whole functions: restrictions to call paths do not apply", format)
  end
  local m = M.model(source):hide(opts.hide)
  local base = opts.base ~= nil and M.model(opts.base):hide(opts.hide) or nil
  local result
  M.output(out, mod.binary, function(sink)
    result = mod.write(m, sink, opts, weight, base)
  end)
  return result
end

--- export.output(out, binary, write): calls write(sink), sink a function taking strings, with
--- what it is given going to `out`: a file name (written whole or not at all) or a stream.
function M.output(out, binary, write)
  if type(out) == "string" then
    to_file(out, binary, write)
  elseif out ~= nil and (type(out) == "table" or type(out) == "userdata") then
    write(stream_sink(out, "output"))
  else
    fail("the output must be a file name or a stream with :write, not %s", tostring(out))
  end
end

return M
