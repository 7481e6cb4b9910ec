-- Dump files and what is at their paths (issue 17): reading only regular files and at most
-- 1 GiB of them; writing through to devices and FIFOs, following symbolic links, never leaving
-- temporary files behind; file names with NUL bytes; bad arguments to the dump functions.
-- Plain Lua 5.1 syntax: the same file runs under LuaJIT.
local cprof = require "cprof"
local core = require "cprof.core"
local stats = require "cprof.stats"
local marshal = require "cprof.pstats.marshal"
local S = require "spec.support"

local read_file, write_file, q = S.read_file, S.write_file, S.q

local function small_data()
  local g = S.group
  return {
    meta = { timer = "counter", pid = 5 },
    frames = g(1, { kind = { "Lua" }, file = { "a.lua" }, line = { 3 }, lastline = { 8 },
                    name = { "f" }, ncalls = { 2 }, pcalls = { 2 }, tottime = { 0.5 },
                    cumtime = { 0.75 } }),
    edges = g(0, {}),
    nodes = g(1, { parent = { 0 }, frame = { 1 }, ncalls = { 2 }, pcalls = { 2 },
                   tottime = { 0.5 }, cumtime = { 0.75 } }),
  }
end

-- pcall(f, ...) fails with exactly `msg`.
local function fails_with(msg, f, ...)
  local ok, err = pcall(f, ...)
  assert.is_false(ok, "expected an error")
  assert.are.equal(msg, err)
end

local function sh(cmd) assert(os.execute(cmd)) end

