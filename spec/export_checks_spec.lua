-- Every export of a real program's dump opened in its real reader, with cprof-stats' numbers:
-- tools/check-exports.lua (the checks of spec/export_checks.lua) on the dumps of generated
-- programs, one whose names are hard on every format and one of thousands of functions.
local S = require "spec.support"
local X = require "spec.export_support"
local export = require "cprof.export"

-- tools/check-exports.lua on `dumps`: its lines, its last line and its exit status.
local function check_exports(dumps)
  local cmd = S.child_env() .. S.lua .. " " .. S.q(S.ROOT .. "/tools/check-exports.lua")
  for _, d in ipairs(dumps) do cmd = cmd .. " " .. S.q(d) end
  local out, err, status = S.capture(cmd)
  local lines = {}
  for line in out:gmatch("[^\n]+") do lines[#lines + 1] = line end
  return lines, table.remove(lines), status, err
end

-- Every format of `dump` passed (or is pending, naming the reader that is missing).
local function all_passed(dump)
  local lines, last, status, err = check_exports({ dump })
  assert.equal(#export.FORMATS, #lines, err)
  local skipped = {}
  for i, format in ipairs(export.FORMATS) do
    local line = lines[i]
    assert.equal(dump .. " " .. format .. ": ", line:sub(1, #dump + #format + 3))
    if line:find(": skipped (", 1, true) then
      skipped[#skipped + 1] = line
    else
      assert.truthy(line:find(": passed (", 1, true), line)
    end
  end
  assert.equal(0, status, last)
  assert.matches("^%d passed, 0 failed", last)
  if #skipped > 0 then pending(table.concat(skipped, "\n")) end
end

describe("tools/check-exports.lua", function()
  local dir = S.new_dir()
  lazy_teardown(function() S.remove_dir(dir) end)

  it("passes every format of a program whose names are not UTF-8 or hold the formats' separators", function()
    -- chunk names "\237lo", "=caf\233;x\ny", two chunks named [string "local x = 1..."], a
    -- function named "w\255rk": strict readers refuse bytes that are not UTF-8, ";" and the
    -- line break split stacks and lines, pstats keeps one entry per key
    all_passed(X.program_dump(X.HOSTILE_PROGRAM, dir, "hostile"))
  end)

  it("passes every format of a program of 5,000 functions", function()
    -- 20,000 functions pass too, in twice the time (about 20 s of CPU): run by hand, as
    -- `tools/check-exports.lua` on the dump of X.many_functions_program(20000)
    all_passed(X.program_dump(X.many_functions_program(5000), dir, "many"))
  end)

  it("says which dump it cannot read, and fails", function()
    local bad = dir .. "/not-a-dump.prof"
    S.write_file(bad, "hello\n")
    local lines, last, status = check_exports({ bad })
    assert.equal(1, #lines)
    assert.matches("^" .. bad:gsub("%p", "%%%0") .. " cprof%-stats: failed %(.+%)$", lines[1])
    assert.equal("0 passed, 1 failed", last)
    assert.equal(1, status)
    local _, _, nstatus = check_exports({})
    assert.equal(2, nstatus)
  end)
end)
