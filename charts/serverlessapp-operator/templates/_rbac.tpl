{{/*
The operator's permissions, split by scope. Writes go through server-side
apply (patch); an apply that creates the object is authorized as create too.
Reads go through informers (list, watch); get is the one read of a child the
informer does not show (labels are how it selects), before the first write, so
that an object the app does not own is never written. No Secrets, no
ConfigMaps, no Pods, no wildcards.
*/}}

{{/* Rules on namespaced resources: a ClusterRole's, or a Role's in each watched namespace. */}}
{{- define "serverlessapp-operator.namespacedRules" }}
  # The informer{{ if ne .Values.modelCache.scope "namespace" }}, and the model-cache finalizer (applied on the app itself){{ end }}.
  - apiGroups: [serverlessapp.io]
    resources: [serverlessapps]
    verbs: [list, watch{{ if ne .Values.modelCache.scope "namespace" }}, patch{{ end }}]
  - apiGroups: [serverlessapp.io]
    resources: [serverlessapps/status]
    verbs: [patch]
  # Children point at their app with blockOwnerDeletion; where the
  # OwnerReferencesPermissionEnforcement admission plugin runs, setting that
  # needs update on the owner's finalizers.
  - apiGroups: [serverlessapp.io]
    resources: [serverlessapps/finalizers]
    verbs: [update]
  # Container apps; deleted when an app switches to a model.
  - apiGroups: [serving.knative.dev]
    resources: [services]
    verbs: [get, list, watch, create, patch, delete]
  # Which revision runs which version{{ if ne .Values.knativeInPlaceScaling "false" }}, and their scale bounds set in place (Knative >= 1.21){{ end }}.
  - apiGroups: [serving.knative.dev]
    resources: [revisions]
    verbs: [list, watch{{ if ne .Values.knativeInPlaceScaling "false" }}, patch{{ end }}]
  # Model apps; deleted when an app switches kind.
  - apiGroups: [serving.kserve.io]
    resources: [inferenceservices]
    verbs: [get, list, watch, create, patch, delete]
  # LLM apps (model.serving: llm): one per live version; a replaced one is deleted after rollout.retainPrevious.
  # Read always (the operator's cache of them); written only where the platform serves LLM apps (llm.enabled).
  - apiGroups: [serving.kserve.io]
    resources: [llminferenceservices]
    verbs: [list, watch{{ if .Values.llm.enabled }}, get, create, patch, delete{{ end }}]
  {{- if ne .Values.modelCache.scope "cluster" }}
  # Model caches owned by their app; deleted when the model changes or caching stops.
  - apiGroups: [serving.kserve.io]
    resources: [localmodelnamespacecaches]
    verbs: [get, list, watch, create, patch, delete]
  {{- end }}
  # Routing for apps with spec.ingress; deleted when ingress is removed.
  {{- if eq .Values.router "gateway-api" }}
  - apiGroups: [gateway.networking.k8s.io]
    resources: [httproutes]
    verbs: [get, list, watch, create, patch, delete]
  # The VirtualServices the istio router wrote: each goes once its app's
  # HTTPRoute is admitted (make before break after a router switch).
  - apiGroups: [networking.istio.io]
    resources: [virtualservices]
    verbs: [list, watch, delete]
  {{- else }}
  - apiGroups: [networking.istio.io]
    resources: [virtualservices]
    verbs: [get, list, watch, create, patch, delete]
  {{- end }}
  # Events on ServerlessApps; repeats patch the event's series count.
  - apiGroups: [events.k8s.io]
    resources: [events]
    verbs: [create, patch]
{{- end }}

{{/* Rules on cluster-scoped resources. */}}
{{- define "serverlessapp-operator.clusterRules" }}
{{- $crds := list }}
{{- if eq .Values.knativeInPlaceScaling "auto" }}{{ $crds = append $crds "services.serving.knative.dev" }}{{ end }}
{{- if eq .Values.modelCache.scope "auto" }}{{ $crds = append $crds "localmodelnamespacecaches.serving.kserve.io" }}{{ end }}
  # Which namespace owns which host: a namespace's first app to route a host
  # creates its claim (the first create wins). Never updated; the operator
  # deletes a claim it made once no app of its namespace has named the host for
  # hostClaims.releaseAfter, and the platform releases a host by deleting its claim.
  - apiGroups: [serverlessapp.io]
    resources: [hostclaims]
    verbs: [list, watch, create, delete]
{{- if ne .Values.modelCache.scope "namespace" }}
  # Cluster-scoped model caches (the platform's opt-in); removed by a finalizer on the app.
  - apiGroups: [serving.kserve.io]
    resources: [localmodelcaches]
    verbs: [get, list, watch, create, patch, delete]
{{- end }}
{{- with $crds }}
  # Feature detection at startup: Knative's version, and whether KServe has the namespaced cache.
  - apiGroups: [apiextensions.k8s.io]
    resources: [customresourcedefinitions]
    resourceNames: [{{ join ", " . }}]
    verbs: [get]
{{- end }}
{{- end }}
