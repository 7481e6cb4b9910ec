--- cprof.dump: cprof's dump files (docs/FORMAT.md), read and written by the C core — the only
--- module through which the Lua side reaches cprof.core's dump codec.
--
--   dump.read(path [, fname])         the data table a dump holds (docs/API.md, "Dumps")
--   dump.write(path, data [, fname])  writes a data table as a dump
--   dump.verify(path)                 what the dump is, once read whole and checked
--   dump.write_file(path, bytes)      any file written as a dump is (the exports')
--   dump.check_path(path, fname, level [, argn])  the checks of a file name argument
--   dump.check_file(path)             a file that can be read: a regular one
--   dump.file_type(path), dump.is_regular(path)  what is at a path, without opening it
--   dump.mtime(path)                  the file's modification time (seconds), or nil
--
-- cprof.core is required only when one of these runs, so that the reporting layer (cprof.stats,
-- the reports, Python pstats files, the browser) loads and works without the C extension:
-- only reading or writing a cprof dump needs it.  Errors are "cprof: <path>: <reason>", or
-- Lua's "bad argument #1 to '<fname>' (...)" for a file name that is not a string.

local _ENV = require("cprof.env")()

local M = {}

local args = require "cprof.args"

local pcall, error, type, tostring = pcall, error, type, tostring

-- cprof.core, or nil and why it cannot be loaded (asked once: LuaJIT's second require of a
-- module that failed says only "loop or previous error").
local loaded, why_not
local function core()
  if loaded == nil then
    local ok, c = pcall(require("cprof.version").core)
    loaded = ok and type(c) == "table" and c
    if not loaded then why_not = tostring(c) end
  end
  return loaded or nil, why_not
end

-- cprof.core, or an error naming `path` when it cannot be loaded.
local function need_core(path, doing)
  local c, why = core()
  if not c then
    error(string.format("cprof: %s: %s a cprof dump needs the C extension cprof.core, which cannot be"
      .. " loaded: %s", tostring(path), doing, why), 0)
  end
  return c
end

--- Checks the file name `path`, argument number `argn` (default 1) of the function `fname`: a
--- string, raised as Lua's own library does at `level` (1: the function that calls
--- check_path); not empty and without NUL bytes (which the system would cut it at), raised as
--- "cprof: <path>: <reason>".
function M.check_path(path, fname, level, argn)
  args.check(type(path) == "string", path, argn or 1, fname, "string", level - 1)
  if path == "" then error('cprof: "": the file name is empty', 0) end
  if string.find(path, "\0", 1, true) then
    error(string.format("cprof: %s: the file name holds a NUL byte", (string.gsub(path, ".", { ["\0"] = "\\0" }))), 0)
  end
end

--- The data table of the dump at `path`, and what the file is ({ version, sections,
--- checksums }).  Raises "cprof: <path>: <reason>" for a missing or bad file.
function M.read(path, fname)
  M.check_path(path, fname or "read", 3)
  -- Called through pcall so that the message is the reader's own, with no position in front.
  local ok, d, info = pcall(need_core(path, "reading").read_dump, path)
  if not ok then error(d, 0) end
  return d, info
end

--- Writes data table `d` to `path` as a dump.  Raises "cprof: <path>: <reason>" when it cannot.
function M.write(path, d, fname)
  M.check_path(path, fname or "write", 3)
  local ok, err = pcall(need_core(path, "writing").write_dump, path, d)
  if not ok then error(err, 0) end
end

--- Writes the string `bytes` to `path` as a dump is written (docs/API.md, "Writing a dump"):
--- a regular file replaced atomically, a symbolic link followed, a device or a FIFO written
--- through, never replaced.  Returns false, without writing, when cprof.core is not there;
--- raises "cprof: <path>: <reason>" when it cannot write.
function M.write_file(path, bytes)
  local c = core()
  if not (c and c.write_file) then return false end
  local ok, err = pcall(c.write_file, path, bytes)
  if not ok then error(err, 0) end
  return true
end

--- "format version V, S sections, checksums match" (or "no checksums" for version 1): the dump
--- at `path` was read whole and every section checked.  Raises "cprof: <path>: <reason>".
function M.verify(path)
  local _, info = M.read(path, "verify")
  return string.format("format version %d, %d sections, %s", info.version, info.sections,
    info.checksums and "checksums match" or "no checksums")
end

--- Raises "cprof: <path>: <reason>" unless `path` names a regular file that exists: a
--- directory, a FIFO (whose opening would wait for a writer), a device (/dev/zero never ends)
--- are not profiles.  Without cprof.core, whose file_type tells them apart without opening
--- anything, only a missing file is caught here.
function M.check_file(path)
  M.check_path(path, "check_file", 2)
  local c = core()
  if c and c.file_type then
    local t, err = c.file_type(path)
    if not t then error(err, 0) end
    if t ~= "regular" then error(string.format("cprof: %s: a %s, not a regular file", path, t), 0) end
    return
  end
  local f, err = io.open(path, "rb")
  if not f then error("cprof: " .. tostring(err), 0) end
  f:close()
end

--- The largest file read whole: 1 GiB, as cprof.core's reader (a profile read from standard
--- input stops there too).
M.MAX_FILE = 2 ^ 30

--- What is at `path`, found without opening it: "regular", "directory", "FIFO", "character
--- device", "block device", "socket" or "special file"; false when nothing is there (or the
--- name is not one: not a string, empty, with a NUL byte); nil when it cannot be told (without
--- cprof.core).
function M.file_type(path)
  if type(path) ~= "string" or path == "" or string.find(path, "\0", 1, true) then return false end
  local c = core()
  if not (c and c.file_type) then return nil end
  return c.file_type(path) or false
end

--- Whether `path` names a regular file: what may be opened and read whole without waiting or
--- reading for ever.  Without cprof.core, which tells them apart, true for any name.
function M.is_regular(path)
  local t = M.file_type(path)
  if t == nil then return true end
  return t == "regular"
end

--- The modification time of the file at `path` in seconds, or nil when it cannot be read (or
--- cprof.core, which reads it, is not there).
function M.mtime(path)
  local c = core()
  if c and c.mtime then
    local mt = c.mtime(path)
    if type(mt) == "number" then return mt end
  end
  return nil
end

return M
