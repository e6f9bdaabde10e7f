{{/*
Names, labels and the image reference shared by every template.
*/}}

{{- define "serverlessapp-operator.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The prefix of every object name: the release name, plus the chart name unless
the release name already contains it. Truncated to 63 characters (a DNS label).
*/}}
{{- define "serverlessapp-operator.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "serverlessapp-operator.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Selector labels: stable for the life of a release, so never add to them. */}}
{{- define "serverlessapp-operator.selectorLabels" -}}
app.kubernetes.io/name: {{ include "serverlessapp-operator.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "serverlessapp-operator.labels" -}}
helm.sh/chart: {{ include "serverlessapp-operator.chart" . }}
{{ include "serverlessapp-operator.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/component: operator
app.kubernetes.io/part-of: serverlessapp
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "serverlessapp-operator.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "serverlessapp-operator.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name must name an existing ServiceAccount when serviceAccount.create is false" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "serverlessapp-operator.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{/* Analysis providers as the operator reads them: name=url,... (sorted by name). */}}
{{- define "serverlessapp-operator.releaseFreezeBelow" -}}
{{- $entries := list -}}
{{- range $namespace, $percent := .Values.analysis.releaseFreezeBelow -}}
{{- $entries = append $entries (printf "%s=%v" $namespace $percent) -}}
{{- end -}}
{{- join "," $entries -}}
{{- end }}

{{- define "serverlessapp-operator.analysisProviders" -}}
{{- $entries := list -}}
{{- range $name, $url := .Values.analysis.providers -}}
{{- $entries = append $entries (printf "%s=%s" $name $url) -}}
{{- end -}}
{{- join "," $entries -}}
{{- end }}
