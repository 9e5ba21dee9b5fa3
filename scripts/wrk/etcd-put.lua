-- wrk script: etcd v3's JSON gateway, POST /v3/kv/put of a random key with
-- a fixed 100-byte value (base64 in the JSON body, as the gateway wants):
-- the etcd side of scripts/bench-etcd.sh, the same PUT as put.lua sends to
-- Strata. KEY is a uniformly random id in 0..1e9-1, zero-padded to 16 bytes.
--
--   wrk -s scripts/wrk/etcd-put.lua http://127.0.0.1:23791

local b64chars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"

local function b64(s)
   local out = {}
   for i = 1, #s, 3 do
      local a, b, c = s:byte(i, i + 2)
      local n = a * 65536 + (b or 0) * 256 + (c or 0)
      local chars = {}
      for j = 3, 0, -1 do
         local k = math.floor(n / 64 ^ j) % 64
         chars[#chars + 1] = b64chars:sub(k + 1, k + 1)
      end
      if not b then chars[3] = "=" end
      if not c then chars[4] = "=" end
      out[#out + 1] = table.concat(chars)
   end
   return table.concat(out)
end

local counter = 0

function setup(thread)
   counter = counter + 1
   thread:set("id", counter)
end

function init(args)
   math.randomseed(os.time() * 1000 + id * 7919)
   for _ = 1, 10 do math.random() end
   value = b64(string.rep("v", 100))
   headers = { ["Content-Type"] = "application/json" }
end

function request()
   local key = b64(string.format("%016d", math.random(0, 1e9 - 1)))
   local body = '{"key":"' .. key .. '","value":"' .. value .. '"}'
   return wrk.format("POST", "/v3/kv/put", headers, body)
end
