--- cprof.main: the `cprof` command, Python's `python -m cProfile` for Lua:
---
---   cprof [-o FILE] [-s SORT] (-m MODULE | SCRIPT) [ARG ...]
---
--- runs SCRIPT, or the Lua module MODULE found on package.path as require finds it (its file
--- run as a main chunk, as `python -m` runs a module's source), with its arguments, under
--- cprof.auto: -o writes the dump there (CPROF_OUT), -s sorts the report (CPROF_SORT), and
--- every CPROF_* setting of cprof.auto applies. The program sees the `arg` and `...` that
--- `lua5.4 SCRIPT ARG ...` would give it (arg[0] the script or the module's file; the words
--- before it, the command and its options, at negative indices).
--
-- bin/cprof calls start(arg), then run(chunk, args...), which starts cprof.auto and tail-calls
-- the chunk: the program's main chunk is the profile's first frame, as under `lua5.4 -l
-- cprof.auto SCRIPT`, and nothing of the command's is called while it profiles.

local _ENV = require("cprof.env")()

local M = {}

M.USAGE = [[
usage: cprof [-o FILE] [-s SORT] (-m MODULE | SCRIPT) [ARG ...]
  Runs SCRIPT, or the Lua module MODULE (found on package.path, as require finds it), with
  its arguments under cprof.auto, and prints the report to stderr when it ends.
  -o FILE    write the profile to FILE as a dump instead (CPROF_OUT; %p, %n as there)
  -s SORT    sort keys, comma-separated (CPROF_SORT; default cumulative)
  -m MODULE  run a module, as python -m cProfile -m MODULE
  -h         this help
The CPROF_* settings of cprof.auto apply (docs/API.md, "cprof.auto").
]]

-- The command's own error: one line and exit status 2 (the usage's), as cprof-stats does.
local function die(msg)
  io.stderr:write("cprof: ", msg, "\n")
  os.exit(2)
end

--- start(argv): parses the command line (argv as lua.c gives it to bin/cprof), sets the
--- environment cprof.auto reads and makes the global `arg` the program's; returns the
--- program's main chunk and its arguments (a table with n).
function M.start(argv)
  local settings, i, module = {}, 1, nil
  while argv[i] ~= nil do
    local a = argv[i]
    if a == "-h" or a == "--help" then
      io.stdout:write(M.USAGE)
      os.exit(0)
    elseif a == "-o" or a == "-s" or a == "-m" then
      local v = argv[i + 1]
      if v == nil then die("option " .. a .. " needs a value\n" .. M.USAGE) end
      if a == "-m" then
        module, i = v, i + 1
        break
      end
      settings[a == "-o" and "CPROF_OUT" or "CPROF_SORT"] = v
      i = i + 2
    elseif a == "--" then
      i = i + 1
      break
    elseif string.sub(a, 1, 1) == "-" and a ~= "-" then
      die("unknown option '" .. a .. "'\n" .. M.USAGE)
    else
      break
    end
  end
  local script = module == nil and argv[i] or nil
  if module == nil and script == nil then die("no script and no -m MODULE\n" .. M.USAGE) end
  if module then
    local found, file = pcall(require("cprof").module_file, module)
    if not found then die((string.gsub(file, "^cprof: ", ""))) end
    script = file
  end
  -- The program's arg, as lua5.4 SCRIPT ARG ... makes it: the script (the module's file) at 0,
  -- its arguments after it, and the words before it below 0 (a module's name at -1).
  local first = module and i + 1 or i
  local prog, lo, n = { [0] = script }, 0, 0
  while argv[lo - 1] ~= nil do lo = lo - 1 end
  for k = lo, first - 1 do prog[k - first] = argv[k] end
  while argv[i + n + 1] ~= nil do
    n = n + 1
    prog[n] = argv[i + n]
  end
  -- a script that cannot be loaded: lua5.4's exit status
  local chunk, err = loadfile(script)
  if not chunk then
    io.stderr:write("cprof: ", tostring(err), "\n")
    os.exit(1)
  end
  local core = require("cprof.version").core()
  for k, v in pairs(settings) do core.setenv(k, v) end
  _G.arg = prog
  return chunk, { n = n, (table.unpack or unpack)(prog, 1, n) }
end

--- run(chunk, ...): starts cprof.auto and runs the program (a tail call).
function M.run(chunk, ...)
  require "cprof.auto"
  return chunk(...)
end

return M
