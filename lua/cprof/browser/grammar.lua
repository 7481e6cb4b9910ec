--- cprof.browser.grammar: the LPeg grammar of the browser's command lines (cprof-stats -i).
--
--   local grammar = require "cprof.browser.grammar"
--   grammar.parse(line)      -> { command = "stats", arg = "fib 10" } (the words of cmd.Cmd)
--   grammar.words(arg)       -> list of { kind = "int" | "float" | "string", value = v,
--                               text = "as typed", quoted = true|nil }, or nil, message
--   grammar.restrictions(arg) -> the values for print_stats and friends, or nil, message
--   grammar.file_arg(arg)    -> a file name: one quoted string, or the rest of the line
--   grammar.first_arg(arg)   -> the first argument (quoted or bare) and the rest of the line
--
-- A command line is, as in Python's cmd module, an identifier (letters, digits, '_') and the
-- rest of the line as its argument; "?" stands for "help".  Arguments are separated by
-- blanks and are:
--
--   int     [+-]?digits                               -> an integer
--   float   [+-]? digits.digits | .digits | digits. (with an optional exponent e[+-]?digits),
--           digits e[+-]?digits, inf, infinity, nan   -> a float  (any case for the words)
--   quoted  '...' or "..." with backslash escapes \\ \' \" \a \b \f \n \r \t \v \xHH \ddd
--           (other backslashes are kept as they are) -> a string, never a number
--   bare    any other run of non-blank characters   -> a string
--
-- A quoted string must end on the line and be followed by a blank or the end of the line;
-- otherwise the line is malformed, and the message says where.
--
-- Needs LPeg (Debian: lua-lpeg).  Works on Lua 5.4 and LuaJIT.

local _ENV = require("cprof.env")()

local lpeg = require "lpeg"

local P, R, S, C, Cc, Ct, Cp, Cmt, V =
  lpeg.P, lpeg.R, lpeg.S, lpeg.C, lpeg.Cc, lpeg.Ct, lpeg.Cp, lpeg.Cmt, lpeg.V
local sformat, schar, tonumber = string.format, string.char, tonumber
local mtype = math.type

local M = {}

local blank = S(" \t\r\n\f\v")
local blanks = blank ^ 0
local digit = R("09")
local digits = digit ^ 1
local sign = S("+-") ^ -1
local ident = (R("az", "AZ", "09") + P("_")) ^ 0
local boundary = -(1 - blank)            -- a blank or the end comes next

local function ci(word)                  -- a case-insensitive literal
  local p = P(true)
  for ch in word:gmatch(".") do p = p * S(ch:lower() .. ch:upper()) end
  return p
end

local exponent = S("eE") * sign * digits
local decimal = (digits * P(".") * digit ^ 0 + P(".") * digits) * exponent ^ -1
  + digits * exponent
local special = ci("infinity") + ci("inf") + ci("nan")

-- Escapes in quoted strings.
local simple_escapes = { a = "\a", b = "\b", f = "\f", n = "\n", r = "\r", t = "\t", v = "\v",
                         ["\\"] = "\\", ["'"] = "'", ['"'] = '"' }
local hex = R("09", "af", "AF")
local escape = P("\\") * (
    S("abfnrtv\\'\"") / simple_escapes
  + P("x") * C(hex * hex) / function(h) return schar(tonumber(h, 16)) end
  + C(R("07") * R("07") ^ -2) / function(o)
      local n = tonumber(o, 8)
      if n > 255 then n = n % 256 end
      return schar(n)
    end
  + C(P(1)) / function(c) return "\\" .. c end)

local function quoted(q)
  local body = Ct((escape + C((1 - S(q .. "\\")) ^ 1)) ^ 0) / table.concat
  return P(q) * body * P(q)
end

local function to_int(text)
  local v = tonumber(text)
  if mtype then
    local i = math.tointeger(v)
    if i then return i end
    -- more digits than a 64-bit integer holds: as large as an integer gets
    return text:find("^%-") and math.mininteger or math.maxinteger
  end
  return v
end

