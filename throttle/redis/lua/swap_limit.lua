-- Stores a learned concurrency limit if the one stored is the one expected
-- (compare and swap), stamped with the server's clock (now, from the
-- prelude) so that no pod's clock counts.
--
-- KEYS[1]  the key's learned limit: a hash {limit, since}
-- ARGV[1]  the limit expected ('0': none stored)
-- ARGV[2]  its since, unix ms (not read with none)
-- ARGV[3]  the limit to store ('0': remove the learned limit)
-- ARGV[4]  how long an untouched learned limit is kept, ms
--
-- Returns {1, now} if it stored or removed, {0} if another value was stored.
local cur = redis.call('HMGET', KEYS[1], 'limit', 'since')
if (cur[1] or '0') ~= ARGV[1] or (cur[1] and cur[2] ~= ARGV[2]) then
  return {0}
end
if ARGV[3] == '0' then
  redis.call('DEL', KEYS[1])
else
  redis.call('HSET', KEYS[1], 'limit', ARGV[3], 'since', now)
  redis.call('PEXPIRE', KEYS[1], ARGV[4])
end
return {1, now}
