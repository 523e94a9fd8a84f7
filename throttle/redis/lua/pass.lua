-- pass: a process woken for a key it no longer waits on passes the wake-up
-- to the process that has waited longest on KEYS[1] (ZSET process id ->
-- arrival), publishing ARGV[2], the throttle key, on ARGV[1] .. its id, so
-- that a freed slot is never left idle. Returns 1 if a process was woken.
local waiting_key = KEYS[1]
local wake_prefix, throttle_key = ARGV[1], ARGV[2]
local w = redis.call('ZPOPMIN', waiting_key)
if #w == 0 then
  return 0
end
redis.call('PUBLISH', wake_prefix .. w[1], throttle_key)
return 1
