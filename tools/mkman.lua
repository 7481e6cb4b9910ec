-- tools/mkman.lua: writes the manual page cprof-stats.1 (roff) to standard output, made from
-- the tables of cprof.cli that `cprof-stats --help` is made of, so that the page and the help
-- never disagree and an option added there is documented here too.
--
--   lua5.4 tools/mkman.lua > build/man/man1/cprof-stats.1  (make does this; make install installs it)

local cli = require "cprof.cli"
local version = require "cprof.version"

local out = {}
local function put(s) out[#out + 1] = s end

-- Text for roff: backslashes and hyphens escaped (so that options copy as ASCII minus signs),
-- and a line that would start with a control character made plain.
local function text(s)
  s = s:gsub("\\", "\\e"):gsub("%-", "\\-")
  s = s:gsub("\n([.'])", "\n\\&%1")
  if s:find("^[.']") then s = "\\&" .. s end
  return s
end

-- A paragraph of the help, its hard line breaks joined: roff fills the lines itself.
local function para(s)
  return text((s:gsub("^\n", ""):gsub("%s*\n%s*", " ")))
end

local prog = cli.PROG
put(('.TH %s 1 "" "cprof %s" "User Commands"'):format(prog:upper(), version.VERSION))
put(".SH NAME")
put(text(prog) .. " \\- " .. text(cli.PURPOSE))
put(".SH SYNOPSIS")
for i, s in ipairs(cli.SYNOPSIS) do
  if i > 1 then put(".br") end
  put(".B " .. text(prog))
  put(text(s))
end
put(".SH DESCRIPTION")
for i, p in ipairs(cli.DESCRIPTION) do
  if i > 1 then put(".PP") end
  put(para(p))
end
put(".SH OPTIONS")
put("\\fB\\-\\-opt\\fR \\fIVALUE\\fR and \\fB\\-\\-opt=\\fR\\fIVALUE\\fR are the same.")
for _, opt in ipairs(cli.OPTIONS) do
  local names = "\\fB\\-\\-" .. text(opt.long) .. "\\fR"
  if opt.short then names = "\\fB\\-" .. text(opt.short) .. "\\fR, " .. names end
  if opt.arg then names = names .. " \\fI" .. text(opt.arg) .. "\\fR" end
  put(".TP")
  put(names)
  put(para(table.concat(opt.help, "\n")))
end
-- A section of { term, sentence } pairs.
local function tagged(title, pairs_)
  put(".SH " .. title)
  for _, t in ipairs(pairs_) do
    put(".TP")
    put(".B " .. text(t[1]))
    put(para(t[2]) .. ".")
  end
end
tagged("EXAMPLES", cli.EXAMPLES)
tagged("EXIT STATUS", cli.EXIT_STATUS)
tagged("ENVIRONMENT", cli.ENVIRONMENT)
put(".SH SEE ALSO")
put(".BR cprof (3),")
put(".BR lua5.4 (1);")
put("the manual, MANUAL.md, and the reference in share/doc/cprof/docs/ under the install prefix.")

io.write(table.concat(out, "\n"), "\n")
