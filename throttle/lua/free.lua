-- free: the start of the release script, after the prelude: it releases
-- a batch of leases (the releases sent later) or a lease's With leases.
--
-- free(holders, waiting, id, wake_prefix, key) gives back lease id's slot in
-- the holders ZSET and, if it held one, wakes the process that has waited
-- longest on the waiting ZSET (publishing key on wake_prefix .. its id).
-- Returns 1 if the lease still held its slot, 0 if it had expired or was
-- unknown.
local function free(holders, waiting, id, wake_prefix, key)
  local score = redis.call('ZSCORE', holders, id)
  if not score then
    return 0
  end
  redis.call('ZREM', holders, id)
  local w = redis.call('ZPOPMIN', waiting)
  if #w > 0 then
    redis.call('PUBLISH', wake_prefix .. w[1], key)
  end
  if tonumber(score) <= now then
    return 0
  end
  return 1
end
