--- cprof.browser.lineedit: the browser's command line on a terminal — line editing, history and
--- completion, as readline gives Python's cmd shell — in Lua, driving the terminal with stty.
--
--   local le = lineedit.new { input = io.stdin, output = io.stdout, complete = f }
--   le:read(prompt)   -> the line; nil at the end of the input (Ctrl-D on an empty line);
--                        nil, "interrupted" for Ctrl-C
--   le:edit(prompt)   -> the same from keys already coming one by one, without echo (what
--                        read does once the terminal is set; the specs feed it keys)
--   lineedit.usable() -> whether standard input and output are a terminal it can drive
--
-- Keys: printable characters (UTF-8 too) are inserted at the cursor; Left, Right, Home, End,
-- Ctrl-A/E/B/F move; Backspace, Delete, Ctrl-D (on a non-empty line) delete; Ctrl-K, Ctrl-U and
-- Ctrl-W cut to the end, to the start, the word before; Up, Down, Ctrl-P/N walk the history of
-- this session; Tab completes the word before the cursor with complete(text) (`text` is the
-- line up to the cursor; it returns the candidates for the last word of it, each the whole
-- word): one candidate is taken, several are cut to what they share, and a second Tab lists
-- them; Ctrl-L clears the screen; Enter ends the line.  Any other control character is not
-- inserted, so the line never holds one.
--
-- The terminal is switched to reading key by key without echo (stty -icanon -echo -isig) only
-- while a line is read, and given back its own settings (stty -g) before read returns, so that
-- the commands' output and an error leave it as it was.  A line longer than the terminal is
-- wide scrolls sideways.  Works on Lua 5.4 and LuaJIT: nothing but io and os.

local _ENV = require("cprof.env")()

local M = {}

local sbyte, schar, ssub, sfind, srep, sformat, concat =
  string.byte, string.char, string.sub, string.find, string.rep, string.format, table.concat
local ipairs, tonumber, setmetatable, pcall = ipairs, tonumber, setmetatable, pcall

-- Runs `cmd` in a shell with this process's standard input (the terminal); true when it worked.
local function sh(cmd)
  local ok, a = pcall(os.execute, cmd .. " 2>/dev/null")
  return ok and (a == true or a == 0)
end

-- The first line that `cmd` prints, or nil.
local function sh_line(cmd)
  local ok, p = pcall(io.popen, cmd .. " 2>/dev/null")
  if not ok or not p then return nil end
  local line = p:read("*l")
  p:close()
  return line
end

--- Whether the line editor can run: standard input and output are a terminal (not a "dumb"
--- one) whose settings stty can read.
function M.usable()
  local term = os.getenv("TERM")
  if term == nil or term == "" or term == "dumb" then return false end
  return sh("[ -t 0 ] && [ -t 1 ]") and sh_line("stty -g") ~= nil
end

local Editor = {}
Editor.__index = Editor

