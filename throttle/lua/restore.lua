-- restore: after Redis lost a key's state (restarted empty, flushed), a
-- process that knew the key's former epoch writes back what it knows: its
-- own grants still in the rate windows, and the cooldown it knows of. The
-- windows then hold a reserve until they have slid past the new epoch's
-- birth (see acquire.lua): what no process wrote back counts as taken.
--
-- KEYS[1]   epoch: STRING "<birth unix ms>:<id>", expiring with the windows
-- KEYS[2]   cooldown: STRING, the end of the cooldown (unix ms)
-- KEYS[3..] one HASH per rate window (see acquire.lua)
-- ARGV[1]   the epoch the process knew
-- ARGV[2]   an id for the epoch, if this script makes it
-- ARGV[3]   the end of the cooldown the process knows (unix ms, 0: none)
-- ARGV[4..] per window, in KEYS order: period (ms), n, then n pairs of
--           bucket index and the process's grants in it
--
-- Returns the epoch in force. Nothing is written when it is ARGV[1]: then
-- nothing was lost, or this process has written back already.
--
-- now (unix ms, the server's clock) and buckets (per rate window) come from
-- the prelude (prelude.lua).
local ep = redis.call('GET', KEYS[1])
if ep == ARGV[1] then
  return ep
end
-- the epoch key lives as long as the longest window's HASH (see acquire.lua)
local etl = 0
local a = 4
for i = 3, #KEYS do
  local period = tonumber(ARGV[a])
  etl = math.max(etl, period + 2 * math.floor(period / buckets) + 1000)
  a = a + 2 + 2 * tonumber(ARGV[a + 1])
end
if not ep then
  ep = now .. ':' .. ARGV[2]
  redis.call('SET', KEYS[1], ep, 'PX', math.max(etl, 1000))
elseif etl > 0 then
  redis.call('PEXPIRE', KEYS[1], etl)
end
local born = tonumber(string.match(ep, '^(%d+)'))

local cd = tonumber(ARGV[3])
if cd > now and cd > tonumber(redis.call('GET', KEYS[2]) or '0') then
  redis.call('SET', KEYS[2], cd, 'PXAT', cd)
end

a = 4
for i = 3, #KEYS do
  local key = KEYS[i]
  local period, n = tonumber(ARGV[a]), tonumber(ARGV[a + 1])
  a = a + 2
  local width = math.floor(period / buckets)
  if now < born + period + width then
    local lo = -1 -- the oldest bucket counted now
    if now >= period then lo = math.floor((now - period) / width) end
    local blo = -1 -- the oldest bucket counted at the birth
    if born >= period then blo = math.floor((born - period) / width) end
    local bidx = math.floor(born / width)
    local v = redis.call('HMGET', key, 'lo', 'b')
    local klo = tonumber(v[1])
    if klo == nil then
      redis.call('HSET', key, 'lo', lo, 't', 0)
      klo = lo
    end
    local from = math.max(lo, klo)
    local added, known = 0, 0
    for j = 1, n do
      local idx, c = tonumber(ARGV[a]), tonumber(ARGV[a + 1])
      a = a + 2
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
    end
    redis.call('PEXPIRE', key, period + 2 * width + 1000)
  else
    a = a + 2 * n
  end
end
return ep
