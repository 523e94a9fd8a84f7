-- grant: the grants across processes of the acquire script, prepended to it
-- after window.lua: what a queued process waits with (its record), and the
-- yield of a hand-over's slot to the process that has waited longest, with
-- the With slots its record names when they are free. They read now from
-- the prelude; the rest comes as arguments.
--
-- Records: a HASH beside the waiting ZSET, process id -> record, expiring
-- like it. The acquire script writes a process's record whenever it queues
-- the process (a refusal for want of a slot, a yield, a grant with more
-- waiters): the With slots of the waiter of that process that waits next,
-- as the Go side encodes them: length-prefixed fields ("<bytes>:<field>"),
-- five per slot: its holders ZSET, its cooldown STRING, its concurrency,
-- its lease TTL (ms) and its throttle key. An empty record (a waiter
-- without With slots) deletes the field; so does a grant or a wake-up that
-- takes the process off the waiting ZSET here (the release and pass
-- scripts, which pop it too, leave its record until it queues again, and
-- a record beside no queued process is dropped when another is written).
-- A record can be stale (its waiter left, or was served meanwhile): the
-- granted process then releases the With leases no waiter of its can use,
-- so a stale record costs a lock held for a round trip, never a lock
-- leaked, and a busy slot only a grant without locks, as before records.
--
-- The With slots a record names are not in the script's KEYS (the granting
-- process cannot know them). They share the throttle key's hash tag, so
-- they are in the slot of the declared keys: that works on a single node
-- and on Redis Cluster, which lets a script touch undeclared keys of the
-- slot its declared ones are in. Slots of another hash tag are not
-- recorded, and a record naming one is ignored (tag below), so that a
-- script never fails halfway on a Cluster. (Yet on a Cluster nothing here
-- runs: there PUBLISH counts only the listeners on the script's node, so
-- that a grant could reach a process the script took for gone; a hand-over
-- wakes the process it yields to instead, see ARGV grants in acquire.lua.)

-- tag returns the hash tag of Redis key k as Redis Cluster reads it: what
-- the first '{' and the next '}' enclose, if not empty; else the whole key.
local function tag(k)
  local i = string.find(k, '{', 1, true)
  local j = i and string.find(k, '}', i + 1, true)
  if j and j > i + 1 then
    return string.sub(k, i + 1, j - 1)
  end
  return k
end

-- record_fields returns the fields of record s, a multiple of five, or nil
-- if s is malformed.
local function record_fields(s)
  local f, pos = {}, 1
  while pos <= #s do
    local colon = string.find(s, ':', pos, true)
    local n = colon and tonumber(string.sub(s, pos, colon - 1))
    if not n or n < 0 or n ~= math.floor(n) or colon + n > #s then
      return nil
    end
    f[#f + 1] = string.sub(s, colon + 1, colon + n)
    pos = colon + n + 1
  end
  if #f == 0 or #f % 5 ~= 0 then
    return nil
  end
  return f
end

-- recorded returns the With slots of process p's record in records, each
-- {holders, cooldown, concurrency, TTL, throttle key}, if every one is in
-- the hash tag of holders (a declared key) and free now: not cooling down,
-- with fewer live leases than its concurrency (as with_busy checks the
-- request's own). Nil if there is no record, or one slot is not free.
local function recorded(records, p, holders)
  local s = redis.call('HGET', records, p)
  local f = s and record_fields(s)
  if not f then
    return nil
  end
  local slots, t = {}, tag(holders)
  for i = 1, #f, 5 do
    local h, c, conc, ttl = f[i], f[i + 1], tonumber(f[i + 2]), tonumber(f[i + 3])
    if tag(h) ~= t or tag(c) ~= t or not conc or conc < 1 or not ttl or ttl < 1 or f[i + 4] == '' then
      return nil
    end
    if tonumber(redis.call('GET', c) or '0') > now or redis.call('ZCOUNT', h, '(' .. now, '+inf') >= conc then
      return nil
    end
    slots[#slots + 1] = {h, conc, ttl, f[i + 4]}
  end
  return slots
end

-- set_record writes process p's record rec in records ('' : deletes it),
-- p being queued on waiting; a new field drops those of processes no
-- longer queued when they outnumber the queued ones.
local function set_record(records, waiting, p, rec, ttl)
  if rec == '' then
    redis.call('HDEL', records, p)
    return
  end
  if redis.call('HSET', records, p, rec) == 1 and redis.call('HLEN', records) > redis.call('ZCARD', waiting) + 8 then
    for _, q in ipairs(redis.call('HKEYS', records)) do
      if not redis.call('ZSCORE', waiting, q) then
        redis.call('HDEL', records, q)
      end
    end
  end
  redis.call('PEXPIRE', records, ttl + 10000)
end

-- with_lines returns the lines a grant message ends with when it carries
-- slots, taken for lease id: 'w', then per slot its throttle key, its
-- lease id (id .. '.' .. i), its concurrency and its TTL (ms).
local function with_lines(slots, id)
  local l = {'w'}
  for i, s in ipairs(slots) do
    l[#l + 1] = table.concat({s[4], id .. '.' .. i, s[2], s[3]}, '\n')
  end
  return table.concat(l, '\n')
end

-- yield_to grants the slot a hand-over frees to the process that has
-- waited longest on waiting, other than proc, in this round trip: it
-- publishes msg on that process's channel (wake_prefix .. its id), with the
-- lines of the With slots its record names when every one is free; if a
-- listener got it, it takes the slot (take_slot) and those With slots for
-- lease id, and queues the process again, at the back, without a record. A
-- process that no longer listens is dropped from the queue, and the next
-- tried. Returns whether it granted the slot.
local function yield_to(waiting, records, holders, proc, msg, wake_prefix, id, take_slot)
  while true do
    local first = redis.call('ZRANGE', waiting, 0, 0)
    if #first == 0 or first[1] == proc then
      return false
    end
    local p = first[1]
    local slots = recorded(records, p, holders)
    redis.call('ZREM', waiting, p)
    redis.call('HDEL', records, p)
    local m = msg
    if slots then
      m = msg .. '\n' .. with_lines(slots, id)
    end
    if redis.call('PUBLISH', wake_prefix .. p, m) > 0 then
      take_slot()
      for i, s in ipairs(slots or {}) do
        local exp = now + s[3]
        redis.call('ZADD', s[1], exp, id .. '.' .. i)
        local last = tonumber(redis.call('ZRANGE', s[1], -1, -1, 'WITHSCORES')[2])
        redis.call('PEXPIREAT', s[1], math.max(exp, last) + 1000)
      end
      redis.call('ZADD', waiting, now, p)
      return true
    end
  end
end
