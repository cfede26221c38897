-- sliding.lua: ratekv's SL.THROTTLE (the exact sliding log) as a Redis Lua
-- script over a sorted set, so a stock redis-server can run the same
-- workload.
--
--   EVALSHA <sha> 1 <key> <max> <window_ms>
--   -> {limited, max, remaining, retry_after_ms, reset_after_ms}
--
-- One call, atomically: ZREMRANGEBYSCORE key -inf (now - window) drops the
-- entries that left the window (an entry exactly window old is gone, as in
-- SL.THROTTLE), ZCARD counts the rest, ZADD records the call at now when
-- count + 1 <= max, and PEXPIREAT sets the key to expire when its newest
-- entry leaves the window. Scores are microsecond timestamps from TIME
-- (about 1.8e15, exact in a double below 2^53); members are the timestamp
-- plus a random suffix, so two calls in the same microsecond both count.
--
-- Replies as SL.THROTTLE key max window_ms (command/window.go):
--   limited         1 when the call was refused (nothing recorded), else 0
--   max             as given
--   remaining       max - entries now in the window (>= 0)
--   retry_after_ms  -1 when allowed; else until the oldest entry that must
--                   go has left the window, rounded up to the millisecond
--   reset_after_ms  until the newest entry leaves the window (the log is
--                   empty), rounded up to the millisecond
-- and the same argument errors: max an integer in [1, 2^53], window_ms in
-- [1, 2^40] (Redis's integer syntax: no '+', no leading zeros), anything
-- after window_ms a syntax error. SL.THROTTLE's options (MINGAP, QUANTITY,
-- RECORDBLOCKED) are not implemented: every call records one entry.

if #KEYS ~= 1 or #ARGV < 2 then
  return redis.error_reply("ERR wrong number of arguments for 'sl.throttle' command")
end

-- An integer in [lo, hi] written as Redis writes integers; hi <= 2^53.
local function int_arg(s, name, lo, hi)
  local ok = s == '0' or string.find(s, '^-?[1-9][0-9]*$') ~= nil
  local digits = string.gsub(s, '^-', '')
  -- 16 digits may exceed 2^53 = 9007199254740992, where doubles round:
  -- compare those as strings.
  if ok and (#digits > 16 or (#digits == 16 and digits > '9007199254740992')) then
    ok = false
  end
  local n = ok and tonumber(s) or nil
  if n == nil or n < lo or n > hi then
    return nil, redis.error_reply(string.format('ERR %s must be an integer between %d and %d', name, lo, hi))
  end
  return n
end

local max, err = int_arg(ARGV[1], 'max', 1, 9007199254740992)
if not max then
  return err
end
local window_ms
window_ms, err = int_arg(ARGV[2], 'window_ms', 1, 1099511627776)
if not window_ms then
  return err
end
if #ARGV > 2 then
  return redis.error_reply('ERR syntax error')
end

local key = KEYS[1]
local t = redis.call('TIME')
local now_str = t[1] .. string.format('%06d', tonumber(t[2]))
local now = tonumber(now_str) -- microseconds, exact (< 2^53)
local window = window_ms * 1000

-- ceil(us / 1000) for us >= 0
local function ceil_ms(us)
  local r = math.fmod(us, 1000)
  if r == 0 then
    return (us - r) / 1000
  end
  return (us - r) / 1000 + 1
end

redis.call('ZREMRANGEBYSCORE', key, '-inf', string.format('%d', now - window))
local count = redis.call('ZCARD', key)
local limited = count + 1 > max
local newest
if not limited then
  redis.call('ZADD', key, now_str, now_str .. '-' .. string.format('%08x', math.random(0, 2147483646)))
  count = count + 1
  newest = now
elseif count > 0 then
  newest = tonumber(redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')[2])
end

local retry = -1
if limited then
  -- The call passes once the (count + 1 - max)-th oldest entry is gone.
  local k = count + 1 - max
  local oldest = tonumber(redis.call('ZRANGE', key, k - 1, k - 1, 'WITHSCORES')[2])
  retry = ceil_ms(math.max(oldest + window - now, 0))
end

local reset = 0
if count > 0 then
  reset = ceil_ms(newest + window - now)
  redis.call('PEXPIREAT', key, string.format('%d', ceil_ms(newest + window)))
end

return { limited and 1 or 0, max, math.max(max - count, 0), retry, reset }
