-- The SVG flame graph, read back by python3's XML parser: its boxes, tooltips, colours (a shade
-- per function, labels readable on every fill), merging, diff colours and their noise
-- threshold, hostile names; then in headless Chromium (the real reader): the demo's graph
-- zooms on a click, searches function names (file names when asked) and measures, shows
-- details on hover; a deep graph opens at its root with its title bar in view.
local S = require "spec.support"
local X = require "spec.export_support"
local cjson = require "cjson"

-- The SVG as python3's xml.etree reads it: the root's attributes, the text of each element
-- with an id, the legend's swatches, and the frames, each { depth, name, fn, label, where,
-- info, x, y, width, fill, text } (fn, label and where only where the SVG has them).
local PARSE = [[
import json, sys, xml.etree.ElementTree as ET
NS = "{http://www.w3.org/2000/svg}"
root = ET.parse(sys.argv[1]).getroot()
def text(e): return "".join(e.itertext())
out = {"attrs": dict(root.attrib), "ids": {}, "frames": [], "legend": []}
for e in root.iter(NS + "text"):
    if e.get("id"): out["ids"][e.get("id")] = text(e)
kids = list(root)
for i, e in enumerate(kids):
    if e.tag == NS + "rect" and e.get("y") == "52":
        out["legend"].append({"fill": e.get("fill"), "text": text(kids[i + 1])})
for g in root.find(".//*[@id='frames']"):
    r, t = g.find(NS + "rect"), g.find(NS + "text")
    f = {"depth": int(g.get("data-d")), "name": g.get("data-n"), "info": g.find(NS + "title").text,
         "x": float(r.get("x")), "y": float(r.get("y")), "width": float(r.get("width")),
         "fill": r.get("fill"), "text": text(t)}
    for key, attr in (("fn", "data-f"), ("label", "data-l"), ("where", "data-w")):
        if g.get(attr) is not None: f[key] = g.get(attr)
    out["frames"].append(f)
json.dump(out, sys.stdout)
]]

local python = X.reader("python3")

local function parse(svg)
  local file = S.tmpname(".svg")
  S.write_file(file, svg)
  local out, err, status = X.run("python3 -c " .. S.q(PARSE) .. " " .. S.q(file))
  os.remove(file)
  assert(status == 0, "python3 cannot read the SVG as XML: " .. err)
  return cjson.decode(out)
end

local function boxes(svg) return parse(svg).frames end

local function find(list, name)
  for _, b in ipairs(list) do if b.name == name then return b end end
end

local function hue(fill) return tonumber(fill:match("^hsl%((%-?%d+),")) end

-- A fill's red, green and blue in [0, 1]: rgb(r,g,b) or hsl(h,s%,l%).
local function rgb(fill)
  local r, g, b = fill:match("^rgb%((%d+),(%d+),(%d+)%)$")
  if r then return r / 255, g / 255, b / 255 end
  local h, s, l = fill:match("^hsl%((%-?%d+),(%d+)%%,(%d+)%%%)$")
  assert(h, "not a fill: " .. fill)
  h, s, l = (h % 360) / 60, s / 100, l / 100
  local c = (1 - math.abs(2 * l - 1)) * s
  local x = c * (1 - math.abs(h % 2 - 1))
  local sector = ({ { c, x, 0 }, { x, c, 0 }, { 0, c, x }, { 0, x, c }, { x, 0, c }, { c, 0, x } })[math.floor(h) + 1]
  local m = l - c / 2
  return sector[1] + m, sector[2] + m, sector[3] + m
end

