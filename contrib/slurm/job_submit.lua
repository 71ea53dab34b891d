-- job_submit.lua for ingot, written by `ingot slurm setup` (docs/slurm.md).
-- Each job is quoted by the bank when it is submitted: refused with the
-- bank's message when its project cannot cover it, moved to the fallback
-- account when the bank says that one takes it. The bank is asked through
-- `ingot slurm submit`, which prints one line; this script keeps no secret
-- (the key is in the file the command names) and sets nothing in the job's
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

local function ask_bank(job_desc, part_list, submit_uid)
  local part = partition_of(job_desc, part_list) or {}
  local command = "timeout -k 1 " .. timeout_seconds .. " " .. ingot .. " slurm submit"
    .. flag("machine", machine) .. flag("uid", submit_uid)
    .. flag("account", job_desc.account or job_desc.default_account)
    .. flag("partition", job_desc.partition or part.name)
    .. flag("qos", job_desc.qos)
    .. flag("time-limit", job_desc.time_limit)
    .. flag("partition-default-time", part.default_time)
    .. flag("partition-max-time", part.max_time)
    .. flag("min-cpus", job_desc.min_cpus)
    .. flag("num-tasks", job_desc.num_tasks)
    .. flag("cpus-per-task", job_desc.cpus_per_task)
    .. flag("min-nodes", job_desc.min_nodes)
    .. flag("min-memory", job_desc.pn_min_memory)
    .. flag("tres-per-node", job_desc.tres_per_node)
    .. flag("tres-per-job", job_desc.tres_per_job)
    .. flag("tres-per-task", job_desc.tres_per_task)
  local p = io.popen(command .. " 2>/dev/null")
  local line = p:read("*l")
  p:close()
  return line
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
