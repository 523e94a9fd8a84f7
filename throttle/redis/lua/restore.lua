-- restore: after Redis lost a key's state (restarted empty, flushed), a
-- process that knew the key's former epoch writes back what it knows (see
-- REDIS.md, "Redis restarted empty"). The windows then hold the reserve that
-- acquire.lua counts until they have slid past the new epoch's birth.
--
-- The reserve's bound u is the latest fill written back (s, seen at sa),
-- less the grants written back from before sa, plus limit * (birth - sa) /
-- period; each restore recomputes it, so that the freshest sight wins.
-- Without such a fill, the reserve is limit - r (all not written back).
--
-- KEYS[1]   epoch: STRING "<birth unix ms>:<id>", expiring with the windows
-- KEYS[2]   cooldown: STRING, the end of the cooldown (unix ms)
-- KEYS[3..] one HASH per rate window (see acquire.lua)
-- ARGV[1]   the epoch the process knew
-- ARGV[2]   an id for the epoch, if this script makes it
-- ARGV[3]   the end of the cooldown the process knows (unix ms, 0: none)
-- ARGV[4..] per window, in KEYS order: period (ms), limit, the fill last
--           seen (every process's grants, in an acquire reply) and when
--           (unix ms, 0: never), n, then n pairs of bucket index and the
--           process's grants in it
--
-- Returns the epoch in force. Nothing is written when it is ARGV[1]: then
-- nothing was lost, or this process has written back already.
local epoch_key, cooldown_key = KEYS[1], KEYS[2]
local known_epoch, new_id, known_cooldown = ARGV[1], ARGV[2], tonumber(ARGV[3])
-- wins[i]: what the process knows of the window of KEYS[2 + i]: its key,
-- period, limit, the fill it saw last and when, and its grants, a list of
-- {bucket index, count}
local wins, a = {}, 4
for i = 3, #KEYS do
  local n = tonumber(ARGV[a + 4])
  local w = {key = KEYS[i], period = tonumber(ARGV[a]), limit = tonumber(ARGV[a + 1]), seen = tonumber(ARGV[a + 2]),
    seen_at = tonumber(ARGV[a + 3]), grants = {}}
  a = a + 5
  for j = 1, n do
    w.grants[j] = {tonumber(ARGV[a]), tonumber(ARGV[a + 1])}
    a = a + 2
  end
  wins[#wins + 1] = w
end
-- now: the Redis server's time in unix ms, from TIME, so that every client
-- agrees on it whatever its own clock says.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local buckets = 100 -- throttle.BucketsPerWindow

local ep = redis.call('GET', epoch_key)
if ep == known_epoch then
  return ep
end
local made = not ep
ep = ep or (now .. ':' .. new_id)
local born = tonumber(string.match(ep, '^(%d+)'))

local cd = known_cooldown
if cd > now and cd > tonumber(redis.call('GET', cooldown_key) or '0') then
  redis.call('SET', cooldown_key, cd, 'PXAT', cd)
end

local etl = 0 -- the epoch key lives as long as the longest window's HASH (see acquire.lua)
for _, w in ipairs(wins) do
  local key, period, limit, seen, sa = w.key, w.period, w.limit, w.seen, w.seen_at
  local width = math.floor(period / buckets)
  local ttl = period + 2 * width + 1000
  etl = math.max(etl, ttl)
  if now < born + period + width then
    local lo = now >= period and math.floor((now - period) / width) or -1 -- the oldest bucket counted now
    local blo = born >= period and math.floor((born - period) / width) or -1 -- and at the birth
    local bidx = math.floor(born / width)
    local v = redis.call('HMGET', key, 'lo', 'b', 's', 'sa')
    if not v[1] then redis.call('HSET', key, 'lo', lo, 't', 0) end
    local from = math.max(lo, tonumber(v[1] or lo))
    local added, known = 0, 0
    for _, g in ipairs(w.grants) do
      local idx, c = g[1], g[2]
      if idx <= bidx then -- taken before the birth: lost
        if idx >= from then
          redis.call('HINCRBY', key, idx, c)
          added = added + c
        end
        if idx >= blo then known = known + c end
      end
    end
    if added > 0 then redis.call('HINCRBY', key, 't', added) end
    if tonumber(v[2]) == born then
      redis.call('HINCRBY', key, 'r', known)
    else
      redis.call('HSET', key, 'b', born, 'r', known)
      redis.call('HDEL', key, 's', 'sa', 'u') -- another epoch's
      v[3], v[4] = nil, nil
    end
    -- the latest fill seen within the window, this process's or another's
    if sa > 0 and sa <= born and sa + period + width > born and sa > (tonumber(v[4]) or 0) then
      v[3], v[4] = seen, sa
      redis.call('HSET', key, 's', seen, 'sa', sa)
    end
    if v[4] then -- u (see above) from the latest fill s, seen at at
      local s, at, before = tonumber(v[3]), tonumber(v[4]), 0
      -- the buckets before at that counted then, and now: their grants are in s
      for idx = math.max(lo, math.floor((at - period) / width)), math.floor(at / width) - 1 do
        before = before + tonumber(redis.call('HGET', key, idx) or '0')
      end
      redis.call('HSET', key, 'u', math.max(0, s - before) + math.ceil(limit * math.max(0, born - at) / period))
    end
    redis.call('PEXPIRE', key, ttl)
  end
end
if made or etl > 0 then -- a SET of the epoch in force renews its expiry
  redis.call('SET', epoch_key, ep, 'PX', math.max(etl, 1000))
end
return ep
