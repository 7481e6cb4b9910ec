--- cprof.browser: the interactive profile browser of `cprof-stats -i`, a copy of
--- `python -m pstats` (pstats.ProfileBrowser on Python's cmd.Cmd), with cprof's own views as
--- more commands (cprof.browser.views).
--
--   local browser = require "cprof.browser"
--   local b = browser.new { input = io.stdin, output = io.stdout, prompt = true }
--   b:load("out.prof"); b:add_file("more.prof")
--   b:cmdloop()            -- "Welcome ...", commands until quit or end of input, "Goodbye."
--   browser.run(files, opts) -- all of that, as cprof-stats -i does
--
-- Commands, messages and help texts are pstats' (docs/REPORT.md, "The interactive browser",
-- lists the few differences).  Command lines and their arguments are read with the LPeg
-- grammar of cprof.browser.grammar: ints, floats, quoted strings ('..' and "..", backslash
-- escapes) and bare words; a malformed line gets a message and the browser goes on.  On a
-- terminal, lines are read with cprof.browser.lineedit: editing, history and completion of
-- commands, sort keys, export formats, help topics and file names.
--
-- Works on Lua 5.4 and LuaJIT (needs LPeg).

local _ENV = require("cprof.env")()

local stats = require "cprof.stats"
local grammar = require "cprof.browser.grammar"
local lineedit = require "cprof.browser.lineedit"
local views = require "cprof.browser.views"
local display = require("cprof.sanitize").display

local type, tostring, ipairs, pcall, setmetatable = type, tostring, ipairs, pcall, setmetatable
local unpack = table.unpack or unpack

local M = {}

local Browser = {}
Browser.__index = Browser
M.Browser = Browser

M.WELCOME = "Welcome to the profile statistics browser."
M.GOODBYE = "Goodbye."
M.NOT_LOADED = "No statistics object is loaded."

local GENERIC_HELP = {
  "Arguments may be:",
  "* An integer maximum number of entries to print.",
  "* A decimal fractional number between 0 and 1, controlling",
  "  what fraction of selected entries to print.",
  "* A regular expression; only entries with function names",
  "  that match it are printed.",
}

