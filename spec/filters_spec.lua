-- Record-time filters: Profile{exclude = ..., include = ..., builtins = false}. A function left
-- out is not recorded; its time is its nearest recorded caller's own time, and the functions it
-- calls are that caller's callees. Times here are exact: the timer ticks once per event.
local cprof = require "cprof"
local S = require "spec.support"

-- A library in a file of its own name, which the filters match.
local lib = assert(load([[
local M = {}
function M.each(t, f) for i = 1, #t do f(t[i]) end local kind = type(f) return kind end
function M.twice(f) f() f() end
function M.fail() error("lib failed") end
function M.body(f) f(1) coroutine.yield(1) f(2) return 2 end
return M
]], "@/fake/lib/lib.lua"))()

local function leaf(x) return x end

-- The library's function defined on `line`.
local function lib_entry(st, line)
  for _, e in ipairs(st.entries) do
    if e.file == "/fake/lib/lib.lua" and e.line == line then return e end
  end
end
local function work()
  lib.each({ 1, 2, 3 }, leaf)
  leaf(0)
end

-- The profile of f under options `opts` (ticking timer), as getstats().
local function profile(f, opts)
  opts = opts or {}
  opts.timer, opts.unit = S.ticking(), 1
  local p = cprof.Profile(opts)
  p:runcall(f)
  return p:getstats()
end

-- ncalls, pcalls, tottime, cumtime of the entry of Lua function f, or of the C function `name`.
local function nums(st, f)
  local e = type(f) == "function" and S.entry_of(st, f) or S.find(st, f)
  return e and { e.ncalls, e.pcalls, e.tottime, e.cumtime }
end

local function edge_calls(st, caller, callee)
  local _, ci = S.entry_of(st, caller)
  local ce = S.entry_of(st, callee)
  return ce and ci and ce.callers[ci] and ce.callers[ci].ncalls
end

local function has_file(st, pattern)
  for _, e in ipairs(st.entries) do if e.file:find(pattern) then return true end end
  return false
end

describe("the exclude filter", function()
  it("charges an excluded function's time to its caller, with exact counts for the rest", function()
    local full = profile(work)
    local st = profile(work, { exclude = "^/fake/lib/" })
    assert.is_false(has_file(st, "^/fake/lib/"))
    -- The builtin called by the excluded function is the library's work too.
    assert.is_nil(S.find(st, "type"))
    assert.is_not_nil(S.find(full, "type"))
    -- work calls leaf itself once and through the library three times: four calls on one edge.
    assert.are.same({ 4, 4 }, { nums(st, leaf)[1], nums(st, leaf)[2] })
    assert.are.equal(4, edge_calls(st, work, leaf))
    assert.are.same(nums(full, leaf), nums(st, leaf))
    -- work's own time now holds each's and type's; its cumulative time is the same.
    local each = lib_entry(full, 2)
    assert.are.equal(nums(full, work)[3] + each.tottime + S.find(full, "type").tottime, nums(st, work)[3])
    assert.are.equal(nums(full, work)[4], nums(st, work)[4])
    S.assert_adds_up(st)
  end)

  it("takes a list of patterns, and the include filter keeps only the files it finds", function()
    local st = profile(work, { exclude = { "nothing", "/lib/" } })
    assert.is_false(has_file(st, "^/fake/lib/"))
    local inc = profile(work, { include = "^/fake/" })
    -- Only the library's functions are left (and C functions they call: builtins are kept).
    for _, e in ipairs(inc.entries) do
      assert.is_true(e.file == "/fake/lib/lib.lua" or e.what == "C", e.file)
    end
    assert.are.equal(1, lib_entry(inc, 2).ncalls)
    assert.are.equal(1, S.find(inc, "type").ncalls)
  end)

  it("keeps recursion and pcall's errors exact through an excluded function", function()
    local function rec(n)
      if n == 0 then return pcall(lib.fail) end
      lib.twice(function() end)
      local ok = rec(n - 1)
      return ok
    end
    local function main() rec(3) leaf(1) end
    local st = profile(main, { exclude = "^/fake/lib/" })
    assert.are.same({ 4, 1 }, { nums(st, rec)[1], nums(st, rec)[2] })
    assert.are.equal(1, nums(st, leaf)[1])
    assert.are.equal(1, edge_calls(st, main, leaf))
    -- pcall (a builtin called by rec, which is recorded) stays; error, called by lib.fail, not.
    assert.are.equal(1, S.find(st, "pcall").ncalls)
    assert.is_nil(S.find(st, "error"))
    S.assert_adds_up(st)
  end)

  it("follows coroutines whose body is excluded: its callees are the resumer's", function()
    local function main()
      local co = coroutine.create(lib.body)
      coroutine.resume(co, leaf)
      coroutine.resume(co)
      leaf(3)
    end
    local full = profile(main)
    local st = profile(main, { exclude = "^/fake/lib/" })
    assert.are.equal(3, nums(st, leaf)[1])
    local resume = S.find(st, "coroutine.resume")
    assert.are.equal(2, resume.ncalls)
    local _, ri = S.find(st, "coroutine.resume")
    assert.are.equal(2, S.entry_of(st, leaf).callers[ri].ncalls)
    -- The body's own time is resume's own time now; the totals are the same.
    local body = lib_entry(full, 5)
    local yield = S.find(full, "coroutine.yield")
    assert.are.equal(S.find(full, "coroutine.resume").tottime + body.tottime + yield.tottime, resume.tottime)
    assert.are.equal(S.find(full, "coroutine.resume").cumtime, resume.cumtime)
    assert.are.equal(nums(full, main)[4], nums(st, main)[4])
    S.assert_adds_up(st)
  end)
end)

