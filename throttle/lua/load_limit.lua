-- Reads a learned concurrency limit and the server's clock (now, from the
-- prelude), which its since is to be compared with.
--
-- KEYS[1]  the key's learned limit: a hash {limit, since}
--
-- Returns {limit or '', since or '', now}.
local cur = redis.call('HMGET', KEYS[1], 'limit', 'since')
return {cur[1] or '', cur[2] or '', tostring(now)}
