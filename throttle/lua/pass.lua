-- pass: a process woken for a key it no longer waits on passes the wake-up
-- to the next waiting process, so that a freed slot is never left idle.
--
-- KEYS[1] waiting processes: ZSET process id -> arrival (unix ms)
-- ARGV[1] channel prefix: the woken process listens on prefix .. its id
-- ARGV[2] the throttle key, the message
--
-- Returns 1 if a process was woken.
local w = redis.call('ZPOPMIN', KEYS[1])
if #w == 0 then
  return 0
end
redis.call('PUBLISH', ARGV[1] .. w[1], ARGV[2])
return 1
