-- release: give back a lease's slot, and its With leases' slots, and wake
-- the process that has waited longest for each. With a grant time, also
-- give back the lease's rate window counts: it was granted to a caller that
-- had given up, so no call started.
--
-- KEYS[1]   holders: ZSET lease id -> expiry (unix ms); a lock's STRING
--           for a lease id that starts with lock_mark (lock.lua)
-- KEYS[2]   waiting processes: ZSET process id -> arrival (unix ms)
-- KEYS[3]   cooldown: STRING, the end of the cooldown (unix ms)
-- KEYS[4..] the rate window HASHes of the request (only when refunding;
--           members.lua refunds a request with Members)
-- then      per With lease: its holders (or lock), its waiting processes,
--           its cooldown
--
-- Returns 1 if the lease and its With leases held their slots, 0 if one had
-- expired or was unknown. now and buckets come from the prelude
-- (prelude.lua).
--
-- ARGV: the lease's id ('': it holds no slot of its own), a wake-up
-- channel's prefix (a process listens on prefix .. its id) and message (the
-- throttle key), the grant time to refund (unix ms; 0: none), the units to
-- refund in each window, the number of With leases; then per window, in
-- KEYS order, its period (ms), and per With lease its id and throttle key.
local lease_id, wake_prefix, throttle_key = ARGV[1], ARGV[2], ARGV[3]
local granted, units, nwith = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
local nwin = #KEYS - 3 - 3 * nwith

-- free gives back lease id's slot in the holders ZSET (or its lock) and, if
-- it held one or its window counts were refunded, wakes the process that
-- has waited longest on the waiting ZSET (publishing key on wake_prefix ..
-- its id). Returns 1 if the lease still held its slot, else 0.
local function free(holders, waiting, cooldown, id, key, refunded)
  local score
  if is_lock(id) then
    score = unlock(holders, cooldown, id) == 1 and math.huge
  else
    score = redis.call('ZSCORE', holders, id)
    if score then
      redis.call('ZREM', holders, id)
    end
  end
  if score or refunded then
    local w = redis.call('ZPOPMIN', waiting)
    if #w > 0 then
      redis.call('PUBLISH', wake_prefix .. w[1], key)
    end
  end
  return score and tonumber(score) > now and 1 or 0
end

if granted > 0 then
  for i = 1, nwin do
    local key = KEYS[3 + i]
    local field = math.floor(granted / math.floor(tonumber(ARGV[6 + i]) / buckets))
    local v = redis.call('HMGET', key, 'lo', field)
    local n = math.min(units, tonumber(v[2] or '0'))
    if field >= tonumber(v[1] or '0') and n > 0 then
      redis.call('HINCRBY', key, field, -n)
      redis.call('HINCRBY', key, 't', -n)
    end
  end
end

local held = 1
for i = 1, nwith do
  local k, a = 3 + nwin + 3 * i, 6 + nwin + 2 * i
  held = math.min(held, free(KEYS[k - 2], KEYS[k - 1], KEYS[k], ARGV[a - 1], ARGV[a], false))
end
if lease_id == '' then
  return held
end
return math.min(held, free(KEYS[1], KEYS[2], KEYS[3], lease_id, throttle_key, granted > 0))
