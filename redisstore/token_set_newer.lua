-- token_set_newer: store a token unless the one stored expires as late or
-- later, so that an older token never replaces a newer one.
--
-- KEYS[1]  the token's key
-- ARGV[1]  the token's stored form, {"v": value, "e": expiry in Unix ms}
-- ARGV[2]  its expiry, in Unix ms
-- ARGV[3]  its time to live, in ms
--
-- Returns 1 when it stored the token, 0 when a newer one stays.
local key = KEYS[1]
local entry, expires, ttl = ARGV[1], tonumber(ARGV[2]), ARGV[3]

local raw = redis.call('GET', key)
if raw then
  local ok, cur = pcall(cjson.decode, raw)
  if ok and type(cur) == 'table' and tonumber(cur.e) and tonumber(cur.e) >= expires then
    return 0
  end
end
redis.call('SET', key, entry, 'PX', ttl)
return 1
