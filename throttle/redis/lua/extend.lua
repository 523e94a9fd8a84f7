-- extend: move a live lease's expiry to TTL from now.
--
-- KEYS[1] holders: ZSET lease id -> expiry (unix ms); a lock's STRING for a
--         lease id that starts with lock_mark (lock.go), which stays taken
--         until the end of a cooldown (KEYS[2]) in force
-- KEYS[2] cooldown: STRING, the end of the cooldown (unix ms)
-- ARGV[1] the lease id
-- ARGV[2] TTL (ms)
--
-- Returns the new expiry (unix ms), or 0 if the lease expired or is unknown.
local slot_key, cooldown_key = KEYS[1], KEYS[2]
local lease_id, ttl = ARGV[1], tonumber(ARGV[2])
-- now: the Redis server's time in unix ms, from TIME, so that every client
-- agrees on it whatever its own clock says.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local lock_mark = 'lock:' -- lockMark

-- is_lock reports whether lease id holds a lock.
local function is_lock(id)
  return string.sub(id, 1, #lock_mark) == lock_mark
end

local expires = now + ttl
if is_lock(lease_id) then
  if redis.call('GET', slot_key) ~= lease_id then
    return 0
  end
  local cd = tonumber(redis.call('GET', cooldown_key) or '0')
  redis.call('PEXPIREAT', slot_key, math.max(expires, cd))
  return expires
end
local score = redis.call('ZSCORE', slot_key, lease_id)
if not score or tonumber(score) <= now then
  return 0
end
redis.call('ZADD', slot_key, 'XX', expires, lease_id)
local last = redis.call('ZRANGE', slot_key, -1, -1, 'WITHSCORES')
redis.call('PEXPIREAT', slot_key, tonumber(last[2]) + 1000)
return expires
