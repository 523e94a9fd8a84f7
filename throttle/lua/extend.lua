-- extend: move a live lease's expiry to TTL from now.
--
-- KEYS[1] holders: ZSET lease id -> expiry (unix ms)
-- ARGV[1] lease_id: the lease id
-- ARGV[2] TTL (ms)
--
-- Returns the new expiry (unix ms), or 0 if the lease expired or is unknown.
--
-- now (unix ms, the server's clock) comes from the prelude (prelude.lua).
local lease_id = ARGV[1]
local score = redis.call('ZSCORE', KEYS[1], lease_id)
if not score or tonumber(score) <= now then
  return 0
end
local expires = now + tonumber(ARGV[2])
redis.call('ZADD', KEYS[1], 'XX', expires, lease_id)
local last = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
redis.call('PEXPIREAT', KEYS[1], tonumber(last[2]) + 1000)
return expires
