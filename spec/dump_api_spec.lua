-- Dumps from Lua: Profile:dump_stats, cprof.load, cprof.run/runctx with a file name,
-- cprof.data.merge and Stats over dumps, and cprof.auto with CPROF_OUT (child processes).
local cprof = require "cprof"
local core = require "cprof.core"
local data = require "cprof.profdata"
local stats = require "cprof.stats"

-- Busted runs specs in an environment whose globals are looked up through Lua functions, which
-- a profile would show: the profiled code below uses locals only.
local string, table = string, table

local S = require "spec.support"
local tmpname, write = S.tmpname, S.write_file

local function exists(path)
  local f = io.open(path, "rb")
  if f then f:close() end
  return f ~= nil
end

-- Two deterministic programs.
local function fib(n) if n < 2 then return n end return fib(n - 1) + fib(n - 2) end
local function helper(x) return string.rep("x", x) end
local function program_a()
  local t = 0
  for i = 1, 3 do t = t + fib(7) helper(i) end
  return t
end
local function program_b()
  local s = {}
  for i = 1, 5 do s[#s + 1] = helper(i) end
  return table.concat(s) .. fib(4)
end

local function profile(f)
  local p = cprof.Profile { timer = "counter" }
  p:runcall(f)
  return p
end

local COLUMNS = {
  frames = data.FRAME_COLUMNS,
  edges = data.EDGE_COLUMNS,
  nodes = data.NODE_COLUMNS,
}

-- A data table keyed by identity instead of position (a dump may store frames in another
-- order): frames by data.frame_id, edges by their two frames, nodes by their path.
local function canonical(d)
  local out = { frames = {}, edges = {}, nodes = {} }
  local fid, path = {}, { [0] = "" }
  local function stat(s, i) return { s.ncalls[i], s.pcalls[i], s.tottime[i], s.cumtime[i] } end
  for i = 1, d.frames.n do
    fid[i] = data.frame_id(d.frames, i)
    local r = stat(d.frames, i)
    r.lastline = d.frames.lastline[i]
    r.kind = d.frames.kind[i]
    out.frames[fid[i]] = r
  end
  for i = 1, d.edges.n do
    out.edges[fid[d.edges.caller[i]] .. " -> " .. fid[d.edges.callee[i]]] = stat(d.edges, i)
  end
  for i = 1, d.nodes.n do
    path[i] = path[d.nodes.parent[i]] .. " / " .. fid[d.nodes.frame[i]]
    out.nodes[path[i]] = stat(d.nodes, i)
  end
  return out
end

-- Every number of every frame, edge and node equal (numbers compared with ==).
local function assert_same_data(want, got)
  for section in pairs(COLUMNS) do
    assert.are.equal(want[section].n, got[section].n, section .. ".n")
  end
  assert.are.same(canonical(want), canonical(got))
end

-- getstats()-shaped entries as { [stdname] = { nc, cc, tt, ct, callers = { [stdname] = {...} } } }.
local function by_name(st)
  local out = {}
  local names = {}
  for i, e in ipairs(st.entries) do
    names[i] = stats.func_std_string(e.what == "C" and "~" or e.file, e.what == "C" and 0 or e.line,
      e.what == "C" and "<" .. e.name .. ">" or e.name)
  end
  for i, e in ipairs(st.entries) do
    local callers = {}
    for ci, ed in pairs(e.callers) do
      callers[names[ci]] = { ed.ncalls, ed.pcalls, ed.tottime, ed.cumtime }
    end
    out[names[i]] = { e.ncalls, e.pcalls, e.tottime, e.cumtime, callers = callers }
  end
  return out
end

-- The sum of two by_name tables.
local function sum(a, b)
  local out = {}
  local function add(x, y)
    if not x then return y end
    if not y then return x end
    return { x[1] + y[1], x[2] + y[2], x[3] + y[3], x[4] + y[4] }
  end
  for _, t in ipairs({ a, b }) do
    for name, r in pairs(t) do
      local o = out[name] or { 0, 0, 0, 0, callers = {} }
      local s = add(o, r)
      s.callers = o.callers
      for cn, ed in pairs(r.callers) do s.callers[cn] = add(s.callers[cn], ed) end
      out[name] = s
    end
  end
  return out
end

local have_dumps = core.write_dump ~= nil and core.read_dump ~= nil

describe("dumps", function()
  local files = {}
  local function tmp(suffix)
    local n = tmpname() .. (suffix or ".prof")
    files[#files + 1] = n
    return n
  end
  after_each(function()
    for _, f in ipairs(files) do os.remove(f) end
    files = {}
  end)

  it("the C reader and writer exist", function()
    assert.is_function(core.write_dump)
    assert.is_function(core.read_dump)
    assert.is_function(core.methods.snapshot)
  end)

  if not have_dumps then return end

  it("round trip: every number loaded equals p:snapshot()", function()
    local p = profile(program_a)
    local path = tmp()
    assert.are.equal(p, p:dump_stats(path))
    local d = cprof.load(path)
    local snap = p:snapshot()
    assert_same_data(snap, d)
    for k, v in pairs(snap.meta) do
      if k ~= "pid" then assert.are.equal(v, d.meta[k], "meta." .. k) end
    end
    assert.are.equal(cprof.getpid(), d.meta.pid)
    assert.are.equal(cprof.command_line(), d.meta.command)
    assert.is_string(d.meta.host)
    assert.are.same(by_name(p:getstats()), by_name(data.to_stats(d)))
  end)

  it("merging two dumps of the same program doubles every number", function()
    local p1, p2 = profile(program_a), profile(program_a)
    local f1, f2 = tmp(), tmp()
    p1:dump_stats(f1)
    p2:dump_stats(f2)
    local m = data.merge(cprof.load(f1), cprof.load(f2))
    local one = p1:snapshot()
    for section in pairs(COLUMNS) do
      assert.are.equal(one[section].n, m[section].n, section .. ".n")
    end
    local want = canonical(one)
    for _, section in pairs(want) do
      for _, r in pairs(section) do
        for k = 1, 4 do r[k] = 2 * r[k] end
      end
    end
    assert.are.same(want, canonical(m))
    assert.are.equal(2, m.meta.merged)
    -- Stats over the two files: the same sums, and pstats' two file lines
    local st = stats.new(f1, f2)
    assert.are.equal(2, #st.files)
    assert.are.same(by_name(data.to_stats(m)), by_name(data.to_stats(data.from_stats(st))))
  end)

  it("merging dumps of two programs gives the sum of the two profiles", function()
    local pa, pb = profile(program_a), profile(program_b)
    local fa, fb = tmp(), tmp()
    pa:dump_stats(fa)
    pb:dump_stats(fb)
    local want = sum(by_name(pa:getstats()), by_name(pb:getstats()))
    local m = data.merge(cprof.load(fa), cprof.load(fb))
    assert.are.same(want, by_name(data.to_stats(m)))
    assert.are.same(want, by_name(data.to_stats(data.from_stats(stats.new(fa, fb)))))
    -- the tree: every node's numbers are the sum over the paths of both profiles
    local na, nb = pa:snapshot().nodes, pb:snapshot().nodes
    local calls = 0
    for i = 1, na.n do calls = calls + na.ncalls[i] end
    for i = 1, nb.n do calls = calls + nb.ncalls[i] end
    local merged = 0
    for i = 1, m.nodes.n do
      merged = merged + m.nodes.ncalls[i]
      assert.is_true(m.nodes.parent[i] < i)
    end
    assert.are.equal(calls, merged)
  end)

  it("Stats:dump_stats writes a dump that loads back to the same report", function()
    local st = stats.new(profile(program_a):getstats())
    local path = tmp()
    st:dump_stats(path)
    local again = stats.new(path)
    assert.are.same(by_name(data.to_stats(data.from_stats(st))),
      by_name(data.to_stats(data.from_stats(again))))
    assert.are.equal(0, cprof.load(path).nodes.n)
  end)

  it("cprof.run with a file name writes a loadable dump and prints nothing", function()
    local path = tmp()
    local stdout = io.stdout
    local printed = {}
    io.stdout = { write = function(_, ...) printed[#printed + 1] = table.concat({ ... }) end }
    local ok, p = pcall(cprof.run, "local x = 0 for i = 1, 10 do x = x + #tostring(i) end", path)
    io.stdout = stdout
    assert.is_true(ok, tostring(p))
    assert.are.same({}, printed)
    local d = cprof.load(path)
    assert.is_true(d.frames.n >= 1)
    local names = {}
    for i = 1, d.frames.n do names[d.frames.name[i]] = d.frames.ncalls[i] end
    assert.are.equal(10, names.tostring)
  end)

  it("cprof.runctx with a file name; an error in the code still writes the dump", function()
    local path = tmp()
    local env = { f = function() return 1 end }
    cprof.runctx("f() f()", env, nil, path)
    local d = cprof.load(path)
    assert.is_true(d.frames.n >= 1)
    local path2 = tmp()
    assert.has_error(function() cprof.runctx("f() error('boom', 0)", env, { error = error }, path2) end,
      "boom")
    assert.is_true(cprof.load(path2).frames.n >= 1)
  end)

  it("errors name the file: unwritable path, missing file, bad file", function()
    local p = profile(program_b)
    local dir = tmpname()
    local bad_path = dir .. "/no/such/dir/x.prof"
    local ok, err = pcall(p.dump_stats, p, bad_path)
    assert.is_false(ok)
    assert.matches("^cprof: " .. bad_path:gsub("%p", "%%%0") .. ": ", err)
    ok, err = pcall(cprof.load, bad_path)
    assert.is_false(ok)
    assert.matches("^cprof: " .. bad_path:gsub("%p", "%%%0") .. ": ", err)
    local junk = tmp()
    write(junk, "this is not a profile\n")
    ok, err = pcall(cprof.load, junk)
    assert.is_false(ok)
    assert.matches("^cprof: " .. junk:gsub("%p", "%%%0") .. ": ", err)
    assert.has_error(function() p:dump_stats(42) end)
  end)
end)

-- cprof.auto with CPROF_OUT, in a child process.
local function run(script, env)
  local o, e, status = S.run_lua(script, "-l cprof.auto", env)
  return o, e, status
end

describe("cprof.auto with CPROF_OUT", function()
  if not have_dumps then
    it("needs the dump writer", function() assert.is_function(core.write_dump) end)
    return
  end

  local SCRIPT = [[
local function f(n) if n == 0 then return 0 end return 1 + f(n - 1) end
print(f(5))
]]

  local function calls_of(d, name)
    for i = 1, d.frames.n do
      if d.frames.name[i] == name then return d.frames.ncalls[i] end
    end
  end

  it("writes the dump at a normal exit, and prints the report only with CPROF_REPORT=1", function()
    local path = tmpname() .. ".prof"
    local out, err, status = run(SCRIPT, "CPROF_OUT=" .. path)
    assert.are.equal("5\n", out)
    assert.are.equal(0, status)
    assert.are.equal("", err, "as python -m cProfile -o: a dump and no report")
    out, err, status = run(SCRIPT, "CPROF_REPORT=1 CPROF_OUT=" .. path)
    assert.are.equal("5\n", out)
    assert.are.equal(0, status)
    assert.matches("function calls", err)
    local d = cprof.load(path)
    os.remove(path)
    assert.are.equal(6, calls_of(d, "f"))
    assert.are.equal(1, calls_of(d, "print"))
    assert.matches("cprof%.auto", d.meta.command)
  end)

  it("writes the dump on os.exit without closing the state; CPROF_QUIET=1 prints no report", function()
    local path = tmpname() .. ".prof"
    local out, err, status = run(SCRIPT .. "os.exit(3)\n", "CPROF_QUIET=1 CPROF_OUT=" .. path)
    assert.are.equal("5\n", out)
    assert.are.equal(3, status)
    assert.are.equal("", err)
    local d = cprof.load(path)
    os.remove(path)
    assert.are.equal(6, calls_of(d, "f"))
  end)

  it("CPROF_QUIET=1 without CPROF_OUT prints nothing at all", function()
    local out, err, status = run(SCRIPT, "CPROF_QUIET=1")
    assert.are.equal("5\n", out)
    assert.are.equal("", err)
    assert.are.equal(0, status)
  end)

  it("expands %p to the child's process id and %% to %", function()
    local dir = tmpname()
    os.execute("mkdir " .. dir)
    local out, _, status = run("print(require('cprof').getpid())\n",
      "CPROF_QUIET=1 CPROF_OUT='" .. dir .. "/run-%p-%%.prof'")
    assert.are.equal(0, status)
    local pid = assert(tonumber(out:match("^(%d+)\n")))
    local path = dir .. "/run-" .. pid .. "-%.prof"
    assert.is_true(exists(path), path)
    assert.are.equal(pid, cprof.load(path).meta.pid)
    os.remove(path)
    os.remove(dir)
  end)

  it("an unwritable CPROF_OUT gives one line on stderr and keeps the exit status", function()
    local path = tmpname() .. "/missing/dir/out.prof"
    local out, err, status = run(SCRIPT .. "os.exit(4)\n", "CPROF_QUIET=1 CPROF_OUT=" .. path)
    assert.are.equal("5\n", out)
    assert.are.equal(4, status)
    assert.matches("^cprof: " .. path:gsub("%p", "%%%0") .. ": [^\n]+\n$", err)
    local _, _, status2 = run(SCRIPT, "CPROF_OUT=" .. path)
    assert.are.equal(0, status2)
  end)
end)
