-- tools/busted-results.lua — the busted output handler that `make test` and `make asan` use.
--
--   busted -o /abs/path/tools/busted-results.lua spec
--
-- On the terminal it is busted's own handler (utfTerminal, or the one named by
-- $CPROF_BUSTED_OUTPUT, e.g. TAP).  In addition it keeps a JSON file of counts at
-- $CPROF_TEST_RESULTS, rewritten after every test and once more when the suite ends:
--
--   {"suite":"lua5.4","complete":true,"passed":12,"failed":0,"errors":0,"pending":1,
--    "duration":0.52,"problems":[{"kind":"failure","name":"...","where":"spec/x_spec.lua:10"}]}
--
-- "complete" stays false until busted reports the end of the suite, so a run that crashed
-- (a segfault, a sanitizer abort) leaves a file that says so, with the counts up to the crash.
-- "errors" are errors in or around tests (a spec file that fails to load, a failing
-- before_each, ...); "failed" are failed assertions.  tools/test-summary.sh reads these files.
--
-- The file is written with plain io (never to stdout), so what the specs print cannot corrupt it.

local function json_string(s)
  s = tostring(s)
  s = s:gsub('[%c"\\]', function(c)
    if c == '"' then return '\\"' end
    if c == '\\' then return '\\\\' end
    if c == '\n' then return '\\n' end
    if c == '\t' then return '\\t' end
    return string.format('\\u%04x', c:byte())
  end)
  return '"' .. s .. '"'
end

local function where(problem)
  local trace = problem.trace or (problem.element and problem.element.trace)
  if type(trace) == 'table' and trace.short_src then
    return tostring(trace.short_src) .. ':' .. tostring(trace.currentline or '?')
  end
  return '?'
end

local function problem_list(handler)
  local out = {}
  local function add(kind, list)
    for _, p in ipairs(list or {}) do
      local message = p.message
      if type(message) ~= 'string' then message = tostring(message) end
      if #message > 500 then message = message:sub(1, 500) .. '...' end
      out[#out + 1] = '{"kind":' .. json_string(kind) .. ',"name":' .. json_string(p.name or '?')
        .. ',"where":' .. json_string(where(p)) .. ',"message":' .. json_string(message) .. '}'
    end
  end
  add('failure', handler.failures)
  add('error', handler.errors)
  return '[' .. table.concat(out, ',') .. ']'
end

return function(options)
  local busted = require 'busted'
  local inner = os.getenv('CPROF_BUSTED_OUTPUT') or 'utfTerminal'
  local handler = require('busted.outputHandlers.' .. inner)(options)

  local path = os.getenv('CPROF_TEST_RESULTS')
  if not path or path == '' then return handler end
  local suite = os.getenv('CPROF_TEST_SUITE') or _VERSION

  local function write(complete)
    local duration = 0
    if complete and handler.getDuration then duration = handler.getDuration() or 0 end
    local text = '{"suite":' .. json_string(suite)
      .. ',"complete":' .. tostring(complete)
      .. ',"passed":' .. string.format('%d', handler.successesCount or 0)
      .. ',"failed":' .. string.format('%d', handler.failuresCount or 0)
      .. ',"errors":' .. string.format('%d', handler.errorsCount or 0)
      .. ',"pending":' .. string.format('%d', handler.pendingsCount or 0)
      .. ',"duration":' .. string.format('%.3f', duration)
      .. ',"problems":' .. problem_list(handler) .. '}\n'
    local tmp = path .. '.tmp'
    local f = assert(io.open(tmp, 'w'))
    f:write(text)
    f:close()
    assert(os.rename(tmp, path))
  end

  -- Subscribed after the handler's own subscribers (which have priority 1), so the counts
  -- are already updated when these run.  Returning `nil, true` lets the event go on.
  local subscribe = handler.subscribe
  handler.subscribe = function(self, opts)
    subscribe(self, opts)
    busted.subscribe({ 'suite', 'start' }, function() write(false); return nil, true end)
    busted.subscribe({ 'test', 'end' }, function() write(false); return nil, true end)
    busted.subscribe({ 'error' }, function() write(false); return nil, true end)
    busted.subscribe({ 'failure' }, function() write(false); return nil, true end)
    busted.subscribe({ 'suite', 'end' }, function() write(true); return nil, true end)
  end

  return handler
end
