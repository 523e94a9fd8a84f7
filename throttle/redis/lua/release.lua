-- release: give back a lease's slot, and its With leases' slots, and wake
-- the process that has waited longest for each. With a grant time, also
-- give back the lease's rate window counts: it was granted to a caller that
-- had given up, so no call started.
--
-- KEYS[1]   holders: ZSET lease id -> expiry (unix ms); a lock's STRING
--           for a lease id that starts with lock_mark (lock.go)
-- KEYS[2]   waiting processes: ZSET process id -> arrival (unix ms)
-- KEYS[3]   cooldown: STRING, the end of the cooldown (unix ms)
-- KEYS[4..] the rate window HASHes of the request (only when refunding;
--           members.lua refunds a request with Members)
-- then      per With lease: its holders (or lock), its waiting processes,
--           its cooldown
--
-- Returns 1 if the lease and its With leases held their slots, 0 if one had
-- expired or was unknown.
--
-- ARGV: the lease's id ('': it holds no slot of its own), a wake-up
-- channel's prefix (a process listens on prefix .. its id) and message (the
-- throttle key), the grant time to refund (unix ms; 0: none), the units to
-- refund in each window, the number of With leases; then per window, in
-- KEYS order, its period (ms), and per With lease its id and throttle key.
local holders_key, waiting_key, cooldown_key = KEYS[1], KEYS[2], KEYS[3]
local lease_id, wake_prefix, throttle_key = ARGV[1], ARGV[2], ARGV[3]
local granted, units, nwith = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
local nwin = #KEYS - 3 - 3 * nwith
-- the windows to refund (KEYS[4..]) and their periods (ARGV[7..]); made
-- only when there are some, as the With leases' below: a release of one
-- slot, the most common script, then makes no table
local window_keys, periods
if nwin > 0 then
  window_keys, periods = {}, {}
  for i = 1, nwin do
    window_keys[i], periods[i] = KEYS[3 + i], tonumber(ARGV[6 + i])
  end
end
-- the With leases, the i-th's in [i] of each: its holders (or lock),
-- waiting processes and cooldown keys, its id and its throttle key
local with_holders, with_waiting, with_cooldown, with_ids, with_keys
if nwith > 0 then
  with_holders, with_waiting, with_cooldown, with_ids, with_keys = {}, {}, {}, {}, {}
  for i = 1, nwith do
    local k, a = 3 + nwin + 3 * i, 6 + nwin + 2 * i
    with_holders[i], with_waiting[i], with_cooldown[i] = KEYS[k - 2], KEYS[k - 1], KEYS[k]
    with_ids[i], with_keys[i] = ARGV[a - 1], ARGV[a]
  end
end

-- now: the Redis server's time in unix ms, from TIME, so that every client
-- agrees on it whatever its own clock says.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local buckets = 100 -- throttle.BucketsPerWindow
local lock_mark = 'lock:' -- lockMark

-- is_lock reports whether lease id holds a lock.
local function is_lock(id)
  return string.sub(id, 1, #lock_mark) == lock_mark
end

-- unlock gives back the lock held as KEY lock by lease id; while the key's
-- cooldown (KEY cooldown) runs, the lock stays taken, empty, until it ends.
-- Returns 1 if id held it, else 0.
local function unlock(lock, cooldown, id)
  if redis.call('GET', lock) ~= id then
    return 0
  end
  local cd = tonumber(redis.call('GET', cooldown) or '0')
  if cd > now then
    redis.call('SET', lock, '', 'PXAT', cd)
  else
    redis.call('DEL', lock)
  end
  return 1
end


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
    local key = window_keys[i]
    local field = math.floor(granted / math.floor(periods[i] / buckets))
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
  held = math.min(held, free(with_holders[i], with_waiting[i], with_cooldown[i], with_ids[i], with_keys[i], false))
end
if lease_id == '' then
  return held
end
return math.min(held, free(holders_key, waiting_key, cooldown_key, lease_id, throttle_key, granted > 0))
