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

local function isTrue(condition)
  return condition ~= nil and condition.status == "True"
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

local stalled = findCondition("Stalled")
if isTrue(stalled) then
  hs.status = "Degraded"
  hs.message = explain(stalled)
  return hs
end

local paused = findCondition("Paused")
if isTrue(paused) then
  hs.status = "Suspended"
  hs.message = explain(paused)
  return hs
end

local reconciling = findCondition("Reconciling")
if isTrue(reconciling) then
  hs.status = "Progressing"
  hs.message = explain(reconciling)
  return hs
end

local ready = findCondition("Ready")
if ready ~= nil and ready.status == "True" then
  hs.status = "Healthy"
  hs.message = explain(ready)
  return hs
end
if ready ~= nil and ready.status == "False" then
  hs.status = "Degraded"
  hs.message = explain(ready)
  return hs
end

hs.status = "Progressing"
if ready ~= nil then
  hs.message = explain(ready)
else
  hs.message = "waiting for the operator to report Ready"
end
return hs
