-- job_submit.lua for ingot, written by `ingot slurm setup` (docs/slurm.md).
-- Each job is quoted by the bank when it is submitted: refused with the
-- bank's message when its project cannot cover it, moved to the fallback
-- account when the bank says that one takes it. The bank is asked through
-- `ingot slurm submit-server`, over its Unix socket with LuaSocket (one
-- line each way, no process started); when no server answers there (or
-- LuaSocket is missing), through `ingot slurm submit`, a process that
-- prints the same line. This script keeps no secret (the key is in the
-- file the server and the command name) and sets nothing in the job's
-- environment.

local ingot = {{lua (sh .Command)}}
local machine = {{lua .Machine}}
-- Every other submission waits while this hook runs: the call is bounded.
local timeout_seconds = {{.SubmitTimeout}}
-- When the bank cannot be asked: let the job through (true; the prolog and
-- `ingot slurm sync` still see it) or refuse it (false).
local fail_open = {{.FailOpen}}
-- The QOS of a job moved to the fallback account ("" keeps its own).
local fallback_qos = {{lua .FallbackQOS}}
-- The submit server's socket ("" to start `ingot slurm submit` each time).
local submit_socket = {{lua .SubmitSocket}}
local have_unix, unix = pcall(require, "socket.unix")
if not have_unix then
  if submit_socket ~= "" then
    slurm.log_error("ingot: LuaSocket (socket.unix) cannot be loaded, so each job starts `ingot slurm submit`: %s", tostring(unix))
  end
  unix = nil
end

local function quote(s)
  return "'" .. string.gsub(tostring(s), "'", "'\\''") .. "'"
end

-- flag is " --name 'value'" for a field that is set; numbers are written
-- whole (Slurm's markers for "not given" included: ingot reads them).
local function flag(name, value)
  if value == nil then
    return ""
  end
  if type(value) == "number" then
    value = string.format("%.0f", value)
  end
  return " --" .. name .. " " .. quote(value)
end

-- The job's partition, for its default and maximum time.
local function partition_of(job_desc, part_list)
  for name, part in pairs(part_list) do
    if job_desc.partition ~= nil then
      if name == job_desc.partition then
        return part
      end
    elseif part.flag_default ~= nil and part.flag_default ~= 0 then
      return part
    end
  end
  return nil
end

-- The job's fields, as {name, value} pairs; numbers are written whole
-- (Slurm's markers for "not given" included: ingot reads them).
local function job_fields(job_desc, part_list, submit_uid)
  local part = partition_of(job_desc, part_list) or {}
  local fields = {}
  local function add(name, value)
    if value == nil then
      return
    end
    if type(value) == "number" then
      value = string.format("%.0f", value)
    end
    table.insert(fields, {name, tostring(value)})
  end
  add("machine", machine)
  add("uid", submit_uid)
  add("account", job_desc.account or job_desc.default_account)
  add("partition", job_desc.partition or part.name)
  add("qos", job_desc.qos)
  add("time-limit", job_desc.time_limit)
  add("partition-default-time", part.default_time)
  add("partition-max-time", part.max_time)
  add("min-cpus", job_desc.min_cpus)
  add("num-tasks", job_desc.num_tasks)
  add("cpus-per-task", job_desc.cpus_per_task)
  add("min-nodes", job_desc.min_nodes)
  add("min-memory", job_desc.pn_min_memory)
  add("tres-per-node", job_desc.tres_per_node)
  add("tres-per-job", job_desc.tres_per_job)
  add("tres-per-task", job_desc.tres_per_task)
  return fields
end

-- ask_server sends the fields to the submit server and returns its line;
-- nil and "connect" when no server answers on the socket.
local function ask_server(fields)
  local parts = {}
  for _, f in ipairs(fields) do
    if f[1] ~= "machine" then
      table.insert(parts, f[1] .. "=" .. string.gsub(f[2], "[%c]", " "))
    end
  end
  local c = (unix.stream or unix)()
  c:settimeout(timeout_seconds)
  local ok, err = c:connect(submit_socket)
  if not ok then
    c:close()
    return nil, "connect"
  end
  ok, err = c:send(table.concat(parts, "\t") .. "\n")
  local line
  if ok then
    line, err = c:receive("*l")
  end
  c:close()
  if line == nil then
    return nil, "the submit server: " .. tostring(err)
  end
  return line
end

-- ask_command runs `ingot slurm submit` and returns the line it prints.
local function ask_command(fields)
  local command = "timeout -k 1 " .. timeout_seconds .. " " .. ingot .. " slurm submit"
  for _, f in ipairs(fields) do
    command = command .. flag(f[1], f[2])
  end
  local p = io.popen(command .. " 2>/dev/null")
  local line = p:read("*l")
  p:close()
  return line
end

-- When the server does not answer, each job starts a process: said in
-- slurmctld's log at most once a minute.
local fallback_logged = 0

local function ask_bank(job_desc, part_list, submit_uid)
  local fields = job_fields(job_desc, part_list, submit_uid)
  if submit_socket ~= "" and unix ~= nil then
    local line, err = ask_server(fields)
    if line ~= nil then
      return line
    end
    if err ~= "connect" then
      return "error " .. err
    end
    if os.time() - fallback_logged >= 60 then
      fallback_logged = os.time()
      slurm.log_error("ingot: no submit server answers on %s: each job starts `ingot slurm submit`", submit_socket)
    end
  end
  return ask_command(fields)
end

function slurm_job_submit(job_desc, part_list, submit_uid)
  -- A Lua error would let the job through unseen: every step is in pcall
  -- and the outcome decided below.
  local ok, line = pcall(ask_bank, job_desc, part_list, submit_uid)
  local verdict, rest
  if ok and line ~= nil then
    verdict, rest = string.match(line, "^(%S+)%s?(.*)$")
  end
  if verdict == "accept" then
    return slurm.SUCCESS
  end
  if verdict == "account" and rest ~= "" then
    job_desc.account = rest
    if fallback_qos ~= "" then
      job_desc.qos = fallback_qos
    end
    slurm.log_info("ingot: job of uid %d moved to the fallback account %s", submit_uid, rest)
    slurm.user_msg("ingot: the job's project cannot cover it; it runs under the fallback account " .. rest)
    return slurm.SUCCESS
  end
  if verdict == "refuse" then
    slurm.log_info("ingot: job of uid %d refused: %s", submit_uid, rest)
    slurm.user_msg("ingot: " .. rest)
    return slurm.ESLURM_ACCOUNTING_POLICY
  end
  local why
  if not ok then
    why = "the hook failed: " .. tostring(line)
  elseif verdict == "error" then
    why = rest
  else
    why = "no answer from the bank within " .. timeout_seconds .. " s"
  end
  if fail_open then
    slurm.log_error("ingot: job of uid %d let through without a quote (fail open): %s", submit_uid, why)
    return slurm.SUCCESS
  end
  slurm.log_error("ingot: job of uid %d refused, the bank cannot be asked (fail closed): %s", submit_uid, why)
  slurm.user_msg("ingot: the allocation bank cannot be asked now; try again later (" .. why .. ")")
  return slurm.ESLURM_ACCOUNTING_POLICY
end

function slurm_job_modify(job_desc, job_rec, part_list, modify_uid)
  return slurm.SUCCESS
end

return slurm.SUCCESS
