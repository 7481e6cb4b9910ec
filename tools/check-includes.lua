-- tools/check-includes.lua — the #include graph of src/ has no cycle, at three levels: files;
-- modules (x.c with x.h, and the files x_*.c, x_*.h that a module is split into); folders
-- (src/hook, src/engine, ...; each file at the top of src/ counts as a folder of its own: cprof.h,
-- the public header, includes nothing, and lcprof.c includes everything).
--
--   lua5.4 tools/check-includes.lua src/*.c src/*.h src/*/*.c src/*/*.h
--
-- `make check-includes` runs it (part of `make test`). Prints every cycle found, one a line, and
-- exits 1 when there is one.

local function module_of(path)
  return (path:gsub("%.[ch]$", ""):gsub("^(.-/?[^/_]+)_[^/]*$", "%1"))
end

local function folder_of(path)
  return path:match("^(.*)/[^/]*$") or module_of(path)
end

-- graph[a][b] = true: a includes b (a != b).
local function add(graph, a, b)
  graph[a] = graph[a] or {}
  graph[b] = graph[b] or {}
  if a ~= b then graph[a][b] = true end
end

-- Every cycle a depth-first search meets, each as "a -> b -> ... -> a".
local function cycles(graph)
  local names = {}
  for n in pairs(graph) do names[#names + 1] = n end
  table.sort(names)
  local state, path, found = {}, {}, {}
  local function visit(n)
    state[n] = "open"
    path[#path + 1] = n
    local next = {}
    for m in pairs(graph[n]) do next[#next + 1] = m end
    table.sort(next)
    for _, m in ipairs(next) do
      if state[m] == "open" then
        local from
        for i, p in ipairs(path) do if p == m then from = i end end
        found[#found + 1] = table.concat(path, " -> ", from) .. " -> " .. m
      elseif not state[m] then
        visit(m)
      end
    end
    path[#path] = nil
    state[n] = "done"
  end
  for _, n in ipairs(names) do if not state[n] then visit(n) end end
  return found
end

local files, modules, folders = {}, {}, {}
for _, arg_path in ipairs(arg) do
  local path = arg_path:gsub("^src/", "")
  local f = assert(io.open(arg_path, "r"))
  local text = f:read("a")
  f:close()
  add(files, path, path)
  add(modules, module_of(path), module_of(path))
  add(folders, folder_of(path), folder_of(path))
  for inc in text:gmatch('#include "([^"]+)"') do
    add(files, path, inc)
    add(modules, module_of(path), module_of(inc))
    add(folders, folder_of(path), folder_of(inc))
  end
end

local failed = false
for _, level in ipairs{{"files", files}, {"modules", modules}, {"folders", folders}} do
  local found = cycles(level[2])
  for _, c in ipairs(found) do
    print("check-includes: a cycle of " .. level[1] .. ": " .. c)
    failed = true
  end
end
if failed then os.exit(1) end
print(("check-includes: no cycle among %d files of src/ (nor their modules, nor their folders)")
      :format(#arg))
