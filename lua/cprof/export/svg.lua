--- cprof.export.svg: a flame graph as one self-contained SVG file (no other tool, no network).
--
-- Each node of the call tree is a box as wide as its inclusive value, on top of its caller
-- (or, with opts.icicle, below it).  Colours say the kind of function (cprof.export.palette):
-- Lua functions in warm colours, a hue family per file and a shade per function; C functions
-- in blues; main chunks in greens.  A title, the weight and its unit, and a legend head the
-- picture.  Names are written as sanitize.display shows them (a U+202E cannot reverse a
-- label).  In a browser (the script inside):
--   * a click on a box zooms on it (its callers stay, faded, as the path to it); "Reset Zoom"
--     or a click on the background goes back;
--   * "Search" (or Ctrl-F) asks for a regular expression, paints the boxes whose function
--     name matches it (with "file:" before it: whose file:line) and prints their share of the
--     total, counting nested matches once; the page's ?s=TERM does it on load;
--   * hovering a box shows its name, file:line, calls, value and share at the bottom (and as
--     the box's tooltip);
--   * a graph taller than the window opens scrolled to its root (a flame graph's bottom),
--     the title bar and the details line kept in view as it scrolls.
-- Boxes narrower than opts.minwidth pixels (default 1) are not drawn one by one: the small
-- children of a box are merged into one grey box, and the subtitle says how many frames were
-- merged, as flamegraph.pl drops its narrow frames.  So the file stays small and quick on trees
-- of any size: at most a few boxes per pixel column and level.
--
-- With opts.base (another profile) it is a differential flame graph, as difffolded.pl and
-- flamegraph.pl draw one: widths from this profile, colour from the change of each box's
-- inclusive value against the same call path in the base, the base first scaled to this
-- total (difffolded.pl -n) unless opts.normalize is false: red grew, blue shrank, the deeper
-- the colour the larger the change; a change under opts.threshold percent of the total
-- (default palette.THRESHOLD) is noise and stays white.
--
-- opts: title, icicle, width (pixels, default 1200), minwidth (pixels, default 1), and with a
-- base threshold and normalize.

local _ENV = require("cprof.env")()

local M = {}

local export = require("cprof.export")
local model_mod = require("cprof.export.model")
local sanitize = require("cprof.sanitize")
local palette = require("cprof.export.palette")

M.restricts = true
M.diff = true

local floor, abs, sformat, concat, tostring = math.floor, math.abs, string.format, table.concat,
  tostring
local sgsub, display = string.gsub, sanitize.display

local FRAME_H, FONT, CHAR_W, XPAD = 16, 12, 0.59, 10
local TOP, BOTTOM = 78, 34

-- Text for XML: escaped, valid UTF-8, no control characters (XML 1.0 forbids them; names
-- come through sanitize.display first, which escapes them readably, so only the line breaks
-- of tooltips remain to keep).
local XML = { ["&"] = "&amp;", ["<"] = "&lt;", [">"] = "&gt;", ['"'] = "&quot;" }
local function xml(s)
  s = sanitize.utf8(tostring(s))
  return (sgsub(sgsub(s, "[%z\1-\8\11\12\14-\31]", "?"), '[&<>"]', XML))
end

-- Whole numbers with thousands separators.
local function grouped(n)
  local s = sformat("%d", n)
  local head, digits = string.match(s, "^(-?)(%d+)$")
  digits = string.gsub(string.reverse(string.gsub(string.reverse(digits), "(%d%d%d)", "%1,")), "^,", "")
  return head .. digits
end

-- "1 call", "2 calls".
local function count(n, noun)
  return grouped(n) .. " " .. noun .. (n == 1 and "" or "s")
end

local function seconds(x)
  local a = abs(x)
  if a >= 1 then return sformat("%.3f s", x) end
  if a >= 1e-3 then return sformat("%.3f ms", x * 1e3) end
  if a >= 1e-6 then return sformat("%.3f \194\181s", x * 1e6) end
  return sformat("%.0f ns", x * 1e9)
end

local function bytes(x)
  local a = abs(x)
  if a >= 2 ^ 30 then return sformat("%.2f GiB", x / 2 ^ 30) end
  if a >= 2 ^ 20 then return sformat("%.2f MiB", x / 2 ^ 20) end
  if a >= 2 ^ 10 then return sformat("%.2f KiB", x / 2 ^ 10) end
  return grouped(x) .. " B"
end

-- A value of each weight as people read it: "12.345 ms", "1,234 calls", "1.50 MiB".
local FORMAT = {
  time = seconds,
  calls = function(x) return count(x, "call") end,
  alloc = bytes,
  allocs = function(x) return count(x, "allocation") end,
  live = bytes,
}

-- The text that fits in a box `w` pixels wide (what the script does again on zoom).
local function fit(name, w)
  local n = floor((w - 6) / (FONT * CHAR_W))
  if n < 3 then return "" end
  if #name <= n then return name end
  return string.sub(name, 1, n - 2) .. ".."
end

local SCRIPT = [[
"use strict";
var svg, frames, details, matched, unzoom, searchbtn, bar, foot, W, H, XPAD, FONT, CHARW, zoomed = null;
function init() {
  svg = document.documentElement;
  details = document.getElementById("details");
  matched = document.getElementById("matched");
  unzoom = document.getElementById("unzoom");
  searchbtn = document.getElementById("search");
  bar = document.getElementById("bar"); foot = document.getElementById("foot");
  W = +svg.getAttribute("width"); H = +svg.getAttribute("height"); XPAD = +svg.getAttribute("data-xpad");
  FONT = +svg.getAttribute("data-font"); CHARW = +svg.getAttribute("data-charw");
  frames = Array.prototype.slice.call(document.getElementById("frames").children);
  frames.forEach(function (g) {
    var r = g.firstElementChild.nextElementSibling;
    g._x = +r.getAttribute("x"); g._w = +r.getAttribute("width");
    g._d = +g.getAttribute("data-d"); g._name = g.getAttribute("data-n");
    g._label = g.getAttribute("data-l"); g._fill = r.getAttribute("fill");
    g._info = g.firstElementChild.textContent;
    // what a search matches: the function's name (data-f where the short name shown adds
    // a line or a file to it), or with "file:" its file:line; merged boxes have neither
    g._fn = g._label === null ? null : g.getAttribute("data-f") || g._name;
    g._file = g.getAttribute("data-w");
  });
  var box = document.getElementById("frames");
  box.addEventListener("click", function (e) { var g = frame(e.target); if (g) zoom(g); });
  box.addEventListener("mouseover", function (e) {
    var g = frame(e.target); if (g) details.textContent = g._info.replace(/\n/g, "  \u00b7  ");
  });
  box.addEventListener("mouseout", function () { details.textContent = " "; });
  unzoom.addEventListener("click", reset);
  document.getElementById("background").addEventListener("click", reset);
  searchbtn.addEventListener("click", function () {
    if (searchbtn.classList.contains("on")) clearsearch(); else asksearch();
  });
  window.addEventListener("keydown", function (e) {
    if ((e.ctrlKey || e.metaKey) && e.key === "f") { e.preventDefault(); asksearch(); }
  });
  // A flame graph is read from its root up: one taller than the window opens at the bottom,
  // where the root is (an icicle's root is at the top, where a page opens anyway).
  window.addEventListener("scroll", pin);
  window.addEventListener("resize", pin);
  if (svg.getAttribute("data-icicle") !== "true") window.scrollTo(0, H);
  pin();
  var s = new URLSearchParams(location.search).get("s");
  if (s) search(s);
}
// The title bar and the details line stay in the window while a tall graph scrolls.
function pin() {
  var y = window.scrollY || 0;
  bar.setAttribute("transform", "translate(0," + y + ")");
  foot.setAttribute("transform", "translate(0," + Math.min(0, y + window.innerHeight - H) + ")");
}
function frame(n) {
  while (n && n !== svg) {
    if (n.parentNode && n.parentNode.id === "frames") return n;
    n = n.parentNode;
  }
  return null;
}
function place(g, x, w) {
  var r = g.firstElementChild.nextElementSibling, t = r.nextElementSibling;
  r.setAttribute("x", x.toFixed(2)); r.setAttribute("width", w.toFixed(2));
  t.setAttribute("x", (x + 3).toFixed(2));
  var n = Math.floor((w - 6) / (FONT * CHARW)), name = g._name;
  t.textContent = n < 3 ? "" : name.length <= n ? name : name.slice(0, n - 2) + "..";
}
function zoom(g) {
  var x0 = g._x, w0 = g._w, d0 = g._d, scale = (W - 2 * XPAD) / w0, eps = 1e-6;
  zoomed = g;
  frames.forEach(function (f) {
    var inside = f._x >= x0 - eps && f._x + f._w <= x0 + w0 + eps;
    var above = f._x <= x0 + eps && f._x + f._w >= x0 + w0 - eps;
    if (f._d < d0 && above) {
      f.style.display = ""; f.classList.add("parent"); place(f, XPAD, W - 2 * XPAD);
    } else if (f._d >= d0 && inside) {
      f.style.display = ""; f.classList.remove("parent"); place(f, XPAD + (f._x - x0) * scale, f._w * scale);
    } else {
      f.style.display = "none";
    }
  });
  unzoom.classList.remove("hide");
}
function reset() {
  zoomed = null;
  frames.forEach(function (f) {
    f.style.display = ""; f.classList.remove("parent"); place(f, f._x, f._w);
  });
  unzoom.classList.add("hide");
}
function asksearch() {
  var term = prompt(searchbtn.firstElementChild.textContent, "");
  if (term) search(term);
}
function search(term) {
  var field = "_fn", re;
  if (term.slice(0, 5) === "file:") { field = "_file"; term = term.slice(5); }
  try { re = new RegExp(term); } catch (err) { matched.textContent = "Bad expression: " + term; return; }
  var spans = [];
  frames.forEach(function (f) {
    var r = f.firstElementChild.nextElementSibling;
    if (f[field] !== null && re.test(f[field])) {
      r.setAttribute("fill", "rgb(230,0,230)"); f.classList.add("match"); spans.push([f._x, f._x + f._w]);
    } else {
      r.setAttribute("fill", f._fill); f.classList.remove("match");
    }
  });
  spans.sort(function (a, b) { return a[0] - b[0] || b[1] - a[1]; });
  var total = 0, end = -Infinity;
  spans.forEach(function (s) {
    if (s[0] >= end) { total += s[1] - s[0]; end = s[1]; }
    else if (s[1] > end) { total += s[1] - end; end = s[1]; }
  });
  var pct = 100 * total / (W - 2 * XPAD);
  matched.textContent = "Matched: " + pct.toFixed(2) + "% (" + spans.length + (spans.length === 1 ? " frame)" : " frames)");
  matched.setAttribute("data-share", pct.toFixed(4));
  searchbtn.lastChild.textContent = "Reset Search"; searchbtn.classList.add("on");
}
function clearsearch() {
  frames.forEach(function (f) {
    f.firstElementChild.nextElementSibling.setAttribute("fill", f._fill); f.classList.remove("match");
  });
  matched.textContent = " "; matched.removeAttribute("data-share");
  searchbtn.lastChild.textContent = "Search"; searchbtn.classList.remove("on");
}
]]

local STYLE = [[
text { font-family: Verdana, "DejaVu Sans", sans-serif; fill: rgb(0,0,0); }
#title { font-size: 17px; text-anchor: middle; }
#subtitle { font-size: 12px; text-anchor: middle; fill: rgb(70,70,70); }
#frames text { font-size: 12px; pointer-events: none; }
#frames g:hover rect { stroke: rgb(0,0,0); stroke-width: 0.5; }
#frames g { cursor: pointer; }
.parent { opacity: 0.5; }
.button { font-size: 12px; cursor: pointer; fill: rgb(40,40,160); }
.hide { display: none; }
#details, #matched { font-size: 12px; }
#matched { text-anchor: end; }
]]

-- The boxes to draw: nodes at least `minw` pixels wide, the narrower children of each box
-- merged into one box.  Returns the boxes as columns (x and w in value units, depth, node or
-- 0 for a merged box, and for merged boxes the number of frames they hold), the deepest level
-- and the number of frames merged.
local function layout(m, incl, scale, minw)
  local kids = m:children(incl)
  local first, child, parent = kids.first, kids.child, m.parent
  local size = {}
  for k = 1, m.n do size[k] = 1 end
  for k = m.n, 1, -1 do
    local p = parent[k]
    if p > 0 then size[p] = size[p] + size[k] end
  end
  local B = { n = 0, x = {}, w = {}, d = {}, node = {}, count = {} }
  local function box(x, w, d, node, count)
    local i = B.n + 1
    B.n = i
    B.x[i], B.w[i], B.d[i], B.node[i], B.count[i] = x, w, d, node, count
  end
  local start, depth = { [0] = 0 }, { [0] = 0 }
  local drawn = { [0] = true }
  local merged, maxdepth = 0, 0
  for p = 0, m.n do
    if drawn[p] then
      local pos, d = start[p], depth[p] + 1
      local rest_w, rest_n = 0, 0
      for i = first[p], first[p + 1] - 1 do
        local c = child[i]
        local w = incl[c]
        if w > 0 then
          if w * scale >= minw then
            drawn[c], start[c], depth[c] = true, pos, d
            box(pos, w, d, c, 1)
            pos = pos + w
            if d > maxdepth then maxdepth = d end
          else
            rest_w, rest_n = rest_w + w, rest_n + size[c]
          end
        end
      end
      if rest_n > 0 then
        merged = merged + rest_n
        if rest_w * scale >= minw then
          box(pos, rest_w, d, 0, rest_n)
          if d > maxdepth then maxdepth = d end
        end
      end
    end
  end
  return B, maxdepth, merged
end

-- A node's tooltip lines on its change against the base.
local function change_info(D, k, incl, fmt)
  local j = D.to_base[k]
  if not j then return "\nnew: not in the base" end
  local was, btotal = D.binc[j], D.binc[0]
  local dlt = incl[k] - was
  local info = sformat("\nbase %s, change %s%s%s", fmt(was), dlt >= 0 and "+" or "-", fmt(abs(dlt)),
    was ~= 0 and sformat(" (%+.1f%%)", 100 * dlt / was) or "")
  if D.normalize and incl[0] > 0 and btotal > 0 then
    info = info .. sformat("\nshare of the total %.2f%% in the base, %.2f%% here", 100 * was / btotal,
      100 * incl[k] / incl[0])
  end
  return info
end

-- Swatches and their words in a row at the top left.
local function legend(w, items)
  local x = XPAD
  for _, l in ipairs(items) do
    w.put(sformat('<rect x="%d" y="52" width="12" height="12" fill="%s"/><text x="%d" y="62"'
      .. ' font-size="12">%s</text>\n', x, l[1], x + 16, xml(l[2])))
    x = x + 30 + floor(#l[2] * 6.6 + 0.5)
  end
end

local SEARCH_HELP = "Search function names (a regular expression); file:EXPRESSION searches the"
  .. " file:line of Lua functions instead. Ctrl-F searches too."

function M.write(m, sink, opts, weight, base)
  m:need_tree("svg")
  local width = opts.width or 1200
  local minw = opts.minwidth or 1
  if type(width) ~= "number" or width < 100 then
    model_mod.fail("svg: width must be a number of pixels of at least 100")
  end
  if type(minw) ~= "number" or minw <= 0 then
    model_mod.fail("svg: minwidth must be a number of pixels above 0")
  end
  local self_w = m:restrict(m:weight(weight), opts.patterns)
  local incl = m:inclusive(self_w)
  local total = incl[0]
  local F, N, frame = m.F, m.N, m.frame
  local fmt = FORMAT[weight]
  local D = base and palette.compare(m, base, incl, weight, opts, "svg")

  local usable = width - 2 * XPAD
  local scale = total > 0 and usable / total or 0
  local B, maxdepth, merged = layout(m, incl, scale, minw)
  local height = TOP + maxdepth * FRAME_H + BOTTOM + 4
  local function y_of(d)
    if opts.icicle then return TOP + (d - 1) * FRAME_H end
    return height - BOTTOM - d * FRAME_H
  end

  local w = export.buffer(sink)
  local command = tostring(m.meta.command or "")
  local title = opts.title or ((base and "Differential flame graph" or opts.icicle and "Icicle graph"
    or "Flame graph") .. (command ~= "" and ": " .. command or ""))
  local wl = model_mod.WEIGHTS[weight]
  local sub = { wl.label .. " (" .. fmt(total) .. " in all)" }
  if opts.patterns and #opts.patterns > 0 then
    sub[#sub + 1] = "only paths through " .. concat(opts.patterns, " or ")
  end
  if opts.hide and #opts.hide > 0 then sub[#sub + 1] = "hidden: " .. concat(opts.hide, ", ") end
  sub[#sub + 1] = count(m.n, "node")
  if merged > 0 then
    sub[#sub + 1] = count(merged, "frame") .. " narrower than " .. tostring(minw) .. " px merged"
  end
  if D then
    local btotal = D.binc[0]
    sub[#sub + 1] = "base " .. fmt(btotal) .. (btotal > 0 and sformat(" (this %+.1f%%)",
      100 * (total - btotal) / btotal) or "")
    if D.normalize then sub[#sub + 1] = "shares of each total compared" end
    if D.base_only > 0 then sub[#sub + 1] = count(D.base_only, "path") .. " only in the base not shown" end
  end

  w.put('<?xml version="1.0" encoding="UTF-8" standalone="no"?>\n')
  w.put(sformat('<svg version="1.1" width="%d" height="%d" viewBox="0 0 %d %d" onload="init(evt)"'
    .. ' xmlns="http://www.w3.org/2000/svg" data-xpad="%d" data-font="%d" data-charw="%s"'
    .. ' data-total="%.17g" data-merged="%d" data-weight="%s" data-icicle="%s">\n',
    width, height, width, height, XPAD, FONT, tostring(CHAR_W), total, merged, weight,
    tostring(opts.icicle == true)))
  w.put("<!-- made by the svg export of cprof (docs/EXPORTS.md); the script is cprof's own -->\n")
  w.put("<defs><linearGradient id=\"bg\" y1=\"0\" y2=\"1\" x1=\"0\" x2=\"0\">"
    .. "<stop stop-color=\"#eeeeee\" offset=\"5%\"/><stop stop-color=\"#eeeeb0\" offset=\"95%\"/>"
    .. "</linearGradient></defs>\n")
  w.put("<style type=\"text/css\"><![CDATA[\n" .. STYLE .. "]]></style>\n")
  w.put("<script type=\"text/ecmascript\"><![CDATA[\n" .. SCRIPT .. "]]></script>\n")
  w.put(sformat('<rect id="background" x="0" y="0" width="%d" height="%d" fill="url(#bg)"/>\n',
    width, height))
  w.put(sformat('<text id="subtitle" x="%d" y="42">%s</text>\n', floor(width / 2),
    xml(display(concat(sub, " \194\183 ")))))
  if D then
    legend(w, { { palette.change(D.max, D.max, 0), "grew" }, { palette.change(-D.max, D.max, 0), "shrank" },
                { palette.change(0, D.max, 0), sformat("changed by less than %s%% of the total",
                  sformat("%.14g", D.threshold)) } })
  else
    legend(w, palette.LEGEND)
  end

  w.put('<g id="frames">\n')
  for i = 1, B.n do
    local k, d = B.node[i], B.d[i]
    local x, bw = XPAD + B.x[i] * scale, B.w[i] * scale
    local share = total > 0 and 100 * B.w[i] / total or 0
    local name, attrs, info, fill
    if k == 0 then
      name = count(B.count[i], "frame")
      attrs = ""
      info = sformat("%s narrower than %s px, merged\n%s (%.2f%%)", name, tostring(minw), fmt(B.w[i]), share)
      fill = palette.MERGED
    else
      local f = frame[k]
      local short, label, fname = m:name(f), display(m:label(f)), display(tostring(F.name[f]))
      local where = F.kind[f] ~= "C" and display(tostring(F.file[f]) .. ":" .. tostring(F.line[f]))
      name = display(short)
      attrs = (fname ~= name and sformat(' data-f="%s"', xml(fname)) or "")
        .. sformat(' data-l="%s"', xml(label)) .. (where and sformat(' data-w="%s"', xml(where)) or "")
      info = sformat("%s\n%s\n%s\n%s (%.2f%%), self %s", label, where or "C function",
        count(N.ncalls[k], "call"), fmt(incl[k]), share, fmt(self_w[k]))
      if D then
        info = info .. change_info(D, k, incl, fmt)
        fill = palette.change(D.pct[k], D.max, D.threshold)
      else
        fill = palette.frame(F.kind[f], F.file[f], short)
      end
    end
    local y = y_of(d)
    w.put(sformat('<g data-d="%d" data-n="%s"%s><title>%s</title>'
      .. '<rect x="%.2f" y="%d" width="%.2f" height="%d" fill="%s" rx="2" ry="2"/>'
      .. '<text x="%.2f" y="%.1f">%s</text></g>\n',
      d, xml(name), attrs, xml(info), x, y, bw, FRAME_H - 1, fill, x + 3,
      y + FRAME_H - 4.5, xml(fit(name, bw))))
  end
  w.put("</g>\n")
  -- after the frames, so that they stay on top when a tall graph scrolls under them
  w.put(sformat('<g id="bar"><rect x="0" y="0" width="%d" height="32" fill="#eeeeee"/>\n', width))
  w.put(sformat('<text id="title" x="%d" y="24">%s</text>\n', floor(width / 2), xml(display(title))))
  w.put(sformat('<text id="unzoom" class="button hide" x="%d" y="24">Reset Zoom</text>\n', XPAD))
  w.put(sformat('<text id="search" class="button" x="%d" y="24" text-anchor="end"><title>%s</title>'
    .. 'Search</text></g>\n', width - XPAD, xml(SEARCH_HELP)))
  w.put(sformat('<g id="foot"><rect x="0" y="%d" width="%d" height="30" fill="#eeeeb0"/>\n',
    height - 30, width))
  w.put(sformat('<text id="details" x="%d" y="%d"> </text>\n', XPAD, height - 12))
  w.put(sformat('<text id="matched" x="%d" y="%d"> </text></g>\n', width - XPAD, height - 12))
  w.put("</svg>\n")
  w.flush()
  return { format = "svg", boxes = B.n, merged = merged, depth = maxdepth }
end

return M
