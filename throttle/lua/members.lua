-- members: count a request's rate windows on each of its members' windows,
-- all of them or none (see Request.Members), on the server's clock; or give
-- back such a count, granted to a caller that had given up.
--
-- KEYS[1]   epoch of the request's key, one for all its members (see
--           acquire.lua), expiring with the longest window
-- KEYS[2]   cooldown of the request's key: STRING, its end (unix ms)
-- KEYS[3..] per member in the request's order, nw HASHes: its rate windows
--           in ARGV's order (see window.lua)
--
-- ARGV (see runMembers, redis_members.go):
-- [1] id: an id for the epoch, if this script makes it
-- [2] known_epoch: the epoch the process knows ('' : none)
-- [3] weight: the units each member's windows count
-- [4] refund: 0 takes; else the grant time (unix ms) of a count to give back
-- [5] ref, [6] max_age: as acquire.lua's (a stale request answers R.stale)
-- [7] nw: the number of windows
-- [8..] per window: limit, period (ms)
--
-- Returns {reason, now, at, epoch, fills, refused}:
--   reason   0: taken (or given back); else R.rate, R.reserve, R.cooldown,
--            R.stale or R.lost (not the epoch the process knew)
--   at       refused: when every member without room has it (0: unknown)
--   epoch    the key's epoch when it is not known_epoch, else ''
--   fills    per member, per window (member-major): what the window counted
--            (buckets and reserve) and took, once read; else empty
--   refused  the members without room, by their place in the request (1..)
--
-- now and buckets come from prelude.lua, R from reasonSource, slide and
-- opening from window.lua.
local id, known_epoch = ARGV[1], ARGV[2]
local weight, refund = tonumber(ARGV[3]), tonumber(ARGV[4])
local ref, max_age = tonumber(ARGV[5]), tonumber(ARGV[6])
local nw = tonumber(ARGV[7])
local function limit_of(i) return tonumber(ARGV[6 + 2 * i]) end
local function period_of(i) return tonumber(ARGV[7 + 2 * i]) end

local tell, fills, refused = '', {}, {}
local function answer(reason, at)
  return {reason, now, at or 0, tell, fills, refused}
end

if refund > 0 then -- as release.lua gives back a cancelled grant's count
  for j = 3, #KEYS do
    local width = math.floor(period_of((j - 3) % nw + 1) / buckets)
    local field = math.floor(refund / width)
    local v = redis.call('HMGET', KEYS[j], 'lo', field)
    local n = math.min(weight, tonumber(v[2] or '0'))
    if field >= tonumber(v[1] or '0') and n > 0 then
      redis.call('HINCRBY', KEYS[j], field, -n)
      redis.call('HINCRBY', KEYS[j], 't', -n)
    end
  end
  return answer(0)
end
if ref > 0 and now > ref + max_age then
  return answer(R.stale)
end

local etl = 0 -- as acquire.lua's: the epoch lives as long as the longest window
for i = 1, nw do
  local period = period_of(i)
  etl = math.max(etl, period + 2 * math.floor(period / buckets) + 1000)
end
local ep = redis.call('GET', KEYS[1])
if not ep then
  ep = now .. ':' .. id
  redis.call('SET', KEYS[1], ep, 'PX', etl)
end
if ep ~= known_epoch then
  tell = ep
  if known_epoch ~= '' then
    return answer(R.lost)
  end
end
local cd = tonumber(redis.call('GET', KEYS[2]) or '0')
if cd > now then
  return answer(R.cooldown, cd)
end

local wins, worst, by_reserve = {}, 0, true
for j = 1, #KEYS - 2 do
  local m, i = math.ceil(j / nw), (j - 1) % nw + 1 -- member, window
  local key, limit, period = KEYS[2 + j], limit_of(i), period_of(i)
  local width, lo, total, fresh, curn, rend, reserve = slide(key, period, limit, KEYS[1], etl)
  wins[j] = {width, lo, fresh, total, curn}
  fills[j] = total + reserve
  if total + reserve + weight > limit then
    if refused[#refused] ~= m then refused[#refused + 1] = m end
    by_reserve = by_reserve and total + weight <= limit
    worst = math.max(worst, opening(key, period, width, lo, total, limit, reserve, rend, weight))
  end
end
if #refused > 0 then
  return answer(by_reserve and R.reserve or R.rate, worst)
end

local renew = false
for j, w in ipairs(wins) do
  local key = KEYS[2 + j]
  local width, lo, fresh, total, curn = w[1], w[2], w[3], w[4], w[5]
  local idx = math.floor(now / width)
  if fresh then
    redis.call('HSET', key, idx, curn + weight, 't', total + weight, 'lo', lo)
    redis.call('PEXPIRE', key, period_of((j - 1) % nw + 1) + 2 * width + 1000)
    renew = true
  else
    redis.call('HSET', key, idx, curn + weight, 't', total + weight)
  end
  fills[j] = fills[j] + weight
end
if renew then
  redis.call('PEXPIRE', KEYS[1], etl)
end
return answer(0)
