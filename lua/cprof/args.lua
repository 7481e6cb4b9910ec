--- cprof.args: the argument checks of cprof's public functions, worded as Lua's own library
--- words them and raised at the line that called the public function:
---
---   bad argument #1 to 'add' (Stats expected, got number)
---   calling 'print_stats' on bad self (Stats expected, got number)
---
--- Arguments are counted as Lua counts a method's: `st:add(x)` has x as argument #1.  A check
--- made by the public function itself raises past it, at its caller; `depth` counts the helper
--- functions between the public function and the check, when a helper checks for it.
--
-- Works on Lua 5.4 and LuaJIT/Lua 5.1; needs nothing else of cprof.

local _ENV = require("cprof.env")()

local M = {}

local type, getmetatable, error, pcall, sformat = type, getmetatable, error, pcall, string.format

local names = setmetatable({}, { __mode = "k" })  -- metatable -> the name of its objects

--- Objects whose metatable is `mt` are called `name` in messages ("Stats", "cprof.Profile").
function M.name_objects(mt, name)
  names[mt] = name
end

--- The type of `v` as messages give it: a named kind of object, or Lua's type.
function M.typename(v)
  local mt = getmetatable(v)
  return mt ~= nil and names[mt] or type(v)
end

--- Raises "bad argument #n to 'fname' (msg)".
function M.fail(n, fname, msg, depth)
  error(sformat("bad argument #%d to '%s' (%s)", n, fname, msg), 3 + (depth or 0))
end

--- Unless `ok`: raises "bad argument #n to 'fname' (EXPECTED expected, got TYPE)".
function M.check(ok, v, n, fname, expected, depth)
  if not ok then
    error(sformat("bad argument #%d to '%s' (%s expected, got %s)", n, fname, expected,
                  M.typename(v)), 3 + (depth or 0))
  end
end

--- Unless `ok`: raises "calling 'fname' on bad self (EXPECTED expected, got TYPE)".
function M.check_self(ok, v, fname, expected, depth)
  if not ok then
    error(sformat("calling '%s' on bad self (%s expected, got %s)", fname, expected,
                  M.typename(v)), 3 + (depth or 0))
  end
end

--- An object with a write method: a file, or any stream of cprof's reports.
function M.is_stream(v)
  local t = type(v)
  if t ~= "table" and t ~= "userdata" then return false end
  local ok, w = pcall(function() return v.write end)
  return ok and w ~= nil
end

--- A word of a command line, quoted for a POSIX shell when it needs to be.
function M.shell_word(w)
  w = tostring(w)
  if w ~= "" and not string.find(w, "[^%w%-%+_./:=,@%%]") then return w end
  return "'" .. string.gsub(w, "'", [['\'']]) .. "'"
end

return M
