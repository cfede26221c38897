-- gcra.lua: CL.THROTTLE (redis-cell >= 0.4.0) as a Redis Lua script.
--
--   EVALSHA <sha> 1 <key> <max_burst> <count per period> <period> [<quantity>]
--   -> {limited, limit, remaining, retry_after_s, reset_after_s}
--
-- Mirrors /work/shared/spec/cl-throttle.md sections 2-5: the same argument
-- checks and error texts, the GCRA arithmetic in nanoseconds, the storage
-- format (a plain string holding the TAT as decimal nanoseconds since the
-- Unix epoch, written only on allowed calls, with PEXPIRE trunc_ms(ttl)) and
-- the reply rounding (ceil at millisecond granularity).
--
-- Precision. Lua 5.1 numbers are doubles: integers are exact only below 2^53
-- (~9.007e15), but a nanosecond timestamp is ~1.8e18. So absolute times are
-- never held in one number. "now" comes from TIME as (seconds, microseconds)
-- and every time in the algorithm is kept relative to now, in nanoseconds:
-- tat - now, new_tat - now, ttl, dvt, ... These differences are exact while
-- they stay below 2^53 ns (~104 days), which covers every sane limit. The
-- stored TAT is split into its decimal seconds part (all digits but the last
-- nine) and nanoseconds part (the last nine digits) to subtract now, and
-- written back the same way with string.format('%d%09d', s, ns), so GET
-- shows exactly what redis-cell would store. Integer division and
-- truncation use math.fmod, which is exact, instead of x / y rounding.
--
-- Known differences from redis-cell, all outside sane inputs (non-negative
-- burst and quantity, positive count and period, intervals < 104 days):
--   * redis-cell reads the wall clock in ns; TIME has us resolution, so now
--     is a whole microsecond.
--   * redis-cell wraps i64 arithmetic or crashes the server on overflow; the
--     script computes with doubles and does not.
--   * when the emission interval is below 1 us redis-cell's remaining is
--     i64::MAX (float division by zero, saturated); the script returns
--     9223372036854774784, the largest double below 2^63.
--   * a stored value that is not a decimal u64 crashes redis-cell >= 0.4;
--     the script replies with redis-cell 0.3's error text instead.

local USAGE = 'Cell error: Store error: Usage: cl.throttle <key> <max_burst> <count per period> <period> [<quantity>]'

if #KEYS ~= 1 or (#ARGV ~= 3 and #ARGV ~= 4) then
  return redis.error_reply(USAGE)
end

-- i64::from_str: optional '+' or '-', then one or more ASCII digits, within
-- [-2^63, 2^63-1]. The range check compares digit strings, so it is exact
-- even where doubles are not.
local function parse_i64(s)
  if not string.find(s, '^[+-]?[0-9]+$') then
    return nil
  end
  local neg = string.sub(s, 1, 1) == '-'
  local digits = string.gsub(s, '^[+-]?0*', '')
  if #digits > 19 then
    return nil
  end
  if #digits == 19 then
    local max = neg and '9223372036854775808' or '9223372036854775807'
    if digits > max then
      return nil
    end
  end
  return tonumber(s)
end

local args = {}
for i = 1, 4 do
  local s = ARGV[i] or '1' -- quantity defaults to 1
  local v = parse_i64(s)
  if v == nil then
    return redis.error_reply('Cell error: Store error: Couldn\'t parse as integer: ' .. s)
  end
  args[i] = v
end
local max_burst, count, period, quantity = args[1], args[2], args[3], args[4]

-- trunc(a / b) toward zero, exact for integer a, b (|a| < 2^53).
local function tdiv(a, b)
  return (a - math.fmod(a, b)) / b
end

local function trunc(x)
  if x >= 0 then return math.floor(x) end
  return math.ceil(x)
end

-- Emission interval: (period*1e9 as f64 / count as f64) as i64.
local ei = 0
local period_ns = period * 1e9
if count ~= 0 and period_ns ~= 0 then
  ei = trunc(period_ns / count)
end
if ei == 0 then
  return redis.error_reply('Cell error: Store error: Zero rates are not supported')
end
local limit = max_burst + 1
local dvt = ei * limit    -- delay variation tolerance
local inc = ei * quantity -- what this call costs

-- now = (now_s seconds, now_ns nanoseconds within that second)
local t = redis.call('TIME')
local now_s = tonumber(t[1])
local now_ns = tonumber(t[2]) * 1000

local key = KEYS[1]
local tat = 0 -- TAT - now, in ns; a missing key means TAT = now
local stored = redis.call('GET', key)
if stored then
  if stored == '' then
    return redis.error_reply('Cell error: cannot parse integer from empty string')
  end
  if not string.find(stored, '^[0-9]+$') then
    return redis.error_reply('Cell error: invalid digit found in string')
  end
  if #stored > 20 or (#stored == 20 and stored > '18446744073709551615') then
    return redis.error_reply('Cell error: number too large to fit in target type')
  end
  local hi, lo = 0, tonumber(stored)
  if #stored > 9 then
    hi = tonumber(string.sub(stored, 1, -10))
    lo = tonumber(string.sub(stored, -9))
  end
  tat = (hi - now_s) * 1e9 + (lo - now_ns)
end

local new_tat = (tat > 0 and tat or 0) + inc -- max(now, tat) + inc
local diff = dvt - new_tat                   -- now - (new_tat - dvt)

local limited, retry_after, ttl
if diff < 0 then
  limited = 1
  if inc <= dvt then
    retry_after = -diff
  else
    retry_after = -1e9 -- can never succeed
  end
  ttl = tat -- a limited call writes nothing and keeps the TTL
else
  limited = 0
  retry_after = -1e9
  ttl = new_tat
  -- absolute new TAT = now_s s + (now_ns + new_tat) ns, as decimal ns
  local total = now_ns + new_tat
  local rem = math.fmod(total, 1e9)
  if rem < 0 then rem = rem + 1e9 end
  local secs = now_s + (total - rem) / 1e9
  local value
  if secs > 0 then
    value = string.format('%d%09d', secs, rem)
  else
    value = string.format('%d', rem) -- not reachable with sane inputs
  end
  local ttl_ms = tdiv(ttl, 1e6)
  if ttl_ms > 0 then
    redis.call('SET', key, value, 'PX', ttl_ms)
  elseif ttl_ms == 0 then
    redis.call('SET', key, value)
    redis.call('PEXPIRE', key, 0) -- expires now: the key is gone
  elseif ttl_ms == -1 then
    redis.call('SET', key, value) -- REDISMODULE_NO_EXPIRE: persistent
  else
    redis.call('SET', key, value) -- written, then the expire fails
    return redis.error_reply('Cell error: Store error: Error while setting key expire')
  end
end

-- remaining: whole microseconds first, then f64 division (redis-cell).
local remaining = 0
local next_ = dvt - ttl
if next_ > -ei then
  local r = tdiv(next_, 1000) / tdiv(ei, 1000)
  if r ~= r then
    remaining = 0 -- NaN saturates to 0
  elseif r >= 9223372036854775807 then
    remaining = 9223372036854774784
  elseif r <= -9223372036854775808 then
    remaining = -9223372036854775808
  else
    remaining = trunc(r)
  end
end

-- seconds, rounded up when at least 1 ms of a second is left
local function secs(d)
  local rem = math.fmod(d, 1e9)
  local s = (d - rem) / 1e9
  if rem >= 1e6 then
    s = s + 1
  end
  return s
end

return {limited, limit, remaining, secs(retry_after), secs(ttl)}
