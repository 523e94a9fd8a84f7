-- cooldown: refuse every acquisition on a key until now + d, keeping a
-- later end already in force, and wake the key's waiters so those that do
-- not wait out cooldowns fail. The key's lock (lock.go) is taken, empty,
-- or its holder's expiry moved, until the end, so that a plain SET NX
-- cannot take it meanwhile (on a key that is no lock, it is unused).
--
-- KEYS[1] cooldown: STRING, the end of the cooldown (unix ms)
-- KEYS[2] the key's lock: STRING
-- ARGV[1] d (ms)
-- ARGV[2] notification channel
-- ARGV[3] the throttle key, published on the channel
--
-- Returns the end of the cooldown in force (unix ms).
local cooldown_key, lock_key = KEYS[1], KEYS[2]
local d, channel, throttle_key = tonumber(ARGV[1]), ARGV[2], ARGV[3]
-- now: the Redis server's time in unix ms, from TIME, so that every client
-- agrees on it whatever its own clock says.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

local untl = now + d
local cur = tonumber(redis.call('GET', cooldown_key) or '0')
if cur >= untl then
  return cur
end
redis.call('SET', cooldown_key, untl, 'PXAT', untl)
if not redis.call('SET', lock_key, '', 'NX', 'PXAT', untl) and redis.call('PTTL', lock_key) < untl - now then
  redis.call('PEXPIREAT', lock_key, untl)
end
redis.call('PUBLISH', channel, throttle_key)
return untl
