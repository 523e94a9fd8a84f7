-- acquire: check and take a concurrency slot, every rate window and the
-- cooldown of one throttle key, on the server's clock; for a batch, as many
-- leases as fit. (A request with Members runs members.lua.) now (unix ms)
-- and buckets come from prelude.lua, slide and opening from window.lua, R (the
-- reasons) from reasonSource.
--
-- KEYS[1]   holders: ZSET lease id -> expiry (unix ms); for a lock (lease ids
--           start with lock_mark), its STRING (lock.lua)
-- KEYS[2]   cooldown: STRING, the end of the cooldown (unix ms)
-- KEYS[3]   waiting processes: ZSET process id -> arrival (unix ms)
-- KEYS[4]   epoch: STRING "<birth unix ms>:<id>", made by the first script to
--           find it missing, expiring with the windows; with no rate window,
--           neither read nor made
-- KEYS[5..] one HASH per rate window: bucket index -> acquisitions
--
-- ARGV, in this order (as script, redis_script.go, sends them), then per
-- window, in KEYS order, its limit and period (ms):
local lease_id = ARGV[1]
local conc = tonumber(ARGV[2]) -- concurrency (0: no limit, no slot taken)
local ttl = tonumber(ARGV[3]) -- lease TTL (ms)
-- want: how many leases to take, up to (0: only check); more than one (a
-- batch for a process's waiters) grants as many as fit, at least one
local want = tonumber(ARGV[4])
local proc = ARGV[5] -- process id, queued on KEYS[3] when refused a slot ('': not)
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
-- there ('\n' .. proc .. '\n' .. throttle_key), so that the processes
-- handing slots on locally give them up
local channel = ARGV[14]
-- ref: a time the server answered the process lately (unix ms; 0: none
-- yet); max_age: how long after ref (ms) the process gives up on this
-- request. One run later (REDIS.md, Redis that hangs) takes nothing but its
-- hand-over's release, and answers R.stale.
local ref, max_age = tonumber(ARGV[15]), tonumber(ARGV[16])
local nw = (#ARGV - 16) / 2 -- windows, whose HASHes are KEYS[4 + j]
-- the limit and period of the window of KEYS[4 + j]
local function limit_of(j) return tonumber(ARGV[15 + 2 * j]) end
local function period_of(j) return tonumber(ARGV[16 + 2 * j]) end

-- wake the process that has waited longest for a slot
local function wake()
  local w = redis.call('ZPOPMIN', KEYS[3])
  if #w > 0 then
    redis.call('PUBLISH', wake_prefix .. w[1], throttle_key)
  end
end

-- enqueue queues proc for a wake-up, keeping its first arrival; 1 if it
-- was not queued
local function enqueue()
  local added = redis.call('ZADD', KEYS[3], 'NX', now, proc)
  redis.call('PEXPIRE', KEYS[3], ttl + 10000)
  return added
end

local held = 0
local tell = '' -- the epoch, when the process did not know it
local fills = {} -- per window, what it counted and took (see answer.fills)
-- answer returns the reply, the fields of the Go type answer
-- (redis_script.go) in its order, from a's; reason 0 is a grant, else one
-- of R, the Go constants, described there.
local function answer(a)
  return {a.reason or 0, now, a.at or 0, held, a.expires or 0, a.n or 0, a.blk or 0, a.block_at or 0,
    a.others or 0, tell, fills}
end

-- a hand-over releases its lease first, whatever the answer
local handover, lock = release_id ~= '', is_lock(lease_id)
if lock and handover then
  held = unlock(KEYS[1], KEYS[2], release_id)
elseif not lock and (handover or conc > 0) then
  redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now) -- expired leases
  if handover then
    held = redis.call('ZREM', KEYS[1], release_id) -- 1 only if not expired
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
  local period = period_of(i)
  etl = math.max(etl, period + 2 * math.floor(period / buckets) + 1000)
end
if nw > 0 then
  local ep = redis.call('GET', KEYS[4])
  if not ep then
    ep = now .. ':' .. lease_id
    redis.call('SET', KEYS[4], ep, 'PX', etl)
  end
  if ep ~= known_epoch then
    tell = ep
    if known_epoch ~= '' then
      return answer({reason = R.lost})
    end
  end
end
if handover and conc > 0 then
  local first = redis.call('ZRANGE', KEYS[3], 0, 0)
  if #first > 0 and first[1] ~= proc then
    -- another process has waited longer: it asks for the slot itself
    wake()
    if want > 0 and proc ~= '' then -- and this one waits its turn
      enqueue()
    end
    return answer({reason = R.yielded})
  end
end

local cd = tonumber(redis.call('GET', KEYS[2]) or '0')
if cd > now then
  return refuse(R.cooldown, cd)
end

local holding = -1 -- the live leases on KEYS[1] before the grant, once counted
local worst = 0
local by_reserve = true -- every window refused would admit but for its reserve
local wins = {}
local room = want -- the leases every limit admits, up to want
for j = 1, nw do
  local limit, period = limit_of(j), period_of(j)
  local width, lo, total, fresh, curn, rend, reserve = slide(KEYS[4 + j], period, limit, KEYS[4], etl)
  wins[j] = {width, lo, fresh, total, curn, limit - total - reserve} -- and the units it admits
  fills[j] = total + reserve
  if total + reserve + weight > limit then
    by_reserve = by_reserve and total + weight <= limit
    worst = math.max(worst, opening(KEYS[4 + j], period, width, lo, total, limit, reserve, rend, weight))
  end
  room = math.min(room, math.floor((limit - total - reserve) / weight))
end
if worst > 0 then
  return refuse(by_reserve and R.reserve or R.rate, worst)
end

if conc > 0 then
  local first -- when the first held slot expires, if every slot is held
  if not lock then
    holding = redis.call('ZCARD', KEYS[1])
    if holding >= conc then
      first = tonumber(redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')[2])
    end
  else -- taken here if free and wanted (holding 0: the grant counts it)
    local free
    if want > 0 then
      free = redis.call('SET', KEYS[1], lease_id, 'NX', 'PX', ttl)
    else
      free = redis.call('EXISTS', KEYS[1]) == 0
    end
    holding = free and 0 or 1
    if not free then
      first = now + math.max(0, redis.call('PTTL', KEYS[1]))
    end
  end
  room = math.min(room, conc - holding)
  if first then
    if proc ~= '' and enqueue() == 1 then -- for a release to wake
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
  local key = KEYS[4 + j]
  local width, lo, fresh, total, curn, admits = unpack(wins[j])
  local idx, units = math.floor(now / width), n * weight
  if not fresh then
    redis.call('HSET', key, idx, curn + units, 't', total + units)
  else
    redis.call('HSET', key, idx, curn + units, 't', total + units, 'lo', lo)
    redis.call('PEXPIRE', key, period_of(j) + 2 * width + 1000)
    redis.call('PEXPIRE', KEYS[4], etl)
  end
  fills[j] = fills[j] + units
  blk = math.min(blk, admits - units)
end
if conc > 0 and not lock then
  local add = {'ZADD', KEYS[1], expires, lease_id}
  for j = 2, n do
    add[#add + 1] = expires
    add[#add + 1] = lease_id .. '+' .. j
  end
  redis.call(unpack(add))
  local last = expires -- the latest expiry: this one's, when none other is held
  if holding ~= 0 then
    last = tonumber(redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')[2])
  end
  redis.call('PEXPIREAT', KEYS[1], last + 1000)
end
blk = math.max(0, blk)
if blk > 0 then
  for j = 1, nw do
    local width = wins[j][1]
    redis.call('HINCRBY', KEYS[4 + j], math.floor((now + block_in) / width), blk)
    redis.call('HINCRBY', KEYS[4 + j], 't', blk)
    fills[j] = fills[j] + blk
  end
end
if proc ~= '' then
  redis.call('ZREM', KEYS[3], proc)
end
local others = redis.call('ZCARD', KEYS[3])
if proc ~= '' and requeue then -- served, with more waiters: it queues again, at the back
  enqueue()
end
return answer({expires = expires, n = n, blk = blk, block_at = blk > 0 and now + block_in or 0,
  others = others > 0 and 1 or 0})