-- help_<command>: the lines `help <command>` prints (pstats' texts).
local HELP = {
  add = { "Add profile info from given file to current statistics object." },
  callees = { "Print callees statistics from the current stat object.", GENERIC_HELP },
  callers = { "Print callers statistics from the current stat object.", GENERIC_HELP },
  EOF = { "Leave the profile browser." },
  help = { "Show help for a given command." },
  quit = { "Leave the profile browser." },
  read = { "Read in profile data from a specified file.",
           "Without argument, reload the current file." },
  reverse = { "Reverse the sort order of the profiling report." },
  sort = { "Sort profile data according to specified keys.",
           "(Typing `sort' without arguments lists valid keys.)" },
  stats = { "Print statistics from the current stat object.", GENERIC_HELP },
  strip = { "Strip leading path information from filenames in the report." },
}

-- The commands, in the order of Python's sorted(dir()): upper case first.
local COMMANDS = { "EOF", "add", "callees", "callers", "help", "quit", "read", "reverse",
                   "sort", "stats", "strip" }
M.COMMANDS = COMMANDS

--- A new browser.  opts.input: an object with :read("l") (default io.stdin); opts.output: an
--- object with :write() (default io.stdout; :flush() is called when it has one); opts.prompt:
--- print the prompt before each command (default: only when stdin is a terminal, see
--- M.prompt_wanted); opts.line_editing: read lines with cprof.browser.lineedit (default: when
--- the input is standard input and lineedit.usable() says it can drive the terminal).
function M.new(opts)
  opts = opts or {}
  local self = setmetatable({
    input = opts.input or io.stdin,
    output = opts.output or io.stdout,
    show_prompt = opts.prompt,
    prompt = "% ",
    stats = nil,
    names = {},          -- the files read and added, for the views' titles
    unit = nil,          -- the `unit' command's seconds per unit
    lastcmd = "",
  }, Browser)
  if self.show_prompt == nil then self.show_prompt = M.prompt_wanted() end
  local editing = opts.line_editing
  if editing == nil then editing = self.input == io.stdin and lineedit.usable() end
  if editing then
    self.editor = lineedit.new { input = self.input, output = self.output,
                                 complete = function(before) return self:complete(before) end }
  end
  return self
end

function Browser:write(...)
  self.output:write(...)
end

function Browser:print(line)
  self.output:write(line, "\n")
end

function Browser:flush()
  if self.output.flush then self.output:flush() end
end

-- An error message without cprof's "cprof: " or "cprof.xxx: " in front.
local function plain(err)
  local s = tostring(err)
  s = string.gsub(string.gsub(s, "^cprof: ", "", 1), "^cprof%.%a+: ", "", 1)
  return (string.gsub(s, "\n", " "))
end
M.plain = plain
Browser.plain = plain

--- The name of the profile for the views' headings: the files read and added.
function Browser:title()
  return #self.names > 0 and table.concat(self.names, " + ") or "the profile"
end

---------------------------------------------------------------------------
-- Commands (do_<name>(self, arg, column) returns true to leave the browser)
---------------------------------------------------------------------------

--- The restrictions in `arg`, as pstats' generic() reads them: ints; floats, dropped with a
--- message when outside [0, 1]; anything else is a pattern (quoted words always are).  Returns
--- them as a list with n, or nil after printing the syntax error of a malformed line.
function Browser:restrictions(arg, column)
  local words, err = grammar.words(arg, column)
  if not words then
    self:print("*** Syntax error: " .. err)
    return nil
  end
  local args = { n = 0 }
  for _, w in ipairs(words) do
    if w.kind == "float" and (w.value > 1 or w.value < 0) then
      self:print("Fraction argument must be in [0, 1]")
    else
      args.n = args.n + 1
      args[args.n] = w.value
    end
  end
  return args
end

-- stats, callers and callees: their method with the restrictions of `arg`.
function Browser:generic(method, arg, column)
  local args = self:restrictions(arg, column)
  if not args then return end
  if self.stats then
    self.stats[method](self.stats, unpack(args, 1, args.n))
  else
    self:print(M.NOT_LOADED)
  end
end

function Browser:do_stats(arg, column) return self:generic("print_stats", arg, column) end
function Browser:do_callers(arg, column) return self:generic("print_callers", arg, column) end
function Browser:do_callees(arg, column) return self:generic("print_callees", arg, column) end

--- Reads `file` (a cprof dump or a pstats file) as the current statistics object; on an
--- error, prints it and keeps what was loaded.  Returns true when it read the file.
function Browser:load(file)
  local ok, st = pcall(stats.new, file, { stream = self.output })
  if not ok then
    self:print(plain(st))
    return false
  end
  self.stats = st
  self.prompt = file .. "% "
  self.names = { file }
  return true
end

--- Adds `file` to the current statistics object (pstats' message when it cannot).
function Browser:add_file(file)
  if not self.stats then
    self:print(M.NOT_LOADED)
    return false
  end
  local ok, err = pcall(self.stats.add, self.stats, file)
  if not ok then
    local msg = plain(err)
    if string.sub(msg, 1, #file + 2) == file .. ": " then msg = string.sub(msg, #file + 3) end
    self:print("Failed to load statistics for " .. file .. ": " .. msg)
    return false
  end
  self.names[#self.names + 1] = file
  return true
end

--- read FILE: a new statistics object from FILE; without a file, the current file again.
function Browser:do_read(arg)
  local file = grammar.file_arg(arg)
  if file ~= "" then
    self:load(file)
  elseif #self.prompt > 2 then
    self:load(string.sub(self.prompt, 1, -3))
  else
    self:print("No statistics object is current -- cannot reload.")
  end
end

--- add FILE: adds FILE to the current statistics object.
function Browser:do_add(arg)
  self:add_file(grammar.file_arg(arg))
end

function Browser:do_reverse()
  if self.stats then self.stats:reverse_order() else self:print(M.NOT_LOADED) end
end

function Browser:do_strip()
  if self.stats then self.stats:strip_dirs() else self:print(M.NOT_LOADED) end
end

--- sort KEY...: sorts when every key is valid (cprof's rule: any prefix that is unambiguous
--- in meaning); otherwise lists the keys, as pstats does.
function Browser:do_sort(arg, column)
  if not self.stats then
    self:print(M.NOT_LOADED)
    return
  end
  local words, err = grammar.words(arg, column)
  if not words then
    self:print("*** Syntax error: " .. err)
    return
  end
  local keys, valid = {}, #words > 0
  for i, w in ipairs(words) do
    if w.kind ~= "string" or not stats.resolve_sort_key(w.value) then
      valid = false
      break
    end
    keys[i] = w.value
  end
  if valid then
    self.stats:sort_stats(unpack(keys))
  else
    self:print("Valid sort keys (unique prefixes are accepted):")
    for _, k in ipairs(stats.sort_keys()) do
      self:print(k.key .. " -- " .. k.description)
    end
  end
end

function Browser:do_quit()
  return true
end

function Browser:do_EOF()
  -- pstats ends the prompt's line; without a prompt there is no line to end
  if self.show_prompt then self:print("") end
  return true
end

local function print_lines(self, lines)
  for _, l in ipairs(lines) do
    if type(l) == "table" then print_lines(self, l) else self:print(l) end
  end
end

function Browser:do_help(arg)
  if arg ~= "" then
    local lines = HELP[arg] or views.HELP[arg]
    if lines then
      print_lines(self, lines)
    else
      self:print("*** No help on " .. arg)
    end
    return
  end
  -- cmd.Cmd's listing: doc_leader (empty), the header, its ruler, the commands in columns
  -- (they fit on one line of 79), an empty line.
  local header = "Documented commands (type help <topic>):"
  self:print("")
  self:print(header)
  self:print(string.rep("=", #header))
  self:print(table.concat(COMMANDS, "  "))
  self:print("")
  -- cprof's views after pstats' commands, as cmd.Cmd lists a second group of topics
  header = "cprof's views (type help <topic>):"
  self:print(header)
  self:print(string.rep("=", #header))
  self:print(table.concat(views.COMMANDS, "  "))
  self:print("")
end

local DISPATCH = {
  EOF = Browser.do_EOF, add = Browser.do_add, callees = Browser.do_callees,
  callers = Browser.do_callers, help = Browser.do_help, quit = Browser.do_quit,
  read = Browser.do_read, reverse = Browser.do_reverse, sort = Browser.do_sort,
  stats = Browser.do_stats, strip = Browser.do_strip,
}

--- Runs one command line, as cmd.Cmd.onecmd does: an empty line repeats the last command,
--- an unknown one gets "*** Unknown syntax: <line>".  Returns true to leave the browser.
function Browser:onecmd(line)
  local p = grammar.parse(line)
  if p.line == "" then
    if self.lastcmd ~= "" then return self:onecmd(self.lastcmd) end
    return false
  end
  if string.sub(p.line, 1, 1) == "!" then
    self:print("*** Unknown syntax: " .. p.line)
    return false
  end
  self.lastcmd = p.line
  if p.line == "EOF" then self.lastcmd = "" end
  local f = DISPATCH[p.command]
  if not f then
    f = views.DISPATCH[p.command]
    if not f then
      self:print("*** Unknown syntax: " .. p.line)
      return false
    end
    if not self.stats and views.needs_stats(p.command) then
      self:print(M.NOT_LOADED)
      return false
    end
  end
  return f(self, p.arg, p.column) == true
end

-- The file names that complete `word` (a path, maybe with directories), as `ls` lists them:
-- folders end with "/"; names starting with "." only when `word`'s last part does.
local function file_names(word)
  local dir, part = string.match(word, "^(.*/)([^/]*)$")
  if not dir then dir, part = "", word end
  local p = io.popen("ls -1Ap -- '" .. string.gsub(dir == "" and "." or dir, "'", "'\\''") .. "' 2>/dev/null")
  if not p then return {} end
  local out = {}
  for name in p:lines() do
    if string.sub(name, 1, #part) == part and (string.sub(name, 1, 1) ~= "." or string.sub(part, 1, 1) == ".") then
      out[#out + 1] = dir .. name
    end
  end
  p:close()
  return out
end

local function starting(list, word)
  local out = {}
  for _, c in ipairs(list) do
    if string.sub(c, 1, #word) == word then out[#out + 1] = c end
  end
  return out
end

--- The candidates that complete the last word of `before` (the line up to the cursor): a
--- command, or what the command takes there (help topics, sort keys, export formats, files).
function Browser:complete(before)
  local word = string.match(before, "(%S*)$")
  local head = string.sub(before, 1, #before - #word)
  local command = string.match(head, "^%s*(%S+)")
  local all = {}
  for _, c in ipairs(COMMANDS) do all[#all + 1] = c end
  for _, c in ipairs(views.COMMANDS) do all[#all + 1] = c end
  if not command then return starting(all, word) end
  local nth = select(2, string.gsub(head, "%S+", "")) -- the word's place after the command
  if command == "help" or command == "?" then return starting(all, word) end
  if command == "sort" then
    local keys = {}
    for i, k in ipairs(stats.sort_keys(true)) do keys[i] = k.key end
    return starting(keys, word)
  end
  if command == "export" and nth == 1 then return starting(require("cprof.export").FORMATS, word) end
  if command == "stacks" then return starting({ "live" }, word) end
  if ((command == "read" or command == "add" or command == "diff") and nth == 1)
      or (command == "export" and nth == 2) then
    return file_names(word)
  end
  return {}
end

--- Reads and runs commands until one leaves the browser or the input ends (which runs EOF).
function Browser:cmdloop()
  while true do
    local line
    if self.editor then
      local why
      line, why = self.editor:read(self.show_prompt and display(self.prompt) or "")
      -- Ctrl-C ends the browser, as KeyboardInterrupt ends pstats' (cprof-stats -i says nothing)
      if why == "interrupted" then error("interrupted", 0) end
    else
      if self.show_prompt then
        self:write(display(self.prompt))
      end
      self:flush()
      line = self.input:read("*l")
    end
    if line == nil then
      line = "EOF"
    else
      line = string.gsub(line, "[\r\n]+$", "")
    end
    if self:onecmd(line) then break end
  end
  self:flush()
end

--- Whether to print prompts: the environment variable CPROF_PROMPT says so when it is set
--- ("1", "yes", "true", "on" / "0", "no", "false", "off", ""); otherwise only when standard
--- input is a terminal, which the shell's `[ -t 0 ]` tells (os.execute runs it with this
--- process's standard input).
function M.prompt_wanted()
  local env = os.getenv("CPROF_PROMPT")
  if env ~= nil then
    local v = string.lower(env)
    return not (v == "" or v == "0" or v == "no" or v == "false" or v == "off")
  end
  return M.stdin_is_tty()
end

--- True when standard input is a terminal (asks the shell once: `[ -t 0 ]`).
local tty_answer
function M.stdin_is_tty()
  if tty_answer == nil then
    local ok, a = pcall(os.execute, "[ -t 0 ]")
    -- Lua 5.4: true | nil, "exit", 1; LuaJIT / Lua 5.1: the status (0 for true)
    tty_answer = ok and (a == true or a == 0) or false
  end
  return tty_answer
end

--- What `cprof-stats -i FILE...` does: reads the first file, adds the others, prints the
--- welcome line, runs the command loop and says goodbye.  opts as for new().
function M.run(files, opts)
  local b = M.new(opts)
  if files[1] then b:load(files[1]) end
  for i = 2, #files do b:add_file(files[i]) end
  b:print(M.WELCOME)
  b:cmdloop()
  b:print(M.GOODBYE)
  b:flush()
  return b
end

return M