local function to_float(text)
  local s, body = text:match("^([+-]?)(.*)$")
  local lb = body:lower()
  local v
  if lb == "inf" or lb == "infinity" then v = math.huge
  elseif lb == "nan" then v = 0 / 0
  else
    v = tonumber(body)
    if mtype and mtype(v) == "integer" then v = v + 0.0 end
  end
  if s == "-" then v = -v end
  return v
end

local function word(kind, value, text, q)
  return { kind = kind, value = value, text = text, quoted = q }
end

local grammar = P {
  "line",
  line = blanks * Ct((V("arg") * blanks) ^ 0) * (-P(1) * Cc(nil) + Cp() * V("rest")),
  arg = V("number") * boundary + V("string"),
  number = C(sign * decimal) / function(t) return word("float", to_float(t), t) end
         + C(sign * digits) / function(t) return word("int", to_int(t), t) end
         + C(sign * special) / function(t) return word("float", to_float(t), t) end,
  string = Cmt(C(quoted("'") + quoted('"')) * boundary,
                 function(_, i, whole, body) return i, word("string", body, whole, true) end)
         + C((1 - blank - S("'\"")) * (1 - blank) ^ 0) / function(t) return word("string", t, t) end,
  rest = C(P(1) ^ 0),
}

--- The words of `arg` (see the module's notes), or nil and a message for a malformed line.
--- `column` (default 1) is the column of arg's first character in the line, for the message.
function M.words(arg, column)
  arg = arg or ""
  local list, pos, rest = grammar:match(arg)
  if pos == nil then return list end
  pos = pos + (column or 1) - 1
  local q = rest:sub(1, 1)
  if q == "'" or q == '"' then
    local _, closed = (quoted(q) * Cp()):match(rest)
    if not closed then
      return nil, sformat("unterminated quoted string at column %d: %s", pos, rest)
    end
    return nil, sformat("a quoted string must be followed by a blank, at column %d: %s",
      pos + closed - 1, rest:sub(closed))
  end
  return nil, sformat("cannot read the argument at column %d: %s", pos, rest)
end

--- The restriction values of `arg` for print_stats/print_callers/print_callees: ints and
--- floats as numbers, strings (bare or quoted) as patterns.  Returns the list (with n) and the
--- list of words, or nil and a message (`column` as for words).
function M.restrictions(arg, column)
  local list, err = M.words(arg, column)
  if not list then return nil, err end
  local out = { n = #list }
  for i, w in ipairs(list) do out[i] = w.value end
  return out, list
end

local command = blanks * (P("?") * Cc("help") + C(ident)) * blanks * Cp() * C(P(1) ^ 0)

--- Splits a command line as Python's cmd.Cmd does: { command = identifier ("" when the line
--- does not start with one), arg = the rest without surrounding blanks, column = where arg
--- starts in `line`, line = the line without surrounding blanks }.  An empty line gives
--- command = nil.
function M.parse(line)
  local stripped = line:match("^%s*(.-)%s*$")
  if stripped == "" then return { command = nil, arg = "", line = "" } end
  local cmd, pos, arg = command:match(stripped)
  return { command = cmd, arg = arg, column = pos, line = stripped }
end

local first_grammar = blanks * (Cmt(quoted("'") + quoted('"'), function(_, i, q) return i, q end) * boundary
  + C((1 - blank) ^ 0)) * blanks * Cp()

--- The first argument of `arg` (one quoted string, escapes as above, or a run of non-blanks;
--- "" for none) and the rest of the line after it.
function M.first_arg(arg)
  arg = arg or ""
  local word, pos = first_grammar:match(arg)
  if word == nil then return "", arg end
  return word, arg:sub(pos)
end

local file_grammar = blanks * (Cmt(quoted("'") + quoted('"'), function(_, i, s) return i, s end)
  * blanks * -P(1) + C((P(1) - (blanks * -P(1))) ^ 0) * blanks * -P(1))

--- A file-name argument: one quoted string (escapes as above), or the rest of the line as it
--- is (so a bare name may hold blanks, as in pstats).  Returns the name ("" for none).
function M.file_arg(arg)
  local name = file_grammar:match(arg or "")
  if name == nil then return (arg or ""):match("^%s*(.-)%s*$") end
  return name
end

return M
