-- Helpers of the export specs: profiles whose every number is known, the real readers (found,
-- or the reason they are not there), and exporting to a string.
local S = require "spec.support"
local cjson = require "cjson"

local X = {}

X.ROOT = S.ROOT
X.READERS = S.ROOT .. "/build/export-readers"

-------------------------------------------------------------------------------------------------
-- Profiles

local function columns(names, rows)
  local g = { n = #rows }
  for i, name in ipairs(names) do
    g[name] = {}
    for r, row in ipairs(rows) do g[name][r] = row[i] end
  end
  return g
end

local FRAME_COLS = { "kind", "file", "line", "lastline", "name", "ncalls", "pcalls", "tottime", "cumtime" }
local EDGE_COLS = { "caller", "callee", "ncalls", "pcalls", "tottime", "cumtime" }
local NODE_COLS = { "parent", "frame", "ncalls", "pcalls", "tottime", "cumtime" }
local MEM_COLS = { "alloc_count", "alloc_bytes", "free_count", "free_bytes", "min_size", "max_size" }

local function meta(total)
  return { lua_version = "Lua 5.4", timer = "counter", unit = 1, bias = 0, command = "lua main.lua",
           start_time = 1700000000.5, total_time = total, pid = 1, host = "spec", tree_cap = 1000000,
           tree_folded = 0, dropped = 0 }
end

--- The profile of shared/reference/pstats/samples (SPEC.md §7): main(1) -> work(1) -> fib (9 calls,
--- 3 primitive, recursive) and work -> string.rep (2 calls); 100 ms in all, self times main 10,
--- work 20, fib 60, string.rep 10.  fib's recursion is in one node, as recursion = 1 has it.
--- With `memory`, the nodes have memory columns: main allocates 1000 bytes in 10 blocks (all
--- freed), work 4000 in 20 (1000 live), fib 9000 in 90 (3000 live), string.rep 2000 in 2.
function X.sample(memory)
  local d = {
    meta = meta(0.1),
    frames = columns(FRAME_COLS, {
      { "Lua", "main.lua", 1, 4, "main", 1, 1, 0.01, 0.1 },
      { "Lua", "main.lua", 5, 9, "work", 1, 1, 0.02, 0.09 },
      { "Lua", "main.lua", 10, 13, "fib", 9, 3, 0.06, 0.06 },
      { "C", "~", 0, -1, "string.rep", 2, 2, 0.01, 0.01 },
    }),
    edges = columns(EDGE_COLS, {
      { 1, 2, 1, 1, 0.02, 0.09 },
      { 2, 3, 3, 3, 0.03, 0.06 },
      { 3, 3, 6, 4, 0.03, 0.03 },
      { 2, 4, 2, 2, 0.01, 0.01 },
    }),
    nodes = columns(NODE_COLS, {
      { 0, 1, 1, 1, 0.01, 0.1 },
      { 1, 2, 1, 1, 0.02, 0.09 },
      { 2, 3, 9, 3, 0.06, 0.06 },
      { 2, 4, 2, 2, 0.01, 0.01 },
    }),
  }
  if memory then
    local mem = columns(MEM_COLS, {
      { 10, 1000, 10, 1000, 16, 400 },
      { 20, 4000, 15, 3000, 32, 800 },
      { 90, 9000, 60, 6000, 100, 100 },
      { 2, 2000, 2, 2000, 1000, 1000 },
    })
    for _, c in ipairs(MEM_COLS) do d.nodes[c] = mem[c] end
    d.meta.memory = true
  end
  return d
end

--- A profile with a coroutine: main -> coroutine.resume -> gen (the body, 3 ms) -> string.rep
--- (1 ms); main's own time 5 ms, coroutine.resume's 1 ms.
function X.with_coroutine()
  return {
    meta = meta(0.01),
    frames = columns(FRAME_COLS, {
      { "main", "co.lua", 0, 20, "<main chunk>", 1, 1, 0.005, 0.010 },
      { "C", "~", 0, -1, "coroutine.resume", 2, 2, 0.001, 0.005 },
      { "Lua", "co.lua", 3, 8, "gen", 1, 1, 0.003, 0.004 },
      { "C", "~", 0, -1, "string.rep", 4, 4, 0.001, 0.001 },
    }),
    edges = columns(EDGE_COLS, {
      { 1, 2, 2, 2, 0.001, 0.005 },
      { 2, 3, 1, 1, 0.003, 0.004 },
      { 3, 4, 4, 4, 0.001, 0.001 },
    }),
    nodes = columns(NODE_COLS, {
      { 0, 1, 1, 1, 0.005, 0.010 },
      { 1, 2, 2, 2, 0.001, 0.005 },
      { 2, 3, 1, 1, 0.003, 0.004 },
      { 3, 4, 4, 4, 0.001, 0.001 },
    }),
  }
end

--- The same call tree with other numbers: string.rep is gone, fib takes 80 ms in 12 calls, and
--- a new function `log` (main.lua:20, 5 ms) is called by work.
function X.changed()
  local d = X.sample()
  local F, E, N = d.frames, d.edges, d.nodes
  F.ncalls[3], F.tottime[3], F.cumtime[3] = 12, 0.08, 0.08
  F.ncalls[4], F.pcalls[4], F.tottime[4], F.cumtime[4] = 0, 0, 0, 0
  F.n = 5
  F.kind[5], F.file[5], F.line[5], F.lastline[5], F.name[5] = "Lua", "main.lua", 20, 22, "log"
  F.ncalls[5], F.pcalls[5], F.tottime[5], F.cumtime[5] = 1, 1, 0.005, 0.005
  F.cumtime[1], F.cumtime[2] = 0.115, 0.105
  E.ncalls[2], E.tottime[2], E.cumtime[2] = 3, 0.04, 0.08
  E.ncalls[3], E.tottime[3], E.cumtime[3] = 9, 0.04, 0.04
  E.ncalls[4], E.pcalls[4], E.tottime[4], E.cumtime[4] = 0, 0, 0, 0
  E.n = 5
  E.caller[5], E.callee[5], E.ncalls[5], E.pcalls[5], E.tottime[5], E.cumtime[5] = 2, 5, 1, 1, 0.005, 0.005
  N.ncalls[3], N.tottime[3], N.cumtime[3] = 12, 0.08, 0.08
  N.cumtime[1], N.cumtime[2] = 0.115, 0.105
  N.frame[4], N.ncalls[4], N.pcalls[4], N.tottime[4], N.cumtime[4] = 5, 1, 1, 0.005, 0.005
  d.meta.total_time = 0.115
  return d
end

--- A wide and deep random tree of `n` nodes over `nframes` functions (each parent before its
--- children, no function twice on a path), self times of 1 to 1000 microseconds.
function X.big(n, nframes, seed)
  local rnd = seed or 12345
  local function random(k)  -- an LCG, so that every Lua draws the same tree
    rnd = (rnd * 1103515245 + 12345) % 2147483648
    return rnd % k + 1
  end
  local frames, nodes = {}, {}
  for i = 1, nframes do
    frames[i] = { "Lua", "big" .. (i % 7) .. ".lua", i, i + 3, "f" .. i, 0, 0, 0, 0 }
  end
  local path, depth = {}, 0
  local on = {}
  while #nodes < n do
    if depth > 0 and random(30) <= depth then
      on[nodes[path[depth]][2]] = nil
      depth = depth - 1
    end
    local f = random(nframes)
    if not on[f] then
      local t = random(1000) * 1e-6
      nodes[#nodes + 1] = { depth > 0 and path[depth] or 0, f, 1, 1, t, 0 }
      depth = depth + 1
      path[depth] = #nodes
      on[f] = true
      frames[f][6], frames[f][7], frames[f][8] = frames[f][6] + 1, frames[f][7] + 1, frames[f][8] + t
    end
  end
  for k = #nodes, 1, -1 do
    local node = nodes[k]
    node[6] = node[6] + node[5]
    if node[1] > 0 then nodes[node[1]][6] = nodes[node[1]][6] + node[6] end
  end
  return { meta = meta(0), frames = columns(FRAME_COLS, frames), edges = { n = 0 },
           nodes = columns(NODE_COLS, nodes) }
end

--- A call tree of many siblings: main calls f1 .. f500 once each, own times of 1 to 100
--- microseconds that are not whole microseconds (main's own: 1 ms).
function X.siblings()
  local frames, nodes, edges, total = {}, {}, {}, 0.001
  frames[1] = { "Lua", "main.lua", 1, 600, "main", 1, 1, 0.001, 0 }
  nodes[1] = { 0, 1, 1, 1, 0.001, 0 }
  for i = 1, 500 do
    local t = (1000 + i * 7919 % 99001) * 1e-9
    frames[i + 1] = { "Lua", "main.lua", i + 1, i + 1, "f" .. i, 1, 1, t, t }
    nodes[i + 1] = { 1, i + 1, 1, 1, t, t }
    edges[i] = { 1, i + 1, 1, 1, t, t }
    total = total + t
  end
  frames[1][9], nodes[1][6] = total, total
  return { meta = meta(total), frames = columns(FRAME_COLS, frames), edges = columns(EDGE_COLS, edges),
           nodes = columns(NODE_COLS, nodes) }
end

--- Functions f1 ... fn of gen.lua, each with 1 ms of its own time: called one by the other
--- (a chain n deep), or with `flat` all by f1.
function X.generated(n, flat)
  local d = X.sample()
  local F = { n = n, kind = {}, file = {}, line = {}, lastline = {}, name = {}, ncalls = {}, pcalls = {},
              tottime = {}, cumtime = {} }
  local N = { n = n, parent = {}, frame = {}, ncalls = {}, pcalls = {}, tottime = {}, cumtime = {} }
  for i = 1, n do
    local cum = (i == 1 and n or flat and 1 or n - i + 1) * 0.001
    F.kind[i], F.file[i], F.line[i], F.lastline[i], F.name[i] = "Lua", "gen.lua", i, i, "f" .. i
    F.ncalls[i], F.pcalls[i], F.tottime[i], F.cumtime[i] = 1, 1, 0.001, cum
    N.parent[i], N.frame[i] = flat and i > 1 and 1 or i - 1, i
    N.ncalls[i], N.pcalls[i], N.tottime[i], N.cumtime[i] = 1, 1, 0.001, cum
  end
  d.frames, d.edges, d.nodes = F, { n = 0 }, N
  return d
end

--- X.sample() with every time `factor` times as long and fib's `extra` seconds more: another
--- run of the same program.
function X.rerun(factor, extra)
  local d = X.sample()
  for _, cols in ipairs({ d.frames, d.edges, d.nodes }) do
    for i = 1, cols.n do cols.tottime[i], cols.cumtime[i] = cols.tottime[i] * factor, cols.cumtime[i] * factor end
  end
  d.frames.tottime[3], d.frames.cumtime[3] = d.frames.tottime[3] + extra, d.frames.cumtime[3] + extra
  d.nodes.tottime[3] = d.nodes.tottime[3] + extra
  for _, k in ipairs({ 1, 2, 3 }) do d.nodes.cumtime[k] = d.nodes.cumtime[k] + extra end
  return d
end

-- A program with recursion (fib), mutual recursion (even/odd), C functions and a coroutine.
local function workload()
  local function fib(n) if n < 2 then return n end return fib(n - 1) + fib(n - 2) end
  local odd
  local function even(n)
    if n == 0 then return true end
    local r = odd(n - 1)
    return r
  end
  function odd(n)
    if n == 0 then return false end
    local r = even(n - 1)
    return r
  end
  local function gen()
    for i = 1, 5 do coroutine.yield(string.rep("x", i)) end
  end
  local function work()
    local parts = {}
    for s in coroutine.wrap(gen) do parts[#parts + 1] = s end
    return table.concat(parts) .. fib(12) .. tostring(even(9))
  end
  for _ = 1, 3 do work() end
end

--- Profiles the workload above with the counter timer (exact, reproducible numbers) and writes
--- the dump to `path`; returns path.
function X.live_dump(path)
  local p = require("cprof").Profile({ timer = "counter" })
  p:runcall(workload)
  p:dump_stats(path)
  return path
end

--- A program whose names are hard on every format: chunk names that are not UTF-8 (as
--- load("return 1", "\237lo") makes them), that hold the separators of the formats (";" of
--- folded stacks, a line break, which ends a line of callgrind), two chunks with one chunk name
--- ([string "local x = 1..."]), function names that are not UTF-8, mutual recursion and a
--- coroutine.
X.HOSTILE_PROGRAM = [==[
local chunks = {
  load("return 1", "\237lo"),
  load("local t = {} t['h\255'] = function(n) return n + 1 end return t['h\255'](1)", "=caf\233;x\ny"),
  load("return select('#', 1, 2)", "@f\255\254.lua"),
  load("local x = 1\nreturn x"),
  load("local x = 1\nreturn x + 1"),
}
local t = {}
t["w\255rk"] = function(n)
  local s = 0
  for i = 1, n do s = s + i end
  return s
end
_G["g\192\175"] = function() return t["w\255rk"](200) end
local odd
local function even(n) if n == 0 then return true end return (odd(n - 1)) end
function odd(n) if n == 0 then return false end return (even(n - 1)) end
local co = coroutine.wrap(function()
  for i = 1, 20 do coroutine.yield(t["w\255rk"](i)) end
end)
for i = 1, 20 do
  for _, f in ipairs(chunks) do f() end
  _G["g\192\175"]()
  even(i)
  co()
end
]==]

--- A program of `n` functions (n >= 3) in one file: f1 calls f2 and f3, fi calls f(2i) and
--- f(2i+1), a binary tree of calls; each does a little work of its own, and every seventh
--- calls string.rep.  The main chunk calls f1 twice.
function X.many_functions_program(n)
  local out = { "local M = {}" }
  for i = 1, n do
    local calls = {}
    if 2 * i <= n then calls[#calls + 1] = ("M.f%d(d + 1)"):format(2 * i) end
    if 2 * i + 1 <= n then calls[#calls + 1] = ("M.f%d(d + 1)"):format(2 * i + 1) end
    if i % 7 == 0 then calls[#calls + 1] = "string.rep('x', d)" end
    out[#out + 1] = ("function M.f%d(d) local s = 0 for j = 1, %d do s = s + j end %s return s end")
      :format(i, i % 13 + 1, table.concat(calls, " "))
  end
  out[#out + 1] = "for _ = 1, 2 do M.f1(0) end"
  return table.concat(out, "\n") .. "\n"
end

--- Runs Lua program `source` under cprof.auto (this spec's interpreter and build) and returns
--- the name of the dump it writes, in the folder `dir`.
function X.program_dump(source, dir, name)
  local dump = dir .. "/" .. name .. ".prof"
  local _, err, status = S.run_lua(source, "-l cprof.auto",
    S.child_env("CPROF_QUIET=1 CPROF_OUT=" .. S.q(dump)))
  assert(status == 0, err)
  return dump
end

--- cprof's own numbers for `source` (anything cprof.stats reads): { [full name] = { ncalls,
--- pcalls, tottime, cumtime } } and the total time.
function X.report(source)
  local stats = require("cprof.stats")
  local st = stats.new(source)
  local out, total = {}, 0
  for _, key in ipairs(st.order) do
    local r = st.stats[key]
    out[stats.func_std_string(key)] = { ncalls = r[2], pcalls = r[1], tottime = r[3], cumtime = r[4],
                                        name = key[3]:gsub("^<(.*)>$", "%1") }
    total = total + r[3]
  end
  return out, total
end

--- Runs a reader's command line with nothing of the spec's process preloaded (make asan
--- preloads the sanitizers, which node, chromium and go must not get); stdout, stderr, status.
function X.run(cmd)
  return S.capture("env -u LD_PRELOAD -u ASAN_OPTIONS -u UBSAN_OPTIONS -u LSAN_OPTIONS " .. cmd)
end

--- The data document embedded in an HTML report (cprof.export.html), decoded, and the page.
X.HTML_DATA = '<script id="cprof-data" type="application/json">'
function X.html_doc(html)
  local i = assert(html:find(X.HTML_DATA, 1, true), "no data element")
  local j = assert(html:find("</script>", i, true))
  return require("cjson").decode(html:sub(i + #X.HTML_DATA, j - 1)), html
end

--- What exporting `source` gives, as a string.
function X.export(format, source, opts)
  local out = S.collector()
  local result = require("cprof.export").export(format, source, out, opts)
  return out.text(), result
end

-------------------------------------------------------------------------------------------------
-- Readers

local function on_path(cmd)
  local _, _, status = S.capture("command -v " .. S.q(cmd) .. " >/dev/null")
  return status == 0
end

--- The command of a reader, or nil and why it is missing (the specs are then pending).
function X.reader(name)
  local cmd, hint = name, "make export-readers installs it"
  if name == "node" or name == "chromium" then
    if not on_path(name) then return nil, name .. " is not installed (" .. hint .. ")" end
    if not S.read_file(X.READERS .. "/node_modules/playwright-core/package.json") or
        not S.read_file(X.READERS .. "/node_modules/speedscope/package.json") then
      return nil, "speedscope and playwright-core are not in build/export-readers (" .. hint .. ")"
    end
    return name
  end
  if not on_path(cmd) then return nil, name .. " is not installed (" .. hint .. ")" end
  return cmd
end

--- Runs the browser jobs (spec/readers/browser.js) and returns their results.
function X.browser(jobs)
  local file = S.tmpname(".json")
  S.write_file(file, cjson.encode(jobs))
  local out, err, status = X.run(("node %s %s %s"):format(S.q(S.SPEC_DIR .. "/readers/browser.js"),
    S.q(S.absolute(X.READERS)), S.q(file)))
  os.remove(file)
  assert(status == 0, "the browser driver failed: " .. tostring(err))
  return cjson.decode(out)
end

--- Seconds from a time as speedscope and pprof print it: "60.00ms", "1.5s", "250us", "90µs",
--- "46:27" (minutes and seconds), or a plain number "60,000,000" (no unit: as it is).
function X.seconds(text)
  local m, sec = text:match("^(%d+):(%d%d)")
  if m then return tonumber(m) * 60 + tonumber(sec) end
  local num, unit = text:match("^([%d.,]+)(%S*)")
  assert(num, "not a time: " .. text)
  num = tonumber((num:gsub(",", "")))
  local scale = { s = 1, ms = 1e-3, us = 1e-6, ["\194\181s"] = 1e-6, ns = 1e-9, [""] = 1 }
  return num * assert(scale[unit], "unknown unit in " .. text)
end

--- For a describe block (pass busted's after_each): a function that gives a new temporary
--- file name (with `suffix`); every file it named is removed after each test.
function X.tmp_files(after_each)
  local files = {}
  after_each(function()
    for _, f in ipairs(files) do os.remove(f) end
    files = {}
  end)
  return function(suffix)
    local n = S.tmpname(suffix)
    files[#files + 1] = n
    return n
  end
end

--- A temporary file holding `text`; its name.
function X.file(text, suffix)
  local name = S.tmpname(suffix)
  S.write_file(name, text)
  return name
end

return X
