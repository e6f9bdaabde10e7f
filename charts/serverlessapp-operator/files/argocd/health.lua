-- Argo CD health check for serverlessapp.io/ServerlessApp.
--
-- It reads the conditions the operator writes for kstatus readers (Flux,
-- kubectl wait; see the operator's README, "GitOps"): Reconciling and Stalled
-- are abnormal-true (present only while the spec's desired state is being
-- reached, or cannot be reached without a new edit), Ready is True once that
-- state is served, Paused is present while spec.rollout.paused is true, and
-- status.observedGeneration moves only when every condition has judged that
-- generation. So, in kstatus's order: a status older than the spec is
-- Progressing, Stalled is Degraded, a reached pause is Suspended, Reconciling
-- is Progressing, Ready is Healthy.
--
-- Lua 5.1 with the base library only: Argo CD runs an argocd-cm health script
-- without string, math or os unless useOpenLibs is set for the kind.
local hs = {}

local function findCondition(conditionType)
  if obj.status == nil or obj.status.conditions == nil then
    return nil
  end
  for _, condition in ipairs(obj.status.conditions) do
    if condition.type == conditionType then
      return condition
    end
  end
  return nil
end

-- What a condition says to a person: its message, else its reason.
local function explain(condition)
  if condition.message ~= nil and condition.message ~= "" then
    return condition.message
  end
  if condition.reason ~= nil and condition.reason ~= "" then
    return condition.reason
  end
  return condition.type .. " is " .. tostring(condition.status)
end

if obj.metadata.deletionTimestamp ~= nil then
  hs.status = "Progressing"
  hs.message = "being deleted"
  return hs
end

if obj.status == nil or obj.status.observedGeneration == nil
    or obj.status.observedGeneration ~= obj.metadata.generation then
  hs.status = "Progressing"
  hs.message = "waiting for the operator to observe generation " .. tostring(obj.metadata.generation)
  return hs
end

-- The first rule whose condition holds decides, in this order: a stalled
-- rollout is Degraded even while paused, a reached pause is Suspended rather
-- than Healthy.
local rules = {
  { condition = "Stalled", status = "True", health = "Degraded" },
  { condition = "Paused", status = "True", health = "Suspended" },
  { condition = "Reconciling", status = "True", health = "Progressing" },
  { condition = "Ready", status = "True", health = "Healthy" },
  { condition = "Ready", status = "False", health = "Degraded" },
}
for _, rule in ipairs(rules) do
  local condition = findCondition(rule.condition)
  if condition ~= nil and condition.status == rule.status then
    hs.status = rule.health
    hs.message = explain(condition)
    return hs
  end
end

local ready = findCondition("Ready")
hs.status = "Progressing"
if ready ~= nil then
  hs.message = explain(ready)
else
  hs.message = "waiting for the operator to report Ready"
end
return hs
