{{/* Names, labels and shared values of the ddp chart. */}}

{{/* The chart name, or nameOverride. */}}
{{- define "ddp.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The name prefix of every object: fullnameOverride, or <release>-<name> (just <release> when it already contains the name). */}}
{{- define "ddp.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "ddp.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Labels of every object. */}}
{{- define "ddp.labels" -}}
helm.sh/chart: {{ include "ddp.chart" . }}
{{ include "ddp.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: ddp
{{- end -}}

{{/* Labels that select the controller pods. */}}
{{- define "ddp.selectorLabels" -}}
app.kubernetes.io/name: {{ include "ddp.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: controller
{{- end -}}

{{- define "ddp.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "ddp.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* The controller image, repository:tag (tag defaults to the appVersion). */}}
{{- define "ddp.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{/* The Secret holding the REST API token, and its key. */}}
{{- define "ddp.tokenSecretName" -}}
{{- default (printf "%s-api-token" (include "ddp.fullname" .)) .Values.apiToken.existingSecret -}}
{{- end -}}
{{- define "ddp.tokenSecretKey" -}}
{{- if .Values.apiToken.existingSecret -}}{{ .Values.apiToken.existingSecretKey }}{{- else -}}token{{- end -}}
{{- end -}}

{{/* "true" when something in the cluster scrapes /metrics (it then answers without the API token). */}}
{{- define "ddp.metricsOpen" -}}
{{- if or .Values.metrics.serviceMonitor.enabled .Values.metrics.scrapeAnnotations -}}true{{- end -}}
{{- end -}}

{{/* The name of the checkpoint PersistentVolumeClaim. */}}
{{- define "ddp.checkpointClaimName" -}}
{{- printf "%s-checkpoints" (include "ddp.fullname" .) -}}
{{- end -}}
