-- Reads a learned concurrency limit and the server's clock (now), which
-- its since is to be compared with.
--
-- KEYS[1]  the key's learned limit: a hash {limit, since}
--
-- Returns {'limit', limit, 'since', since, 'now', now}, keyed: limit 0
-- when none is stored, or not ours.
local learned_key = KEYS[1]
-- now: the Redis server's time in unix ms, from TIME, so that every client
-- agrees on it whatever its own clock says.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local limit, since = unpack(redis.call('HMGET', learned_key, 'limit', 'since'))
if not (tostring(limit):match('^%d+$') and tostring(since):match('^%d+$')) then
  return {'limit', 0, 'since', 0, 'now', now}
end
return {'limit', tonumber(limit), 'since', tonumber(since), 'now', now}
