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
-- [4] granted: 0 takes; else the grant time (unix ms) of a count to give back
-- [5] ref, [6] max_age: as acquire.lua's (a stale request answers R.stale)
-- [7] nw: the number of windows
-- [8..] per window: limit, period (ms)
--
-- Returns the acquire script's answer (see answer, redis_script.go) with no
-- slot, lease nor block, then refused: the members without room, by their
-- place in the request (1..). Reason 0: taken (or given back); else R.rate,
-- R.reserve, R.cooldown, R.stale or R.lost (not the epoch the process
-- knew); at: when every member without room has it (0: unknown); fills: per
-- member, per window (member-major), once read.
--
-- now and buckets come from prelude.lua, R from reasonSource, the window
-- functions from window.lua.
local id, known_epoch = ARGV[1], ARGV[2]
local weight, granted = tonumber(ARGV[3]), tonumber(ARGV[4])
local ref, max_age = tonumber(ARGV[5]), tonumber(ARGV[6])
local nw = tonumber(ARGV[7])
local function limit_of(i) return tonumber(ARGV[6 + 2 * i]) end
local function period_of(i) return tonumber(ARGV[7 + 2 * i]) end

local tell, fills, refused = '', {}, {}
local function answer(reason, at)
  return {reason, now, at or 0, 0, 0, 0, 0, 0, 0, tell, fills, refused}
end

if granted > 0 then
  for j = 3, #KEYS do
    refund(KEYS[j], period_of((j - 3) % nw + 1), granted, weight)
  end
  return answer(0)
end
if ref > 0 and now > ref + max_age then
  return answer(R.stale)
end

local etl, lost
etl, tell, lost = epoch(KEYS[1], nw, period_of, id, known_epoch)
if lost then
  return answer(R.lost)
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
  renew = take(KEYS[2 + j], period_of((j - 1) % nw + 1), w, weight) or renew
  fills[j] = fills[j] + weight
end
if renew then
  redis.call('PEXPIRE', KEYS[1], etl)
end
return answer(0)
