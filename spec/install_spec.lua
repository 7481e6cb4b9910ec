-- cprof as a newcomer installs and starts it (issue 13): a sentence, not a dynamic-linker error,
-- for an interpreter cprof is not built for or a core.so built for the other Lua; one shell for
-- both builds (make env); one version number; the rockspec; the message of make install; and
-- LuaJIT's compiler, off while profiling, named in the report.  tools/check-install.sh (make
-- test) installs every way and runs what was installed.
local cprof = require "cprof"
local version = require "cprof.version"
local stats = require "cprof.stats"

local S = require "spec.support"
local q = S.q

local ROOT = S.absolute(S.ROOT)
local SCRIPT = ROOT .. "/bin/cprof-stats"
local CHECKOUT_PATH = ROOT .. "/lua/?.lua;" .. ROOT .. "/lua/?/init.lua;;"
local BUILD = { lua54 = ROOT .. "/build/lua5.4", luajit = ROOT .. "/build/luajit" }

local function succeeds(cmd)
  local r = os.execute(cmd .. " >/dev/null 2>&1")
  return r == true or r == 0
end

local function have(program) return succeeds("command -v " .. program) end

local function built(which) return S.read_file(BUILD[which] .. "/cprof/core.so") ~= nil end

-- "env ..." with only the checkout's Lua path and `cpath_dir` as the C path, for any Lua.
local function env_for(cpath_dir)
  return ("env -u LUA_PATH_5_4 -u LUA_CPATH_5_4 LUA_PATH=%s LUA_CPATH=%s "):format(
    q(CHECKOUT_PATH), q(cpath_dir .. "/?.so;;"))
end

-- Runs `program` (Lua source) as a script file under `interp` with `flags`, after `env`.
local function run_script(env, interp, flags, program)
  local file = S.tmpname(".lua")
  S.write_file(file, program)
  local out, err, status = S.capture(("%s%s %s %s </dev/null"):format(env, interp, flags, q(file)))
  os.remove(file)
  return out, err, status
end

local NEEDS = "cprof needs Lua 5.4 or LuaJIT 2.1; this is Lua 5.1"