describe("dump files", function()
  local dir
  before_each(function() dir = S.new_dir(true) end)
  after_each(function() S.remove_dir(dir) end)

  describe("reading", function()
    it("refuses a device, a FIFO and a directory at once, naming what they are", function()
      local fifo = dir .. "/fifo"
      sh("mkfifo " .. q(fifo))
      for path, what in pairs({ ["/dev/zero"] = "a character device", [fifo] = "a FIFO", [dir] = "a directory" }) do
        local msg = "cprof: " .. path .. ": " .. what .. ", not a regular file"
        fails_with(msg, cprof.load, path)
        fails_with(msg, stats.new, path)
        fails_with(msg, core.read_dump, path)
      end
      assert.are.equal("FIFO", core.file_type(fifo))
      assert.are.equal("regular", core.file_type("spec/golden/sample.pstats"))
      assert.are.same({ nil, "cprof: " .. dir .. "/none: cannot open: No such file or directory" },
                      { core.file_type(dir .. "/none") })
    end)

    it("cprof-stats refuses them too, with one line each, and does not wait on a FIFO", function()
      local fifo = dir .. "/fifo"
      sh("mkfifo " .. q(fifo))
      local env = S.lua54_env(S.ROOT)
      if not env then pending("needs build/lua5.4") return end
      local cmd = "timeout 20 " .. env .. "lua5.4 " .. q(S.ROOT .. "/bin/cprof-stats")
      for path, what in pairs({ ["/dev/zero"] = "a character device", [fifo] = "a FIFO" }) do
        local out, err, status = S.capture(cmd .. " " .. q(path))
        assert.are.same({ "", "cprof-stats: " .. path .. ": " .. what .. ", not a regular file\n", 2 },
                        { out, err, status })
      end
    end)

    it("the line report does not read a profile's source file that is a device or a FIFO", function()
      local fifo = dir .. "/fifo.lua"
      sh("mkfifo " .. q(fifo))
      local d = small_data()
      d.lines = S.group(1, { frame = { 1 }, line = { 3 }, hits = { 4 }, time = { 0.5 } })
      local text = {}
      for _, file in ipairs({ "/dev/zero", fifo }) do
        d.frames.file[1] = file
        local st = stats.new(d, { stream = { write = function(_, s) text[#text + 1] = s end } })
        st:print_lines()
        assert.matches("Line #", table.concat(text))
      end
      assert.is_false(require("cprof.dump").is_regular(fifo))
      assert.is_true(require("cprof.dump").is_regular("spec/golden/sample.pstats"))
    end)

    it("refuses a file larger than 1 GiB before reading it, a dump or a pstats file", function()
      local path = dir .. "/big.prof"
      local f = assert(io.open(path, "wb"))
      f:write("{")  -- a pstats file's first byte
      f:seek("set", 2 ^ 30)
      f:write("x")  -- sparse: the file takes a few KB
      f:close()
      fails_with("cprof: " .. path .. ": too large for a dump (more than 1 GiB)", core.read_dump, path)
      local msg = "cprof: " .. path .. ": too large for a pstats file (more than 1 GiB)"
      fails_with(msg, marshal.read, path)
      fails_with(msg, stats.new, path)
    end)

    it("a pstats file is read through the same cap, in pieces", function()
      local path = dir .. "/s.pstats"
      local bytes = read_file("spec/golden/sample.pstats")
      write_file(path, bytes)
      local old = marshal.MAX_FILE
      marshal.MAX_FILE = #bytes
      local ok = pcall(marshal.read, path)
      marshal.MAX_FILE = #bytes - 1
      local ok2, err = pcall(marshal.read, path)
      marshal.MAX_FILE = old
      assert.is_true(ok)
      assert.is_false(ok2)
      assert.are.equal("cprof: " .. path .. ": too large for a pstats file (more than " .. (#bytes - 1) .. " bytes)", err)
    end)
  end)

  describe("writing", function()
    it("writes through to /dev/null, which stays a character device", function()
      assert.is_true(core.write_dump("/dev/null", small_data()))
      assert.are.equal("character device", core.file_type("/dev/null"))
      cprof.Profile():dump_stats("/dev/null")
      assert.are.equal("character device", core.file_type("/dev/null"))
    end)

    it("reports a device that refuses the bytes", function()
      fails_with("cprof: /dev/full: cannot write: No space left on device", core.write_dump, "/dev/full",
                 small_data())
      assert.are.equal("character device", core.file_type("/dev/full"))
    end)

    it("writes through to a FIFO that a process reads, and refuses one that none reads", function()
      local fifo = dir .. "/fifo"
      sh("mkfifo " .. q(fifo))
      fails_with("cprof: " .. fifo .. ": cannot write: no process reads the FIFO", core.write_dump, fifo,
                 small_data())
      local reader = assert(io.open(fifo, "r+b"))  -- O_RDWR: a reader that does not wait
      assert.is_true(core.write_dump(fifo, small_data()))
      local want = dir .. "/want.prof"
      core.write_dump(want, small_data())
      local bytes = read_file(want)
      assert.are.equal(bytes, reader:read(#bytes))
      reader:close()
      assert.are.equal("FIFO", core.file_type(fifo))
    end)

    it("an export's file is written the same way: /dev/null stays a device, a link stays", function()
      local d = small_data()
      local st = stats.new(d)
      st:export("folded", "/dev/null")
      assert.are.equal("character device", core.file_type("/dev/null"))
      sh("ln -s real.txt " .. q(dir .. "/link.txt"))
      st:export("pstats", dir .. "/link.txt")
      assert.are.same({ "link.txt", "real.txt" }, S.listing(dir))
      assert.is_true(#read_file(dir .. "/real.txt") > 0)
      fails_with("cprof: /dev/full: cannot write: No space left on device", st.export, st, "pstats", "/dev/full")
    end)

    it("refuses a directory, and leaves nothing", function()
      fails_with("cprof: " .. dir .. ": cannot write a dump over a directory", core.write_dump, dir, small_data())
      assert.are.same({}, S.listing(dir))
    end)

    it("follows a symbolic link: the file it names is replaced, the link stays", function()
      sh("mkdir " .. q(dir .. "/real") .. " && ln -s real/target.prof " .. q(dir .. "/link.prof"))
      local link = dir .. "/link.prof"
      -- A dangling link: the dump creates the file it names.
      assert.is_true(core.write_dump(link, small_data()))
      assert.are.same({ "target.prof" }, S.listing(dir .. "/real"))
      assert.are.equal("Lua", core.read_dump(dir .. "/real/target.prof").frames.kind[1])
      local d = small_data()
      d.frames.name[1] = "second"
      assert.is_true(core.write_dump(link, d))
      assert.are.equal("second", core.read_dump(dir .. "/real/target.prof").frames.name[1])
      assert.are.same({ "link.prof", "real" }, S.listing(dir))
      assert.are.equal("real/target.prof", S.capture("readlink " .. q(link)):match("^(.-)\n"))
      -- Links to links, and a link to a device.
      sh("ln -s link.prof " .. q(dir .. "/link2.prof") .. " && ln -s /dev/null " .. q(dir .. "/null"))
      d.frames.name[1] = "third"
      assert.is_true(core.write_dump(dir .. "/link2.prof", d))
      assert.are.equal("third", core.read_dump(link).frames.name[1])
      assert.is_true(core.write_dump(dir .. "/null", d))
      assert.are.equal("character device", core.file_type("/dev/null"))
      assert.are.same({ "link.prof", "link2.prof", "null", "real" }, S.listing(dir))
      assert.are.same({ "target.prof" }, S.listing(dir .. "/real"))
    end)

    it("reports a loop of symbolic links", function()
      sh("ln -s b " .. q(dir .. "/a") .. " && ln -s a " .. q(dir .. "/b"))
      fails_with("cprof: " .. dir .. "/a: cannot follow the symbolic link: Too many levels of symbolic links",
                 core.write_dump, dir .. "/a", small_data())
      assert.are.same({ "a", "b" }, S.listing(dir))
    end)

    it("refuses another user's symbolic link in a sticky folder anyone may write to, as the kernel does", function()
      -- fs.protected_symlinks: a link planted in /tmp by another user must not get the file it
      -- names replaced. Followed: one's own link, the folder owner's, any in a folder that is
      -- not both sticky and writable by anyone.
      local _, _, not_root = S.capture("test \"$(id -u)\" = 0")
      if not_root ~= 0 then return pending("needs root, to give a link to another user (chown -h)") end
      -- (chown aborts under the sanitizers' preloaded runtime: make asan)
      local function sh(cmd) assert(os.execute("env -u LD_PRELOAD sh -c " .. q(cmd))) end
      local sticky, victim = dir .. "/sticky", dir .. "/victim.prof"
      local link = sticky .. "/out.prof"
      sh("mkdir " .. q(sticky) .. " && chmod 1777 " .. q(sticky) .. " && ln -s ../victim.prof " .. q(link))
      write_file(victim, "the victim's file")
      sh("chown -h nobody " .. q(link))
      local refused = "cprof: %s: refusing to follow the symbolic link %s: another user's, in a sticky "
                      .. "folder anyone may write to (the kernel's fs.protected_symlinks rule)"
      fails_with(refused:format(link, link), core.write_dump, link, small_data())
      -- Also at the end of a chain of links, and for an export's file.
      sh("ln -s sticky/out.prof " .. q(dir .. "/mine.prof"))
      fails_with(refused:format(dir .. "/mine.prof", link), core.write_dump, dir .. "/mine.prof", small_data())
      fails_with(refused:format(link, link), core.write_file, link, "text")
      assert.are.equal("the victim's file", read_file(victim))
      -- Nor is such a link to a FIFO or a device written through.
      local fifo = sticky .. "/fifo.prof"
      sh("ln -s /dev/null " .. q(fifo) .. " && chown -h nobody " .. q(fifo))
      fails_with(refused:format(fifo, fifo), core.write_dump, fifo, small_data())
      sh("rm " .. q(fifo))
      assert.are.same({ "out.prof" }, S.listing(sticky))
      -- The folder's owner's link is followed, and so is one's own.
      sh("chown nobody " .. q(sticky))
      assert.is_true(core.write_dump(link, small_data()))
      assert.are.equal("f", core.read_dump(victim).frames.name[1])
      sh("chown root " .. q(sticky) .. " && chown -h root " .. q(link))
      assert.is_true(core.write_file(link, "mine"))
      assert.are.equal("mine", read_file(victim))
      -- Another user's link in a folder that is sticky but not writable by anyone is followed.
      sh("chown -h nobody " .. q(link) .. " && chmod 1755 " .. q(sticky))
      assert.is_true(core.write_file(link, "not world-writable"))
      assert.are.equal("not world-writable", read_file(victim))
      assert.are.same({ "out.prof" }, S.listing(sticky))
    end)

    it("writes a file whose name is up to 255 bytes long, and says so of a longer one", function()
      -- The temporary file's name adds a suffix to the target's: it keeps less of a long name.
      for _, n in ipairs { 236, 237, 246, 255 } do
        local path = dir .. "/" .. ("n"):rep(n - 5) .. ".prof"
        assert.is_true(core.write_dump(path, small_data()))
        assert.is_true(core.write_dump(path, small_data()), "replaced")
        assert.are.equal("f", core.read_dump(path).frames.name[1])
        assert.is_true(core.write_file(path, "export"))
        assert.are.same({ path:match("[^/]*$") }, S.listing(dir))
        os.remove(path)
      end
      local long = dir .. "/" .. ("n"):rep(256)
      fails_with("cprof: " .. long .. ": the file name is 256 bytes long; its folder's file system takes at most 255",
                 core.write_dump, long, small_data())
      local deep = dir .. "/" .. ("d"):rep(256) .. "/x.prof"
      fails_with("cprof: " .. deep .. ": a folder's name in the path is longer than its file system takes",
                 core.write_dump, deep, small_data())
      assert.are.same({}, S.listing(dir))
    end)

    it("removes the temporary files that killed writers of the same file left, and only those", function()
      local path = dir .. "/out.prof"
      -- 99999999 is above any pid_max (at most 2^22): no such process.
      local names = { "out.prof.tmp.99999999.0123abcd", "out.prof.tmp.1.0123abcd",
                      "other.prof.tmp.99999999.0123abcd", "out.prof.tmp.99999999.0123abcdef",
                      "out.prof.tmp.99999999.xyz" }
      for _, n in ipairs(names) do write_file(dir .. "/" .. n, "stale") end
      assert.is_true(core.write_dump(path, small_data()))
      assert.are.same({ "other.prof.tmp.99999999.0123abcd", "out.prof", "out.prof.tmp.1.0123abcd",
                        "out.prof.tmp.99999999.0123abcdef", "out.prof.tmp.99999999.xyz" }, S.listing(dir))
    end)

    it("leaves no temporary file when the writer is killed while writing", function()
      local path = dir .. "/big.prof"
      write_file(path, "the old file")
      local script = dir .. "/write.lua"
      write_file(script, S.big_dump_script(20000) .. [[
        core.write_dump(arg[1], data)
        print("not killed")
      ]])
      -- A write past the file size limit kills the process (SIGXFSZ), as kill -9 would.
      local out, _, status = S.capture("sh -c 'ulimit -f 64; exec " .. S.lua .. " \"$0\" \"$1\"' "
                                       .. q(script) .. " " .. q(path))
      assert.are_not.equal(0, status)
      assert.are.equal("", out)
      assert.are.equal("the old file", read_file(path))
      assert.are.same({ "big.prof", "write.lua" }, S.listing(dir))
    end)

    it("refuses a file name with a NUL byte, or an empty one, for reading and writing", function()
      local msg = "cprof: " .. dir .. "/a\\0b: the file name holds a NUL byte"
      local path = dir .. "/a\0b"
      fails_with(msg, core.write_dump, path, small_data())
      fails_with(msg, core.read_dump, path)
      fails_with(msg, cprof.load, path)
      fails_with(msg, stats.new, path)
      fails_with(msg, cprof.Profile().dump_stats, cprof.Profile(), path)
      fails_with(msg, stats.new().dump_stats, stats.new(), path)
      assert.are.same({}, S.listing(dir))
      fails_with('cprof: "": the file name is empty', core.write_dump, "", small_data())
      fails_with('cprof: "": the file name is empty', cprof.load, "")
    end)

    it("cprof.auto with CPROF_OUT=/dev/null: no error, and /dev/null stays a device", function()
      local out, err, status = S.run_lua("print(1)\n", "-l cprof.auto", "CPROF_QUIET=1 CPROF_OUT=/dev/null")
      assert.are.same({ "1\n", "", 0 }, { out, err, status })
      assert.are.equal("character device", core.file_type("/dev/null"))
    end)
  end)

  describe("the dump functions' arguments", function()
    -- The message of f(), which must fail at this file's line (as Lua's own library reports).
    local function bad(f)
      local ok, err = pcall(f)
      assert.is_false(ok)
      local rest = err:match("^[^:]*dump_files_spec%.lua:%d+: (.*)$")
      assert.is_string(rest, err)
      return rest
    end

    it("say which argument was wrong, as Lua's library does", function()
      local p = cprof.Profile()
      local st = stats.new()
      assert.are.equal("bad argument #1 to 'load' (string expected, got number)", bad(function() cprof.load(42) end))
      assert.are.equal("bad argument #1 to 'load' (string expected, got nil)", bad(function() cprof.load() end))
      assert.are.equal("bad argument #1 to 'dump_stats' (string expected, got number)",
                       bad(function() p:dump_stats(42) end))
      assert.are.equal("bad argument #1 to 'dump_stats' (string expected, got table)",
                       bad(function() st:dump_stats({}) end))
      -- A bad self is worded as Lua words it for a method (cprof.args).
      assert.are.equal("calling 'dump_stats' on bad self (cprof.Profile expected, got table)",
                       bad(function() p.dump_stats({}, dir .. "/x.prof") end))
      assert.are.equal("calling 'dump_stats' on bad self (cprof.Profile expected, got string)",
                       bad(function() p.dump_stats(dir .. "/x.prof") end))
      assert.are.equal("calling 'dump_stats' on bad self (Stats expected, got table)",
                       bad(function() st.dump_stats({}, dir .. "/x.prof") end))
      -- The file name of run and runctx is checked before the code runs.
      local ran = false
      _G.CPROF_SPEC_RAN = function() ran = true end
      assert.are.equal("bad argument #2 to 'run' (string expected, got number)",
                       bad(function() cprof.run("CPROF_SPEC_RAN()", 42) end))
      assert.are.equal("bad argument #4 to 'runctx' (string expected, got boolean)",
                       bad(function() cprof.runctx("CPROF_SPEC_RAN()", _G, nil, true) end))
      fails_with("cprof: " .. dir .. "/a\\0b: the file name holds a NUL byte", cprof.run, "CPROF_SPEC_RAN()",
                 dir .. "/a\0b")
      _G.CPROF_SPEC_RAN = nil
      assert.is_false(ran)
      assert.are.same({}, S.listing(dir))
    end)
  end)
end)
