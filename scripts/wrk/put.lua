-- wrk script: PUT /v0/entity?id=KEY with a fixed 100-byte value (the node
-- answers 201). KEY is a uniformly random id in 0..KEYSPACE-1, zero-padded to
-- 16 bytes (the key format of get.lua and of bench-node.sh's pre-fill).
--
--   wrk -s scripts/wrk/put.lua http://127.0.0.1:8091 -- [KEYSPACE [POOL]]
--
-- KEYSPACE defaults to 1e9, so nearly every PUT inserts a new key. POOL as
-- in get.lua: 0 (the default) draws a key per request; N > 0 sends N
-- pre-drawn requests per thread round and round (keys then repeat once the
-- pool is used up; each PUT still writes a new version). Each thread seeds
-- its own RNG from its id (set in setup) and the clock, so the threads do
-- not send the same key sequence.

local counter = 0

function setup(thread)
   counter = counter + 1
   thread:set("id", counter)
end

local function draw()
   local key = string.format("%016d", math.random(0, keyspace - 1))
   return wrk.format("PUT", "/v0/entity?id=" .. key, headers, value)
end

function init(args)
   keyspace = tonumber(args[1]) or 1e9
   math.randomseed(os.time() * 1000 + id * 7919)
   for _ = 1, 10 do math.random() end
   value = string.rep("v", 100)
   headers = { ["Content-Type"] = "application/octet-stream" }
   pool = {}
   for i = 1, tonumber(args[2]) or 0 do pool[i] = draw() end
   next_req = 0
end

function request()
   if #pool == 0 then return draw() end
   next_req = next_req % #pool + 1
   return pool[next_req]
end
