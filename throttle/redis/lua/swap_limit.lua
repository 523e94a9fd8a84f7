-- Stores a learned concurrency limit if the one stored is the one expected
-- (compare and swap), stamped with the server's clock (now) so
-- that no pod's clock counts.
--
-- KEYS[1]  the key's learned limit: a hash {limit, since}
-- ARGV[1]  the limit expected ('0': none stored)
-- ARGV[2]  its since, unix ms (not read with none)
-- ARGV[3]  the limit to store ('0': remove the learned limit)
-- ARGV[4]  how long an untouched learned limit is kept, ms
--
-- Returns {'stored', 1, 'now', now}, keyed, if it stored or removed, and
-- {'stored', 0} if another value was stored.
local learned_key = KEYS[1]
local expected, expected_since, next_limit, keep = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
-- now: the Redis server's time in unix ms, from TIME, so that every client
-- agrees on it whatever its own clock says.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local cur = redis.call('HMGET', learned_key, 'limit', 'since')
if (cur[1] or '0') ~= expected or (cur[1] and cur[2] ~= expected_since) then
  return {'stored', 0}
end
if next_limit == '0' then
  redis.call('DEL', learned_key)
else
  redis.call('HSET', learned_key, 'limit', next_limit, 'since', now)
  redis.call('PEXPIRE', learned_key, keep)
end
return {'stored', 1, 'now', now}
