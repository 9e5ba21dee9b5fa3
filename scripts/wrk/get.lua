-- wrk script: GET /v0/entity?id=KEY of keys that exist (the node answers 200;
-- a 404 shows up in wrk's "Non-2xx or 3xx responses"). KEY is a uniformly
-- random id in 0..KEYS-1, zero-padded to 16 bytes, the keys bench-node.sh
-- pre-fills.
--
--   wrk -s scripts/wrk/get.lua http://127.0.0.1:8091 -- KEYS
--
-- Each thread seeds its own RNG from its id (set in setup) and the clock, so
-- the threads do not send the same key sequence.

local counter = 0

function setup(thread)
   counter = counter + 1
   thread:set("id", counter)
end

function init(args)
   keys = tonumber(args[1]) or 100000
   math.randomseed(os.time() * 1000 + id * 7919)
   for _ = 1, 10 do math.random() end
end

function request()
   local key = string.format("%016d", math.random(0, keys - 1))
   return wrk.format("GET", "/v0/entity?id=" .. key)
end
