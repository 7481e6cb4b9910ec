-- examples/fib.lua -- naive recursive Fibonacci, the classic profiler workload.
--
-- Run as a script:    lua5.4 examples/fib.lua [N]        (N defaults to 27)
-- Profile it:         lua5.4 -l cprof.auto examples/fib.lua 20
-- Use from Lua code:  CPROF_FIB_NO_MAIN = true; dofile("examples/fib.lua")
--                     -- defines the global `fib` (also returned) and runs nothing.
--
-- Keep `fib` exactly this shape: the call counts the specs rely on
-- (fib(n) makes 2*fib(n+1) - 1 calls, e.g. fib(20) -> 21891 calls) depend on it.

function fib(n)
  if n < 2 then return n end
  return fib(n-1) + fib(n-2)
end

if not CPROF_FIB_NO_MAIN then
  local n = tonumber(arg and arg[1]) or 27
  print(string.format("fib(%d) = %d", n, fib(n)))
end

return fib
