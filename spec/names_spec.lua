-- Function names in reports (docs/SEMANTICS.md, "Names"): a Lua function is named by the line
-- that defines it, then by a call site, then by a global name, then "<anon>"; a function made by
-- coroutine.wrap by the body it runs; the standard library's iterators by what they iterate.
-- Issue 13, points 19 and 20; issue 17, "Names from the first call site stick".
local cprof = require "cprof"
local S = require "spec.support"

local coroutine, pcall, load, string, io, ipairs, os, assert, type =
  coroutine, pcall, load, string, io, ipairs, os, assert, type
local utf8 = rawget(_G, "utf8")

local function profile(f, ...)
  local p = cprof.Profile { timer = "counter" }
  p:runcall(f, ...)
  return p:getstats(), p
end

-- Profiles the program `src` run from a file of its own; returns the stats and the file's name
-- as reports show it.
local function profile_file(src)
  local path = S.tmpname(".lua")
  S.write_file(path, src)
  local chunk = assert(loadfile(path))
  local st = profile(chunk)
  os.remove(path)
  return st, path
end

-- name -> ncalls of every Lua function of `file`.
local function lua_names(st, file)
  local out = {}
  for _, e in ipairs(st.entries) do
    if e.file == file and e.what ~= "C" then out[e.name] = e.ncalls end
  end
  return out
end

