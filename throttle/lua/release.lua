-- release: give back a lease's slot and wake the process that has waited
-- longest for one. With a grant time, also give back the lease's rate window
-- counts: it was granted to a caller that had given up, so no call started.
--
-- KEYS[1]   holders: ZSET lease id -> expiry (unix ms)
-- KEYS[2]   waiting processes: ZSET process id -> arrival (unix ms)
-- KEYS[3..] the rate window HASHes of the request (only when refunding)
-- ARGV[1]   lease_id: the lease id
-- ARGV[2]   wake_prefix: channel prefix: the woken process listens on
--           prefix .. its id
-- ARGV[3]   throttle_key: the throttle key, the message
-- ARGV[4]   granted: grant time (unix ms) to refund, or 0
-- ARGV[5]   units: the units to refund in each window (with a grant time)
-- ARGV[6..] per window, in KEYS order: period (ms)
--
-- Returns 1 if the lease held its slot, 0 if it had expired or was unknown.
--
-- now (unix ms, the server's clock) and buckets (per rate window) come from
-- the prelude (prelude.lua).
local lease_id = ARGV[1]
local wake_prefix = ARGV[2]
local throttle_key = ARGV[3]
local granted = tonumber(ARGV[4])
local units = ARGV[5] -- absent without a grant time

if granted > 0 then
  for i = 3, #KEYS do
    local width = math.floor(tonumber(ARGV[3 + i]) / buckets)
    local field = math.floor(granted / width)
    local lo = tonumber(redis.call('HGET', KEYS[i], 'lo') or '0')
    local n = math.min(tonumber(units), tonumber(redis.call('HGET', KEYS[i], field) or '0'))
    if field >= lo and n > 0 then
      redis.call('HINCRBY', KEYS[i], field, -n)
      redis.call('HINCRBY', KEYS[i], 't', -n)
    end
  end
end

local score = redis.call('ZSCORE', KEYS[1], lease_id)
if score then
  redis.call('ZREM', KEYS[1], lease_id)
end
if score or granted > 0 then
  local w = redis.call('ZPOPMIN', KEYS[2])
  if #w > 0 then
    redis.call('PUBLISH', wake_prefix .. w[1], throttle_key)
  end
end
if not score or tonumber(score) <= now then
  return 0
end
return 1