--- opts: input (with :read(1)), output (with :write, and :flush when it has one), complete
--- (see above), columns (the terminal's width; default: what `stty size` says, or 80).
function M.new(opts)
  return setmetatable({
    input = opts.input or io.stdin,
    output = opts.output or io.stdout,
    complete = opts.complete,
    columns = opts.columns,
    history = {},
  }, Editor)
end

-- The characters of `s` (UTF-8 sequences kept whole).
local function chars(s)
  local out = {}
  for c in string.gmatch(s, "[%z\1-\127\192-\255][\128-\191]*") do out[#out + 1] = c end
  return out
end

-- The byte after the current one, or nil at the end of the input.
function Editor:byte()
  local c = self.input:read(1)
  return c and sbyte(c)
end

-- One key: a character to insert (a string), or the name of an action.
local CONTROL = { [1] = "home", [2] = "left", [3] = "interrupt", [4] = "eof_or_delete", [5] = "end",
  [6] = "right", [8] = "backspace", [9] = "complete", [10] = "enter", [11] = "kill_end",
  [12] = "clear", [13] = "enter", [14] = "down", [16] = "up", [21] = "kill_start",
  [23] = "kill_word", [127] = "backspace" }
local CSI = { A = "up", B = "down", C = "right", D = "left", H = "home", F = "end" }
local TILDE = { ["1"] = "home", ["7"] = "home", ["4"] = "end", ["8"] = "end", ["3"] = "delete" }

function Editor:key()
  local b = self:byte()
  if b == nil then return "eof" end
  if b == 27 then
    local c = self:byte()
    if c == 91 or c == 79 then -- ESC [ ... final, or ESC O x
      local params = {}
      local f = self:byte()
      while f and f >= 0x20 and f <= 0x3f do
        params[#params + 1] = schar(f)
        f = self:byte()
      end
      if f == nil then return "eof" end
      if f == 126 then return TILDE[concat(params)] or "ignore" end
      return CSI[schar(f)] or "ignore"
    end
    return c and "ignore" or "eof"
  end
  if b < 32 or b == 127 then return CONTROL[b] or "ignore" end
  if b < 128 then return schar(b) end
  -- a UTF-8 sequence: its continuation bytes; a byte that starts none is left out
  local n = b >= 0xF0 and 3 or b >= 0xE0 and 2 or b >= 0xC2 and 1 or -1
  if n < 0 or b > 0xF4 then return "ignore" end
  local bytes = { schar(b) }
  for i = 1, n do
    local c = self:byte()
    if c == nil then return "eof" end
    if c < 0x80 or c > 0xBF then return "ignore" end
    bytes[i + 1] = schar(c)
  end
  return concat(bytes)
end

function Editor:write(...)
  self.output:write(...)
  if self.output.flush then self.output:flush() end
end

-- The terminal's width in columns (80 when stty cannot tell).
local function columns()
  local line = sh_line("stty size")
  local cols = line and tonumber(string.match(line, "%d+%s+(%d+)"))
  return (cols and cols > 0) and cols or 80
end

-- Draws the prompt and the line, the cursor at its place: the part of the line that fits the
-- width after the prompt, scrolled so that the cursor shows.
function Editor:refresh()
  local room = self.cols - 1 - self.prompt_len
  if room < 8 then room = 8 end
  local first = 1
  if self.pos > room then first = self.pos - room + 1 end
  local shown = {}
  for i = first, math.min(#self.buf, first + room - 1) do shown[#shown + 1] = self.buf[i] end
  local col = self.prompt_len + (self.pos - first + 1)
  self:write("\r", self.prompt, concat(shown), "\27[K\r", col > 0 and sformat("\27[%dC", col) or "")
end

function Editor:insert(s)
  for _, c in ipairs(chars(s)) do
    self.pos = self.pos + 1
    table.insert(self.buf, self.pos, c)
  end
end

-- Removes the characters from..to of the line (the cursor goes to `from`).
function Editor:cut(from, to)
  for _ = from, to do table.remove(self.buf, from) end
  self.pos = from - 1
end

-- The line shown for history entry `i` (the line being written past the newest).
function Editor:recall(i)
  if i < 1 or i > #self.history + 1 then return end
  if self.at == #self.history + 1 then self.draft = concat(self.buf) end
  self.at = i
  self.buf = chars(self.history[i] or self.draft)
  self.pos = #self.buf
end

-- The longest prefix of all the strings of `list`.
local function common_prefix(list)
  local p = list[1]
  for i = 2, #list do
    local s = list[i]
    local n = 0
    while n < #p and n < #s and sbyte(p, n + 1) == sbyte(s, n + 1) do n = n + 1 end
    p = ssub(p, 1, n)
  end
  return p
end

-- Tab: completes the word before the cursor; `again` when the previous key was a Tab too.
function Editor:tab(again)
  if not self.complete then return false end
  local before = concat(self.buf, "", 1, self.pos)
  local word = string.match(before, "(%S*)$")
  local ok, list = pcall(self.complete, before)
  if not ok or type(list) ~= "table" or #list == 0 then
    self:write("\7")
    return false
  end
  local add
  if #list == 1 then
    add = ssub(list[1], #word + 1)
    if ssub(add, -1) ~= "/" then add = add .. " " end
  else
    add = ssub(common_prefix(list), #word + 1)
  end
  if add ~= "" then
    self:insert(add)
    return false
  end
  if not again then
    self:write("\7")
    return true
  end
  -- the candidates in columns under the line, then the line again
  table.sort(list)
  local width = 0
  for _, c in ipairs(list) do width = math.max(width, #c) end
  local per = math.max(1, math.floor((self.cols - 1) / (width + 2)))
  local rows = {}
  for i, c in ipairs(list) do
    local r = math.floor((i - 1) / per) + 1
    rows[r] = (rows[r] or "") .. c .. srep(" ", width + 2 - #c)
  end
  self:write("\n")
  for _, r in ipairs(rows) do self:write((string.gsub(r, "%s+$", "")), "\n") end
  return true
end

--- Reads keys until Enter, the end of the input or Ctrl-C (see the top of this file).
function Editor:edit(prompt)
  self.prompt, self.prompt_len, self.cols = prompt, #chars(prompt), self.columns or columns()
  self.buf, self.pos, self.at, self.draft = {}, 0, #self.history + 1, ""
  local tabbed = false
  self:refresh()
  while true do
    local k = self:key()
    local was_tab = false
    if k == "enter" then
      self:write("\n")
      local line = concat(self.buf)
      if line ~= "" and line ~= self.history[#self.history] then self.history[#self.history + 1] = line end
      return line
    elseif k == "eof" then
      self:write("\n")
      return nil
    elseif k == "interrupt" then
      self:write("^C")
      return nil, "interrupted"
    elseif k == "eof_or_delete" then
      if #self.buf == 0 then
        self:write("\n")
        return nil
      end
      if self.pos < #self.buf then table.remove(self.buf, self.pos + 1) end
    elseif k == "delete" then
      if self.pos < #self.buf then table.remove(self.buf, self.pos + 1) end
    elseif k == "backspace" then
      if self.pos > 0 then self:cut(self.pos, self.pos) end
    elseif k == "left" then
      if self.pos > 0 then self.pos = self.pos - 1 end
    elseif k == "right" then
      if self.pos < #self.buf then self.pos = self.pos + 1 end
    elseif k == "home" then
      self.pos = 0
    elseif k == "end" then
      self.pos = #self.buf
    elseif k == "kill_end" then
      for i = #self.buf, self.pos + 1, -1 do self.buf[i] = nil end
    elseif k == "kill_start" then
      if self.pos > 0 then self:cut(1, self.pos) end
    elseif k == "kill_word" then
      local from = self.pos
      while from > 0 and sfind(self.buf[from], "^%s$") do from = from - 1 end
      while from > 0 and not sfind(self.buf[from], "^%s$") do from = from - 1 end
      if from < self.pos then self:cut(from + 1, self.pos) end
    elseif k == "up" then
      self:recall(self.at - 1)
    elseif k == "down" then
      self:recall(self.at + 1)
    elseif k == "clear" then
      self:write("\27[H\27[2J")
    elseif k == "complete" then
      was_tab = self:tab(tabbed)
    elseif #k > 0 and k ~= "ignore" then
      self:insert(k)
    end
    tabbed = was_tab
    self:refresh()
  end
end

--- Reads one line after `prompt` (see the top of this file).
function Editor:read(prompt)
  local saved = sh_line("stty -g")
  if not saved or not sh("stty -icanon -echo -isig min 1 time 0") then
    -- no terminal to drive after all: a plain line
    self:write(prompt)
    return self.input:read("*l")
  end
  local ok, line, why = pcall(self.edit, self, prompt)
  sh("stty " .. saved)
  if not ok then error(line, 0) end
  return line, why
end

return M
