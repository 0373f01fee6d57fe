-- Run once on a fresh state, before any script, with the real globals. It builds the sandbox
-- scripts see (a read-only proxy of the globals), the `redis` table's Lua half, Redis's PRNG
-- wrappers and the error handler, and returns what Rust needs to drive a call.
local rust_sha1hex, rust_log, lrand48, srand48, error_value, version, version_num = ...
local debug_getinfo = debug.getinfo
local error, type, tostring, pairs, select = error, type, tostring, pairs, select
local rawget, rawset, setmetatable, getmetatable = rawget, rawset, setmetatable, getmetatable
local setfenv, xpcall, floor = setfenv, xpcall, math.floor
local load, loadstring = load, loadstring
local globals = _G

-- What Redis 7 removes from the base library.
for _, name in pairs({ 'print', 'dofile', 'loadfile', 'setfenv', 'getfenv', 'newproxy', 'module',
    'require', 'package', 'debug', 'os', 'io' }) do
  globals[name] = nil
end

-- Read-only tables: scripts get proxies; writes through them raise Redis's error.
local backing = setmetatable({}, { __mode = 'k' })
local function refuse_write()
  error('Attempt to modify a readonly table', 2)
end
local function readonly(t)
  local proxy = setmetatable({}, { __index = t, __newindex = refuse_write })
  backing[proxy] = t
  return proxy
end

-- The current call's protocol (redis.setresp), read by Rust. redis.call, redis.pcall and
-- redis.setresp are Rust functions set on `redis` around each call: C functions, so a script's
-- `return redis.call(...)` keeps its frame (and its line) for the error message.
local slot = { resp = 2 }

local redis = {}
redis.LOG_DEBUG, redis.LOG_VERBOSE, redis.LOG_NOTICE, redis.LOG_WARNING = 0, 1, 2, 3
redis.REPL_NONE, redis.REPL_AOF, redis.REPL_SLAVE, redis.REPL_REPLICA, redis.REPL_ALL = 0, 1, 2, 2, 3

redis.REDIS_VERSION, redis.REDIS_VERSION_NUM = version, version_num

function redis.error_reply(text)
  if type(text) ~= 'string' then
    error('wrong number or type of arguments', 0)
  end
  return { err = text }
end

function redis.status_reply(text)
  if type(text) ~= 'string' then
    error('wrong number or type of arguments', 0)
  end
  return { ok = text }
end

function redis.sha1hex(...)
  if select('#', ...) ~= 1 then
    error('wrong number of arguments', 0)
  end
  return rust_sha1hex(tostring((...)))
end

function redis.log(level, ...)
  if select('#', ...) < 1 then
    error('redis.log() requires two arguments or more.', 0)
  end
  if type(level) ~= 'number' then
    error('First argument must be a number (log level).', 0)
  end
  if level < 0 or level > 3 then
    error('Invalid debug level.', 0)
  end
  local parts = {}
  for i = 1, select('#', ...) do
    parts[i] = tostring((select(i, ...)))
  end
  rust_log(level, table.concat(parts, ' '))
end


-- Accepted and ignored: scripts are always replicated by their effects (Redis 7).
function redis.set_repl() end
function redis.replicate_commands() return true end
function redis.breakpoint() return false end
function redis.debug() end

-- Redis's own PRNG (rand48), one sequence for the server's life, as Redis 7.
local REDIS_LRAND48_MAX = 2147483647
math.random = function(...)
  local r = (lrand48() % REDIS_LRAND48_MAX) / REDIS_LRAND48_MAX
  local n = select('#', ...)
  if n == 0 then
    return r
  elseif n == 1 then
    local u = floor((...))
    if u < 1 then error("bad argument #1 to 'random' (interval is empty)", 2) end
    return floor(r * u) + 1
  elseif n == 2 then
    local l, u = ...
    l, u = floor(l), floor(u)
    if l > u then error("bad argument #2 to 'random' (interval is empty)", 2) end
    return floor(r * (u - l + 1)) + l
  end
  error('wrong number of arguments', 2)
end
math.randomseed = function(seed)
  srand48(floor(seed))
end

globals.redis = redis

-- The environment scripts run in: reads of missing globals and every write raise Redis's errors.
local env = setmetatable({}, {
  __index = function(_, name)
    local value = rawget(globals, name)
    if value == nil then
      error("Script attempted to access nonexistent global variable '" .. tostring(name) .. "'", 2)
    end
    return value
  end,
  __newindex = refuse_write,
})
backing[env] = globals

-- Library tables are read-only too (after the libraries registered theirs).
local function protect_libraries()
  for _, name in pairs({ 'string', 'table', 'math', 'coroutine', 'redis', 'bit', 'cjson',
      'cmsgpack', 'struct' }) do
    local lib = rawget(globals, name)
    if type(lib) == 'table' and backing[lib] == nil then
      rawset(globals, name, readonly(lib))
    end
  end
  rawset(globals, '_G', env)
end

-- Raw access and metatables cannot go around the proxies.
globals.rawget = function(t, k)
  local real = backing[t]
  if real then return rawget(real, k) end
  return rawget(t, k)
end
globals.rawset = function(t, k, v)
  if backing[t] then error('Attempt to modify a readonly table', 0) end
  return rawset(t, k, v)
end
globals.setmetatable = function(t, mt)
  if backing[t] then error('Attempt to modify a readonly table', 0) end
  return setmetatable(t, mt)
end
globals.getmetatable = function(t)
  if backing[t] then return nil end
  return getmetatable(t)
end
-- Chunks loaded by a script run in the script's sandbox, not in the real globals.
local function sandboxed(loader)
  return function(...)
    local chunk, err = loader(...)
    if chunk then setfenv(chunk, env) end
    return chunk, err
  end
end
-- Errors raised by Rust (redis.call) reach scripts' pcall as their text, as in Redis.
local pcall = pcall
local function caught(ok, ...)
  if not ok and type((...)) == 'userdata' then
    local err = error_value((...))
    if type(err) == 'table' then err = err.err end
    return false, err
  end
  return ok, ...
end
globals.pcall = function(f, ...)
  return caught(pcall(f, ...))
end
globals.load = sandboxed(load)
globals.loadstring = sandboxed(loadstring)

-- Turns any error into Redis's table: err (with its code), and where in the script it happened.
local function error_handler(err)
  if type(err) == 'userdata' then
    err = error_value(err)
  end
  if type(err) ~= 'table' then
    err = { err = 'ERR ' .. tostring(err) }
  elseif type(rawget(err, 'err')) ~= 'string' then
    err = { err = 'ERR ' .. tostring(rawget(err, 'err')) }
  end
  if rawget(err, 'line') == nil then
    for level = 2, 50 do
      local info = debug_getinfo(level, 'Sl')
      if info == nil then break end
      if info.what ~= 'C' and info.what ~= 'tail' and info.source ~= '=stmd' then
        rawset(err, 'source', info.source)
        rawset(err, 'line', info.currentline)
        break
      end
    end
  end
  return err
end

-- Runs one script function: true and its value, or false and the error table.
local function invoke(f, resp)
  slot.resp = resp
  return xpcall(f, error_handler)
end

return env, slot, invoke, protect_libraries, redis