-- The contrast ratio of black text on `fill` (WCAG 2's formula).
local function contrast(fill)
  local function linear(v) return v <= 0.04045 and v / 12.92 or ((v + 0.055) / 1.055) ^ 2.4 end
  local r, g, b = rgb(fill)
  return (0.2126 * linear(r) + 0.7152 * linear(g) + 0.0722 * linear(b) + 0.05) / 0.05
end

local generated, rerun = X.generated, X.rerun

describe("svg export", function()
  if not python then
    it("is read as XML", function() pending("python3 is not installed (make export-readers installs it)") end)
    return
  end

  it("draws a box per call path, as wide as its inclusive value, with a title and the weight", function()
    local svg = X.export("svg", X.sample())
    assert.matches('^<%?xml version="1.0" encoding="UTF%-8"', svg)
    local doc = parse(svg)
    assert.equal("Flame graph: lua main.lua", doc.ids.title)
    assert.matches("time (100.000 ms in all)", doc.ids.subtitle, 1, true)
    local b = doc.frames
    assert.equal(4, #b)
    local main, work, fib, rep = find(b, "main"), find(b, "work"), find(b, "fib"), find(b, "string.rep")
    assert.same({ 10, 1180, 1 }, { main.x, main.width, main.depth })
    assert.same({ 10, 1062, 2 }, { work.x, work.width, work.depth })
    assert.same({ 10, 708, 3 }, { fib.x, fib.width, fib.depth })
    assert.same({ 718, 118, 3 }, { rep.x, rep.width, rep.depth })
    -- flame: the root at the bottom
    assert.is_true(main.y > work.y and work.y > fib.y)
    assert.equal(work.y, main.y - 16)
    -- the file:line a file search matches; none for C functions
    assert.same({ "main.lua:10", "main.lua:10(fib)" }, { fib.where, fib.label })
    assert.is_nil(rep.where)
    assert.equal("{string.rep}", rep.label)
  end)

  it("says calls and allocations in the singular for one", function()
    local b = boxes(X.export("svg", X.sample()))
    assert.equal("main.lua:10(fib)\nmain.lua:10\n9 calls\n60.000 ms (60.00%), self 60.000 ms", find(b, "fib").info)
    assert.equal("main.lua:1(main)\nmain.lua:1\n1 call\n100.000 ms (100.00%), self 10.000 ms", find(b, "main").info)
    b = boxes(X.export("svg", X.sample(), { weight = "calls" }))
    assert.equal("main.lua:1(main)\nmain.lua:1\n1 call\n13 calls (100.00%), self 1 call", find(b, "main").info)
  end)

  it("colours Lua warm with a hue family per file and a shade per function, C blue, the same on every Lua", function()
    local b = boxes(X.export("svg", X.sample()))
    local main, work, fib, rep = find(b, "main"), find(b, "work"), find(b, "fib"), find(b, "string.rep")
    assert.is_true(hue(rep.fill) >= 190 and hue(rep.fill) <= 232)
    local fills = {}
    for _, f in ipairs({ main, work, fib }) do
      local h = hue(f.fill)
      assert.is_true(h <= 56 or h >= 352, f.fill)   -- red to amber
      assert.is_nil(fills[f.fill], f.fill)          -- three functions of main.lua, three colours
      fills[f.fill] = true
    end
    -- a hash of the names, no random numbers: these on Lua 5.4 and LuaJIT, run after run
    assert.same({ "hsl(23,78%,61%)", "hsl(29,78%,71%)", "hsl(23,78%,66%)", "hsl(232,45%,77%)" },
      { main.fill, work.fill, fib.fill, rep.fill })
    -- 60 functions of one file: shades chosen by a hash of the name among 75 (as many as the
    -- eye tells apart in one hue family), so most have a fill of their own, all within the
    -- file's family (its hue, 12 degrees either side)
    local fills, lo, hi = {}, 360, -360
    for _, f in ipairs(boxes(X.export("svg", generated(61, true)))) do
      if f.depth == 2 then
        fills[f.fill] = true
        local h = hue(f.fill)
        h = h > 180 and h - 360 or h
        lo, hi = math.min(lo, h), math.max(hi, h)
      end
    end
    local distinct = 0
    for _ in pairs(fills) do distinct = distinct + 1 end
    assert.is_true(distinct >= 40, distinct .. " fills for 60 functions")
    assert.is_true(hi - lo <= 24, "hues " .. lo .. " to " .. hi)
    -- a generated program's f1, f2, ... f20000 in one file: never two neighbours alike
    local palette = require "cprof.export.palette"
    for i = 1, 19999 do
      assert(palette.frame("Lua", "gen.lua", "f" .. i) ~= palette.frame("Lua", "gen.lua", "f" .. i + 1), i)
    end
  end)

  it("keeps black labels readable on every fill: a contrast of 4.5 or more", function()
    local graphs = { (X.export("svg", X.big(3000, 300))), (X.export("svg", X.with_coroutine())),
                     (X.export("svg", X.sample(true), { weight = "alloc" })),
                     (X.export("svg", X.changed(), { base = X.sample() })),
                     (X.export("svg", X.sample(), { base = X.changed() })),
                     (X.export("svg", X.sample(), { base = X.changed(), normalize = false })) }
    local seen = 0
    for _, svg in ipairs(graphs) do
      local doc = parse(svg)
      for _, f in ipairs(doc.frames) do
        assert.is_true(contrast(f.fill) >= 4.5, f.fill .. ": " .. contrast(f.fill))
        seen = seen + 1
      end
      for _, l in ipairs(doc.legend) do assert.is_true(contrast(l.fill) >= 4.5, l.fill) end
    end
    assert.is_true(seen > 100)
  end)

  it("draws icicles top-down, other weights, main chunks in green", function()
    local svg = X.export("svg", X.with_coroutine(), { icicle = true, weight = "calls", title = "T&<>" })
    assert.matches('>T&amp;&lt;&gt;</text>', svg, 1, true)
    local doc = parse(svg)
    assert.equal("T&<>", doc.ids.title)
    assert.equal("true", doc.attrs["data-icicle"])
    assert.matches("calls (8 calls in all)", doc.ids.subtitle, 1, true)
    local root = find(doc.frames, "<main chunk>")
    assert.equal(78, root.y)
    assert.is_true(find(doc.frames, "gen").y > root.y)
    local h = hue(root.fill)
    assert.is_true(h >= 90 and h < 130)
    svg = X.export("svg", X.sample(true), { weight = "alloc" })
    assert.matches("allocated bytes %(15%.6[23] KiB in all%)", svg) -- 15.625: LuaJIT rounds up
  end)

  it("stays small on a 50,000-node tree: frames narrower than a pixel merged and counted", function()
    local d = X.big(50000, 4000)
    local svg, result = X.export("svg", d)
    local doc = parse(svg)
    local b = doc.frames
    assert.equal(result.boxes, #b)
    assert.is_true(#svg < 2e6, "the SVG is " .. #svg .. " bytes")
    assert.is_true(result.merged > 40000)
    assert.equal(result.merged, tonumber(doc.attrs["data-merged"]))
    assert.matches("50,000 nodes", doc.ids.subtitle, 1, true)
    assert.matches(" frames narrower than 1 px merged", doc.ids.subtitle, 1, true)
    local drawn, grey = 0, 0
    for _, box in ipairs(b) do
      assert.is_true(box.width >= 1 - 1e-9)
      if box.label then
        drawn = drawn + 1
      else
        assert.equal("rgb(190,190,190)", box.fill)
        assert.is_nil(box.where)
        grey = grey + tonumber((box.name:gsub(",", ""):match("^(%d+) frames?$")))
      end
    end
    -- every node is drawn or merged
    assert.is_true(drawn + result.merged == 50000, drawn .. " + " .. result.merged)
    assert.is_true(grey <= result.merged)
  end)

  it("draws a differential flame graph: the shares of each total compared, red grew, blue shrank", function()
    local doc = parse(X.export("svg", X.changed(), { base = X.sample() }))
    assert.equal("Differential flame graph: lua main.lua", doc.ids.title)
    assert.matches("base 100.000 ms (this +15.0%) · shares of each total compared · 1 path only in the base not shown",
      doc.ids.subtitle, 1, true)
    local b = doc.frames
    local fib, log, main, work = find(b, "fib"), find(b, "log"), find(b, "main"), find(b, "work")
    -- fib: 60% of the base's total, 69.57% of this one's: the largest change, the deepest red
    assert.equal("rgb(255,60,60)", fib.fill)
    assert.matches("\nbase 60.000 ms, change +20.000 ms (+33.3%)\nshare of the total 60.00% in the base, 69.57% here",
      fib.info, 1, true)
    assert.matches("\nnew: not in the base$", log.info)
    assert.equal("rgb(252,164,164)", log.fill)   -- 4.35 points of 9.57
    assert.equal("rgb(250,250,250)", main.fill)  -- 100% of both totals: no change
    assert.equal("rgb(251,222,222)", work.fill)  -- 1.30 points, above the default threshold
    assert.same({ { "rgb(255,60,60)", "grew" }, { "rgb(80,130,255)", "shrank" },
                  { "rgb(250,250,250)", "changed by less than 1% of the total" } },
      { { doc.legend[1].fill, doc.legend[1].text }, { doc.legend[2].fill, doc.legend[2].text },
        { doc.legend[3].fill, doc.legend[3].text } })
    -- the other way, fib's share fell 9.57 points (string.rep's, new, rose by 10)
    assert.equal("rgb(87,135,255)", find(boxes(X.export("svg", X.sample(), { base = X.changed() })), "fib").fill)
    -- without normalizing, the 15 ms more of the root and of work are changes too
    b = boxes(X.export("svg", X.changed(), { base = X.sample(), normalize = false }))
    assert.equal("rgb(255,60,60)", find(b, "fib").fill)
    assert.equal("rgb(254,107,107)", find(b, "main").fill)
    assert.equal("rgb(254,107,107)", find(b, "work").fill)
  end)

  it("leaves white the changes under the threshold: a slower run of the same program is all white", function()
    -- every time 1.2 times as long: as shares, nothing changed (the root's +20% is the subtitle's)
    local doc = parse(X.export("svg", rerun(1.2, 0), { base = X.sample() }))
    assert.matches("base 100.000 ms (this +20.0%)", doc.ids.subtitle, 1, true)
    for _, f in ipairs(doc.frames) do assert.equal("rgb(250,250,250)", f.fill, f.name) end
    -- and fib 1.2 ms slower: its share 60.40% against 60%, string.rep's and work's 0.10 points
    -- off: all under the default threshold of 1%
    local d = rerun(1.2, 0.0012)
    for _, f in ipairs(boxes(X.export("svg", d, { base = X.sample() }))) do
      assert.equal("rgb(250,250,250)", f.fill, f.name)
    end
    local b = boxes(X.export("svg", d, { base = X.sample(), threshold = 0.25 }))
    assert.same({ "rgb(255,60,60)", "rgb(250,250,250)", "rgb(250,250,250)", "rgb(250,250,250)" },
      { find(b, "fib").fill, find(b, "main").fill, find(b, "work").fill, find(b, "string.rep").fill })
    b = boxes(X.export("svg", d, { base = X.sample(), threshold = 0.05 }))
    assert.same({ "rgb(255,60,60)", "rgb(250,250,250)", "rgb(207,220,251)", "rgb(251,203,203)" },
      { find(b, "fib").fill, find(b, "main").fill, find(b, "string.rep").fill, find(b, "work").fill })
    assert.equal("rgb(250,250,250)", find(boxes(X.export("svg", d, { base = X.sample(), threshold = 0.5 })),
      "fib").fill)
    for _, bad in ipairs({ -1, 100, "2", 0 / 0 }) do
      local ok, err = pcall(X.export, "svg", d, { base = X.sample(), threshold = bad })
      assert.is_false(ok)
      assert.matches("svg: threshold must be a percentage of at least 0 and under 100", tostring(err), 1, true)
    end
  end)

  it("writes names as text that shows, never acts: escaped controls and bidi, U+FFFD, XML escapes", function()
    local d = X.sample()
    d.frames.name[3] = "fib\226\128\174gnp.exe"          -- U+202E would reverse the label
    d.frames.name[2] = "work\27]0;title\7\r\n"           -- an escape sequence, a line break
    d.frames.name[1] = "<script>alert('x')</script>&\""
    d.frames.file[1], d.frames.file[2] = "m\237in.lua", "m\237in.lua"
    local svg = X.export("svg", d, { title = "T\226\128\174" })
    assert.is_nil(svg:find("\226\128\174", 1, true))
    assert.is_nil(svg:find("[\27\7]"))
    assert.is_nil(svg:find("<script>alert", 1, true))
    local doc = parse(svg)
    assert.equal("T\\u{202e}", doc.ids.title)
    local fib = find(doc.frames, "fib\\u{202e}gnp.exe")
    assert.equal("fib\\u{202e}gnp.exe", fib.text)
    assert.equal("main.lua:10(fib\\u{202e}gnp.exe)", fib.label)
    assert.matches("^main.lua:10%(fib\\u{202e}gnp.exe%)\nmain.lua:10\n9 calls\n", fib.info)
    local work = find(doc.frames, "work\\x1b]0;title\\x07\\r\\n")
    assert.equal("m\239\191\189in.lua:5(work\\x1b]0;title\\x07\\r\\n)", work.label)
    assert.equal("m\239\191\189in.lua:5", work.where)
    assert.matches("^m\239\191\189in.lua:5%(work\\x1b%]0;title\\x07\\r\\n%)\nm\239\191\189in.lua:5\n", work.info)
    assert.equal("<script>alert('x')</script>&\"", find(doc.frames, "<script>alert('x')</script>&\"").name)
  end)
end)

describe("flame graphs in Chromium", function()
  local node, why = X.reader("chromium")
  local env, ewhy = S.lua54_env(S.ROOT)
  if not node or not env or not python then
    it("zooms on a click and paints a search", function()
      pending("Chromium: " .. (why or ewhy or "python3 is not installed"))
    end)
    return
  end
  local dir = S.new_dir()
  local dump, svg = dir .. "/demo.prof", dir .. "/demo.svg"
  local result, deep, icicle, encode, decode, encode_label
  lazy_setup(function()
    local _, err, status = S.capture(("cd %s && CPROF_OUT=%s CPROF_QUIET=1 CPROF_TIMER=counter %s -l cprof.auto"
      .. " examples/json_demo.lua 200 >/dev/null"):format(S.q(S.ROOT), S.q(dump), S.lua))
    assert.equal(0, status, err)
    local out
    out, err, status = S.capture(env .. "lua5.4 " .. S.q(S.ROOT .. "/bin/cprof-stats") .. " " .. S.q(dump)
      .. " --export svg -o " .. S.q(svg))
    assert.equal(0, status, err)
    assert.equal("", out)
    -- the frames to click and to hover: the widest of json.encode and of json.decode (their
    -- short names differ between Lua 5.4 and LuaJIT, which sees other functions)
    local function widest(fn)
      local best
      for _, box in ipairs(boxes(S.read_file(svg))) do
        if box.label and box.label:match("%(" .. fn .. "%)$") and (not best or box.width > best.width) then
          best = box
        end
      end
      return best.name, best.label
    end
    encode, encode_label = widest("json%.encode")
    decode = widest("json%.decode")
    -- a graph 400 levels deep (6,500 pixels high), as a flame and as an icicle
    local flame_file, icicle_file = dir .. "/deep.svg", dir .. "/icicle.svg"
    S.write_file(flame_file, (X.export("svg", generated(400))))
    S.write_file(icicle_file, (X.export("svg", generated(400), { icicle = true })))
    local results = X.browser({
      { kind = "svg", file = svg, click = encode, search = "^json\\.encode$", hover = decode,
        queries = { "json", "file:json_demo", "file:^examples/json_demo\\.lua:168$", "(" } },
      { kind = "svg", file = flame_file, top = true },
      { kind = "svg", file = icicle_file } })
    result, deep, icicle = results[1], results[2], results[3]
  end)
  lazy_teardown(function() S.remove_dir(dir) end)

  it("opens without a script error, with its title", function()
    assert.is_nil(result.error)
    assert.same({}, result.errors)
    assert.matches("^Flame graph: ", result.title)
    assert.is_true(#result.before > 20)
  end)

  it("zooms on the frame clicked: it fills the width, its callers fade, the rest hides", function()
    local z = result.zoomed
    local enc = find(z, encode)
    assert.same({ 10, 1180, true, false }, { enc.x, enc.width, enc.shown, enc.parent })
    local main = find(z, "main")
    assert.same({ 10, 1180, true }, { main.x, main.width, main.parent })
    assert.is_false(find(z, decode).shown)
    local wider = 0
    for i, f in ipairs(z) do
      if f.shown and not f.parent and f.width > result.before[i].width + 0.01 then wider = wider + 1 end
    end
    assert.is_true(wider > 3)
    assert.is_true(result.unzoom)
    -- Reset Zoom puts every frame back
    for i, f in ipairs(result.reset) do
      assert.same({ result.before[i].x, result.before[i].width, true }, { f.x, f.width, f.shown })
    end
  end)

  it("paints the frames a search matches and prints their share, as cprof-stats counts it", function()
    local painted = 0
    for _, f in ipairs(result.searched) do
      if f.fill == "rgb(230,0,230)" then
        painted = painted + 1
        assert.equal(encode_label, f.label)
      end
    end
    assert.is_true(painted >= 1)
    local report, total = X.report(dump)
    local encode = report[encode_label]
    -- the page measures the boxes it has: encode's paths narrower than a pixel (inside
    -- self_test) are merged, so the share may fall short of cprof's by less than 1 px in 1180
    local share = 100 * encode.cumtime / total
    local got = tonumber(result.share)
    assert.is_true(got <= share + 1e-3 and got > share - 100 / 1180, result.share .. " ~= " .. share)
    assert.matches("^Matched: %d+%.%d%d%% %(" .. painted .. " frames?%)$", result.matched)
    assert.matches("function names", result.help, 1, true)
  end)

  it("searches function names, and file names only after file:", function()
    local by = {}
    for _, q in ipairs(result.queries) do by[q.term] = q end
    local frames = 0
    for _, f in ipairs(result.before) do if f.label then frames = frames + 1 end end
    -- json: json.encode, json.decode and what else has json in its own name; not every
    -- function of json_demo.lua
    local names = by.json.painted
    assert.is_true(#names >= 2 and #names < frames / 4, #names .. " of " .. frames)
    for _, label in ipairs(names) do
      assert.matches("json", label:match("^{(.*)}$") or label:match("%(([^()]*)%)$"))
    end
    -- file:json_demo: every Lua function of that file, none of the C functions
    assert.is_true(#by["file:json_demo"].painted > frames / 2)
    for _, label in ipairs(by["file:json_demo"].painted) do assert.matches("^examples/json_demo%.lua:", label) end
    for _, label in ipairs(by["file:^examples/json_demo\\.lua:168$"].painted) do
      assert.equal(encode_label, label)
    end
    assert.is_true(#by["file:^examples/json_demo\\.lua:168$"].painted >= 1)
    assert.same({}, by["("].painted)
    assert.equal("Bad expression: (", by["("].matched)
  end)

  it("shows a frame's name, place, calls and share when the mouse is over it", function()
    assert.matches("json_demo.lua:%d+%(json%.decode%)  ·  .*json_demo.lua:%d+  ·  %d+ calls?  ·  ", result.details)
  end)

  it("opens a deep flame graph at its root, the title bar and the details line in view", function()
    assert.is_nil(deep.error)
    assert.same({}, deep.errors)
    local v = deep.view
    assert.is_true(v.height > 6000 and v.innerHeight < 1000, v.height .. " " .. v.innerHeight)
    assert.equal(v.height - v.innerHeight, v.scrollY)
    assert.is_true(v.root.top >= 0 and v.root.bottom <= v.innerHeight, v.root.top .. " " .. v.root.bottom)
    assert.equal(0, v.bar.top)
    assert.is_true(v.foot.bottom <= v.innerHeight + 0.5)
    -- scrolled to the top, the bar and the details line stay where the window is
    v = deep.top
    assert.same({ 0, 0 }, { v.scrollY, v.bar.top })
    assert.is_true(math.abs(v.foot.bottom - v.innerHeight) < 0.5, v.foot.bottom .. " " .. v.innerHeight)
    -- an icicle has its root at the top: it opens there
    assert.same({}, icicle.errors)
    assert.equal(0, icicle.view.scrollY)
    assert.equal(78, icicle.view.root.top)
  end)
end)
