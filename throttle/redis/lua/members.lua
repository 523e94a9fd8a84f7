-- members: the rate windows of a request with Members (Request.Members),
-- counted on every member, all members or none, in one run (op 'take');
-- and the two rarer steps on the same state: giving a grant back to a
-- caller that left (op 'refund'), and writing back what a process knew of
-- a member after Redis lost its state (op 'restore', as restore.lua does
-- for a key of its own). This file is the script as Redis runs it; a Go
-- test checks that its constant buckets is the Go one.
--
-- A member's state is one field (the member) of a generation HASH of the
-- request key: the generation floor(now / gen) when it was last written.
-- A run reads each member from the newest generation that holds it, and
-- writes it into the current one; a generation HASH expires once every
-- state written in it has left its windows, so that a member nobody sends
-- to is forgotten, while a send to 1,000 members is one HMGET and one HSET.
-- A state holds each window the member counts in as a section, packed with
-- struct (little-endian doubles, so that a take parses no text):
--
--   period, t, ci, cn (doubles), nbody, nres (int32), then nres doubles
--   (the reserve: 0 or 5), then nbody pairs of doubles (index, count)
--
-- The buckets are those of acquire.lua: floor(period / buckets) ms wide,
-- index floor(unix ms / width). ci and cn are the latest bucket written and
-- its count; the body holds the earlier buckets still counted, index
-- ascending, each with a count above 0; t is the total of them all. A take
-- at now counts every bucket from floor((now - period) / width) on, so
-- every grant in (now - period, now]: no member goes over a limit in any
-- sliding interval of its period. A take reads and rewrites the header,
-- and touches the body only when a bucket begins (one pair appended) or
-- leaves the window (the pairs that left), so that its cost does not grow
-- with the member's traffic.
--
-- The reserve after a loss (REDIS.md, "Redis restarted empty"; acquire.lua
-- and restore.lua say what each is): b the epoch's birth, r the grants
-- written back, u the bound on what the fleet took unseen (-1: none), s the
-- latest fill seen at sa (0: none). Until the window has slid past b
-- (b + period + width), the smaller of u and limit - r counts as taken.
--
-- KEYS[1]   the request key's epoch: STRING "<birth unix ms>:<id>" (see
--           acquire.lua), one for all its members
-- KEYS[2]   the request key's cooldown: STRING, its end (unix ms)
-- KEYS[3..] the request key's generation HASHes first_gen, first_gen + 1,
--           ...: those the process, by its estimate of the server's clock,
--           thinks the run reads and writes, and one more on each side
--
-- ARGV[1]   op: 'take', 'refund' or 'restore'
-- ARGV[2]   gen: a generation's length (ms)
-- ARGV[3]   first_gen: the generation of KEYS[3]
-- ARGV[4..] as each op below names them
local op, gen, first_gen = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])

-- now: the Redis server's time in unix ms, from TIME, so that every client
-- agrees on it whatever its own clock says.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local buckets = 100 -- throttle.BucketsPerWindow
local floor, max, min = math.floor, math.max, math.min
local pack, unpack_at = struct.pack, struct.unpack
local HEAD, RESERVE, PAIR = '<ddddi4i4', '<ddddd', '<dd'

-- section returns the section of period in the state v (nil: none): t, ci,
-- cn, the body, then the reserve b, r, u, s, sa (b nil: none). An empty one
-- when v has none.
local function section(v, period)
  local pos, len = 1, v and #v or 0
  while pos <= len do
    local p, tot, ci, cn, nb, nr, at = unpack_at(HEAD, v, pos)
    local b, r, u, s, sa
    if nr > 0 then
      b, r, u, s, sa, at = unpack_at(RESERVE, v, at)
    end
    pos = at + 16 * nb
    if p == period then
      return tot, ci, cn, string.sub(v, at, pos - 1), b, r, u, s, sa
    end
  end
  return 0, -1, 0, ''
end

-- others returns the sections of v whose period none of ws has, as they
-- are, and how long the longest of them must live (ms, 0: none).
local function others(v, ws)
  local out, ttl, pos, len = '', 0, 1, v and #v or 0
  while pos <= len do
    local p, _, _, _, nb, nr, at = unpack_at(HEAD, v, pos)
    local stop = at + 8 * nr + 16 * nb
    if not ws[p] then
      out, ttl = out .. string.sub(v, pos, stop - 1), max(ttl, p + 2 * floor(p / buckets) + 1000)
    end
    pos = stop
  end
  return out, ttl
