--- cprof.export.palette: the colours of cprof's flame graphs, and the changes a differential
--- graph colours (the svg export; one source for any other page that draws these graphs).
--
--   palette.frame(kind, file, name)   a function's fill: Lua functions in warm colours, a hue
--                                     family per file and a shade per function; C functions
--                                     in blues, main chunks in greens; the same on every run
--                                     and every Lua (a hash of the names, no random numbers)
--   palette.MERGED, palette.LEGEND    merged narrow frames' fill; the legend's swatches
--   palette.changes(n, incl, binc, to_base, normalize)
--                                     each node's change against the base, in percent of the
--                                     total
--   palette.change(pct, max, threshold)
--                                     the fill of a change: red grew, blue shrank, neutral
--                                     under the threshold
--   palette.THRESHOLD                 the default threshold (percent of the total)
--   palette.compare(m, base, incl, weight, opts, format)
--                                     a differential graph's numbers: the base aligned, the
--                                     changes, the threshold checked (svg and html draw these)
--
-- Every fill here keeps black labels readable: its contrast ratio against black is at least
-- 4.5 (WCAG's AA for text), which spec/export_svg_spec.lua checks.

local _ENV = require("cprof.env")()

local M = {}

local model_mod = require("cprof.export.model")

local floor, abs, sformat, sbyte = math.floor, math.abs, string.format, string.byte

-- A hash of a string in [0, 1000003), the same on every Lua (integers or doubles alike);
-- another `base` gives another hash, independent enough for another of a colour's parts.
local function hash(s, base)
  local h = 0
  for i = 1, #s do h = (h * base + sbyte(s, i)) % 1000003 end
  return h
end

-- A fraction in [0, 1) from a string.  Names whose hashes are close (f1, f2, f3 differ by 1)
-- get fractions far apart: consecutive multiples of an irrational number spread over the
-- interval (a Weyl sequence).
local function fraction(s, base)
  return (hash(s, base) * 0.6180339887498949) % 1
end

-- One of `list`, chosen by the string: a few steps far enough apart to be seen, rather than a
-- continuous range where two functions often land a shade apart that nobody can tell.
local function pick(list, s, base)
  return list[floor(fraction(s, base) * #list) + 1]
end

-- The steps of a Lua function's shade: hue around its file's, saturation, lightness (75
-- shades; in a file of 50 functions, most pairs differ by a visible step).
local HUES, SATS, LIGHTS = { -12, -6, 0, 6, 12 }, { 60, 78, 96 }, { 56, 61, 66, 71, 76 }
local C_HUES, C_SATS, C_LIGHTS = { 192, 202, 212, 222, 232 }, { 45, 57, 69 }, { 65, 71, 77 }

local function hsl(h, s, l)
  return sformat("hsl(%d,%d%%,%d%%)", h % 360, s, l)
end

--- The fill of a function of kind "Lua", "C" or "main", from file `file`, named `name`
--- (a name that tells it apart from the file's other functions).
function M.frame(kind, file, name)
  name = tostring(name)
  if kind == "C" then
    return hsl(pick(C_HUES, name, 31), pick(C_SATS, name, 37), pick(C_LIGHTS, name, 41))
  end
  local family = fraction(tostring(file), 31)
  if kind == "main" then return hsl(90 + floor(family * 40), 50, 58) end
  -- the file's hue in 12..44 (orange to amber), its functions' up to 12 degrees either side
  return hsl(12 + floor(family * 33) + pick(HUES, name, 31), pick(SATS, name, 37), pick(LIGHTS, name, 41))
end

M.MERGED = "rgb(190,190,190)"

M.LEGEND = { { "hsl(25,80%,62%)", "Lua (a hue per file, a shade per function)" },
             { "hsl(205,55%,70%)", "C" }, { "hsl(110,50%,58%)", "main chunk" },
             { M.MERGED, "merged narrow frames" } }

M.THRESHOLD = 1

--- The change of each node 1..n of a differential graph: pct[k] is incl[k] minus the value of
--- the same path in the base (binc[to_base[k]], 0 when the base has no such path), in percent
--- of this total (incl[0]).  With `normalize`, the base is first scaled to this total (as
--- difffolded.pl -n does), so that two runs of one program that took different times compare
--- by the shares of their totals; pct[k] is then the change of the node's share in points.
--- Returns pct, the largest |pct[k]|, and the scale applied to the base.
function M.changes(n, incl, binc, to_base, normalize)
  local total, btotal = incl[0], binc[0]
  local scale = (normalize and total > 0 and btotal > 0) and total / btotal or 1
  local pct, max = {}, 0
  for k = 1, n do
    local j = to_base[k]
    local p = total > 0 and 100 * (incl[k] - scale * (j and binc[j] or 0)) / total or 0
    pct[k] = p
    if abs(p) > max then max = abs(p) end
  end
  return pct, max, scale
end

-- The ends of the differential colours: white for no change; the deepest red and blue keep a
-- contrast ratio of about 6 with black text (pure blue, 2.4, left labels unreadable).
local NEUTRAL, RED, BLUE = { 250, 250, 250 }, { 255, 60, 60 }, { 80, 130, 255 }

--- The fill of a change of `pct` percent of the total when the largest is `max`: neutral
--- when |pct| is under `threshold` (noise, as two runs of one program differ), else red
--- (grew) or blue (shrank), deeper the larger the change, and never paler than 15% of the way.
function M.change(pct, max, threshold)
  local a = abs(pct)
  if a == 0 or a < threshold then
    return sformat("rgb(%d,%d,%d)", NEUTRAL[1], NEUTRAL[2], NEUTRAL[3])
  end
  local t = a / max
  if t < 0.15 then t = 0.15 end
  local to = pct > 0 and RED or BLUE
  local c = {}
  for i = 1, 3 do c[i] = floor(NEUTRAL[i] + (to[i] - NEUTRAL[i]) * t + 0.5) end
  return sformat("rgb(%d,%d,%d)", c[1], c[2], c[3])
end

--- The numbers of a differential graph of `m` (with `incl`, its inclusive values of `weight`)
--- against `base` (another model): D.binc the base's inclusive values, D.to_base the base's node
--- of each node's path, D.pct each node's change in percent of the total and D.max the largest
--- (M.changes), D.threshold (opts.threshold, checked; default M.THRESHOLD), D.normalize, and
--- D.base_only the paths only the base has (the highest of each).  `format` names the export in
--- errors.
function M.compare(m, base, incl, weight, opts, format)
  base:need_tree(format)
  local threshold = opts.threshold or M.THRESHOLD
  if type(threshold) ~= "number" or not (threshold >= 0 and threshold < 100) then
    model_mod.fail("%s: threshold must be a percentage of at least 0 and under 100", format)
  end
  local D = { threshold = threshold, normalize = opts.normalize ~= false, base_only = 0 }
  D.binc = base:inclusive(base:restrict(base:weight(weight), opts.patterns))
  local matched
  D.to_base, matched = m:align(base)
  D.pct, D.max = M.changes(m.n, incl, D.binc, D.to_base, D.normalize)
  for j = 1, base.n do
    if not matched[j] and D.binc[j] > 0 and (base.parent[j] == 0 or matched[base.parent[j]]) then
      D.base_only = D.base_only + 1
    end
  end
  return D
end

return M
