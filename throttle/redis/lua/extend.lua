-- extend: move a live lease's expiry to TTL from now (from the prelude).
--
-- KEYS[1] holders: ZSET lease id -> expiry (unix ms); a lock's STRING for a
--         lease id that starts with lock_mark (lock.lua), which stays taken
--         until the end of a cooldown (KEYS[2]) in force
-- KEYS[2] cooldown: STRING, the end of the cooldown (unix ms)
-- ARGV[1] the lease id
-- ARGV[2] TTL (ms)
--
-- Returns the new expiry (unix ms), or 0 if the lease expired or is unknown.
local expires = now + tonumber(ARGV[2])
if is_lock(ARGV[1]) then
  if redis.call('GET', KEYS[1]) ~= ARGV[1] then
    return 0
  end
  local cd = tonumber(redis.call('GET', KEYS[2]) or '0')
  redis.call('PEXPIREAT', KEYS[1], math.max(expires, cd))
  return expires
end
local score = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not score or tonumber(score) <= now then
  return 0
end
redis.call('ZADD', KEYS[1], 'XX', expires, ARGV[1])
local last = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
redis.call('PEXPIREAT', KEYS[1], tonumber(last[2]) + 1000)
return expires