describe("names from definitions", function()
  it("names a function passed as an argument by its definition, not by the parameter", function()
    local st, file = profile_file([[
local function do_(f, n) for i = 1, n do f(i) end end
local function refine(x) return x * 2 end
do_(refine, 10)
]])
    assert.are.same({ ["<main chunk>"] = 1, do_ = 1, refine = 10 }, lua_names(st, file))
  end)

  it("names functions called through pcall and tail calls, which no call site names", function()
    local st, file = profile_file([[
local function bad() error("no") end
local function tail() return 1 end
local function caller() return tail() end
pcall(bad)
caller()
]])
    assert.are.same({ ["<main chunk>"] = 1, bad = 1, tail = 1, caller = 1 }, lua_names(st, file))
  end)

  it("reads every form of definition, as written", function()
    local path = S.tmpname(".lua")
    S.write_file(path, [[
local M = {}
function M.parse() return 1 end
function M:method() return 2 end
M.sub = {}
function M.sub.deep() return 3 end
M.field = function() return 4 end
local assigned = function() return 5 end
cprof_names_global = function() return 6 end
function _G.cprof_names_g2() return 7 end
local t = {
  ["the key"] = function() return 8 end,
  plain = function() return 9 end,
}
local function spaced   ( ) return 10 end -- function in a comment
M.parse() M:method() M.sub.deep() M.field() assigned()
cprof_names_global() cprof_names_g2() t["the key"]() t.plain() spaced()
]])
    local st = profile(assert(loadfile(path)))
    os.remove(path)
    _G.cprof_names_global, _G.cprof_names_g2 = nil, nil
    assert.are.same({
      ["<main chunk>"] = 1, ["M.parse"] = 1, ["M:method"] = 1, ["M.sub.deep"] = 1,
      ["M.field"] = 1, assigned = 1, cprof_names_global = 1, cprof_names_g2 = 1,
      ["the key"] = 1, plain = 1, spaced = 1,
    }, lua_names(st, path))
  end)

  it("reads a local with an attribute (Lua 5.4)", function()
    if S.jit then
      pending("LuaJIT has no attributes")
      return
    end
    local st, file = profile_file("local konst <const> = function() return 1 end\nkonst()\n")
    assert.are.same({ ["<main chunk>"] = 1, konst = 1 }, lua_names(st, file))
  end)

  it("falls back to the call site, then the global name, then <anon>", function()
    local st, file = profile_file([[
local fs = {}
fs[1] = function() return 1 end
fs[2] = function() return 2 end
fs[3] = function() return 3 end
local named = fs[1]
named()
cprof_names_global3 = fs[2]
pcall(fs[2])
pcall(fs[3])
]])
    _G.cprof_names_global3 = nil
    assert.are.same({ ["<main chunk>"] = 1, named = 1, cprof_names_global3 = 1, ["<anon>"] = 1 },
      lua_names(st, file))
  end)

  it("prefers the definition to a global name", function()
    local st, file = profile_file([[
local M = {}
function M.run() return 1 end
package.loaded.cprof_names_mod = M
pcall(M.run)
]])
    package.loaded.cprof_names_mod = nil
    assert.are.same({ ["<main chunk>"] = 1, ["M.run"] = 1 }, lua_names(st, file))
  end)

  it("names nothing from a line that defines two functions", function()
    local st, file = profile_file([[
local function outer() return function() return 1 end end
local inner = outer()
pcall(inner)
]])
    -- one row for both (the same line), named by the only call site that names it
    assert.are.same({ ["<main chunk>"] = 1, outer = 2 }, lua_names(st, file))
  end)

  it("reads a string chunk's own text, and quietly nothing where there is no source", function()
    local named = load("local x = 1\nlocal function from_text() return x end\nreturn from_text")()
    local given = load("local function hidden() return 1 end return hidden", "=given")()
    local stripped = load(string.dump(load(
      "local function gone() return 1 end return gone", "@nofile.lua")(), true))
    local path = S.tmpname(".lua")
    S.write_file(path, "local function removed() return 1 end return removed\n")
    local removed = assert(loadfile(path))()
    os.remove(path)
    local st = profile(function() pcall(named) pcall(given) pcall(stripped) pcall(removed) end)
    assert.are.equal("from_text", S.entry_of(st, named).name)
    assert.are.equal("<anon>", S.entry_of(st, given).name)
    assert.are.equal("<anon>", S.find(st, "<anon>", debug.getinfo(stripped, "S").linedefined).name)
    local e
    for _, x in ipairs(st.entries) do if x.file == path then e = x end end
    assert.are.equal("<anon>", e.name)
  end)

  it("names a function first seen after a snapshot at the next one", function()
    local path = S.tmpname(".lua")
    S.write_file(path, "local function first() return 1 end\nlocal function second() return 2 end\n"
      .. "return first, second\n")
    local first, second = assert(loadfile(path))()
    local p = cprof.Profile { timer = "counter" }
    p:runcall(pcall, first)
    local st = p:getstats()
    p:runcall(pcall, second)
    local st2 = p:getstats()
    os.remove(path)
    assert.are.equal("first", S.entry_of(st, first).name)
    assert.are.same({ "first", "second" }, { S.entry_of(st2, first).name, S.entry_of(st2, second).name })
  end)

  it("names every function of a long chunk, reading it once", function()
    local n = 3000
    local parts = {}
    for i = 1, n do parts[i] = ("function t.f%d() return %d end t.f%d()"):format(i, i, i) end
    local chunk = assert(load("local t = {}\n" .. table.concat(parts, "\n")))
    local st = profile(chunk)
    local named = 0
    for _, e in ipairs(st.entries) do
      if e.what == "Lua" and e.name == "t.f" .. e.line - 1 then named = named + 1 end
    end
    assert.are.equal(n, named)
  end)
end)

