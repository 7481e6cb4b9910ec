-- docs/MANUAL.md's reference lists cprof-stats' options in one paragraph; cprof-stats' own
-- option table (lua/cprof/cli.lua, which --help and the man page are made of) is the source.
local S = require "spec.support"

describe("docs/MANUAL.md's list of cprof-stats' options", function()
  it("names every option cprof-stats takes", function()
    local manual = S.read_file(S.ROOT .. "/docs/MANUAL.md")
    local para = manual:match("\nPrints the profiles in the FILEs.-\n\n")
    assert.truthy(para, "the paragraph on cprof-stats' options")
    local missing = {}
    -- by its long name or its short one, as the paragraph gives it
    for _, opt in ipairs(require("cprof.cli").OPTIONS) do
      local named = (opt.long and para:find("`--" .. opt.long, 1, true))
        or (opt.short and para:find("`-" .. opt.short, 1, true))
      if not named then missing[#missing + 1] = "--" .. (opt.long or opt.short) end
    end
    assert.are.same({}, missing)
  end)
end)
