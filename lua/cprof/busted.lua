--- cprof.busted: a busted helper that profiles the test run.
---
---   lua5.4 /usr/bin/busted --helper=cprof.busted [-Xhelper out=FILE,per-file,top=N,exclude=PATTERN]
---   lua5.4 -l cprof.auto /usr/bin/busted --helper=cprof.busted     (the same; cprof.auto
---                                                                  hands its profile over)
---   busted --helper=cprof.busted      (where `busted` runs on Lua 5.4 or LuaJIT: Debian's
---                                      /usr/bin/busted starts `lua`, Lua 5.1 there)
---
--- The profile leaves out busted's own frames and those of the libraries it runs on (luassert,
--- say, penlight, mediator, cliargs, term, system) and of this helper: their time is charged
--- to the nearest spec function that called them (Profile's `exclude`).  When the run ends,
--- after busted's own output, it prints to stderr the slowest spec files and specs with their
--- share of the run, and cprof's report of the whole run; and writes one dump (out=FILE,
--- default CPROF_OUT or cprof-busted.prof), or, with per-file, one per spec file (FILE with
--- %f: the spec file's name; without %f, the name gets it before its extension), each covering
--- that file only.

local _ENV = require("cprof.env")()

local args = require "cprof.args"

-- The command line of this process (/proc/self/cmdline: busted gives its helpers only their
-- -Xhelper words), as words; nil where it cannot be read.
local function process_words()
  local f = io.open("/proc/self/cmdline", "rb")
  local text = f and f:read("*a")
  if f then f:close() end
  if not text or text == "" then return nil end
  local words = {}
  for w in string.gmatch(text, "([^%z]*)%z") do words[#words + 1] = w end
  return words
end

-- Under a Lua cprof does not run on, the sentence that says so and names the command that
-- works: this busted command run by lua5.4. Running it again under another Lua ourselves
-- would run the program's specs on a Lua they did not ask for.
do
  local ok, err = pcall(require("cprof.version").core)
  if not ok then
    local words = process_words()
    local cmd = { "lua5.4" }
    if words and #words >= 2 then
      for i = 2, #words do cmd[#cmd + 1] = args.shell_word(words[i]) end
    else
      cmd[2] = "/usr/bin/busted --helper=cprof.busted ..."
    end
    error(string.format("%s; run busted under Lua 5.4: %s", tostring(err),
                        table.concat(cmd, " ")), 0)
  end
end

local cprof = require "cprof"
local report = require "cprof.report"
local profdata = require "cprof.profdata"
local dump = require "cprof.dump"
local busted = require "busted"

local M = {}

-- A Lua pattern that finds `text` literally at the start of a file name.
local function prefix_pattern(text)
  return "^" .. string.gsub(text, "[%^%$%(%)%%%.%[%]%*%+%-%?]", "%%%0")
end

-- The directory of module `name` (found on package.path), as a prefix pattern, or nil.
local function module_dir(name)
  local file = package.searchpath(name, package.path)
  local dir = file and string.match(file, "^(.*/)")
  return dir and prefix_pattern(dir) or nil
end

-- The file of the running script (/usr/bin/busted), as a pattern, or nil.
local function main_script()
  for level = 2, 200 do
    local info = debug.getinfo(level, "S")
    if not info then break end
    if info.what == "main" and string.sub(info.source, 1, 1) == "@" and string.find(info.source, "busted$") then
      return prefix_pattern(string.sub(info.source, 2)) .. "$"
    end
  end
end

--- The patterns of the files busted's run goes through besides the specs.
function M.excluded()
  local pats = {}
  -- (cprof's own folder too, by cprof.busted's: per-file dumps are written while it runs)
  for _, m in ipairs { "busted.core", "luassert.assert", "say", "pl.path", "cliargs.core",
                       "term.core", "system.init", "cprof.busted" } do
    pats[#pats + 1] = module_dir(m)
  end
  for _, m in ipairs { "mediator", "busted", "dkjson", "luassert", "say" } do
    local file = package.searchpath(m, package.path)
    if file then pats[#pats + 1] = prefix_pattern(file) .. "$" end
  end
  pats[#pats + 1] = main_script()
  return pats
end

-- -Xhelper words: "out=FILE", "per-file", "top=N", "exclude=PATTERN" (commas separate them too).
local function options(argv)
  local o = { top = 10, exclude = {} }
  for _, a in ipairs(type(argv) == "table" and argv or {}) do
    for word in string.gmatch(tostring(a), "[^,]+") do
      local k, v = string.match(word, "^([%w-]+)=(.*)$")
      k = k or word
      if k == "out" then o.out = v
      elseif k == "per-file" then o.per_file = true
      elseif k == "top" and tonumber(v) then o.top = math.floor(tonumber(v))
      elseif k == "exclude" then o.exclude[#o.exclude + 1] = v
      else error(string.format("cprof.busted: unknown option '%s' (the options are out=FILE, per-file, top=N,"
                  .. " exclude=PATTERN)", word), 0) end
    end
  end
  if not o.out then
    local env = os.getenv("CPROF_OUT")
    o.out = env ~= nil and env ~= "" and env or "cprof-busted.prof"
  end
  return o
end

-- The dump name of spec file `file` for the per-file option.
local function file_dump(out, file)
  local tag = string.gsub(string.gsub(string.gsub(file, "^%./", ""), "[/\\]", "_"), "%%", "%%%%")
  if string.find(out, "%%f") then return (string.gsub(out, "%%f", tag)) end
  local stem, ext = string.match(out, "^(.-)(%.[^./]*)$")
  return (stem or out) .. "." .. tag .. (ext or "")
end

-- The full name of a spec: its describe blocks' names and its own.
local function full_name(element)
  local names = { element.name or element.descriptor }
  local parent = busted.parent(element)
  while parent and parent.descriptor ~= "file" and (parent.name or parent.descriptor) do
    table.insert(names, 1, parent.name or parent.descriptor)
    parent = busted.parent(parent)
  end
  return table.concat(names, " ")
end

-- Rows sorted slowest first, at most `top` of them, as text lines.
local function slowest(title, times, total, top, out)
  local rows = {}
  for name, t in pairs(times) do rows[#rows + 1] = { name = name, time = t } end
  table.sort(rows, function(a, b)
    if a.time ~= b.time then return a.time > b.time end
    return a.name < b.name
  end)
  out(string.format("cprof: %s (%d, %.3f s of the run's %.3f s):\n", title, #rows,
      (function() local s = 0 for _, r in ipairs(rows) do s = s + r.time end return s end)(), total))
  for i = 1, math.min(top, #rows) do
    local r = rows[i]
    out(string.format("  %9.3f s %6.1f%%  %s\n", r.time, total > 0 and 100 * r.time / total or 0, r.name))
  end
end

--- Starts profiling the run (called when busted loads the helper, with -Xhelper's words).
function M.start(argv)
  local o = options(argv)
  local auto = package.loaded["cprof.auto"]
  if type(auto) == "table" and auto.handover then auto.handover() end
  local exclude = M.excluded()
  for _, p in ipairs(o.exclude) do exclude[#exclude + 1] = p end
  -- CPROF_TIMER as cprof.auto reads it: `counter` makes the spec times exact counts of events.
  local timer = os.getenv("CPROF_TIMER")
  if timer == "" then timer = nil end
  local ok, p = pcall(cprof.Profile, { exclude = exclude, timer = timer })
  if not ok then
    io.stderr:write("cprof.busted: CPROF_TIMER: ", (string.gsub(tostring(p), "^cprof: ", "")),
                    "; using the default timer\n")
    p = cprof.Profile { exclude = exclude }
  end
  local files, specs = {}, {}
  local file_t0, spec_t0, current_file
  local run_t0 = p:now()
  -- What the dumps did, said at the end (a line during the run would land among busted's
  -- progress marks); with per-file, each file's data, summed at the end for the whole run's
  -- report.
  local said, parts = {}, {}
  local function write(name, d)
    local ok, err = pcall(dump.write, name, d)
    said[#said + 1] = ok and ("cprof: wrote " .. name) or (string.gsub(tostring(err), "\n", " "))
  end
  busted.subscribe({ "file", "start" }, function(file)
    current_file, file_t0 = file.name, p:now()
    return nil, true
  end)
  busted.subscribe({ "file", "end" }, function(file)
    files[file.name] = (files[file.name] or 0) + (p:now() - file_t0)
    if o.per_file then
      local d = p:dump_data()
      p:reset()
      write(file_dump(o.out, file.name), d)
      parts[#parts + 1] = d
    end
    return nil, true
  end)
  busted.subscribe({ "test", "start" }, function()
    spec_t0 = p:now()
    return nil, true
  end)
  busted.subscribe({ "test", "end" }, function(element)
    local name = (current_file or "?") .. ": " .. full_name(element)
    specs[name] = (specs[name] or 0) + (p:now() - spec_t0)
    return nil, true
  end)
  -- At busted's exit, after its output handler has printed the result line at the suite's end
  -- (on stdout, flushed first: a pipe buffers it), once however many times the suite ran.
  busted.subscribe({ "exit" }, function()
    p:disable()
    io.stdout:flush()
    local total = p:now() - run_t0
    local function out(s) io.stderr:write(s) end
    slowest("the slowest spec files", files, total, o.top, out)
    slowest("the slowest specs", specs, total, o.top, out)
    local d = p:dump_data()
    if o.per_file then
      parts[#parts + 1] = d
      d = profdata.merge((table.unpack or unpack)(parts))
    else
      write(cprof.dump_name(o.out, 1), d)
    end
    local ok, err = pcall(report.print, d, { sort = { "cumulative" }, limit = 20,
                                             stream = io.stderr })
    if not ok then out("cprof: could not print the report: " .. tostring(err) .. "\n") end
    if #said > 0 then out(table.concat(said, "\n") .. "\n") end
    return nil, true
  end)
  p:enable()
  M.profile = p
  return p
end

M.start(rawget(_G, "arg"))

return M
