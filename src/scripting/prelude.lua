-- Run once on a fresh state, before any script, with the real globals. It builds the sandbox
-- scripts see (a read-only proxy of the globals), the `redis` table's Lua half, Redis's PRNG
-- wrappers and the error handler, and returns what Rust needs to drive a call.
local rust_sha1hex, rust_log, lrand48, srand48, error_value, version, version_num = ...
local debug_getinfo = debug.getinfo
local error, type, tostring, pairs, ipairs, select = error, type, tostring, pairs, ipairs, select
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

-- The prelude's own state: the loading `redis` proxy and what a library registers. (redis.call,
-- redis.pcall and redis.setresp are Rust functions Rust sets on `redis`: C functions, so a
-- script's `return redis.call(...)` keeps its frame, and its line, for the error message.)
local slot = {}

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


-- Accepted and ignored: scripts are always replicated by their effects (Redis 7). redis.set_repl
-- is Rust's (engine.rs), checked as Redis checks it.
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
-- A read goes from `env` to the globals as a plain table lookup (no Lua function call for each
-- `redis`, `KEYS` or `ARGV` a script names); only a miss reaches the globals' own metatable.
local function missing_global(_, name)
  error("Script attempted to access nonexistent global variable '" .. tostring(name) .. "'", 2)
end
setmetatable(globals, { __index = missing_global })
local running_env = { __index = globals, __newindex = refuse_write }
-- While a library's code runs (FUNCTION LOAD) it sees only the loading `redis` table.
local loading_env = {
  __index = function(_, name)
    if name == 'redis' then return slot.load_redis end
    error("Script attempted to access nonexistent global variable '" .. tostring(name) .. "'", 2)
  end,
  __newindex = refuse_write,
}
local env = setmetatable({}, running_env)
backing[env] = globals

local string_metatable
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
  -- Scripts see the strings' metatable as a read-only table whose __index is the read-only
  -- `string`, so no script can change string methods under the next one (as Redis 7).
  string_metatable = readonly({ __index = rawget(globals, 'string') })
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
  if type(t) == 'string' then return string_metatable end
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
-- Errors raised by Rust (redis.call's, and other callbacks') reach scripts' pcall as their text,
-- as in Redis. redis.call raises `{err = …}` tables with this metatable.
local call_error = {}
local pcall = pcall
local function caught(ok, ...)
  if not ok then
    local err = (...)
    if type(err) == 'userdata' then
      err = error_value(err)
      if type(err) == 'table' then err = err.err end
      return false, err
    elseif type(err) == 'table' and getmetatable(err) == call_error then
      return false, rawget(err, 'err')
    end
  end
  return ok, ...
end
globals.pcall = function(f, ...)
  return caught(pcall(f, ...))
end
-- xpcall runs the script's handler after the error is caught, not as Lua's error function: Lua
-- runs an error function with its hooks off when the error came from a hook (a kill), so a
-- loop in a handler could not be stopped. As in Lua, an error in the handler calls it again with
-- that error, until Lua's C-call depth would give up.
local function keep(err) return err end
local function handled(handler, ok, ...)
  if ok then return ok, ... end
  local err = (...)
  for _ = 1, 200 do
    local fine, value = pcall(handler, err)
    if fine then return false, value end
    err = value
  end
  return false, 'error in error handling'
end
globals.xpcall = function(f, handler)
  return handled(handler, xpcall(f, keep))
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

-- Runs one script function: true and its value, or false and the error table. A script (EVAL)
-- sees its keys and arguments as the globals KEYS and ARGV for the length of the call (set here:
-- two table stores in Lua cost a fraction of four from Rust); a function (FCALL) gets them as
-- parameters.
local function invoke(f, keys, args, is_function)
  if is_function then
    return xpcall(function() return f(keys, args) end, error_handler)
  end
  rawset(globals, 'KEYS', keys)
  rawset(globals, 'ARGV', args)
  local ok, value = xpcall(f, error_handler)
  rawset(globals, 'KEYS', nil)
  rawset(globals, 'ARGV', nil)
  return ok, value
