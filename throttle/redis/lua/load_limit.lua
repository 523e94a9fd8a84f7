-- Reads a learned concurrency limit and the server's clock (now, from the
-- prelude), which its since is to be compared with.
--
-- KEYS[1]  the key's learned limit: a hash {limit, since}
--
-- Returns {limit, since, now}: limit 0 when none is stored, or not ours.
local limit, since = unpack(redis.call('HMGET', KEYS[1], 'limit', 'since'))
if not (tostring(limit):match('^%d+$') and tostring(since):match('^%d+$')) then
  return {0, 0, now}
end
return {tonumber(limit), tonumber(since), now}
