-- cooldown: refuse every acquisition on a key until now (from the prelude)
-- + d, keeping a later end already in force, and wake the key's waiters so
-- those that do not wait out cooldowns fail. The key's lock (lock.lua) is
-- taken, empty, or its holder's expiry moved, until the end, so that a plain
-- SET NX cannot take it meanwhile (on a key that is no lock, it is unused).
--
-- KEYS[1] cooldown: STRING, the end of the cooldown (unix ms)
-- KEYS[2] the key's lock: STRING
-- ARGV[1] d (ms)
-- ARGV[2] notification channel
-- ARGV[3] the throttle key, published on the channel
--
-- Returns the end of the cooldown in force (unix ms).
local untl = now + tonumber(ARGV[1])
local cur = tonumber(redis.call('GET', KEYS[1]) or '0')
if cur >= untl then
  return cur
end
redis.call('SET', KEYS[1], untl, 'PXAT', untl)
if not redis.call('SET', KEYS[2], '', 'NX', 'PXAT', untl) and redis.call('PTTL', KEYS[2]) < untl - now then
  redis.call('PEXPIREAT', KEYS[2], untl)
end
redis.call('PUBLISH', ARGV[2], ARGV[3])
return untl
