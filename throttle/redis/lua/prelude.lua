-- prelude: the start of every script that reads the server's clock (see
-- clockSource). now: the Redis server's time in unix ms, from TIME, so that
-- every client agrees on it whatever its own clock says.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
