-- acquire: check and take a concurrency slot, every rate window and the
-- cooldown of one throttle key, on the server's clock; for a batch, as many
-- leases as fit. (A request with Members runs members.lua.) This file is
-- the script as Redis runs it; a Go test checks that its constants
-- (buckets, lock_mark, R) are the Go ones.
--
-- KEYS[1]   holders: ZSET lease id -> expiry (unix ms); for a lock (lease ids
--           start with lock_mark), its STRING
-- KEYS[2]   cooldown: STRING, the end of the cooldown (unix ms)
-- KEYS[3]   waiting processes: ZSET process id -> arrival (unix ms)
-- KEYS[4]   epoch: STRING "<birth unix ms>:<id>", made by the first script to
--           find it missing, expiring with the windows; with no rate window,
--           neither read nor made
-- KEYS[5]   learned: the key's learned limit, a HASH {limit, since}
--           (load_limit.lua, swap_limit.lua)
-- KEYS[6..] one HASH per rate window: bucket index -> acquisitions
local holders_key, cooldown_key, waiting_key, epoch_key, learned_key = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local window_keys -- KEYS[6..], made only when there are some: a lock's run makes no table
if #KEYS > 5 then window_keys = {unpack(KEYS, 6)} end

-- ARGV, in this order (as script, script.go, sends them), then per
-- window, in KEYS order, its limit and period (ms):
local lease_id = ARGV[1]
local conc = tonumber(ARGV[2]) -- concurrency (0: no limit, no slot taken)
local ttl = tonumber(ARGV[3]) -- lease TTL (ms)
-- want: how many leases to take, up to (0: only check); more than one (a
-- batch for a process's waiters) grants as many as fit, at least one
local want = tonumber(ARGV[4])
local proc = ARGV[5] -- process id, queued on waiting_key when refused a slot ('': not)
-- release_id: a lease of this process to release first ('': none), a
-- hand-over: its slot goes to this acquisition, unless another process has
-- waited longer (this one then yields, R.yielded below).
local release_id = ARGV[6]
-- wake_prefix: a process listens for wake-ups on wake_prefix .. its id; the
-- message is throttle_key
local wake_prefix, throttle_key = ARGV[7], ARGV[8]
-- requeue: granted, the process (proc) leaves the waiting queue (0) or,
-- more of its waiters waiting, goes to its back (1)
local requeue = ARGV[9] == '1'
local known_epoch = ARGV[10] -- the epoch the process knows ('': none)
local weight = tonumber(ARGV[11]) -- the units it counts in every window
-- block: window units to take ahead besides a grant (0: none), as many as
-- every window admits after it: counted in the bucket of now + block_in
-- (ms), so that the process may start calls from them until block_in after
-- it sent this request
local block, block_in = tonumber(ARGV[12]), tonumber(ARGV[13])
-- channel: the broadcast channel: a process newly queued for a slot says so
-- there ('\n' .. proc .. '\n' .. throttle_key), and again when refused
-- renotice or more after it queued, so that the processes handing slots on
-- locally give them up
local channel = ARGV[14]
local renotice = 500 -- ms
-- ref: a time the server answered the process lately (unix ms; 0: none
-- yet); max_age: how long after ref (ms) the process gives up on this
-- request. One run later (REDIS.md, Redis that hangs) takes nothing but its
-- hand-over's release, and answers R.stale.
local ref, max_age = tonumber(ARGV[15]), tonumber(ARGV[16])
local nw = (#ARGV - 16) / 2 -- windows, whose HASHes are window_keys
-- limits[j], periods[j]: the window of window_keys[j] (ARGV[15 + 2j],
-- ARGV[16 + 2j])
local limits, periods
if nw > 0 then
  limits, periods = {}, {}
  for i = 1, nw do
    limits[i], periods[i] = tonumber(ARGV[15 + 2 * i]), tonumber(ARGV[16 + 2 * i])
  end
end

-- now: the Redis server's time in unix ms, from TIME, so that every client
-- agrees on it whatever its own clock says.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local buckets = 100 -- throttle.BucketsPerWindow
local lock_mark = 'lock:' -- lockMark
-- R: the reasons answered, the Go constants (throttle.Reason* and the
-- backend's reasonYielded, reasonLost, reasonStale)
local R = {concurrency = 1, rate = 2, cooldown = 3, reserve = 7, yielded = 4, lost = 5, stale = 8}

-- A limit the fleet learned for the key (a Learner's, after WeCom refused
-- calls in flight) caps conc here, in the step that takes the slot, so
-- that a process that has not read it yet never goes above it.
if conc > 1 then
  local learned = redis.call('HGET', learned_key, 'limit')
  if learned and tostring(learned):match('^%d+$') then
    learned = tonumber(learned)
    if learned > 0 and learned < conc then conc = learned end
  end
end

-- A key with one slot and no window (a lock, see isLock) is held as a
-- STRING, its holder's lease id, which starts with lock_mark, expiring with
-- the lease: one plain SET NX PX takes it, without a script. A cooldown on
-- the key keeps it taken, by its holder or empty, until the cooldown ends
-- (cooldown.lua, unlock), so that a plain SET cannot take it meanwhile.

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

-- The rate windows: how a window's HASH slides and what it counts besides
-- its buckets after a loss (slide), and when a full one admits a weight
-- again (opening).
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

-- wake the process that has waited longest for a slot
local function wake()
  local w = redis.call('ZPOPMIN', waiting_key)
  if #w > 0 then
    redis.call('PUBLISH', wake_prefix .. w[1], throttle_key)
  end
end

-- enqueue queues proc for a wake-up, keeping its first arrival; 1 if it
-- was not queued
local function enqueue()
  local added = redis.call('ZADD', waiting_key, 'NX', now, proc)
  redis.call('PEXPIRE', waiting_key, ttl + 10000)
  return added
end

local held = 0
local tell = '' -- the epoch, when the process did not know it
local fills = {} -- per window, what it counted and took (see answer.fills)
-- answer returns the reply, keyed: a flat list of field names and values,
-- 'now' first, then those of the fields of the Go type answer (script.go)
-- that a and the script's state set; a field left out is 0, '' or empty.
-- reason (left out: a grant) is one of R. Spelled out field by field: a
-- loop over the names, or a helper function, costs Redis more.
local function answer(a)
  local out, n = {'now', now}, 2
  local reason, at, expires, granted, blk, block_at, others, full = a.reason, a.at, a.expires, a.n, a.blk, a.block_at, a.others, a.full
  if reason then out[n + 1], out[n + 2], n = 'reason', reason, n + 2 end
  if at and at ~= 0 then out[n + 1], out[n + 2], n = 'at', at, n + 2 end
  if held ~= 0 then out[n + 1], out[n + 2], n = 'held', held, n + 2 end
  if expires and expires ~= 0 then out[n + 1], out[n + 2], n = 'expires', expires, n + 2 end
  if granted and granted ~= 0 then out[n + 1], out[n + 2], n = 'n', granted, n + 2 end
  if blk and blk ~= 0 then out[n + 1], out[n + 2], n = 'blk', blk, n + 2 end
  if block_at and block_at ~= 0 then out[n + 1], out[n + 2], n = 'block_at', block_at, n + 2 end
  if others and others ~= 0 then out[n + 1], out[n + 2], n = 'others', others, n + 2 end
  if full and full ~= 0 then out[n + 1], out[n + 2], n = 'full', full, n + 2 end
  if tell ~= '' then out[n + 1], out[n + 2], n = 'epoch', tell, n + 2 end
  if #fills > 0 then out[n + 1], out[n + 2] = 'fills', fills end
  return out
end

-- a hand-over releases its lease first, whatever the answer
local handover, lock = release_id ~= '', is_lock(lease_id)
if lock and handover then
  held = unlock(holders_key, cooldown_key, release_id)
elseif not lock and (handover or conc > 0) then
  redis.call('ZREMRANGEBYSCORE', holders_key, '-inf', now) -- expired leases
  if handover then
    held = redis.call('ZREM', holders_key, release_id) -- 1 only if not expired
  end
end

-- refuse: a hand-over that cannot use the freed slot passes it on
local function refuse(reason, at)
  if handover then wake() end
  return answer({reason = reason, at = at})
end

if ref > 0 and now > ref + max_age then -- given up by its sender (see max_age)
  return refuse(R.stale)
end

-- The epoch (REDIS.md, Redis restarted empty): a process that knew another
-- one writes back its grants (restore.lua) before it takes more; one that
-- knew none learns it. It lives as long as the longest window's HASH.
local etl = 0
for i = 1, nw do
  local period = periods[i]
  etl = math.max(etl, period + 2 * math.floor(period / buckets) + 1000)
end
if nw > 0 then
  local ep = redis.call('GET', epoch_key)
  if not ep then
    ep = now .. ':' .. lease_id
    redis.call('SET', epoch_key, ep, 'PX', etl)
  end
  if ep ~= known_epoch then
    tell = ep
    if known_epoch ~= '' then
      return answer({reason = R.lost})
    end
  end
end
if handover and conc > 0 then
  local first = redis.call('ZRANGE', waiting_key, 0, 0)
  if #first > 0 and first[1] ~= proc then
    -- another process has waited longer: it asks for the slot itself
    wake()
    if want > 0 and proc ~= '' then -- and this one waits its turn
      enqueue()
    end
    return answer({reason = R.yielded})
  end
end

local cd = tonumber(redis.call('GET', cooldown_key) or '0')
if cd > now then
  return refuse(R.cooldown, cd)
end

local holding = -1 -- the live leases on holders_key before the grant, once counted
local worst = 0
local by_reserve = true -- every window refused would admit but for its reserve
local wins = {}
local room = want -- the leases every limit admits, up to want
for j = 1, nw do
  local limit, period = limits[j], periods[j]
  local width, lo, total, fresh, curn, rend, reserve = slide(window_keys[j], period, limit, epoch_key, etl)
  wins[j] = {width, lo, fresh, total, curn, limit - total - reserve} -- and the units it admits
  fills[j] = total + reserve
  if total + reserve + weight > limit then
    by_reserve = by_reserve and total + weight <= limit
    worst = math.max(worst, opening(window_keys[j], period, width, lo, total, limit, reserve, rend, weight))
  end
  room = math.min(room, math.floor((limit - total - reserve) / weight))
end
if worst > 0 then
  return refuse(by_reserve and R.reserve or R.rate, worst)
end

if conc > 0 then
  local first -- when the first held slot expires, if every slot is held
  if not lock then
    holding = redis.call('ZCARD', holders_key)
    if holding >= conc then
      first = tonumber(redis.call('ZRANGE', holders_key, 0, 0, 'WITHSCORES')[2])
    end
  else -- taken here if free and wanted (holding 0: the grant counts it)
    local free
    if want > 0 then
      free = redis.call('SET', holders_key, lease_id, 'NX', 'PX', ttl)
    else
      free = redis.call('EXISTS', holders_key) == 0
    end
    holding = free and 0 or 1
    if not free then
      first = now + math.max(0, redis.call('PTTL', holders_key))
    end
  end
  room = math.min(room, conc - holding)
  if first then
    -- queued for a release to wake, and the others told that it waits:
    -- when it queues, and again at an ask renotice or more later, as a
    -- notice the subscription lost leaves them handing slots on locally
    if proc ~= '' and (enqueue() == 1 or now - tonumber(redis.call('ZSCORE', waiting_key, proc)) >= renotice) then
      redis.call('PUBLISH', channel, '\n' .. proc .. '\n' .. throttle_key)
    end
    return refuse(R.concurrency, first)
  end
end

if want == 0 then
  return answer({})
end

-- take n leases: count them in every window, and give lease_id (then
-- lease_id .. '+' .. j for j = 2, 3...) the slots
local n = want > 1 and math.max(1, room) or 1
local expires = conc > 0 and now + ttl or 0
local blk = nw > 0 and block or 0
for j = 1, nw do
  local key = window_keys[j]
  local width, lo, fresh, total, curn, admits = unpack(wins[j])
  local idx, units = math.floor(now / width), n * weight
  if not fresh then
    redis.call('HSET', key, idx, curn + units, 't', total + units)
  else
    redis.call('HSET', key, idx, curn + units, 't', total + units, 'lo', lo)
    redis.call('PEXPIRE', key, periods[j] + 2 * width + 1000)
    redis.call('PEXPIRE', epoch_key, etl)
  end
  fills[j] = fills[j] + units
  blk = math.min(blk, admits - units)
end
if conc > 0 and not lock then
  local add = {'ZADD', holders_key, expires, lease_id}
  for j = 2, n do
    add[#add + 1] = expires
    add[#add + 1] = lease_id .. '+' .. j
  end
  redis.call(unpack(add))
  local last = expires -- the latest expiry: this one's, when none other is held
  if holding ~= 0 then
    last = tonumber(redis.call('ZRANGE', holders_key, -1, -1, 'WITHSCORES')[2])
  end
  redis.call('PEXPIREAT', holders_key, last + 1000)
end
blk = math.max(0, blk)
if blk > 0 then
  for j = 1, nw do
    local width = wins[j][1]
    redis.call('HINCRBY', window_keys[j], math.floor((now + block_in) / width), blk)
    redis.call('HINCRBY', window_keys[j], 't', blk)
    fills[j] = fills[j] + blk
  end
end
if proc ~= '' then
  redis.call('ZREM', waiting_key, proc)
end
local others = redis.call('ZCARD', waiting_key)
if proc ~= '' and requeue then -- served, with more waiters: it queues again, at the back
  enqueue()
end
return answer({expires = expires, n = n, blk = blk, block_at = blk > 0 and now + block_in or 0,
  others = others > 0 and 1 or 0, full = conc > 0 and holding + n >= conc and 1 or 0})
