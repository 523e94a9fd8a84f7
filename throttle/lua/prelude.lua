-- prelude: the start of every script that reads the server's clock
-- (acquire, release, extend, cooldown, restore). The Go side prepends it when
-- it builds those scripts, followed by the line
--   local buckets = <BucketsPerWindow>
-- so that the bucket count of a rate window is the Go constant's.
--
-- now: the Redis server's time in unix milliseconds, from TIME, so that every
-- client agrees on it whatever its own clock says.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
