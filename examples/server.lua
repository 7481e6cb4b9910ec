-- A server-like program that never exits on its own, for cprof's live dumps: a loop that
-- parses requests, routes them and renders responses, for `seconds` (default 30) or until it has
-- handled `requests` of them (default: no limit; 0 seconds: no time limit).
--
--   CPROF_SIGNAL=USR1 CPROF_OUT=server.%n.prof lua5.4 -l cprof.auto examples/server.lua &
--   kill -USR1 $!          # writes server.00000001.prof while the loop goes on
--   cprof-stats server.00000001.prof
--
-- With CPROF_INTERVAL=5 it writes a dump every 5 seconds; CPROF_RESET=1 makes each cover one
-- interval.

local seconds = tonumber(arg[1] or "30")
local requests = tonumber(arg[2] or "")
if not seconds or seconds < 0 or (arg[2] and not (requests and requests >= 0)) then
  io.stderr:write("usage: server.lua [seconds (default 30, 0: no limit)] [requests]\n")
  os.exit(2)
end

local ITEMS = {}
for i = 1, 50 do ITEMS[i] = { id = i, name = "item" .. i, price = i * 3 % 17 } end

-- "GET /items/7?fields=name" -> method, path segments, query table
local function parse(line)
  local method, target = line:match("^(%u+) (%S+)$")
  local path, query = target:match("^([^?]*)%??(.*)$")
  local segments = {}
  for seg in path:gmatch("[^/]+") do segments[#segments + 1] = seg end
  local q = {}
  for k, v in query:gmatch("(%w+)=(%w+)") do q[k] = v end
  return method, segments, q
end

local function encode(v)
  if type(v) == "table" then
    local parts = {}
    if v[1] ~= nil then
      for i = 1, #v do parts[i] = encode(v[i]) end
      return "[" .. table.concat(parts, ",") .. "]"
    end
    local keys = {}
    for k in pairs(v) do keys[#keys + 1] = k end
    table.sort(keys)
    for i, k in ipairs(keys) do parts[i] = string.format("%q:%s", k, encode(v[k])) end
    return "{" .. table.concat(parts, ",") .. "}"
  end
  if type(v) == "string" then return string.format("%q", v) end
  return tostring(v)
end

local function list_items(q)
  local out = {}
  local limit = tonumber(q.limit) or #ITEMS
  for i = 1, math.min(limit, #ITEMS) do out[#out + 1] = ITEMS[i] end
  return 200, out
end

local function get_item(q, id)
  local item = ITEMS[tonumber(id)]
  if not item then return 404, { error = "no item " .. tostring(id) } end
  if q.fields then return 200, { [q.fields] = item[q.fields] } end
  return 200, item
end

local function total(q)
  local sum = 0
  for _, item in ipairs(ITEMS) do sum = sum + item.price * (tonumber(q.times) or 1) end
  return 200, { total = sum }
end

local routes = { items = function(q, id) if id then return get_item(q, id) end return list_items(q) end,
                 total = total }

local function handle(line)
  local method, segments, q = parse(line)
  local route = routes[segments[1]]
  if method ~= "GET" or not route then return "404 " .. encode({ error = "not found" }) end
  local status, body = route(q, segments[2])
  return status .. " " .. encode(body)
end

local REQUESTS = { "GET /items?limit=5", "GET /items/7?fields=name", "GET /items/99",
                   "GET /total?times=3", "GET /nothing" }

local started = os.clock()
local handled, bytes = 0, 0
while (not requests or handled < requests) and (seconds == 0 or os.clock() - started < seconds) do
  handled = handled + 1
  bytes = bytes + #handle(REQUESTS[handled % #REQUESTS + 1])
end
print(("handled %d requests, %d bytes of responses"):format(handled, bytes))
