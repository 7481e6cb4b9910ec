-- cprof.sanitize: the one rule for names that are not UTF-8 (U+FFFD) and for characters a
-- terminal would obey (escaped).
local sanitize = require "cprof.sanitize"

describe("cprof.sanitize", function()
  it("replaces each byte that starts no valid UTF-8 sequence by U+FFFD", function()
    assert.equal("\239\191\189lo", sanitize.utf8("\237lo"))
    assert.equal("a\239\191\189\239\191\189b", sanitize.utf8("a\192\175b"))       -- overlong '/'
    assert.equal("\239\191\189\239\191\189\239\191\189", sanitize.utf8("\237\160\128")) -- surrogate
    assert.equal("\239\191\189", sanitize.utf8("\244\144\128\128"):sub(1, 3))        -- > U+10FFFF
    assert.equal("x\239\191\189\239\191\189", sanitize.utf8("x\226\130"))          -- cut short: per byte
  end)

  it("leaves valid UTF-8 as it is", function()
    local s = "caf\195\169 \226\130\172 \240\159\152\128 plain"
    assert.equal(s, sanitize.utf8(s))
    assert.equal(s, sanitize.display(s))
  end)

  it("escapes controls and bidirectional formatting characters for display", function()
    assert.equal("a\\x1b[2Jb", sanitize.display("a\27[2Jb"))
    assert.equal("l1\\nl2\\r\\t\\x00\\x7f", sanitize.display("l1\nl2\r\t\0\127"))
    assert.equal("x\\u{85}y", sanitize.display("x\194\133y"))
    assert.equal("abc\\u{202e}fed", sanitize.display("abc\226\128\174fed"))
    assert.equal("\\u{2066}\\u{61c}\\u{200f}", sanitize.display("\226\129\166\216\156\226\128\143"))
    -- neighbours of the escaped ranges stay: an em dash, U+00A0, U+2070
    assert.equal("\226\128\148\194\160\226\129\176", sanitize.display("\226\128\148\194\160\226\129\176"))
  end)

  it("replaces bytes that are not UTF-8 before escaping, so the result is valid UTF-8", function()
    assert.equal("\239\191\189\\n", sanitize.display("\255\n"))
  end)
end)
