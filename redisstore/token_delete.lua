-- Compare-and-delete of a stored access token: removes the entry only while
-- it still holds the token that WeCom refused, so that a newer token stored
-- meanwhile by another process survives.
--
-- KEYS[1]  the token entry: prefix .. "wecom:token:{corp}:" .. app hash,
--          a JSON string {"v": token, "e": expiry in Unix ms}
-- ARGV[1]  the token value to delete
--
-- Returns 1 when the entry was deleted, 0 when it was missing, not an entry
-- of ours, or held another token.
local raw = redis.call('GET', KEYS[1])
if not raw then
  return 0
end
local ok, entry = pcall(cjson.decode, raw)
if not ok or type(entry) ~= 'table' or entry.v ~= ARGV[1] then
  return 0
end
redis.call('DEL', KEYS[1])
return 1
