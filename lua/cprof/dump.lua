--- cprof.dump: cprof's dump files (docs/FORMAT.md), read and written by the C core — the only
--- module through which the Lua side reaches cprof.core's dump codec.
--
--   dump.read(path)         the data table a dump holds (docs/API.md, "Dumps")
--   dump.write(path, data)  writes a data table as a dump
--   dump.mtime(path)        the file's modification time (seconds), or nil
--
-- cprof.core is required only when one of these runs, so that the reporting layer (cprof.stats,
-- the reports, Python pstats files, the browser) loads and works without the C extension:
-- only reading or writing a cprof dump needs it.  Errors are "cprof: <path>: <reason>".

local M = {}

local pcall, error, type, tostring = pcall, error, type, tostring

-- cprof.core, or nil and why it cannot be loaded.
local function core()
  local ok, c = pcall(require("cprof.version").core)
  if ok and type(c) == "table" then return c end
  return nil, tostring(c)
end

-- cprof.core, or an error naming `path` when it cannot be loaded.
local function need_core(path, doing)
  local c, why = core()
  if not c then
    error(("cprof: %s: %s a cprof dump needs the C extension cprof.core, which cannot be"
      .. " loaded: %s"):format(tostring(path), doing, why), 0)
  end
  return c
end

--- The data table of the dump at `path`.  Raises "cprof: <path>: <reason>" for a missing or
--- bad file.
function M.read(path)
  -- Called through pcall so that the message is the reader's own, with no position in front.
  local ok, d = pcall(need_core(path, "reading").read_dump, path)
  if not ok then error(d, 0) end
  return d
end

--- Writes data table `d` to `path` as a dump.  Raises "cprof: <path>: <reason>" when it cannot.
function M.write(path, d)
  local ok, err = pcall(need_core(path, "writing").write_dump, path, d)
  if not ok then error(err, 0) end
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