describe("an interpreter cprof is not built for (issue 13, point 1)", function()
  it("this interpreter is one cprof runs on", function()
    assert.is_nil(version.unsupported())
    assert.are.equal(S.jit and jit.version or "Lua 5.4", version.lua_name())
  end)

  it("Lua 5.1: cprof.auto, require 'cprof' and cprof-stats say which Lua cprof needs", function()
    if not have("lua5.1") then return pending("lua5.1 is not installed") end
    local env = env_for(BUILD.luajit)
    local out, err, status = run_script(env, "lua5.1", "-l cprof.auto", 'print("the script ran")\n')
    assert.are.equal("", out)
    assert.are.equal("cprof.auto: " .. NEEDS .. "\n", err)
    assert.are.equal(1, status)
    out = run_script(env, "lua5.1", "", 'print(select(2, pcall(require, "cprof")))\n')
    assert.are.equal(NEEDS .. "\n", out)
    local err2, status2
    out, err2, status2 = S.capture(("%slua5.1 %s --version </dev/null"):format(env, q(SCRIPT)))
    assert.are.equal("", out)
    assert.are.equal("cprof-stats: " .. NEEDS .. "\n", err2)
    assert.are.equal(2, status2)
  end)

  it("a core.so built for the other Lua is named, with the variable that chose it", function()
    if not (built("lua54") and built("luajit") and have("luajit")) then
      return pending("needs both builds (make; make LUA=luajit) and luajit")
    end
    local so = BUILD.luajit .. "/cprof/core.so"
    local out, err, status = run_script(env_for(BUILD.luajit), "lua5.4", "-l cprof.auto", 'print("ran")\n')
    assert.are.equal("", out)
    assert.are.equal("cprof.auto: " .. so .. " is cprof.core built for LuaJIT, and this is Lua 5.4:"
      .. " set LUA_CPATH_5_4 (or LUA_CPATH) to the directory of the Lua 5.4 build (in a checkout,"
      .. ' `eval "$(make -s env)"` sets it for both)\n', err)
    assert.are.equal(1, status)
    so = BUILD.lua54 .. "/cprof/core.so"
    out = run_script(env_for(BUILD.lua54), "luajit", "", 'print(select(2, pcall(require, "cprof")))\n')
    assert.are.equal("cprof: " .. so .. " is cprof.core built for Lua 5.4, and this is " .. S.capture(
      "luajit -e 'io.write(jit.version)'") .. ": set LUA_CPATH to the directory of the LuaJIT build"
      .. ' (in a checkout, `eval "$(make -s env)"` sets it for both)\n', out)
  end)

  it("no cprof.core on the C path: one sentence, not the list of every place searched", function()
    -- (without Lua's default paths, where an installed cprof may be)
    local env = ("env -u LUA_PATH_5_4 -u LUA_CPATH_5_4 LUA_PATH=%s LUA_CPATH=/nonexistent/?.so ")
      :format(q(CHECKOUT_PATH))
    local out, err, status = run_script(env, S.lua, "-l cprof.auto", 'print("ran")\n')
    assert.are.equal("", out)
    assert.are.equal(1, status)
    assert.are.equal("cprof.auto: the C module cprof.core is not on "
      .. (S.jit and "LUA_CPATH" or "LUA_CPATH_5_4 (or LUA_CPATH)") .. " or Lua's default paths:"
      .. " install cprof (make install, which says what to set) or, in a checkout, build it (make"
      .. (S.jit and " LUA=luajit" or "") .. ') and run `eval "$(make -s env)"`\n', err)
  end)

  it("one shell runs both builds: eval \"$(make -s env)\", then lua5.4, luajit and cprof-stats", function()
    if not (built("lua54") and built("luajit") and have("luajit")) then
      return pending("needs both builds (make; make LUA=luajit) and luajit")
    end
    local dir = S.new_dir()
    S.write_file(dir .. "/p.lua", "local function f() return 1 end\nf()\n")
    local out, err, status = S.capture(("env -u MAKEFLAGS -u MAKELEVEL -u MFLAGS -u LD_PRELOAD bash -c %s </dev/null")
      :format(q(('eval "$(make -s -C %s env)" && cd %s && CPROF_OUT=j.prof CPROF_REPORT=1 luajit -l cprof.auto p.lua'
        .. ' && CPROF_OUT=l.prof CPROF_REPORT=1 lua5.4 -l cprof.auto p.lua && cprof-stats j.prof l.prof f')
        :format(q(ROOT), q(dir)))))
    S.remove_dir(dir)
    assert.are.equal(0, status, err)
    assert.matches("\n +2 +[%d.]+ +[%d.]+ +[%d.]+ +[%d.]+ p%.lua:1%(f%)\n", out)
    -- both reports (on stderr) went through: LuaJIT's says its compiler was off
    assert.matches("with the JIT compiler off", err)
  end)

  it("cprof-stats finds the Lua 5.4 build next to it, whatever LUA_CPATH says", function()
    if not built("luajit") then return pending("needs the LuaJIT build (make LUA=luajit)") end
    local path = S.tmpname(".prof")
    local p = cprof.Profile { timer = "counter" }
    p:runcall(function() return ("x"):rep(3) end)
    p:dump_stats(path)
    local out, err, status = S.capture(("%slua5.4 %s %s </dev/null"):format(env_for(BUILD.luajit),
      q(SCRIPT), q(path)))
    os.remove(path)
    assert.are.equal(0, status, err)
    assert.matches("{string%.rep}", out)
  end)
end)

describe("the version (issue 13, point 4)", function()
  local V = version.VERSION

  it("is one number: cprof._VERSION, cprof-stats --version and a dump's meta", function()
    assert.matches("^%d+%.%d+%.%d+$", V)
    assert.are.equal("cprof " .. V, cprof._VERSION)
    local out, err, status = S.capture(("%slua5.4 %s --version </dev/null")
      :format(S.lua54_env(ROOT) or "", q(SCRIPT)))
    assert.are.equal(0, status, err)
    assert.are.equal("cprof-stats (cprof) " .. V .. "\n", out)
    local path = S.tmpname(".prof")
    local p = cprof.Profile()
    p:runcall(function() end)
    assert.are.equal(V, p:dump_data().meta.cprof_version)
    p:dump_stats(path)
    local d = cprof.load(path)
    assert.are.equal(V, d.meta.cprof_version)
    -- a Stats written back keeps the version of the profile
    stats.new(path):dump_stats(path)
    assert.are.equal(V, cprof.load(path).meta.cprof_version)
    os.remove(path)
  end)

  it("is written in lua/cprof/version.lua only; CHANGELOG.md has it, LICENSE is MIT", function()
    local files = io.popen("cd " .. q(ROOT) .. " && find lua bin src tools rockspec -type f")
    local others = {}
    for f in files:lines() do
      local text = S.read_file(ROOT .. "/" .. f) or ""
      if f ~= "lua/cprof/version.lua" and text:find('"' .. V .. '"', 1, true) then others[#others + 1] = f end
    end
    files:close()
    assert.are.same({}, others)
    assert.matches("\n## " .. V:gsub("%.", "%%.") .. " ", S.read_file(ROOT .. "/CHANGELOG.md"))
    local license = S.read_file(ROOT .. "/LICENSE")
    assert.matches("^MIT License", license)
    assert.matches("Permission is hereby granted, free of charge", license)
  end)
end)

describe("the rockspec (issue 13, point 2)", function()
  it("needs Lua 5.4, LPeg and lua-cjson, and has a licence, a description and a homepage", function()
    local env, path = {}, ROOT .. "/rockspec/cprof-scm-1.rockspec"
    local chunk
    if setfenv then
      chunk = assert(loadfile(path))
      setfenv(chunk, env)
    else
      chunk = assert(loadfile(path, "t", env))
    end
    chunk()
    assert.are.same({ "lua >= 5.4, < 5.5", "lpeg", "lua-cjson" }, env.dependencies)
    assert.are.equal("MIT", env.description.license)
    assert.matches("^https?://", env.description.homepage)
    assert.is_true(#env.description.summary > 20)
    assert.is_true(#env.description.detailed > 200)
    assert.are.equal("lua/cprof/version.lua", env.build.modules["cprof.version"])
  end)
end)

describe("what make install says (issue 13, point 3)", function()
  local function install_env(prefix, path)
    -- (bash leaks by LeakSanitizer's count: make asan preloads it)
    return S.capture(("env -u LD_PRELOAD PATH=%s bash %s %s lua5.4 5.4 </dev/null"):format(q(path),
      q(ROOT .. "/tools/install-env.sh"), q(prefix)))
  end

  it("for a prefix Lua does not search: the export lines, each keeping what was set", function()
    local out, err, status = install_env("/opt/cp", "/usr/bin:/bin")
    assert.are.equal(0, status, err)
    local lines = {}
    for l in out:gmatch("  (export [^\n]*)") do lines[#lines + 1] = l end
    assert.are.same({
      'export LUA_PATH_5_4="/opt/cp/share/lua/5.4/?.lua;/opt/cp/share/lua/5.4/?/init.lua;'
        .. '${LUA_PATH_5_4:-${LUA_PATH:-;}}"',
      'export LUA_CPATH_5_4="/opt/cp/lib/lua/5.4/?.so;${LUA_CPATH_5_4:-${LUA_CPATH:-;}}"',
      'export PATH="/opt/cp/bin:$PATH"',
      'export MANPATH="/opt/cp/share/man:${MANPATH:-}"',
    }, lines)
    assert.matches("^cprof " .. version.VERSION:gsub("%.", "%%.") .. " is installed under /opt/cp,", out)
  end)

  it("for /usr/local, which Lua 5.4, the shell and man search: nothing to set", function()
    if not have("manpath") then return pending("man-db's manpath is not installed") end
    local out, err, status = install_env("/usr/local", "/usr/local/bin:/usr/bin:/bin")
    assert.are.equal(0, status, err)
    assert.matches("lua5.4 finds it with its default paths", out)
    assert.matches("Nothing to set.\n$", out)
    assert.not_matches("export", out)
  end)
end)

describe("LuaJIT's compiler in the report (issue 13, point 21)", function()
  local LINE = "   cprof: profiled on LuaJIT 2.1.0-beta3 with the JIT compiler off: the times are"
    .. " those of the interpreter\n\n"

  local function report(data)
    local out = S.collector()
    stats.new(data, { stream = out }):print_stats()
    return out.text()
  end

  it("a profile's meta names the Lua that ran it; the report says when it was LuaJIT", function()
    local p = cprof.Profile { timer = "counter" }
    p:runcall(function() return ("x"):rep(2) end)
    local d = p:report_data()
    assert.are.equal(version.lua_name(), d.meta.lua_version)
    local text = report(d)
    if S.jit then
      assert.matches("seconds\n\n   cprof: profiled on " .. jit.version:gsub("%p", "%%%0")
        .. " with the JIT compiler off: the times are those of the interpreter\n\n   Random listing", text)
    else
      assert.not_matches("JIT", text)
    end
  end)

  it("cprof-stats prints the line for a LuaJIT dump, after the totals", function()
    local p = cprof.Profile { timer = "counter" }
    p:runcall(function() return ("x"):rep(2) end)
    local d = p:dump_data()
    d.meta.lua_version = "LuaJIT 2.1.0-beta3"
    local path = S.tmpname(".prof")
    require("cprof.dump").write(path, d)
    local out, err, status = S.capture(("%slua5.4 %s %s </dev/null"):format(S.lua54_env(ROOT) or "",
      q(SCRIPT), q(path)))
    os.remove(path)
    assert.are.equal(0, status, err)
    assert.matches("function calls in [%d.]+ seconds\n\n" .. LINE:gsub("%p", "%%%0") .. "   Ordered by", out)
  end)
end)
