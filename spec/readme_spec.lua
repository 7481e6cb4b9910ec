-- README.md promises to say exactly what `make demo` and `make test` install on a fresh machine;
-- the Makefile's lists are the source, and these specs keep the README's sentences in step.
local S = require "spec.support"

local ROOT = S.absolute(S.ROOT)
local README = S.read_file(ROOT .. "/README.md")
local MAKEFILE = S.read_file(ROOT .. "/Makefile")

-- The words of a Makefile variable, with its continuation lines.
local function make_words(name)
  local value = MAKEFILE:match("\n" .. name .. "%s*:=%s*(.-[^\\])\n")
  assert(value, "Makefile has no " .. name)
  local words = {}
  for w in value:gsub("\\\n", " "):gmatch("%S+") do words[#words + 1] = w end
  return words
end

-- The paragraph of README.md that starts with `start`.
local function paragraph(start)
  local p = README:match("\n(" .. start:gsub("%p", "%%%0") .. ".-)\n\n")
  assert(p, "README.md has no paragraph starting with " .. start)
  return (p:gsub("%s+", " "))
end

local function names_all(text, words, what)
  for _, w in ipairs(words) do
    assert(text:find(w, 1, true), ("README.md does not say that %s installs %s"):format(what, w))
  end
end

-- The package names a README sentence lists: the comma-separated run after `after`.
local function listed(text, after, upto)
  local list = text:match(after:gsub("%p", "%%%0") .. "(.-)" .. upto:gsub("%p", "%%%0"))
  assert(list, "no list after " .. after)
  local out = {}
  for w in list:gsub(" and ", ", "):gmatch("[%w%.%-]+") do out[w] = true end
  return out
end

describe("README.md's quick start", function()
  it("names every Debian package make deps installs, and no other", function()
    local text = paragraph("Both commands first run `make deps`")
    local pkgs = make_words("DEPS_PKGS")
    names_all(text, pkgs, "make deps")
    local said = listed(text, "that are missing: ", " (")
    local want = {}
    for _, p in ipairs(pkgs) do want[p] = true end
    assert.are.same(want, said)
  end)

  it("names every reader make test installs, from Debian and from npm", function()
    local text = paragraph("`make test` also installs")
    local debs = {}
    for _, cp in ipairs(make_words("EXPORT_READER_CMDS")) do debs[#debs + 1] = cp:match(":(.*)$") end
    names_all(text, debs, "make test")
    for _, spec in ipairs(make_words("EXPORT_READER_NPM")) do
      names_all(text, { (spec:match("^(.-)@")) }, "make test")
    end
  end)

  it("says how to use the checkout before its first example runs a program", function()
    local env_at = README:find('eval "$(make -s env)"', 1, true)
    local first_run = README:find("lua5.4 -l cprof.auto script.lua", 1, true)
    assert.truthy(env_at and first_run and env_at < first_run)
  end)

  it("finds the manual pages in a checkout: make builds them where make -s env's MANPATH points", function()
    local env = S.capture("make -s -C " .. S.q(ROOT) .. " env")
    local dir = env:match("export MANPATH='([^']+)'")
    assert.matches("/build/man$", dir)
    assert.truthy(S.read_file(dir .. "/man1/cprof-stats.1"))
    assert.truthy(S.read_file(dir .. "/man3/cprof.3"))
  end)
end)
