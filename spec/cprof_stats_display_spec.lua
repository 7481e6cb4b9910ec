-- Names as cprof-stats' text reports show them: a chunk or function name is any byte string, so
-- a dump can hold an escape sequence that would retitle or clear the terminal, a carriage
-- return that would garble a row, or U+202E that would reverse it.  Every text view shows them
-- as their Lua escapes (cprof.sanitize.display) in the layout of the others
-- (golden_display.txt: one section per view, run in a folder that holds the dump, x.prof, and
-- the source file h.lua).
local S = require "spec.support"
local q = S.q

local ROOT = S.ROOT
local SCRIPT = ROOT .. "/bin/cprof-stats"

-- ESC ] 0 ; ... BEL retitles a terminal; CR goes back to the start of the row; U+202E reverses.
local EVIL = "evil\27]0;pwned\7\r\226\128\174eman"

local TYPES = { "raw", "string", "table", "function", "userdata", "thread", "upvalue", "proto", "other" }

-- A dump made by hand (its numbers known): main calls f (in a chunk named EVIL, with a CR and a
-- LF in its own name) and the C function print<ESC>[2J, and h, whose source file h.lua holds a
-- tab and an escape sequence.  Memory per node with Lua types and lifetimes, line events for
-- f and h.
local function hostile_data()
  local function g(n, cols) cols.n = n return cols end
  local mem = { alloc_count = { 0, 4, 1, 2 }, alloc_bytes = { 0, 160, 24, 64 },
                free_count = { 0, 1, 0, 2 }, free_bytes = { 0, 40, 0, 64 },
                min_size = { 0, 40, 24, 32 }, max_size = { 0, 40, 24, 32 } }
  local frames = g(4, { kind = { "main", "Lua", "C", "Lua" }, file = { "m.lua", EVIL, "~", "h.lua" },
    line = { 0, 3, 0, 1 }, lastline = { 9, 5, -1, 4 }, name = { "<main chunk>", "f\r\n", "print\27[2J", "h" },
    ncalls = { 1, 2, 1, 1 }, pcalls = { 1, 2, 1, 1 }, tottime = { 1, 6, 3, 2 }, cumtime = { 12, 6, 3, 2 } })
  local nodes = g(4, { parent = { 0, 1, 1, 1 }, frame = { 1, 2, 3, 4 }, ncalls = { 1, 2, 1, 1 },
    pcalls = { 1, 2, 1, 1 }, tottime = { 1, 6, 3, 2 }, cumtime = { 12, 6, 3, 2 },
    life_total = { 0, 0.0025, 0, 3.5 }, life_min = { 0, 0.0025, 0, 1.25 }, life_max = { 0, 0.0025, 0, 2.25 },
    alloc_time = { 0, 0, 0, 0 }, free_time = { 0, 0, 0, 0 } })
  for c, v in pairs(mem) do
    frames[c] = v
    nodes[c] = v
  end
  for _, t in ipairs(TYPES) do
    nodes[t .. "_allocs"], nodes[t .. "_frees"] = { 0, 0, 0, 0 }, { 0, 0, 0, 0 }
  end
  nodes.table_allocs, nodes.table_frees = { 0, 4, 0, 0 }, { 0, 1, 0, 0 }
  nodes.string_allocs, nodes.string_frees = { 0, 0, 1, 2 }, { 0, 0, 0, 2 }
  return {
    meta = { timer = "counter", unit = 1, bias = 0, start_time = 5, total_time = 12, pid = 7,
             tree_cap = 100, tree_folded = 0, dropped = 0, memory = true },
    frames = frames,
    edges = g(3, { caller = { 1, 1, 1 }, callee = { 2, 3, 4 }, ncalls = { 2, 1, 1 }, pcalls = { 2, 1, 1 },
                   tottime = { 6, 3, 2 }, cumtime = { 6, 3, 2 } }),
    nodes = nodes,
    lines = g(4, { frame = { 2, 2, 4, 4 }, line = { 4, 5, 2, 3 }, hits = { 2, 2, 1, 1 }, time = { 4, 2, 1, 1 } }),
  }
end

-- The views, each a golden section: { section, arguments }.
local VIEWS = {
  { "stats", "x.prof" }, { "callers", "x.prof --callers" }, { "callees", "x.prof --callees" },
  { "tree", "x.prof --tree" }, { "lines", "x.prof --lines -u 1" }, { "memory", "x.prof --memory" },
  { "leaks", "x.prof --leaks" }, { "stacks", "x.prof --memory --stacks 3" },
  { "memory-types", "x.prof --memory-types" }, { "diff", "x.prof --diff x.prof" },
  { "browser", "-i x.prof --no-prompt" },
}

describe("cprof-stats shows control characters in names as escapes", function()
  local env, why = S.lua54_env(ROOT)
  if not env then
    pending("cprof-stats specs: " .. why)
    return
  end
  if not require("cprof.core").write_dump then
    pending("cprof.core has no write_dump")
    return
  end
  local dir = S.new_dir()
  setup(function()
    S.write_file(dir .. "/h.lua", "local function h()\n\tlocal s = '\27[2J'\n\treturn s\nend\n")
    require("cprof.dump").write(dir .. "/x.prof", hostile_data())
  end)
  teardown(function() S.remove_dir(dir) end)
  local function cli(args, input)
    return S.capture(("cd %s && printf %s | %slua5.4 %s %s"):format(q(dir), q(input or ""), env,
      q(S.absolute(SCRIPT)), args))
  end

  local golden = S.sections(S.golden("golden_display.txt"))

  for _, view in ipairs(VIEWS) do
    it(view[1], function()
      local out, err, status = cli(view[2], "stats\\ncallers\\n")
      assert.are.equal("", err)
      assert.are.equal(0, status)
      -- nothing that acts on a terminal: no control character but the line ends, no U+202E
      assert.is_nil(out:find("[%z\1-\9\11-\31\127]"))
      assert.is_nil(out:find("\226\128\174", 1, true))
      -- the file lines' dates aside, the golden text
      out = out:gsub("%a%a%a %a%a%a [ %d]%d %d%d:%d%d:%d%d %d%d%d%d    ", "<date>    ")
      assert.are.equal(golden[view[1]], out)
    end)
  end

  it("matches patterns against the names as recorded, and quotes them escaped in messages", function()
    local out, err, status = cli("x.prof --match 'f\r'")
    assert.are.equal(0, status, err)
    assert.matches("List reduced from 4 to 1 due to restriction <'f\\r'>", out, 1, true)
    out, err, status = cli("x.prof --match 'x\27'")
    assert.are.equal(1, status)
    assert.are.equal("", out)
    assert.are.equal("cprof-stats: nothing matched: no function matches 'x\\x1b'\n", err)
  end)
end)