end

-- packed returns a section as the state holds it; one that counts nothing
-- and has no reserve is left out ('').
local function packed(period, tot, ci, cn, body, b, r, u, s, sa)
  if b then
    return pack(HEAD .. 'ddddd', period, tot, ci, cn, #body / 16, 5, b, r, u, s, sa) .. body
  elseif tot > 0 then
    return pack(HEAD, period, tot, ci, cn, #body / 16, 0) .. body
  end
  return ''
end

-- slide drops the buckets below lo, which left the window: all of them
-- when the latest did, else the body's first pairs. It returns t, ci, cn
-- and the body after.
local function slide(tot, ci, cn, body, lo)
  if ci < lo then
    return 0, ci, 0, ''
  end
  local pos, len = 1, #body
  while pos < len do
    local idx, n = unpack_at(PAIR, body, pos)
    if idx >= lo then break end
    tot, pos = tot - n, pos + 16
  end
  if pos > 1 then
    body = string.sub(body, pos)
  end
  return tot, ci, cn, body
end

-- counts returns the buckets as a table index -> count, and their indexes
-- ascending.
local function counts(ci, cn, body)
  local c, order = {}, {}
  for pos = 1, #body, 16 do
    local idx, n = unpack_at(PAIR, body, pos)
    c[idx], order[#order + 1] = n, idx
  end
  if cn > 0 then
    c[ci], order[#order + 1] = cn, ci
  end
  return c, order
end

-- rebuild returns the buckets c as t, ci, cn and the body (ci: the latest
-- bucket, else old_ci when none is left).
local function rebuild(c, old_ci)
  local order, parts, tot = {}, {}, 0
  for idx, n in pairs(c) do
    if n > 0 then order[#order + 1] = idx end
  end
  if #order == 0 then
    return 0, old_ci, 0, ''
  end
  table.sort(order)
  for i = 1, #order - 1 do
    tot, parts[i] = tot + c[order[i]], pack(PAIR, order[i], c[order[i]])
  end
  local ci = order[#order]
  return tot + c[ci], ci, c[ci], table.concat(parts)
end

-- opening returns when a refused window admits weight: when enough of its
-- oldest buckets have left, the reserve res counting until it ends (rend),
-- as acquire.lua's opening does.
local function opening(tot, ci, cn, body, period, width, limit, res, rend, weight)
  local c, order = counts(ci, cn, body)
  for _, idx in ipairs(order) do
    local leaves = (idx + 1) * width + period
    if res > 0 and leaves > rend then
      if tot + weight <= limit then return rend end
      res = 0
    end
    tot = tot - c[idx]
    if tot + res + weight <= limit then return leaves end
  end
  local last = (floor(now / width) + 1) * width + period -- at the latest, when all have left
  if res > 0 then return max(rend, last) end
  return last
end

-- generations returns the generation HASHes a run reads, newest (the
-- current one) first, for states that must live ttl (ms) after their last
-- write; nil when KEYS does not hold them all (the process's estimate of
-- the server's clock was off by a generation).
local function generations(ttl)
  local cur = floor(now / gen)
  local newest, oldest = cur - first_gen + 3, cur - math.ceil(ttl / gen) - first_gen + 3
  if oldest < 3 or newest > #KEYS then return nil end
  local keys = {}
  for i = newest, oldest, -1 do
    keys[#keys + 1] = KEYS[i]
  end
  return keys
end

-- read returns the states (false: none) of the n members ARGV[from..],
-- each from the newest of the generation HASHes keys that holds it.
local function read(keys, from, n)
  local out, missing = {}, {}
  for m = 1, n do
    missing[m] = m
  end
  for _, key in ipairs(keys) do
    local still = {}
    for first = 1, #missing, 4000 do
      local names = {}
      for i = first, min(#missing, first + 3999) do
        names[#names + 1] = ARGV[from + missing[i] - 1]
      end
      local vals = redis.call('HMGET', key, unpack(names))
      for i, v in ipairs(vals) do
        local m = missing[first + i - 1]
        out[m] = v
        if not v then still[#still + 1] = m end
      end
    end
    missing = still
    if #missing == 0 then break end
  end
  return out
end

-- write sets the states vals of the n members ARGV[from..] (nil: left as
-- they are) in the current generation HASH key, which lives until
-- expire_at (unix ms) at least.
local function write(key, from, n, vals, expire_at)
  local args = {}
  for m = 1, n do
    if vals[m] then
      args[#args + 1] = ARGV[from + m - 1]
      args[#args + 1] = vals[m]
    end
  end
  if #args == 0 then return end
  for first = 1, #args, 4000 do
    redis.call('HSET', key, unpack(args, first, min(#args, first + 3999)))
  end
  local left = redis.call('PTTL', key) -- -1: no expiry yet (a new HASH)
  if left < 0 or now + left < expire_at then
    redis.call('PEXPIREAT', key, expire_at)
  end
end

-- take: count weight on every window of every member, or, if one has no
-- room, on none.
--
-- ARGV[4]   id: a new epoch's id, if this run makes it
-- ARGV[5]   known_epoch: the epoch the process knows ('': none)
-- ARGV[6]   weight: the units counted in every window of every member
-- ARGV[7]   ref, ARGV[8] max_age: a time the server answered the process
--           (unix ms; 0: none yet), and how long after it (ms) the process
--           gives up on this request (see acquire.lua)
-- ARGV[9]   nw: the number of windows
-- then      per window: limit, period (ms); then the members
--
-- Answers keys and values: reason ('' granted, 'rate', 'reserve',
-- 'cooldown', 'lost', 'stale' also when KEYS lacks a generation), now, at (when the refusal ends, unix ms; 0:
-- unknown), epoch (the epoch when the process did not know it, else ''),
-- refused (the members without room, by their place from 1), fills (per
-- member, per window in ARGV's order, what it counted and, granted, took;
-- none for 'lost', 'stale' and 'cooldown').
local function take()
  local id, known_epoch, weight = ARGV[4], ARGV[5], tonumber(ARGV[6])
  local ref, max_age, nw = tonumber(ARGV[7]), tonumber(ARGV[8]), tonumber(ARGV[9])
  local from = 10 + 2 * nw -- the first member
  local ws, periods, etl = {}, {}, 1000
  for a = 10, from - 1, 2 do
    local limit, period = tonumber(ARGV[a]), tonumber(ARGV[a + 1])
    local width = floor(period / buckets)
    ws[#ws + 1] = {limit = limit, period = period, width = width,
      lo = now >= period and floor((now - period) / width) or -1, cur = floor(now / width)}
    periods[period] = true
    etl = max(etl, period + 2 * width + 1000)
  end
  local tell, refused, fills = '', {}, {}
  local function answer(reason, at)
    return {'reason', reason, 'now', now, 'at', at or 0, 'epoch', tell, 'refused', refused, 'fills', fills}
  end
  local gens = generations(etl)
  if not gens or ref > 0 and now > ref + max_age then
    return answer('stale')
  end
  local ep = redis.call('GET', KEYS[1])
  if not ep then
    ep = now .. ':' .. id
    redis.call('SET', KEYS[1], ep, 'PX', etl)
  end
  if ep ~= known_epoch then
    tell = ep
    if known_epoch ~= '' then
      return answer('lost')
    end
  end
  local cd = tonumber(redis.call('GET', KEYS[2]) or '0')
  if cd > now then
    return answer('cooldown', cd)
  end

  -- Read every member, and make its new state as if all were granted. The
  -- sections are read in place while they come in ws's order, as a take
  -- writes them; section and others find them in any other.
  local vals, nf, worst, by_reserve, other_ttl = read(gens, from, #ARGV - from + 1), 0, 0, true, 0
  local parts = {} -- the new state's pieces
  for m = 1, #vals do
    local v = vals[m] or ''
    local pos, len, np, inorder = 1, #v, 0, true
    for j = 1, nw do
      local win = ws[j]
      local period, width, limit = win.period, win.width, win.limit
      local tot, ci, cn, body, b, r, u, s, sa, p, nb, nr, at = 0, -1, 0, ''
      if inorder and pos <= len then
        p, tot, ci, cn, nb, nr, at = unpack_at(HEAD, v, pos)
        inorder = p == period
      end
      if not inorder then
        tot, ci, cn, body, b, r, u, s, sa = section(v, period)
      elseif pos <= len then
        if nr > 0 then b, r, u, s, sa, at = unpack_at(RESERVE, v, at) end
        pos = at + 16 * nb
        if nb > 0 then body = string.sub(v, at, pos - 1) end
      end
      if ci < win.lo then
        tot, cn, body = 0, 0, ''
      elseif body ~= '' then
        tot, ci, cn, body = slide(tot, ci, cn, body, win.lo)
      end
      local res, rend = 0, nil -- the reserve in force, and its end
      if b and now < b + period + width then
        rend, res = b + period + width, max(0, limit - r)
        if u >= 0 then res = min(res, u) end
      else
        b = nil -- none, or over: forgotten
      end
      nf = nf + 1
      fills[nf] = tot + res
      if tot + res + weight > limit then
        if refused[#refused] ~= m then refused[#refused + 1] = m end
        by_reserve = by_reserve and tot + weight <= limit
        worst = max(worst, opening(tot, ci, cn, body, period, width, limit, res, rend, weight))
      elseif #refused == 0 then
        if ci >= win.cur then -- the latest bucket (or a later one, if the clock went back)
          cn = cn + weight
        else
          if cn > 0 then body = body .. pack(PAIR, ci, cn) end
          ci, cn = win.cur, weight
        end
        if b then
          parts[np + 1] = pack(HEAD .. 'ddddd', period, tot + weight, ci, cn, #body / 16, 5, b, r, u, s, sa)
        else
          parts[np + 1] = pack(HEAD, period, tot + weight, ci, cn, #body / 16, 0)
        end
        parts[np + 2], np = body, np + 2
      end
    end
    if #refused == 0 then
      if not inorder or pos <= len then -- sections of other windows besides
        local rest, ttl = others(v, periods)
        parts[np + 1], np, other_ttl = rest, np + 1, max(other_ttl, ttl)
      end
      vals[m] = table.concat(parts, '', 1, np)
    end
  end
  if #refused > 0 then
    return answer(by_reserve and 'reserve' or 'rate', worst)
  end
  write(gens[1], from, #vals, vals, (floor(now / gen) + 1) * gen + max(etl, other_ttl))
  for f = 1, nf do
    fills[f] = fills[f] + weight
  end
  redis.call('PEXPIRE', KEYS[1], etl)
  return answer('')
end

-- refund: give back a grant whose caller left, on every member.
--
-- ARGV[4]   granted: the grant's time (unix ms, the server's answer)
-- ARGV[5]   units: what it counted in every window of every member
-- ARGV[6]   nw: the number of windows
-- then      per window: period (ms); then the members
--
-- Answers refunded: the units given back, over all members and windows
-- (nothing when KEYS lacks a generation: the grant then counts until its
-- windows slide past it).
local function refund()
  local granted, units, nw = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
  local from = 7 + nw -- the first member
  local periods, given, ttl = {}, 0, 1000
  for a = 7, from - 1 do
    local period = tonumber(ARGV[a])
    periods[period], ttl = true, max(ttl, period + 2 * floor(period / buckets) + 1000)
  end
  local gens = generations(ttl)
  if not gens then return {'refunded', 0} end
  local vals, out = read(gens, from, #ARGV - from + 1), {}
  for m = 1, #vals do
    local v, new, was = vals[m], '', given
    for a = 7, from - 1 do
      local period = tonumber(ARGV[a])
      local tot, ci, cn, body, b, r, u, s, sa = section(v, period)
      local c = counts(ci, cn, body)
      local idx = floor(granted / floor(period / buckets))
      local n = min(units, c[idx] or 0)
      if n > 0 then
        c[idx], given = c[idx] - n, given + n
        tot, ci, cn, body = rebuild(c, ci)
      end
      new = new .. packed(period, tot, ci, cn, body, b, r, u, s, sa)
    end
    if given > was then
      local rest, rttl = others(v, periods)
      out[m], ttl = new .. rest, max(ttl, rttl)
    end
  end
  write(gens[1], from, #vals, out, (floor(now / gen) + 1) * gen + ttl)
  return {'refunded', given}
end

-- restore: write back one member's grants that a process knew, after Redis
-- lost the state (restore.lua says how, for a key's window HASHes).
--
-- ARGV[4]   member
-- ARGV[5]   known_epoch: the epoch the process knew
-- ARGV[6]   id: a new epoch's id, if this run makes it
-- ARGV[7]   cooldown: the end of the request key's cooldown the process
--           knows (unix ms; 0: none)
-- ARGV[8..] per window: period (ms), limit, the fill last seen and when
--           (unix ms; 0: never), n, then n pairs of bucket index and the
--           process's grants in it
--
-- Answers epoch: the epoch in force. Nothing is written when it is the one
-- known: nothing was lost, or this process wrote back already. An error
-- when KEYS lacks a generation.
local function restore()
  local known_epoch, id, cooldown = ARGV[5], ARGV[6], tonumber(ARGV[7]) -- the member is ARGV[4]
  local ep = redis.call('GET', KEYS[1])
  if ep == known_epoch then
    return {'epoch', ep}
  end
  local made = not ep
  ep = ep or (now .. ':' .. id)
  local born = tonumber(string.match(ep, '^(%d+)'))
  if cooldown > now and cooldown > tonumber(redis.call('GET', KEYS[2]) or '0') then
    redis.call('SET', KEYS[2], cooldown, 'PXAT', cooldown)
  end
  local etl, a = 0, 8
  while a <= #ARGV do -- the longest window first: which generations to read
    local period, n = tonumber(ARGV[a]), tonumber(ARGV[a + 4])
    etl, a = max(etl, period + 2 * floor(period / buckets) + 1000), a + 5 + 2 * n
  end
  local gens = generations(etl)
  if not gens then
    return redis.error_reply('members: no generation HASH for the server\'s clock ' .. now)
  end
  local v = read(gens, 4, 1)[1] -- member's
  local new, periods
  new, periods, a = '', {}, 8
  while a <= #ARGV do
    local period, limit, seen, seen_at, n = tonumber(ARGV[a]), tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2]),
      tonumber(ARGV[a + 3]), tonumber(ARGV[a + 4])
    a = a + 5
    local width = floor(period / buckets)
    local tot, ci, cn, body, b, r, u, s, sa = section(v, period)
    periods[period] = true
    if now < born + period + width then
      local lo = now >= period and floor((now - period) / width) or -1 -- the oldest bucket counted now
      local blo = born >= period and floor((born - period) / width) or -1 -- and at the birth
      local bidx = floor(born / width)
      tot, ci, cn, body = slide(tot, ci, cn, body, lo)
      local c, known = counts(ci, cn, body), 0
      for _ = 1, n do
        local idx, k = tonumber(ARGV[a]), tonumber(ARGV[a + 1])
        a = a + 2
        if idx <= bidx then -- taken before the birth: lost
          if idx >= lo then c[idx] = (c[idx] or 0) + k end
          if idx >= blo then known = known + k end
        end
      end
      tot, ci, cn, body = rebuild(c, ci)
      if b == born then
        r = r + known
      else -- another epoch's reserve, if any, goes
        b, r, u, s, sa = born, known, -1, 0, 0
      end
      -- the latest fill seen within the window, this process's or another's
      if seen_at > 0 and seen_at <= born and seen_at + period + width > born and seen_at > sa then
        s, sa = seen, seen_at
      end
      if sa > 0 then -- u from the latest fill s, seen at sa
        local before = 0 -- the buckets before sa that counted then, and now: their grants are in s
        for idx = max(lo, floor((sa - period) / width)), floor(sa / width) - 1 do
          before = before + (c[idx] or 0)
        end
        u = max(0, s - before) + math.ceil(limit * max(0, born - sa) / period)
      end
    else
      a = a + 2 * n
    end
    new = new .. packed(period, tot, ci, cn, body, b, r, u, s, sa)
  end
  local rest, ttl = others(v, periods)
  if new .. rest ~= '' then
    write(gens[1], 4, 1, {new .. rest}, (floor(now / gen) + 1) * gen + max(etl, ttl))
  end
  if made or etl > 0 then -- a SET of the epoch in force renews its expiry
    redis.call('SET', KEYS[1], ep, 'PX', max(etl, 1000))
  end
  return {'epoch', ep}
end

if op == 'take' then
  return take()
elseif op == 'refund' then
  return refund()
elseif op == 'restore' then
  return restore()
end
return redis.error_reply('members: unknown op ' .. tostring(op))
