-- The HTML report (cprof.export.html): its data document holds cprof's own numbers (the call
-- tree's weights, the pstats rows, callers and callees, line hits and the source, leaks, a
-- diff, a memory series), names are valid UTF-8 and cannot end the script they are in, the
-- page fetches nothing; then in headless Chromium (spec/readers/browser.js): it loads without
-- an error or a request, sorts and filters its table, focuses the graph on a row and lists
-- the callers cprof-stats --callers prints, searches function names, shows the hits
-- cprof-stats --lines prints, names a known leak, colours a diff by its threshold, opens a
-- deep graph at its root, and shows hostile names as text.
local S = require "spec.support"
local X = require "spec.export_support"
local cjson = require "cjson"

local unpack = table.unpack or unpack

local doc_of, OPEN = X.html_doc, X.HTML_DATA

local function export(source, opts)
  return doc_of((X.export("html", source, opts)))
end

local function sum(t)
  local s = 0
  for _, v in ipairs(t) do s = s + v end
  return s
end

-- The row of the table named `name` (0-based, as the page counts), or nil.
local function row_named(doc, name)
  for i, n in ipairs(doc.table.names) do if n == name then return i - 1 end end
end

-- The rows of row r's callers and of its callees, in the order the page lists them.
local function callers_of(doc, r)
  local E, out = doc.table.edges, {}
  for j = E.first[r + 1] + 1, E.first[r + 2] do out[#out + 1] = E.caller[j] end
  return out
end

local function callees_of(doc, r)
  local E, out = doc.table.edges, {}
  for i = E.out_first[r + 1] + 1, E.out_first[r + 2] do
    local j = E.out[i]
    for c = 0, #doc.table.rows - 1 do
      if j >= E.first[c + 1] and j < E.first[c + 2] then out[#out + 1] = c end
    end
  end
  return out
end

-- Each frame's full name: its row's, unless the document gives it.
local function labels(doc)
  local out = {}
  for f, row in ipairs(doc.frames.row) do out[f] = doc.frames.label[tostring(f - 1)] or doc.table.names[row + 1] end
  return out
end

local function cli(args)
  local env = assert(S.lua54_env(S.ROOT))
  return S.capture(env .. "lua5.4 " .. S.q(S.ROOT .. "/bin/cprof-stats") .. " " .. args)
end

-- `text` as a Lua program in a temporary file run by lua5.4 under cprof.auto with `settings`
-- (CPROF_...=...); the dump's name (removed by the caller).
local function profiled(text, settings)
  local env = assert(S.lua54_env(S.ROOT))
  local src, dump = S.tmpname(".lua"), S.tmpname(".prof")
  S.write_file(src, text)
  local _, err, status = S.capture(("%s env CPROF_OUT=%s CPROF_QUIET=1 %s lua5.4 -l cprof.auto %s"):format(
    env, S.q(dump), settings or "", S.q(src)))
  assert.equal(0, status, err)
  return dump, src
end

-- A program that keeps the 3,000 tables hoard() makes and none of churn()'s.
local LEAKY = [[
local keep = {}
local function hoard(n) for i = 1, n do keep[i] = { i, i } end end
local function churn(n) local s = 0 for i = 1, n do local t = { i } s = s + t[1] end return s end
hoard(3000)
churn(3000)
collectgarbage()
]]

-- A program whose lines are known: step() runs its loop line 10 times.
local LINES = "local function step(n)\n  local s = 0\n  for i = 1, n do\n\ts = s + i\n  end\n"
  .. "  return s\nend\nfor _ = 1, 3 do step(10) end\n"

-- A flat profile: the root main (1 s of its own time) calls each of `funcs` ({ name, seconds })
-- once.
local function flat(funcs)
  local d = X.generated(#funcs + 1, true)
  local F, N = d.frames, d.nodes
  F.name[1] = "main"
  local total = 1
  for i, f in ipairs(funcs) do
    F.name[i + 1] = f[1]
    F.tottime[i + 1], F.cumtime[i + 1], N.tottime[i + 1], N.cumtime[i + 1] = f[2], f[2], f[2], f[2]
    total = total + f[2]
  end
  F.tottime[1], N.tottime[1], F.cumtime[1], N.cumtime[1] = 1, 1, total, total
  return d
end

describe("html export", function()
  it("is one page that fetches nothing: its script, style and data inside", function()
    local doc, html = export(X.sample())
    assert.matches("^<!DOCTYPE html>", html)
    assert.matches([[<meta http%-equiv="Content%-Security%-Policy" content="default%-src 'none';]], html)
    -- nothing but data: URLs; the SVG namespace is a name, not a request
    assert.is_nil(html:find("<link[^>]- href=\"[^d]"))
    assert.is_nil(html:find(" src="))
    assert.is_nil(html:find("url%("))
    assert.is_nil(html:find("@import", 1, true))
    for url in html:gmatch("https?://[^\"'%s)]*") do assert.equal("http://www.w3.org/2000/svg", url) end
    assert.equal("Profile: lua main.lua", doc.title)
    -- the script, the style and the template came from lua/cprof/export/html/
    assert.matches("JSON.parse(document.getElementById(\"cprof-data\").textContent)", html, 1, true)
    assert.matches("#boxes {", html, 1, true)
  end)

  it("holds the call tree with every weight: values that add up to cprof's totals", function()
    local doc = export(X.sample())
    -- each node's distance to its parent: parents 0, 1, 2, 2
    assert.same({ 1, 1, 1, 2 }, doc.tree.up)
    assert.same({ 0, 1, 2, 3 }, doc.tree.frame)
    assert.same({ "time", "calls" }, { doc.weights[1].name, doc.weights[2].name })
    assert.same({ "nanoseconds", "calls" }, { doc.weights[1].unit, doc.weights[2].unit })
    assert.same({ 10000000, 20000000, 60000000, 10000000 }, doc.tree.self.time)
    assert.same({ 1, 1, 9, 2 }, doc.tree.self.calls)
    assert.same({ "main", "work", "fib", "string.rep" }, doc.frames.short)
    assert.same({ "main.lua:1(main)", "main.lua:5(work)", "main.lua:10(fib)", "{string.rep}" }, labels(doc))
    -- a frame's label is its row's name, its name its short name: neither is repeated
    assert.same({}, doc.frames.label)
    assert.same({}, doc.frames.fn)
    -- two functions of one name: their short names add the line, the name stays for searches
    local d = X.sample()
    d.frames.name[2] = "fib"
    local two = export(d)
    assert.same({ "main", "fib:5", "fib:10", "string.rep" }, two.frames.short)
    assert.same({ ["1"] = "fib", ["2"] = "fib" }, two.frames.fn)
    assert.same({ "main.lua" }, doc.files)
    assert.same({ 0, 0, 0, -1 }, doc.frames.file)
    -- memory profiles: allocated, allocations and live bytes too
    local m = export(X.sample(true))
    assert.same({ "time", "calls", "alloc", "allocs", "live" }, { m.weights[1].name, m.weights[2].name,
      m.weights[3].name, m.weights[4].name, m.weights[5].name })
    assert.same({ 1000, 4000, 9000, 2000 }, m.tree.self.alloc)
    assert.same({ 0, 1000, 3000, 0 }, m.tree.self.live)
    assert.equal(sum(m.tree.self.allocs), 122)
    -- a restriction keeps the paths through a match, as the other exports do
    local r = export(X.sample(), { patterns = { "fib" } })
    assert.same({ 0, 0, 60000000, 0 }, r.tree.self.time)
  end)

  it("holds the pstats rows, callers and callees with cprof-stats' numbers, a row per frame", function()
    local doc = export(X.sample())
    local report = X.report(X.sample())
    assert.equal(4, #doc.table.rows)
    -- times in whole nanoseconds
    for i, name in ipairs(doc.table.names) do
      local r, want = doc.table.rows[i], report[name]
      assert.same({ want.ncalls, want.pcalls, math.floor(want.tottime * 1e9 + 0.5), math.floor(want.cumtime * 1e9 + 0.5) },
        { r[1], r[2], r[3], r[4] })
    end
    local main, work = row_named(doc, "main.lua:1(main)"), row_named(doc, "main.lua:5(work)")
    local fib, rep = row_named(doc, "main.lua:10(fib)"), row_named(doc, "{string.rep}")
    -- each edge once, grouped by callee: caller, callee, ncalls, pcalls, tottime, cumtime
    local E, edges = doc.table.edges, {}
    for r = 0, #doc.table.rows - 1 do
      for j = E.first[r + 1] + 1, E.first[r + 2] do
        edges[#edges + 1] = { E.caller[j], r, E.ncalls[j], E.ncalls[j] - E.recursive[j], E.tottime[j], E.cumtime[j] }
      end
    end
    table.sort(edges, function(a, b) return a[1] * 10 + a[2] < b[1] * 10 + b[2] end)
    local want = { { main, work, 1, 1, 20000000, 90000000 }, { work, fib, 3, 3, 30000000, 60000000 },
                   { work, rep, 2, 2, 10000000, 10000000 }, { fib, fib, 6, 4, 30000000, 30000000 } }
    table.sort(want, function(a, b) return a[1] * 10 + a[2] < b[1] * 10 + b[2] end)
    assert.same(want, edges)
    -- fib was called by work and by fib, in pstats' order (file, line, name), and called fib
    assert.same({ work, fib }, callers_of(doc, fib))
    assert.same({ fib }, callees_of(doc, fib))
    assert.same({ fib, rep }, callees_of(doc, work))
    assert.same({}, callers_of(doc, main))
    -- every frame has its row
    for f = 1, #doc.frames.short do assert.is_true(doc.frames.row[f] >= 0) end
    assert.same({ "ncalls", "tottime", "percall", "cumtime", "percall" }, {
      doc.table.columns[1].label, doc.table.columns[2].label, doc.table.columns[3].label,
      doc.table.columns[4].label, doc.table.columns[5].label })
    local m = export(X.sample(true))
    assert.equal("live bytes", m.table.columns[9].label)
    assert.same({ 20, 4000, 15, 1000, 32, 800 }, { unpack(m.table.rows[row_named(m, "main.lua:5(work)") + 1], 5, 10) })
    assert.equal("122 allocations of 16000 bytes, 87 frees of 12000 bytes, 4000 bytes live", m.memory.totals)
  end)

  it("writes the lines cprof-stats prints above its table as notes", function()
    local doc = export(X.sample())
    assert.same({ "13 function calls (7 primitive calls) in 0.100 seconds" }, doc.notes)
  end)

  it("writes names as text that cannot end its script: UTF-8, escaped controls and bidi", function()
    local d = X.sample()
    d.frames.name[1] = "</script><script>alert('x')</script><!--"
    d.frames.name[2] = "work\27]0;title\7\r\n\"quoted\""
    d.frames.name[3] = "fib\226\128\174gnp.exe"
    d.frames.file[1], d.frames.file[2] = "m\237in.lua", "m\237in.lua"
    local doc, html = export(d, { title = "T</script>\226\128\174" })
    local data = html:sub(html:find(OPEN, 1, true) + #OPEN, html:find("</script>", html:find(OPEN, 1, true), true) - 1)
    assert.is_nil(data:find("<", 1, true))
    assert.is_nil(html:find("\226\128\174", 1, true))
    local _, ends = html:gsub("</script>", "")
    assert.equal(2, ends)
    assert.equal("T</script>\\u{202e}", doc.title)
    assert.equal("m\239\191\189in.lua:1(</script><script>alert('x')</script><!--)", labels(doc)[1])
    assert.equal("work\\x1b]0;title\\x07\\r\\n\"quoted\"", doc.frames.short[2])
    assert.equal("fib\\u{202e}gnp.exe", doc.frames.short[3])
    assert.equal("m\239\191\189in.lua", doc.files[1])
    assert.equal("m\239\191\189in.lua:5(work\\x1b]0;title\\x07\\r\\n\"quoted\")", doc.table.names[row_named(doc,
      "m\239\191\189in.lua:5(work\\x1b]0;title\\x07\\r\\n\"quoted\")") + 1])
  end)

  it("keeps each file's line hits and its text, read when the report is made", function()
    local dump, src = profiled(LINES, "CPROF_LINES=1 CPROF_TIMER=counter")
    local html = S.tmpname(".html")
    local _, err, status = cli(S.q(dump) .. " --html -o " .. S.q(html))
    assert.equal(0, status, err)
    local doc = doc_of(S.read_file(html))
    local file = doc.lines.files[1]
    assert.equal(src, file.name)
    assert.equal(cjson.null, file.error)
    assert.equal("\ts = s + i", file.text[4])
    assert.equal(8, #file.text)
    local step = row_named(doc, src .. ":1(step)")
    local fn = file.funcs[1]
    assert.same({ step, 1, 7 }, { fn[1], fn[2], fn[3] })
    local hits = {}
    for _, l in ipairs(fn[4]) do hits[l[1]] = l[2] end
    -- the loop's body 10 times per call, 3 calls; its head once more per call
    assert.equal(30, hits[4])
    assert.equal(3, hits[2])
    -- the source gone: the lines stay, with a sentence instead of the text
    os.remove(src)
    _, err, status = cli(S.q(dump) .. " --html -o " .. S.q(html))
    assert.equal(0, status, err)
    file = doc_of(S.read_file(html)).lines.files[1]
    assert.equal(cjson.null, file.text)
    assert.equal(src .. " could not be read when this report was made: its lines are shown without their text.",
      file.error)
    os.remove(dump)
    os.remove(html)
  end)

  it("names the leaks of a memory profile and prints its allocator", function()
    if S.jit and not S.lua54_env(S.ROOT) then pending("needs the lua5.4 build") return end
    local dump, src = profiled(LEAKY, "CPROF_MEMORY=1")
    local doc = doc_of((X.export("html", dump)))
    local leak = doc.memory.leaks[1]
    -- the context that holds the most: hoard's 3,000 tables (and their parts), under the chunk
    local k = leak[1]
    assert.equal("hoard", doc.frames.short[doc.tree.frame[k] + 1])
    assert.is_true(leak[2] >= 3000)
    assert.matches("table 3,?000", leak[6])
    for _, l in ipairs(doc.memory.leaks) do
      assert.not_equal("churn", doc.frames.short[doc.tree.frame[l[1]] + 1])
    end
    assert.matches("Arena/Slab Name", doc.memory.allocator, 1, true)
    os.remove(dump)
    os.remove(src)
  end)

  it("compares with a base: the diff's rows, each path's change and its colour", function()
    local new = flat({ { "slow", 0.03 }, { "steady", 0.0105 } })
    local base = flat({ { "slow", 0.01 }, { "steady", 0.01 } })
    local doc = export(new, { base = base })
    assert.equal("Differential profile: lua main.lua", doc.title)
    assert.equal(1, doc.diff.threshold)
    local t = doc.diff.weights.time
    -- shares of each total: slow 0.98% -> 2.88% (+1.9 points), steady +0.03 points
    assert.equal(0, t.pct[1])
    assert.near(100 * (0.03 / 1.0405 - 0.01 / 1.02), t.pct[2], 1e-4)
    assert.near(100 * (0.0105 / 1.0405 - 0.01 / 1.02), t.pct[3], 1e-6)
    assert.same({ 1020000000, 10000000, 10000000 }, t.base)
    assert.equal("rgb(255,60,60)", doc.colors[t.fill[2] + 1])
    assert.equal(doc.diff.neutral, doc.colors[t.fill[1] + 1])
    local slow = doc.table.rows[row_named(doc, "gen.lua:2(slow)") + 1]
    -- calls, base, change; tottime, base, change, %; cumtime, base, change, %
    assert.same({ 1, 1, 0, 30000000, 10000000, 20000000 }, { slow[1], slow[2], slow[3], slow[4], slow[5], slow[6] })
    assert.near(200, slow[7], 1e-9)
    for _, bad in ipairs({ -1, 100, "2" }) do
      local ok, err = pcall(X.export, "html", new, { base = base, threshold = bad })
      assert.is_false(ok)
      assert.matches("html: threshold must be a percentage of at least 0 and under 100", tostring(err), 1, true)
    end
  end)

  it("draws a profile without a call tree as its table, and says why there is no graph", function()
    local file = S.tmpname(".pstats")
    require("cprof.stats").new(X.sample()):dump_stats(file)
    local pstats = S.tmpname(".pstats")
    local _, err, status = X.run("python3 -c " .. S.q("import marshal, sys\n"
      .. "marshal.dump({('main.lua', 1, 'main'): (1, 1, 0.1, 0.1, {})}, open(sys.argv[1], 'wb'))") .. " " .. S.q(pstats))
    os.remove(file)
    if status ~= 0 then pending("python3: " .. tostring(err)) return end
    local doc = export(pstats)
    os.remove(pstats)
    assert.is_nil(doc.tree)
    assert.matches("is a pstats file", doc.no_tree)
    assert.same({ "main.lua:1(main)" }, doc.table.names)
  end)

  it("is cprof-stats --export html, and --html; a memory series is a chart of its columns", function()
    local dump = X.live_dump(S.tmpname(".prof"))
    local a, b = S.tmpname(".html"), S.tmpname(".html")
    local out, err, status = cli(S.q(dump) .. " --export html -o " .. S.q(a))
    assert.equal(0, status, err)
    assert.equal("", out)
    _, err, status = cli(S.q(dump) .. " --html --icicle --title 'T' -o " .. S.q(b))
    assert.equal(0, status, err)
    local da, db = doc_of(S.read_file(a)), doc_of(S.read_file(b))
    assert.same({ false, true, "T" }, { da.icicle, db.icicle, db.title })
    assert.same(da.tree, db.tree)
    _, err, status = cli(S.q(dump) .. " --html --threshold 2")
    assert.equal(2, status)
    assert.matches("option --threshold does not go with --export", err, 1, true)
    _, err, status = cli(S.q(dump) .. " --diff " .. S.q(dump) .. " --html --threshold 2 -o " .. S.q(a))
    assert.equal(0, status, err)
    assert.equal(2, doc_of(S.read_file(a)).diff.threshold)
    -- a series needs dumps with memory numbers: the totals charged to contexts
    local mdump = S.tmpname(".prof")
    local md = X.sample(true)
    md.meta.memory_allocs, md.meta.memory_bytes, md.meta.memory_frees, md.meta.memory_freed = 4, 900, 1, 100
    require("cprof.dump").write(mdump, md)
    _, err, status = cli(S.q(mdump) .. " " .. S.q(mdump) .. " --memory-series --html -o " .. S.q(a))
    assert.equal(0, status, err)
    local s = doc_of(S.read_file(a)).series
    os.remove(mdump)
    assert.same({ mdump, mdump }, s.files)
    assert.equal("lua bytes", s.columns[1].name)
    assert.is_true(s.columns[1].chart)
    _, err, status = cli(S.q(dump) .. " --memory-series --export pprof")
    assert.equal(2, status)
    assert.matches("option --memory-series draws --export svg or html only, not pprof", err, 1, true)
    for _, f in ipairs({ dump, a, b }) do os.remove(f) end
  end)

  it("says where its page's files should be when they are missing", function()
    local dir = S.new_dir()
    assert(os.execute("mkdir -p " .. S.q(dir .. "/cprof/export")))
    S.write_file(dir .. "/cprof/export/html.lua", S.read_file(S.ROOT .. "/lua/cprof/export/html.lua"))
    local _, err, status = S.run_lua("local export = require 'cprof.export'\n"
      .. "export.export('html', " .. string.format("%q", S.absolute(X.live_dump(dir .. "/x.prof"))) .. ", io.stdout)",
      "", S.child_env("LUA_PATH=" .. S.q(dir .. "/?.lua;" .. S.absolute(S.ROOT) .. "/lua/?.lua;"
        .. S.absolute(S.ROOT) .. "/lua/?/init.lua;;")))
    S.remove_dir(dir)
    assert.equal(1, status)
    assert.matches("cprof.export: html: cannot read " .. dir .. "/cprof/export/html/report.html (the page's files"
      .. " are installed with cprof's Lua modules)", err, 1, true)
  end)
end)

-- "rgb(250, 250, 250)" as the page's palette writes it: "rgb(250,250,250)".
local function fill(s) return (s:gsub(" ", "")) end

local function box(boxes, label)
  for _, b in ipairs(boxes) do if b.label == label then return b end end
end

-- cprof-stats --callers PATTERN as { { ncalls, function }... } for the one function it prints.
local function callers_printed(text)
  local out, on = {}, false
  for line in text:gmatch("[^\n]+") do
    local rest = line:match("<%-%s+(.*)$")
    if rest then on = true else rest = on and line:match("^%s+(%S.*)$") end
    if rest then
      local n, name = rest:match("^(%S+)%s+[%d.]+%s+[%d.]+%s+(.+)$")
      out[#out + 1] = { n, name }
    end
  end
  return out
end

-- cprof-stats --lines PATTERN as { [line] = hits } for the lines it gives hits.
local function hits_printed(text)
  local out = {}
  for line in text:gmatch("[^\n]+") do
    local l, h = line:match("^%s*(%d+)%s+(%d+)%s+[%d.]+")
    if l then out[tonumber(l)] = tonumber(h) end
  end
  return out
end

describe("html reports in Chromium", function()
  local node, why = X.reader("chromium")
  local env, ewhy = S.lua54_env(S.ROOT)
  if not node or not env then
    it("loads, sorts, focuses, searches and shows lines, leaks and changes", function()
      pending("Chromium: " .. (why or ewhy))
    end)
    return
  end
  local dir = S.new_dir()
  local R, demo = {}, {}
  local stats = S.q(S.ROOT .. "/bin/cprof-stats")
  lazy_setup(function()
    -- the demo with its lines, as CPROF_LINES=1 records them, and its report
    local dump = dir .. "/demo.prof"
    local _, err, status = S.capture(("cd %s && %s env CPROF_OUT=%s CPROF_QUIET=1 CPROF_LINES=1"
      .. " CPROF_TIMER=counter lua5.4 -l cprof.auto examples/json_demo.lua 20 >/dev/null"):format(
        S.q(S.ROOT), env, S.q(dump)))
    assert.equal(0, status, err)
    local function run(args)
      local out, e, st = S.capture(("%slua5.4 %s %s"):format(env, stats, args))
      assert.equal(0, st, e)
      return out
    end
    run(S.q(dump) .. " --html -o " .. S.q(dir .. "/demo.html"))
    demo.label = "examples/json_demo.lua:146(Encoder:value)"
    demo.callers = callers_printed(run(S.q(dump) .. " --callers 'Encoder:value'"))
    demo.hits = hits_printed(run(S.q(dump) .. " --lines 'Encoder:value'"))
    demo.report = X.report(dump)
    S.write_file(dir .. "/deep.html", (X.export("html", X.generated(400))))
    S.write_file(dir .. "/icicle.html", (X.export("html", X.generated(400), { icicle = true })))
    local leak = profiled(LEAKY, "CPROF_MEMORY=1")
    run(S.q(leak) .. " --html -o " .. S.q(dir .. "/leak.html"))
    os.remove(leak)
    S.write_file(dir .. "/diff.html", (X.export("html", flat({ { "slow", 0.03 }, { "steady", 0.0105 } }),
      { base = flat({ { "slow", 0.01 }, { "steady", 0.01 } }) })))
    local d = X.sample()
    d.frames.name[1] = "</script><script>alert('x')</script>"
    d.frames.name[2] = "work\"'\n<img src=x onerror=alert(1)>"
    d.frames.file[3] = "m\237in.lua"
    S.write_file(dir .. "/hostile.html", (X.export("html", d)))
    local names, tot = "#table tbody td.fn", "#table tbody tr td:nth-child(2)"
    local results = X.browser({
      { kind = "html", file = dir .. "/demo.html", steps = {
        { read = "names", texts = names }, { read = "tot", texts = tot },
        { click = "#table thead th", text = "tottime" }, { read = "tot_desc", texts = tot },
        { read = "names_desc", texts = names },
        { click = "#table thead th", text = "tottime" }, { read = "tot_asc", texts = tot },
        { fill = "#filter", value = "encoder:" }, { read = "filtered", texts = names },
        { fill = "#filter", value = "" },
        { click = names, text = "(Encoder:value)" },
        { read = "callers", texts = "#calls .callers tbody td:nth-child(1)" },
        { read = "callers_fn", texts = "#calls .callers tbody td:nth-child(4)" },
        { read = "focused", boxes = true }, { read = "crumbs", texts = "#crumbs button" },
        { read = "line_no", texts = "#source .line.in .no" }, { read = "line_hits", texts = "#source .line.in .hits" },
        { fill = "#search", value = "^json\\.encode$" }, { read = "matched", texts = "#matched" },
        { read = "searched", boxes = true },
        { click = "#reset" },
        { fill = "#search", value = "json" }, { read = "by_name", boxes = true },
        { fill = "#search", value = "file:json_demo" }, { read = "by_file", boxes = true } } },
      { kind = "html", file = dir .. "/deep.html", steps = { { read = "scroll", scroll = "#graph" } } },
      { kind = "html", file = dir .. "/icicle.html", steps = { { read = "scroll", scroll = "#graph" } } },
      { kind = "html", file = dir .. "/leak.html", steps = {
        { click = "#tabs button", text = "Memory" },
        { read = "stack", texts = "#memory table.leaks tbody tr:first-child .stack button" } } },
      { kind = "html", file = dir .. "/diff.html", steps = {
        { read = "boxes", boxes = true }, { read = "heads", texts = "#table thead th" },
        { fill = "#threshold", value = "2" }, { read = "above", boxes = true } } },
      { kind = "html", file = dir .. "/hostile.html", steps = {
        { read = "names", texts = names }, { read = "boxes", boxes = true },
        { click = names, text = "alert('x')" }, { read = "callees", texts = "#calls .callees tbody td:nth-child(4)" } } },
    })
    R.demo, R.deep, R.icicle, R.leak, R.diff, R.hostile = unpack(results)
  end)
  lazy_teardown(function() S.remove_dir(dir) end)

  it("loads without an error, a dialog or a request", function()
    for _, name in ipairs({ "demo", "deep", "icicle", "leak", "diff", "hostile" }) do
      local r = R[name]
      assert.is_nil(r.error, name)
      assert.same({}, r.errors, name)
      assert.same({}, r.requests, name)
      assert.is_true(r.ready > 0, name)
    end
  end)

  it("sorts the table by a column clicked, either way, and filters it", function()
    local r = R.demo.reads
    local function numbers(t)
      local out = {}
      for i, s in ipairs(t) do out[i] = tonumber(s) end
      return out
    end
    local desc, asc = numbers(r.tot_desc), numbers(r.tot_asc)
    assert.equal(#r.names, #desc)
    for i = 2, #desc do assert.is_true(desc[i - 1] >= desc[i]) end
    for i = 2, #asc do assert.is_true(asc[i - 1] <= asc[i]) end
    assert.not_same(r.names, r.names_desc)
    -- the functions with the most own time first: the same as cprof's numbers
    local most, best = nil, -1
    for name, v in pairs(demo.report) do if v.tottime > best then most, best = name, v.tottime end end
    assert.equal(most, r.names_desc[1])
    assert.is_true(#r.filtered >= 3 and #r.filtered < #r.names)
    for _, n in ipairs(r.filtered) do assert.matches("Encoder:", n, 1, true) end
  end)

  it("focuses the graph on a row clicked and lists its callers as cprof-stats --callers prints them", function()
    local r = R.demo.reads
    assert.is_true(#demo.callers >= 3)
    local want_n, want_fn = {}, {}
    for i, c in ipairs(demo.callers) do want_n[i], want_fn[i] = c[1], c[2] end
    assert.same(want_n, r.callers)
    assert.same(want_fn, r.callers_fn)
    -- the heaviest path of Encoder:value fills the width; every box of it is marked
    local widest = 0
    for _, b in ipairs(r.focused) do if b.width > widest then widest = b.width end end
    local main = 0
    for _, b in ipairs(r.focused) do
      if b.label == demo.label and not b.anc and b.width >= widest - 1 then main = main + 1 end
      if b.label == demo.label then assert.is_true(b.sel) end
    end
    assert.equal(1, main)
    assert.equal("all", r.crumbs[1])
    assert.equal("Encoder:value", r.crumbs[#r.crumbs])
  end)

  it("shows the hits cprof-stats --lines prints for the function chosen", function()
    local r = R.demo.reads
    local got, n = {}, 0
    for i, l in ipairs(r.line_no) do
      if r.line_hits[i] ~= "" then got[tonumber(l)] = tonumber(r.line_hits[i]) end
    end
    for _ in pairs(demo.hits) do n = n + 1 end
    assert.is_true(n >= 5)
    assert.same(demo.hits, got)
    assert.equal("146", r.line_no[1])
  end)

  it("searches function names, and file names only after file:", function()
    local r = R.demo.reads
    -- json.encode's share of the total, as cprof counts it (its nested calls once)
    local total = 0
    for _, v in pairs(demo.report) do total = total + v.tottime end
    local share = string.format("%.2f", 100 * demo.report["examples/json_demo.lua:168(json.encode)"].cumtime / total)
    assert.matches("^Matched: " .. share:gsub("%.", "%%.") .. "%% %(1 function, %d+ frames?%)$", r.matched[1])
    local painted = {}
    for _, b in ipairs(r.searched) do
      if fill(b.fill) == "rgb(230,0,230)" then painted[#painted + 1] = b.label end
    end
    assert.is_true(#painted >= 1)
    for _, l in ipairs(painted) do assert.equal("examples/json_demo.lua:168(json.encode)", l) end
    local function count(boxes)
      local n, lua = 0, 0
      for _, b in ipairs(boxes) do
        if fill(b.fill) == "rgb(230,0,230)" then n = n + 1 end
        if type(b.label) == "string" and b.label:match("^examples/json_demo%.lua:") then lua = lua + 1 end
      end
      return n, lua
    end
    local by_name, lua = count(r.by_name)
    local by_file = count(r.by_file)
    assert.is_true(by_name >= 2 and by_name < lua / 4, by_name .. " of " .. lua)
    assert.equal(lua, by_file)
  end)

  it("opens a deep flame graph at its root, an icicle at its top", function()
    local s = R.deep.reads.scroll
    assert.is_true(s.height > 400 * 17)
    assert.is_true(s.top + s.client >= s.height - 1, s.top .. " + " .. s.client .. " < " .. s.height)
    assert.equal(0, R.icicle.reads.scroll.top)
  end)

  it("names the function that leaks in its leak view", function()
    local stack = R.leak.reads.stack
    assert.matches("%(hoard%)$", stack[1])
    for _, s in ipairs(stack) do assert.is_nil(s:find("churn", 1, true)) end
  end)

  it("colours a function made 3x slower and leaves one within the threshold uncoloured", function()
    local r = R.diff.reads
    local slow, steady = box(r.boxes, "gen.lua:2(slow)"), box(r.boxes, "gen.lua:3(steady)")
    assert.equal("rgb(255,60,60)", fill(slow.fill))
    assert.equal("rgb(250,250,250)", fill(steady.fill))
    assert.equal("rgb(250,250,250)", fill(box(r.boxes, "gen.lua:1(main)").fill))
    -- a threshold of 2 points leaves slow's +1.9 uncoloured too
    assert.equal("rgb(250,250,250)", fill(box(r.above, "gen.lua:2(slow)").fill))
    assert.same({ "ncalls", "base", "change", "tottime", "base", "change", "%" },
      { unpack(r.heads, 1, 7) })
  end)

  it("shows hostile names as text and runs none of them", function()
    local r = R.hostile.reads
    local found = {}
    for _, n in ipairs(r.names) do found[n] = true end
    assert.is_true(found["main.lua:1(</script><script>alert('x')</script>)"])
    assert.is_true(found["main.lua:5(work\"'\\n<img src=x onerror=alert(1)>)"])
    assert.is_true(found["m\239\191\189in.lua:10(fib)"])
    assert.same({ "main.lua:5(work\"'\\n<img src=x onerror=alert(1)>)" }, r.callees)
    local shown = false
    for _, b in ipairs(r.boxes) do shown = shown or b.text == "</script><script>alert('x')</script>" end
    assert.is_true(shown)
  end)
end)