end

-- Functions (FUNCTION LOAD). While a library's code runs, the scripts' environment shows only a
-- `redis` table with register_function, log and the constants, as in Redis; the functions it
-- registers run later with the full sandbox, like scripts.
local function_flags = {
  ['no-writes'] = true, ['allow-oom'] = true, ['allow-stale'] = true, ['no-cluster'] = true,
  ['allow-cross-slot-keys'] = true,
}
local load_redis = {
  LOG_DEBUG = redis.LOG_DEBUG, LOG_VERBOSE = redis.LOG_VERBOSE, LOG_NOTICE = redis.LOG_NOTICE,
  LOG_WARNING = redis.LOG_WARNING, REDIS_VERSION = version, REDIS_VERSION_NUM = version_num,
  log = redis.log,
}
-- Lua's own string test (lua_isstring): numbers count, as in Redis.
local function stringish(value)
  return type(value) == 'string' or type(value) == 'number'
end
function load_redis.register_function(...)
  local n = select('#', ...)
  local name, callback, flags, description
  if n == 1 then
    local named = ...
    if type(named) ~= 'table' then
      error('calling redis.register_function with a single argument is only applicable to Lua table (representing named arguments).', 0)
    end
    for key, value in pairs(named) do
      if key == 'function_name' then name = value
      elseif key == 'callback' then callback = value
      elseif key == 'flags' then flags = value
      elseif key == 'description' then description = value
      else error('unknown argument given to redis.register_function', 0) end
    end
    if name == nil then
      error('redis.register_function must get a function name argument', 0)
    end
    if not stringish(name) then
      error('function_name argument given to redis.register_function must be a string', 0)
    end
    if callback == nil then
      error('redis.register_function must get a callback argument', 0)
    end
    if type(callback) ~= 'function' then
      error('callback argument given to redis.register_function must be a function', 0)
    end
    if description ~= nil then
      if not stringish(description) then
        error('description argument given to redis.register_function must be a string', 0)
      end
      description = tostring(description)
    end
  elseif n == 2 then
    name, callback = ...
    if not stringish(name) then
      error('first argument to redis.register_function must be a string', 0)
    end
    if type(callback) ~= 'function' then
      error('second argument to redis.register_function must be a function', 0)
    end
  else
    error('wrong number of arguments to redis.register_function', 0)
  end
  local flag_list = {}
  if flags ~= nil then
    if type(flags) ~= 'table' then
      error('flags argument to redis.register_function must be a table representing function flags', 0)
    end
    for _, flag in ipairs(flags) do
      if type(flag) ~= 'string' or not function_flags[flag] then
        error('unknown flag given', 0)
      end
      flag_list[#flag_list + 1] = flag
    end
  end
  name = tostring(name)
  if name:match('^[%w_]+$') == nil then
    error('Library names can only contain letters, numbers, or underscores(_) and must be at least one character long', 0)
  end
  local registered = slot.registered
  if registered[name] then
    error('Function already exists in the library', 0)
  end
  registered[name] = true
  registered[#registered + 1] = { name = name, callback = callback, flags = flag_list,
    description = description }
end
local load_proxy = setmetatable({}, {
  __index = function(_, name)
    local value = rawget(load_redis, name)
    if value == nil then
      error("Script attempted to access nonexistent global variable '" .. tostring(name) .. "'", 2)
    end
    return value
  end,
  __newindex = refuse_write,
})
backing[load_proxy] = load_redis
slot.load_redis = load_proxy

-- Runs a library's code (compiled with the scripts' environment): the registered functions, in
-- order, or false and the error table.
local function load_library(chunk)
  slot.registered = {}
  setmetatable(env, loading_env)
  local ok, err = xpcall(chunk, error_handler)
  setmetatable(env, running_env)
  local registered = slot.registered
  slot.registered = nil
  if not ok then return false, err end
  return true, registered
end

return env, invoke, protect_libraries, redis, load_library, call_error
