-- lock: a key with one slot and no window (a lock, see isLock) is held as a
-- STRING, its holder's lease id, which starts with lock_mark, expiring with
-- the lease: one plain SET NX PX takes it, without a script. A cooldown on
-- the key keeps it taken, by its holder or empty, until the cooldown ends
-- (cooldown.lua, unlock), so that a plain SET cannot take it meanwhile.
-- lock_mark comes before this (clockSource).

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
