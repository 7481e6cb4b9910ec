-- docs/ARCHITECTURE.md draws the source tree; the guide asks that it stay true. These specs
-- read its two trees (src/, and bin/ with lua/cprof/) and compare them with the files there.
local S = require "spec.support"

local ROOT = S.absolute(S.ROOT)
local DOC = S.read_file(ROOT .. "/docs/ARCHITECTURE.md")

-- The lines of the fenced block whose first line is `first`.
local function block(first)
  local lines, inside = {}, false
  for line in (DOC .. "\n"):gmatch("(.-)\n") do
    if inside then
      if line:match("^```") then return lines end
      lines[#lines + 1] = line
    elseif line == first then
      inside = true
      lines[1] = line
    end
  end
  error("docs/ARCHITECTURE.md has no block starting with " .. first)
end

-- The files a tree names, as paths from the root. A folder in `tops` starts at the margin;
-- under it, a file or a subfolder ("hook/") is indented by 2, a subfolder's files by 4, and a
-- line names its file by its first word ("name.c, .h" names both); deeper lines continue the
-- text of the line above.
local function named(lines, tops)
  local out, top, sub = {}, nil, nil
  for _, line in ipairs(lines) do
    local indent, word, rest = line:match("^( *)(%S+)(.*)$")
    if not word then
      top, sub = nil, nil
    elseif #indent == 0 then
      top, sub = tops[word] and word or nil, nil
    elseif #indent == 2 and top then
      if word:match("/$") then sub = top .. word else out[#out + 1] = top .. word end
    elseif #indent == 4 and sub then
      local c = word:match("^(.-%.c),$")
      out[#out + 1] = sub .. (c or word)
      if c and rest:match("^ %.h ") then out[#out + 1] = sub .. c:gsub("c$", "h") end
    end
  end
  return out
end

local function files_under(...)
  local list = {}
  -- sorted here, not by sort(1), which the ASan suite's preloaded runtime makes abort at exit
  local pipe = io.popen("cd '" .. ROOT .. "' && find " .. table.concat({...}, " ") .. " -type f")
  for f in pipe:lines() do list[#list + 1] = f end
  pipe:close()
  table.sort(list)
  return list
end

-- The entries of `from` that `into` lacks.
local function missing(from, into)
  local into_set, out = {}, {}
  for _, x in ipairs(into) do into_set[x] = true end
  for _, x in ipairs(from) do
    if not into_set[x] then out[#out + 1] = x end
  end
  return out
end

describe("docs/ARCHITECTURE.md", function()
  it("names every C file under src/, and no file that is not there", function()
    local doc = named(block("src/"), { ["src/"] = true })
    local real = files_under("src")
    assert.is_true(#doc > 40)
    assert.are.same({}, missing(real, doc))
    assert.are.same({}, missing(doc, real))
  end)

  it("names every Lua module and bin/ script, and no file that is not there", function()
    local doc = named(block("bin/"), { ["bin/"] = true, ["lua/cprof/"] = true })
    local real = files_under("bin", "lua/cprof")
    assert.is_true(#doc > 40)
    assert.are.same({}, missing(real, doc))
    assert.are.same({}, missing(doc, real))
  end)
end)
