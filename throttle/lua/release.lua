-- release: give back a lease's slot and wake the process that has waited
-- longest for one. With a grant time, also give back the lease's rate window
-- counts: it was granted to a caller that had given up, so no call started.
--
-- KEYS[1]   holders: ZSET lease id -> expiry (unix ms)
-- KEYS[2]   waiting processes: ZSET process id -> arrival (unix ms)
-- KEYS[3..] the rate window HASHes of the request (only when refunding)
-- ARGV[1]   lease id
-- ARGV[2]   channel prefix: the woken process listens on prefix .. its id
-- ARGV[3]   the throttle key, the message
-- ARGV[4]   grant time (unix ms) to refund, or 0
-- ARGV[5]   the units to refund in each window (with a grant time)
-- ARGV[6..] per window, in KEYS order: period (ms)
--
-- Returns 1 if the lease held its slot, 0 if it had expired or was unknown.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

local granted = tonumber(ARGV[4])
if granted > 0 then
  for i = 3, #KEYS do
    local width = math.floor(tonumber(ARGV[3 + i]) / 100)
    local field = math.floor(granted / width)
    local lo = tonumber(redis.call('HGET', KEYS[i], 'lo') or '0')
    local n = math.min(tonumber(ARGV[5]), tonumber(redis.call('HGET', KEYS[i], field) or '0'))
    if field >= lo and n > 0 then
      redis.call('HINCRBY', KEYS[i], field, -n)
      redis.call('HINCRBY', KEYS[i], 't', -n)
    end
  end
end

local score = redis.call('ZSCORE', KEYS[1], ARGV[1])
if score then
  redis.call('ZREM', KEYS[1], ARGV[1])
end
if score or granted > 0 then
  local w = redis.call('ZPOPMIN', KEYS[2])
  if #w > 0 then
    redis.call('PUBLISH', ARGV[2] .. w[1], ARGV[3])
  end
end
if not score or tonumber(score) <= now then
  return 0
end
return 1
