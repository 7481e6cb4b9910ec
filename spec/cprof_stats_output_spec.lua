-- Where cprof-stats writes: standard output checked to the last byte (a full disk is an error,
-- never a cut report and status 0), and -o's file named in every message about it.
--
-- cprof-stats runs under lua5.4 (with the lua5.4 build of cprof.core under LuaJIT, as in
-- cprof_stats_cli_spec.lua); the dumps are written by lua5.4 children too, so that the memory
-- views have a dump with memory numbers whatever the suite's interpreter.
local S = require "spec.support"
local q = S.q

local ROOT = S.ROOT
local SCRIPT = ROOT .. "/bin/cprof-stats"

describe("cprof-stats' output", function()
  local env, why = S.lua54_env(ROOT)
  if not env then
    pending("cprof-stats specs: " .. why)
    return
  end
  -- a lua5.4 child with this checkout's modules (under LuaJIT, the lua5.4 build of cprof.core)
  local lua54 = S.child_env(S.jit and "LUA_CPATH=" .. q(S.absolute(ROOT) .. "/build/lua5.4/?.so;;") or "")
  -- (in a subshell, so that a redirection in `args` is not undone by capture's own)
  local function cli(args) return S.capture("(" .. env .. "lua5.4 " .. q(SCRIPT) .. " " .. args .. ")") end

  local files = {}
  local function tmp(suffix)
    local n = S.tmpname() .. (suffix or ".prof")
    files[#files + 1] = n
    return n
  end
  teardown(function()
    for _, f in ipairs(files) do os.remove(f) end
  end)

  -- A dump of a small program with memory numbers and line events, written by lua5.4.
  local dump
  setup(function()
    local script = tmp(".lua")
    S.write_file(script, [[
local keep = {}
local function make(n) for i = 1, n do keep[#keep + 1] = { i } end end
for _ = 1, 3 do make(50) end
]])
    dump = tmp()
    local out, err, status = S.capture(("%s CPROF_QUIET=1 CPROF_MEMORY=1 CPROF_LINES=1 CPROF_OUT=%s"
      .. " lua5.4 -l cprof.auto %s"):format(lua54, q(dump), q(script)))
    assert(status == 0 and out == "" and err == "", err)
  end)

  local writable = os.execute("test -c /dev/full -a -w /dev/full")
  local full = writable == true or writable == 0

  it("a report that cannot be written whole is an error naming standard output: every kind", function()
    if not full then
      pending("no /dev/full here")
      return
    end
    local p = q(dump)
    local kinds = {
      p .. " --limit all", p .. " --json", p .. " --callers", p .. " --callees", p .. " --lines",
      p .. " --memory", p .. " --stats --memory --sort live", "--verify " .. p, "--help", "--version",
      p .. " --tree", p .. " --export folded", p .. " --export svg", p .. " --diff " .. p,
      p .. " --memory-types", p .. " --leaks", p .. " --memory --stacks 3", p .. " --summary",
      p .. " --memory-series", "-i " .. p .. " </dev/null",
      -- as much as a pipe holds and more: the writes fail before the last flush
      p .. " " .. p .. " " .. p .. " --callers --callees --stats --lines --memory",
    }
    for _, args in ipairs(kinds) do
      local _, err, status = cli(args .. " >/dev/full")
      assert.are.equal("cprof-stats: standard output: No space left on device\n", err, args)
      assert.are.equal(2, status, args)
    end
    -- standard output closed: the same, with the system's reason
    local _, err, status = cli(p .. " >&-")
    assert.are.equal(2, status)
    assert.matches("^cprof%-stats: standard output: [^\n]+\n$", err)
  end)

  it("the same reports written to a file are whole, with status 0", function()
    local out, err, status = cli(q(dump) .. " --limit all")
    assert.are.equal(0, status, err)
    assert.matches("function calls", out)
    out, err, status = cli("--verify " .. q(dump))
    assert.are.equal(0, status, err)
    assert.are.equal(dump .. ": ok (", out:sub(1, #dump + 6))
  end)

  it("-o names the option, the path and what is wrong with it, for every view that takes -o", function()
    local dir = S.new_dir()
    local d = q(dump)
    local views = { "--export svg", "--export pstats", "--tree", "--diff " .. d, "--memory-types",
                    "--leaks", "--summary", "--memory-series" }
    for _, view in ipairs(views) do
      local args = d .. " " .. view .. " -o "
      local out, err, status = cli(args .. q(dir))
      assert.are.equal(2, status, view)
      assert.are.equal("", out, view)
      assert.are.equal("cprof-stats: option -o: " .. dir .. ": a directory, not a file to write\n", err, view)
      _, err, status = cli(args .. "''")
      assert.are.equal(2, status, view)
      assert.are.equal("cprof-stats: option -o: the output file name is empty\n", err, view)
      local missing = dir .. "/no/such/folder/out"
      _, err, status = cli(args .. q(missing))
      assert.are.equal(2, status, view)
      assert.matches("^cprof%-stats: option %-o: " .. missing:gsub("%p", "%%%0") .. ": [^\n]*No such file"
        .. " or directory\n$", err, view)
      -- and a good name gets the whole text, nothing on standard output
      local good = dir .. "/out"
      out, err, status = cli(args .. q(good))
      assert.are.equal(0, status, err)
      assert.are.equal("", out)
      assert.is_true(#S.read_file(good) > 0, view)
      os.remove(good)
    end
    S.remove_dir(dir)
  end)

  it("cprof.export's own message for a directory speaks of the export, not of a dump", function()
    local dir = S.new_dir()
    local st = require("cprof.stats").new(S.det_data())
    local ok, err = pcall(st.export, st, "pstats", dir)
    assert.is_false(ok)
    assert.are.equal("cprof: " .. dir .. ": a directory, not a file to write", err)
    S.remove_dir(dir)
  end)
end)
