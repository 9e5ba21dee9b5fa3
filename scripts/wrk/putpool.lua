local counter = 0
function setup(thread)
   counter = counter + 1
   thread:set("id", counter)
end
function init(args)
   local keyspace = tonumber(args[1]) or 1e9
   local pool = tonumber(args[2]) or 100000
   math.randomseed(os.time() * 1000 + id * 7919)
   for _ = 1, 10 do math.random() end
   local value = string.rep("v", 100)
   local headers = { ["Content-Type"] = "application/octet-stream" }
   reqs = {}
   for i = 1, pool do
      reqs[i] = wrk.format("PUT", string.format("/v0/entity?id=%016d", math.random(0, keyspace - 1)), headers, value)
   end
   n = pool; i = 0
end
function request()
   i = i + 1
   if i > n then i = 1 end
   return reqs[i]
end
