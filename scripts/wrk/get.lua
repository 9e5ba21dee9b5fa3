-- wrk script: GET /v0/entity?id=KEY of keys that exist (the node answers 200;
-- a 404 shows up in wrk's "Non-2xx or 3xx responses"). KEY is a uniformly
-- random id in 0..KEYS-1, zero-padded to 16 bytes, the keys bench-node.sh
-- pre-fills.
--
--   wrk -s scripts/wrk/get.lua http://127.0.0.1:8091 -- KEYS [POOL]
--
-- POOL 0 (the default) draws and formats a key for every request, as a load
-- generator would. POOL N > 0 draws N requests per thread before the run
-- and sends them round and round: the same random keys, without the Lua
-- work per request (about 10% of this machine's two cores at 100k req/s),
-- so the client leaves more CPU to the server it shares the cores with.
--
-- Each thread seeds its own RNG from its id (set in setup) and the clock, so
-- the threads do not send the same key sequence.

local counter = 0

function setup(thread)
   counter = counter + 1
   thread:set("id", counter)
end

local function draw()
   local key = string.format("%016d", math.random(0, keys - 1))
   return wrk.format("GET", "/v0/entity?id=" .. key)
end

function init(args)
   keys = tonumber(args[1]) or 100000
   math.randomseed(os.time() * 1000 + id * 7919)
   for _ = 1, 10 do math.random() end
   pool = {}
   for i = 1, tonumber(args[2]) or 0 do pool[i] = draw() end
   next_req = 0
end

function request()
   if #pool == 0 then return draw() end
   next_req = next_req % #pool + 1
   return pool[next_req]
end
