-- extend: move a live lease's expiry to TTL from now.
--
-- KEYS[1] holders: ZSET lease id -> expiry (unix ms)
-- ARGV[1] lease id
-- ARGV[2] TTL (ms)
--
-- Returns the new expiry (unix ms), or 0 if the lease expired or is unknown.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local score = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not score or tonumber(score) <= now then
  return 0
end
local expires = now + tonumber(ARGV[2])
redis.call('ZADD', KEYS[1], 'XX', expires, ARGV[1])
local last = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
redis.call('PEXPIREAT', KEYS[1], tonumber(last[2]) + 1000)
return expires
