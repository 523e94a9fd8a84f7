-- release: give back a lease's slot, and its With leases' slots, and wake
-- the process that has waited longest for each. With a grant time, also
-- give back the lease's rate window counts: it was granted to a caller that
-- had given up, so no call started.
--
-- KEYS[1]   holders: ZSET lease id -> expiry (unix ms)
-- KEYS[2]   waiting processes: ZSET process id -> arrival (unix ms)
-- KEYS[3..] the rate window HASHes of the request (only when refunding)
-- then      per With lease: its holders ZSET, its waiting processes ZSET
-- ARGV[1]   lease_id: the lease id ('' : the lease holds no slot of its own)
-- ARGV[2]   wake_prefix: channel prefix: the woken process listens on
--           prefix .. its id
-- ARGV[3]   throttle_key: the throttle key, the message
-- ARGV[4]   granted: grant time (unix ms) to refund, or 0
-- ARGV[5]   units: the units to refund in each window (with a grant time)
-- ARGV[6]   nwith: the number of With leases
-- ARGV[7..] per window, in KEYS order: period (ms)
-- then      per With lease: its id, its throttle key
--
-- Returns 1 if the lease and its With leases held their slots, 0 if one had
-- expired or was unknown.
--
-- now (unix ms, the server's clock) and buckets (per rate window) come from
-- the prelude (prelude.lua), free from free.lua.
local lease_id = ARGV[1]
local wake_prefix = ARGV[2]
local throttle_key = ARGV[3]
local granted = tonumber(ARGV[4])
local units = tonumber(ARGV[5])
local nwith = tonumber(ARGV[6])
local nwin = #KEYS - 2 - 2 * nwith

if granted > 0 then
  for i = 1, nwin do
    local key = KEYS[2 + i]
    local width = math.floor(tonumber(ARGV[6 + i]) / buckets)
    local field = math.floor(granted / width)
    local lo = tonumber(redis.call('HGET', key, 'lo') or '0')
    local n = math.min(units, tonumber(redis.call('HGET', key, field) or '0'))
    if field >= lo and n > 0 then
      redis.call('HINCRBY', key, field, -n)
      redis.call('HINCRBY', key, 't', -n)
    end
  end
end

local held = 1
for i = 1, nwith do
  local k, a = 2 + nwin + 2 * i, 6 + nwin + 2 * i
  held = math.min(held, free(KEYS[k - 1], KEYS[k], ARGV[a - 1], wake_prefix, ARGV[a]))
end
if lease_id == '' then
  return held
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
return held
