{{/* Names and labels: one place, as the operator's naming module is for its objects. */}}

{{- define "partita.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* <release>-partita, or the release alone when it already says partita. Short enough
for "-storage-<zone>-<n>" to fit the 63-character label limit of pod names. */}}
{{- define "partita.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 40 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "partita.selectorLabels" -}}
app.kubernetes.io/name: {{ include "partita.name" . }}
app.kubernetes.io/instance: {{ include "partita.fullname" . }}
{{- end -}}

{{- define "partita.labels" -}}
{{ include "partita.selectorLabels" . }}
app.kubernetes.io/part-of: partita
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{- define "partita.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{- define "partita.etcdName" -}}{{ include "partita.fullname" . }}-etcd{{- end -}}
{{- define "partita.etcdEndpoint" -}}{{ include "partita.etcdName" . }}:2379{{- end -}}
{{- define "partita.routerName" -}}{{ include "partita.fullname" . }}-router{{- end -}}
{{- define "partita.operatorName" -}}{{ include "partita.fullname" . }}-operator{{- end -}}
{{- define "partita.secretName" -}}
{{- default (printf "%s-credentials" (include "partita.fullname" .)) .Values.credentials.existingSecret -}}
{{- end -}}

{{/* The container security context every Partita container gets. */}}
{{- define "partita.containerSecurityContext" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
capabilities:
  drop: [ALL]
{{- end -}}

{{/*
Throughput enforcement at the routers: off, local or doorman ("auto": doorman when the
chart deploys Doorman, else local).
*/}}
{{- define "partita.admission" -}}
{{- if eq .Values.admission "auto" -}}
{{- ternary "doorman" "local" .Values.doorman.enabled -}}
{{- else -}}
{{- .Values.admission -}}
{{- end -}}
{{- end }}

{{/* The DynamoDB endpoint's scheme: https when router.tls names a Secret. */}}
{{- define "partita.routerScheme" -}}
{{- if .Values.router.tls.secretName }}https{{ else }}http{{ end }}
{{- end }}