describe("names of functions made by coroutine.wrap", function()
  local function gen(n) return coroutine.wrap(function() for i = 1, n do coroutine.yield(i) end end) end
  local function squares(src)
    return coroutine.wrap(function() for v in src do coroutine.yield(v * v) end end)
  end

  -- `below`: the body is defined that many lines below the function that returns the wrap
  local function wrap_name(e, below) return ("wrap(%s:%d)"):format(e.file, e.line + (below or 0)) end

  it("gives one row per body, so that two pipelines do not look recursive", function()
    local st = profile(function()
      local s = 0
      for v in squares(gen(5)) do s = s + v end
      for v in gen(3) do s = s + v end
      return s
    end)
    local g, sq = S.entry_of(st, gen), S.entry_of(st, squares)
    local wg, wsq = S.find(st, wrap_name(g)), S.find(st, wrap_name(sq, 1))
    -- gen(5): 5 values and the end; gen(3): 3 and the end. squares: 5 and the end.
    assert.are.same({ 10, 10 }, { wg.ncalls, wg.pcalls })
    assert.are.same({ 6, 6 }, { wsq.ncalls, wsq.pcalls })
    assert.is_nil(S.find(st, "function made by coroutine.wrap"))
    S.assert_adds_up(st)
  end)

  it("gives each body a thread of its own in the exports' time lines", function()
    local p = cprof.Profile { timer = "counter" }
    p:runcall(function()
      local s = 0
      for v in gen(2) do s = s + v end
      for v in squares(gen(2)) do s = s + v end
      return s
    end)
    local _, names = require("cprof.export").model(p):threads()
    table.sort(names)
    -- squares' body has no name: the model tells it by its line
    assert.are.equal(3, #names)
    assert.matches("^coroutine <anon>:%d+$", names[1])
    assert.are.same({ "coroutine gen", "main" }, { names[2], names[3] })
  end)

  it("names one whose coroutine finished, or whose body is a C function, as every wrap", function()
    local function once() return 1 end
    local st = profile(function()
      local g = coroutine.wrap(once)
      g()
      pcall(g) -- cannot resume dead coroutine
      local c = coroutine.wrap(string.len)
      c("abc")
    end)
    assert.are.equal(1, S.find(st, wrap_name((S.entry_of(st, once)))).ncalls)
    assert.are.equal(2, S.find(st, "function made by coroutine.wrap").ncalls)
  end)

  it("finds the body of a coroutine suspended before enable()", function()
    local function deep(k) if k > 0 then return deep(k - 1) end coroutine.yield() return 0 end
    local function body() while true do deep(6) end end
    local g = coroutine.wrap(body)
    g()
    local st = profile(function() g() g() end)
    local line = debug.getinfo(body, "S").linedefined
    local file = S.entry_of(st, deep).file
    assert.are.equal(2, S.find(st, ("wrap(%s:%d)"):format(file, line)).ncalls)
  end)
end)

describe("names of the standard library's unnamed C functions", function()
  it("names the iterators of ipairs, string.gmatch, io.lines and utf8.codes", function()
    local path = S.tmpname(".txt")
    S.write_file(path, "a\nb\n")
    local st = profile(function()
      for _ in ipairs({ 1, 2, 3 }) do end
      for _ in ("a b c"):gmatch("%a") do end
      for _ in io.lines(path) do end
      local f = io.open(path)
      for _ in f:lines() do end
      f:close()
      if utf8 then for _ in utf8.codes("héllo") do end end
    end)
    os.remove(path)
    local calls = {}
    for _, e in ipairs(st.entries) do
      if e.what == "C" then calls[e.name] = e.ncalls end
      assert.is_nil(e.name:match("^C function"), e.name)
    end
    -- each iterator is called once more than it has values, to say it has no more
    assert.are.equal(4, calls["ipairs iterator"])
    assert.are.equal(4, calls["string.gmatch iterator"])
    assert.are.equal(6, calls["io.lines iterator"])
    assert.are.equal(1, calls["file:lines"])
    assert.are.equal(1, calls["file:close"])
    if utf8 then assert.are.equal(6, calls["utf8.codes iterator"]) end
  end)

  it("names require's searchers by their place in package's list", function()
    -- a module that is nowhere: require asks every searcher in turn, once
    local st = profile(pcall, require, "cprof_spec_no_such_module")
    local list = package.searchers and "searchers" or "loaders"
    local n = #(package.searchers or package.loaders)
    local calls = {}
    for _, e in ipairs(st.entries) do
      if e.what == "C" then calls[e.name] = e.ncalls end
      assert.is_nil(e.name:match("^C function"), e.name)
    end
    assert.are.equal(4, n)
    for i = 1, n do assert.are.equal(1, calls[("package.%s[%d]"):format(list, i)], i) end
  end)

  it("names the metamethods of types C libraries register by the type's name", function()
    local has_lpeg, lpeg = pcall(require, "lpeg")
    local st = profile(function()
      -- past lauxlib's buffer on the C stack: Lua 5.4 frees its box with a call
      local s = string.rep("x", 5000)
      if has_lpeg then assert(lpeg.match(lpeg.P "a" * lpeg.P "b", "ab") == 3) end
      return s
    end)
    local calls = {}
    for _, e in ipairs(st.entries) do
      if e.what == "C" then calls[e.name] = e.ncalls end
      assert.is_nil(e.name:match("^C function"), e.name)
    end
    assert.are.equal(not S.jit and 1 or nil, calls["_UBOX*:__gc"])
    if has_lpeg then assert.are.equal(1, calls["lpeg-pattern:__mul"]) end
  end)

  it("learns them without calling a library function the program replaced", function()
    local out = S.run_lua([[
      local calls = 0
      io.lines = function() calls = calls + 1 return function() end end
      local cprof = require "cprof"
      local p = cprof.Profile()
      p:enable() p:disable()
      io.write(calls)
    ]])
    assert.are.equal("0", out)
  end)
end)

describe("names of cprof's own C methods", function()
  -- name -> ncalls of the C functions p counted, none of them left unnamed.
  local function c_calls(p)
    local calls = {}
    for _, e in ipairs(p:getstats().entries) do
      if e.what == "C" then
        calls[e.name] = e.ncalls
        assert.is_nil(e.name:match("^C function"), e.name)
      end
    end
    return calls
  end

  it("names the C methods behind cprof's Lua wrappers, which no module holds", function()
    -- A program that takes a snapshot while profiling calls methods:snapshot (Lua), which calls
    -- the C snapshot its wrapper replaced in the methods table.
    local p = cprof.Profile { timer = "counter" }
    p:enable()
    p:snapshot()
    p:snapshot()
    p:disable()
    local calls = c_calls(p)
    assert.are.equal(2, calls["cprof.Profile:snapshot"])
    -- disable(), open when the profile stopped, is in the function table though not counted;
    -- cprof's Lua side marks it internal again, which must not lose its name.
    local names = {}
    for _, name in ipairs(p:snapshot().frames.name) do names[name] = true end
    assert.is_true(names["cprof.Profile:disable"])
  end)

  it("names the dump codec's protected bodies, which it runs under lua_pcall", function()
    local path = S.tmpname(".prof")
    local p = cprof.Profile { timer = "counter" }
    p:enable()
    p:dump_stats(path)
    require("cprof.stats").new(path)
    p:disable()
    os.remove(path)
    local calls = c_calls(p)
    assert.are.equal(1, calls["cprof.core.write_dump (body)"])
    assert.are.equal(1, calls["cprof.core.read_dump (body)"])
  end)
end)

describe("names of C functions nothing names", function()
  it("are their dynamic symbols when the symbol is at their address", function()
    -- luaopen_cprof_core, reached through package.loadlib only: no module holds it
    local so = assert(package.searchpath("cprof.core", package.cpath))
    local out, err, status = S.run_lua(([[
local cprof = require "cprof"
local open = assert(package.loadlib(%q, "luaopen_cprof_core"))
local p = cprof.Profile()
p:runcall(open)
for _, e in ipairs(p:getstats().entries) do
  if e.what == "C" and e.name:match("cprof") then io.write(e.name, "\n") end
end
]]):format(so), "", S.child_env())
    assert.are.equal(0, status, err)
    assert.matches("^luaopen_cprof_core\n", out)
  end)
end)
