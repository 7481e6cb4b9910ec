-- tools/check-exports.lua — the export specs' reader checks, on any dump: each export of each
-- DUMP written, opened in its real reader, and what the reader shows compared with cprof-stats'
-- numbers (spec/export_checks.lua says what each format's check compares).
--
--   lua5.4 tools/check-exports.lua DUMP...       (or luajit; from any folder)
--
-- Prints one line per dump and format, "DUMP FORMAT: passed (what was compared)", "failed
-- (why)" or "skipped (the reader is missing: make export-readers)", then
-- "N passed, N failed" (and ", N skipped"). Exit status: 0 when none failed, 1 when one did,
-- 2 for a bad command line. Uses this checkout's cprof (build it first: make, make LUA=luajit).

local root = ((arg and arg[0] or ""):match("^(.*)/tools/[^/]*$") or ".")
local build = rawget(_G, "jit") and "luajit" or "lua5.4"
package.path = root .. "/?.lua;" .. root .. "/lua/?.lua;" .. root .. "/lua/?/init.lua;" .. package.path
package.cpath = root .. "/build/" .. build .. "/?.so;" .. package.cpath

if #arg == 0 or arg[1] == "-h" or arg[1] == "--help" then
  io.stderr:write("usage: tools/check-exports.lua DUMP...   (cprof dumps, or pstats files)\n")
  os.exit(2)
end
for _, dump in ipairs(arg) do
  local f, err = io.open(dump, "rb")
  if not f then
    io.stderr:write("check-exports: ", err, "\n")
    os.exit(2)
  end
  f:close()
end

local checks = require "spec.export_checks"
local display = require("cprof.sanitize").display
local count = { passed = 0, failed = 0, skipped = 0 }
checks.run(arg, function(r)
  count[r.status] = count[r.status] + 1
  -- one line each, whatever the names in it hold
  print(("%s %s: %s (%s)"):format(display(r.dump), r.format, r.status, display(r.detail)))
  io.stdout:flush()
end)
print(("%d passed, %d failed"):format(count.passed, count.failed)
  .. (count.skipped > 0 and (", %d skipped"):format(count.skipped) or ""))
os.exit(count.failed == 0 and 0 or 1)
