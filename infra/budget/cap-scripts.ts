/**
 * The cap ledger's Lua scripts. Each touches only the three keys of one session, which share a
 * hash tag ({ses_…}), so each runs atomically on one Redis (or one cluster slot).
 *
 * KEYS[1] state hash: caps cc kc tc (-1: no cap), spent cs ks ts, reserved cr kr tr, exp (ms)
 * KEYS[2] reservations hash: invocation id -> "cost:calls:tokens:confirmed"
 * KEYS[3] settled set: invocation ids already settled (a second settle is a no-op)
 *
 * Amounts travel as decimal strings and are added with HINCRBY, so no total ever passes through
 * a Lua float; comparisons use tonumber, exact below 2^53 (a billion dollars in micro-dollars).
 */

const FIELDS = `local f = redis.call('HMGET', KEYS[1], 'cc', 'kc', 'tc', 'cs', 'ks', 'ts', 'cr', 'kr', 'tr', 'exp')`;

/**
 * Takes a held amount (a decimal string) off a reserved total. Redis refuses "-0" as an integer
 * (QA: a model priced at 0 held 0 micro-dollars, and every settle of it failed, leaving its
 * tokens and call reserved), so nothing is taken off for 0.
 */
const RELEASE = `
local function release(field, amount)
  if tonumber(amount) ~= 0 then redis.call('HINCRBY', KEYS[1], field, '-' .. amount) end
end`;

const OVER = `
local names = {'cost', 'calls', 'tokens'}
local function over(f, extra)
  for i = 1, 3 do
    local cap = tonumber(f[i])
    local used = tonumber(f[i + 3]) + tonumber(f[i + 6])
    if cap >= 0 and used + extra[i] > cap then
      local remaining = cap - used
      if remaining < 0 then remaining = 0 end
      return {'refused', names[i], f[i], tostring(remaining)}
    end
  end
  return nil
end`;

/**
 * ARGV: charge id, cost, calls, tokens. Returns {outcome, cap?, limit?, remaining?}: `reserved`,
 * `refused`, `missing` (no state), `settled` (already), or `held` (reserved before and not settled).
 */
export const RESERVE = `
${FIELDS}
${RELEASE}
if not f[1] then return {'missing'} end
if redis.call('SISMEMBER', KEYS[3], ARGV[1]) == 1 then return {'settled'} end
${OVER}
local existing = redis.call('HGET', KEYS[2], ARGV[1])
if existing then
  local c, k, t, confirmed = string.match(existing, '^(%d+):(%d+):(%d+):(%d)$')
  -- Taken by an earlier run that never settled it: that run may have called the provider.
  if confirmed == '1' then return {'held'} end
  -- Rebuilt from PostgreSQL and already counted as held: confirm it only while all that is held
  -- fits. Judged as a new reservation of the same amounts next to the others, so a refusal says
  -- what remains for it, not what remains once it is counted too.
  local others = {f[1], f[2], f[3], f[4], f[5], f[6], f[7] - c, f[8] - k, f[9] - t}
  local refused = over(others, {tonumber(c), tonumber(k), tonumber(t)})
  if not refused then
    redis.call('HSET', KEYS[2], ARGV[1], c .. ':' .. k .. ':' .. t .. ':1')
    return {'reserved'}
  end
  redis.call('HDEL', KEYS[2], ARGV[1])
  release('cr', c)
  release('kr', k)
  release('tr', t)
  return refused
end
local refused = over(f, {tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])})
if refused then return refused end
redis.call('HINCRBY', KEYS[1], 'cr', ARGV[2])
redis.call('HINCRBY', KEYS[1], 'kr', ARGV[3])
redis.call('HINCRBY', KEYS[1], 'tr', ARGV[4])
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2] .. ':' .. ARGV[3] .. ':' .. ARGV[4] .. ':1')
redis.call('PEXPIREAT', KEYS[2], f[10])
return {'reserved'}`;

/** ARGV: invocation id, cost, calls, tokens charged. Never charges above the reservation. */
export const SETTLE = `
${RELEASE}
local exp = redis.call('HGET', KEYS[1], 'exp')
if not exp then return 'missing' end
if redis.call('SISMEMBER', KEYS[3], ARGV[1]) == 1 then return 'already_settled' end
local existing = redis.call('HGET', KEYS[2], ARGV[1])
if not existing then return 'not_reserved' end
local held = {string.match(existing, '^(%d+):(%d+):(%d+):')}
local spent = {'cs', 'ks', 'ts'}
local reserved = {'cr', 'kr', 'tr'}
for i = 1, 3 do
  local charge = ARGV[i + 1]
  if tonumber(charge) > tonumber(held[i]) then charge = held[i] end
  redis.call('HINCRBY', KEYS[1], spent[i], charge)
  release(reserved[i], held[i])
end
redis.call('HDEL', KEYS[2], ARGV[1])
redis.call('SADD', KEYS[3], ARGV[1])
redis.call('PEXPIREAT', KEYS[3], exp)
return 'settled'`;

/**
 * ARGV: exp, caps (cost calls tokens), spent (cost calls tokens), then one quadruple per in-flight
 * invocation (id, cost, calls, tokens), each held as an unconfirmed reservation. Writes only when
 * the session has no state: concurrent rebuilds agree, and a live state is never replaced.
 */
export const RESTORE = `
if redis.call('HEXISTS', KEYS[1], 'cc') == 1 then return 0 end
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3])
redis.call('HSET', KEYS[1], 'exp', ARGV[1], 'cc', ARGV[2], 'kc', ARGV[3], 'tc', ARGV[4],
  'cs', ARGV[5], 'ks', ARGV[6], 'ts', ARGV[7], 'cr', '0', 'kr', '0', 'tr', '0')
for i = 8, #ARGV, 4 do
  redis.call('HSET', KEYS[2], ARGV[i], ARGV[i + 1] .. ':' .. ARGV[i + 2] .. ':' .. ARGV[i + 3] .. ':0')
  redis.call('HINCRBY', KEYS[1], 'cr', ARGV[i + 1])
  redis.call('HINCRBY', KEYS[1], 'kr', ARGV[i + 2])
  redis.call('HINCRBY', KEYS[1], 'tr', ARGV[i + 3])
end
redis.call('PEXPIREAT', KEYS[1], ARGV[1])
if #ARGV > 7 then redis.call('PEXPIREAT', KEYS[2], ARGV[1]) end
return 1`;
