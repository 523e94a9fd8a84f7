-- window: the rate windows of the acquire script, prepended to it after
-- the prelude: how a window's HASH slides and what it counts besides its
-- buckets after a loss (slide), and when a full one admits a weight again
-- (opening). They read now and buckets from the prelude; the rest comes as
-- arguments.
--
-- A window HASH holds one field per bucket of floor(period/buckets) ms
-- (bucket index -> acquisitions; buckets (100) of them for a period of whole
-- tenths of a second, up to 2 * buckets - 1 (199) otherwise), and 'lo', the
-- oldest bucket still counted, and 't', the total of the buckets from 'lo'
-- on. Buckets that leave the window are dropped as the window slides, at
-- most once per bucket width.
--
-- The HASH's expiry is renewed whenever 'lo' moves, which a take on an
-- active window does at least once per bucket width: every take since the
-- last renewal fell within one width of it, so that expiry still outlives
-- the buckets they wrote.
--
-- After Redis lost the key's state (restore.lua; REDIS.md, Redis restarted
-- empty), the HASH also holds 'b', the epoch's birth, 'r', the grants
-- written back that were in the window then, and 'u', when a process that
-- wrote back had seen the window lately, what the fleet may have taken
-- unseen. Until the window has slid past the birth (b + period + width),
-- the smaller of u and limit - r counts as taken: the reserve.
--
-- slide returns the bucket width, the oldest bucket counted, the total,
-- whether the HASH is new (a take then writes 'lo' and sets the expiry), the
-- count of the current bucket, the end of the reserve (nil without one in
-- force) and the reserve for limit. The one HMGET reads all a take needs,
-- so that the take is one HSET.
local function slide(key, period, limit, epoch_key, etl)
  local width = math.floor(period / buckets)
  local lo = now >= period and math.floor((now - period) / width) or -1
  local v = redis.call('HMGET', key, 'lo', 't', 'b', 'r', math.floor(now / width), 'u')
  local klo, total, curn = tonumber(v[1]), tonumber(v[2] or '0'), tonumber(v[5] or '0')
  local rend, reserve = nil, 0
  if v[3] then
    rend = tonumber(v[3]) + period + width
    if now < rend then
      reserve = math.max(0, limit - tonumber(v[4] or '0'))
      if v[6] then reserve = math.min(reserve, tonumber(v[6])) end
    else
      rend = nil
    end
  end
  if klo == nil then
    return width, lo, 0, true, curn, rend, reserve
  end
  if klo >= lo then
    return width, klo, total, false, curn, rend, reserve
  end
  if lo - klo > math.floor(period / width) + 1 and not rend then
    redis.call('DEL', key) -- every bucket written since klo has left the window
    return width, lo, 0, true, 0, nil, 0
  end
  for idx = klo, lo - 1 do
    local n = tonumber(redis.call('HGET', key, idx) or '0')
    if n ~= 0 then
      total = total - n
      redis.call('HDEL', key, idx)
    end
  end
  redis.call('HSET', key, 'lo', lo, 't', total)
  redis.call('PEXPIRE', key, period + 2 * width + 1000)
  redis.call('PEXPIRE', epoch_key, etl)
  return width, lo, total, false, curn, rend, reserve
end

-- opening returns when a refused window admits the weight: when enough of its
-- oldest buckets have left, the reserve counting until it ends.
local function opening(key, period, width, lo, total, limit, reserve, rend, weight)
  local cur = math.floor(now / width)
  for idx = lo, cur do
    local leaves = (idx + 1) * width + period
    if reserve > 0 and leaves > rend then
      if total + weight <= limit then return rend end
      reserve = 0
    end
    total = total - tonumber(redis.call('HGET', key, idx) or '0')
    if total + reserve + weight <= limit then return leaves end
  end
  if reserve > 0 then return math.max(rend, (cur + 1) * width + period) end
  return (cur + 1) * width + period -- at the latest, when all have left
end