describe("builtins = false", function()
  it("records no C function: their time is the calling Lua function's", function()
    local function f() local t = {} for i = 1, 3 do table.insert(t, i) end return #tostring(t) end
    local full = profile(f)
    local st = profile(f, { builtins = false })
    for _, e in ipairs(st.entries) do assert.are_not.equal("C", e.what) end
    local c_time = S.find(full, "table.insert").tottime + S.find(full, "tostring").tottime
    assert.are.equal(nums(full, f)[3] + c_time, nums(st, f)[3])
    assert.are.equal(nums(full, f)[4], nums(st, f)[4])
  end)

  it("lets pcall's callee be its Lua caller's callee", function()
    local function g() error("x") end
    local function f() pcall(g) pcall(g) end
    local st = profile(f, { builtins = false })
    assert.are.equal(2, edge_calls(st, f, g))
    assert.are.equal(2, nums(st, g)[1])
  end)
end)

describe("the filter options", function()
  it("are checked when the profile is made", function()
    assert.has_error(function() cprof.Profile { exclude = 1 } end,
      "cprof: option 'exclude' must be a Lua pattern on file names or a list of them, not a number")
    assert.has_error(function() cprof.Profile { include = { "a", true } } end,
      "cprof: option 'include': item 2 must be a Lua pattern (a string), not a boolean")
    assert.has_error(function() cprof.Profile { exclude = "[a" } end,
      "cprof: option 'exclude': pattern '[a': malformed pattern (missing ']')")
    assert.has_error(function() cprof.Profile { builtins = "no" } end,
      "cprof: option 'builtins' must be true or false, not a string")
  end)

  it("are kept by clear() and by the profiles calibrate makes", function()
    local p = cprof.Profile { exclude = "^/fake/lib/", timer = S.ticking(), unit = 1 }
    p:runcall(work)
    p:clear()
    p:runcall(work)
    assert.is_false(has_file(p:getstats(), "^/fake/lib/"))
    local q = p:sibling()
    q:runcall(work)
    assert.is_false(has_file(q:getstats(), "^/fake/lib/"))
  end)

  it("come from CPROF_EXCLUDE, CPROF_INCLUDE and CPROF_BUILTINS under cprof.auto", function()
    local script = [[
local lib = load("local M = {} function M.f(g) return g() end return M", "@/fake/lib/l.lua")()
local function g() return 1 end
lib.f(g) lib.f(g)
]]
    local _, err = S.run_lua(script, "-l cprof.auto", "CPROF_EXCLUDE='^/fake/;nothing' CPROF_BUILTINS=0")
    assert.not_matches("/fake/", err)
    assert.not_matches("{", err)
    assert.matches("\n +2 +[%d.]+ +[%d.]+ +[%d.]+ +[%d.]+ [^\n]*:2%(", err)
    _, err = S.run_lua("print(1)", "-l cprof.auto", "CPROF_EXCLUDE='[' CPROF_QUIET=1")
    assert.matches("cprof: CPROF_EXCLUDE/CPROF_INCLUDE: option 'exclude': pattern '%[': malformed pattern", err)
  end)
end)
