{{/* Names and labels shared by every object of the chart. */}}
{{- define "lagsight.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "lagsight.fullname" -}}
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

{{- define "lagsight.selectorLabels" -}}
app.kubernetes.io/name: {{ include "lagsight.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "lagsight.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{ include "lagsight.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/* HTTP or HTTPS, checked: the probes and the ServiceMonitor use it. */}}
{{- define "lagsight.scheme" -}}
{{- $scheme := upper .Values.webConfig.scheme }}
{{- if not (has $scheme (list "HTTP" "HTTPS")) }}
{{- fail (printf "webConfig.scheme must be HTTP or HTTPS, got %q" .Values.webConfig.scheme) }}
{{- end }}
{{- $scheme }}
{{- end }}

{{/* The shard count of sharded mode, checked. */}}
{{- define "lagsight.shards" -}}
{{- $shards := int .Values.sharding.shards }}
{{- if or (lt $shards 2) (gt $shards 1024) }}
{{- fail (printf "sharding.shards must be 2 to 1024, got %v" .Values.sharding.shards) }}
{{- end }}
{{- if ne (int .Values.replicaCount) 1 }}
{{- fail "replicaCount and sharding.enabled exclude each other: the shard count is sharding.shards" }}
{{- end }}
{{- $shards }}
{{- end }}
