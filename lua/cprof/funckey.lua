--- cprof.funckey: the keys that name functions in a Stats — pstats' (file, line, name) tuple —
--- and their printed names: func_std_string for what matches and sorts, display_name for what
--- a text report prints.
--
-- A key is an interned table { file, line, name }: equal triples are the same table in every
-- Stats (interned weakly, module-wide), so keys compare with == and index tables.  C functions
-- use the key { "~", 0, "<qualified.name>" }, exactly as cProfile labels built-ins, so that they
-- print as "{qualified.name}" and sort after Lua functions under the file/name sorts.
--
-- Works on Lua 5.4 and LuaJIT/Lua 5.1.

local _ENV = require("cprof.env")()

local pyfmt = require "cprof.pyfmt"
local sanitize = require "cprof.sanitize"

local M = {}

local type, tostring, setmetatable, getmetatable = type, tostring, setmetatable, getmetatable
local sformat, ssub, smatch = string.format, string.sub, string.match
local int_str = pyfmt.int_str

-- The file name of C functions' keys (cProfile's convention).
local C_FILE = "~"

local key_mt = {}
local interned = setmetatable({}, { __mode = "v" })

--- A line number as keys hold it: on Lua 5.4 a float with an integral value becomes an integer,
--- so that 7 and 7.0 are one line.
function M.norm_line(line)
  if math.type then
    local i = math.tointeger(line)
    if i then return i end
  end
  return line
end

--- Return the interned key table { file, line, name } for a pstats tuple.
function M.func_key(file, line, name)
  line = M.norm_line(line)
  local id = tostring(file) .. "\0" .. tostring(line) .. "\0" .. tostring(name)
  local k = interned[id]
  if not k then
    k = setmetatable({ file, line, name }, key_mt)
    interned[id] = k
  end
  return k
end

--- True if `k` is an interned function key.
function M.is_key(k)
  return getmetatable(k) == key_mt
end

-- "<name>" without its brackets, or nil when `name` is not bracketed.
local function unbracket(name)
  if type(name) == "string" and ssub(name, 1, 1) == "<" and ssub(name, -1) == ">" then
    return ssub(name, 2, -2)
  end
  return nil
end

--- The plain name of a C function's key ("~", 0, "<name>"), or nil for any other key.
function M.c_name(key)
  if key[1] == C_FILE and key[2] == 0 then return unbracket(key[3]) end
  return nil
end

--- pstats' func_std_string: "file:line(name)", or "{name}" for C functions.
--- Accepts a key table or (file, line, name).
local function func_std_string(key, line, name)
  local file
  if type(key) == "table" then
    file, line, name = key[1], key[2], key[3]
  else
    file = key
  end
  if file == C_FILE and line == 0 then
    local plain = unbracket(name)
    if plain then return "{" .. plain .. "}" end
    return name
  end
  return sformat("%s:%s(%s)", tostring(file), int_str(line), tostring(name))
end
M.func_std_string = func_std_string

key_mt.__tostring = func_std_string

--- func_std_string's name as the text reports print it (sanitize.display): a control or
--- bidirectional character in a chunk or function name shows as its escape instead of acting on
--- the terminal.  Patterns match, and sorts order, func_std_string's name.
function M.display_name(key, line, name)
  return sanitize.display(func_std_string(key, line, name))
end

--- The "what" of a key: "C", "main" or "Lua" (guessed when not recorded).
function M.key_what(key)
  if M.c_name(key) then return "C" end
  if key[2] == 0 and key[3] == "<main chunk>" then return "main" end
  return "Lua"
end

--- The file name without its directories.  Chunk names of strings ('[string "..."]') and
--- C functions ('~') are left alone.
function M.strip_path(file)
  if type(file) ~= "string" or ssub(file, 1, 1) == "[" then return file end
  return smatch(file, "([^/]*)$")
end

return M
