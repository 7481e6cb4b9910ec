-- cprof-stats --export, --tree and --diff, run as a child process under lua5.4 (see
-- cprof_stats_cli_spec.lua for why and how under LuaJIT).
local S = require "spec.support"
local X = require "spec.export_support"
local export = require "cprof.export"
local core = require "cprof.core"

local GOLDEN = S.SPEC_DIR .. "/golden/export/"

describe("cprof-stats exports", function()
  local ROOT = S.absolute(S.ROOT)   -- cprof-stats runs in another directory
  local env, why = S.lua54_env(ROOT)
  if not env or not core.write_dump then
    it("run", function() pending("cprof-stats: " .. (why or "cprof.core has no write_dump")) end)
    return
  end
  local dir = S.new_dir()
  local SCRIPT = S.q(ROOT .. "/bin/cprof-stats")
  -- Runs cprof-stats in `dir`, where the dumps are: sample.prof (with memory), plain.prof,
  -- changed.prof, sample.pstats.
  local function cli(args)
    return S.capture(("cd %s && %slua5.4 %s %s"):format(S.q(dir), env, SCRIPT, args))
  end
  core.write_dump(dir .. "/sample.prof", X.sample(true))
  core.write_dump(dir .. "/plain.prof", X.sample())
  core.write_dump(dir .. "/changed.prof", X.changed())
  export.export("pstats", X.sample(), dir .. "/sample.pstats")
  lazy_teardown(function() S.remove_dir(dir) end)

  local function golden(args, name)
    local out, err, status = cli(args)
    assert.equal("", err)
    assert.equal(0, status)
    assert.equal(S.read_file(GOLDEN .. name), out)
  end

  it("prints the call tree: every node, a depth limit with memory columns, a restriction", function()
    golden("sample.prof --tree --min-percent 0", "tree.txt")
    golden("sample.prof --tree --memory --depth 2", "tree_memory.txt")
    golden("sample.prof --tree fib", "tree_fib.txt")
    local out = cli("sample.prof --tree --min-percent 50")
    assert.matches("\n3 of 4 nodes shown; left out: 1 under 50%% of the total\n$", out)
  end)

  it("prints what changed per function between two profiles, largest change first", function()
    golden("changed.prof --diff plain.prof", "diff.txt")
    local out = cli("changed.prof --diff plain.prof --sort calls --limit 2")
    assert.matches("sorted by the change in calls, largest first; 2 of 5 functions shown\n", out)
    assert.matches("%+3 .*main.lua:10%(fib%)\n .*{string.rep}  %[gone%]\n$", out)
    out = cli("changed.prof --diff sample.pstats --sort cum rep")
    assert.matches("\n[^\n]*{string.rep}  %[gone%]\n$", out)
  end)

  it("writes every format, to a file or to standard output, as the Lua API does", function()
    for _, format in ipairs(export.FORMATS) do
      local file = dir .. "/out." .. format
      local out, err, status = cli("plain.prof --export " .. format .. " -o " .. S.q(file))
      assert.equal("", out)
      assert.equal("", err)
      assert.equal(0, status)
      local mine = X.export(format, dir .. "/plain.prof")
      if format == "pprof" then
        -- gzip of the same bytes: compare what is inside
        local inside = S.capture("gzip -dc " .. S.q(file))
        S.write_file(file, mine)
        assert.equal(S.capture("gzip -dc " .. S.q(file)), inside)
      else
        assert.equal(mine, S.read_file(file))
        assert.equal(mine, (cli("plain.prof -e " .. format)))
      end
    end
  end)

  it("takes weights, restrictions and the svg options", function()
    assert.equal(X.export("folded", dir .. "/sample.prof", { weight = "live" }),
      (cli("sample.prof --export folded --weight live")))
    assert.equal("main.lua:1(main);main.lua:5(work);{string.rep} 10000000\n",
      (cli("sample.prof --export folded rep")))
    local svg = cli("sample.prof --export svg --icicle --title 'My title' --weight allocs")
    assert.matches(">My title</text>", svg, 1, true)
    assert.matches("allocations (122 allocations in all)", svg, 1, true)
  end)

  it("draws a differential flame graph and writes two-count folded stacks with --diff", function()
    golden("changed.prof --diff plain.prof --export folded", "diff.folded")
    local svg = cli("changed.prof --diff plain.prof --export svg")
    assert.matches("Differential flame graph", svg, 1, true)
    assert.matches('fill="rgb(255,60,60)"', svg, 1, true)
    -- fib's share grew by 9.57 points, under a threshold of 10
    svg = cli("changed.prof --diff plain.prof --export svg --threshold 10")
    assert.matches("changed by less than 10% of the total", svg, 1, true)
    assert.is_nil(svg:find('<rect x="[%d.]+" y="%d+" width="[%d.]+" height="15" fill="rgb%(255,60,60%)"'))
    assert.equal("rgb(250,250,250)", svg:match('fill="([^"]+)"', (svg:find('data-n="fib"', 1, true))))
  end)

  it("adds several dumps, their call trees merged by path", function()
    local out = cli("plain.prof plain.prof --export folded")
    assert.matches("^main.lua:1%(main%) 20000000\n", out)
  end)

  it("says what is wrong, on one line, with exit status 2", function()
    local cases = {
      { "plain.prof --export png", "unknown export format 'png' (svg, html, folded, pstats, callgrind, speedscope, pprof, chrome)" },
      { "plain.prof --export pstats --weight calls", "pstats: weight 'calls' does not apply (pstats holds times and call counts)" },
      { "plain.prof --tree --weight calls", "option --weight does not go with --tree" },
      { "plain.prof --tree --export svg", "options --export and --tree do not go together" },
      { "plain.prof --export svg --sort calls --limit 3", "options --sort, --limit do not go with --export" },
      { "plain.prof --export folded --icicle", "option --icicle does not go with --export" },
      { "plain.prof --export svg --threshold 2", "option --threshold does not go with --export" },
      { "plain.prof --diff plain.prof --export folded --threshold 2", "option --threshold does not go with --export" },
      { "plain.prof --diff plain.prof --threshold 2", "option --threshold does not go with --diff" },
      { "plain.prof --diff plain.prof --export svg --threshold -1", "option --threshold: '-1' is not a number of at least 0" },
      { "plain.prof --diff plain.prof --export svg --threshold 100", "svg: threshold must be a percentage of at least 0 and under 100" },
      { "plain.prof --tree --depth 0", "option --depth: '0' is not a number of at least 1" },
      { "plain.prof --tree --depth 1.5", "option --depth: '1.5' is not a whole number" },
      { "plain.prof --tree --min-percent x", "option --min-percent: 'x' is not a number of at least 0" },
      { "sample.pstats --export svg", "svg needs the call tree, and this profile has none (sample.pstats is a pstats file)" },
      { "sample.pstats --tree", "--tree needs the call tree, and this profile has none (sample.pstats is a pstats file)" },
      { "missing.prof --tree", "missing.prof: No such file or directory" },
      { "plain.prof --export svg -o no/such/dir/x.svg", "no/such/dir/x.svg: cannot create a file in no/such/dir: No such file or directory" },
      { "plain.prof --diff missing.prof", "missing.prof: " },
      { "plain.prof --diff plain.prof --sort name", "cannot sort a diff by 'name'" },
      { "plain.prof --export callgrind fib", "callgrind holds whole functions: restrictions to call paths do not apply" },
      { "plain.prof --export pprof --diff plain.prof", "pprof cannot compare two profiles (svg, html and folded can)" },
      { "--tree", "no FILE given" },
    }
    for _, c in ipairs(cases) do
      local out, err, status = cli(c[1])
      assert.equal("", out, c[1])
      assert.equal(2, status, c[1] .. ": " .. err)
      assert.matches("^cprof%-stats: [^\n]*\n$", err, nil, nil, c[1])
      assert.is_truthy(err:find(c[2], 1, true), c[1] .. " -> " .. err)
    end
  end)

  it("documents the options in --help", function()
    local out = cli("--help")
    for _, opt in ipairs({ "-e, --export FORMAT", "-o, --output FILE", "--weight W", "--tree", "--depth N",
                           "--min-percent P", "--diff BASE", "--icicle", "--title TEXT",
                           "--focus PATTERN", "--hide PATTERN", "--threshold PERCENT",
                           "cprof-stats out.prof --export svg -o flame.svg" }) do
      assert.is_truthy(out:find(opt, 1, true), opt)
    end
  end)
end)
