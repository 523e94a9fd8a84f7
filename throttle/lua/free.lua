-- free, the start of the release script after the prelude:
-- free(holders, waiting, id, wake_prefix, key, refunded) gives back lease
-- id's slot in the holders ZSET and, if it held one or its window counts
-- were refunded, wakes the process that has waited longest on the waiting
-- ZSET (publishing key on wake_prefix .. its id). Returns 1 if the lease
-- still held its slot, 0 if it had expired or was unknown.
local function free(holders, waiting, id, wake_prefix, key, refunded)
  local score = redis.call('ZSCORE', holders, id)
  if score then
    redis.call('ZREM', holders, id)
  end
  if score or refunded then
    local w = redis.call('ZPOPMIN', waiting)
    if #w > 0 then
      redis.call('PUBLISH', wake_prefix .. w[1], key)
    end
  end
  if not score or tonumber(score) <= now then
    return 0
  end
  return 1
end
