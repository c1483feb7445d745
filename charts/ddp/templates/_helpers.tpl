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
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
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

{{/* An image reference with global.imageRegistry before it (when set): include "ddp.withRegistry" (list . "repo:tag"). */}}
{{- define "ddp.withRegistry" -}}
{{- $root := index . 0 -}}
{{- $registry := "" -}}
{{- if $root.Values.global -}}{{- $registry = $root.Values.global.imageRegistry | default "" | trimSuffix "/" -}}{{- end -}}
{{- if $registry -}}{{- printf "%s/%s" $registry (index . 1) -}}{{- else -}}{{- index . 1 -}}{{- end -}}
{{- end -}}

{{/* The controller image: [global.imageRegistry/]repository, then @digest when set, else :tag (tag defaults to the appVersion). */}}
{{- define "ddp.image" -}}
{{- $ref := "" -}}
{{- if .Values.image.digest -}}
{{- $ref = printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- $ref = printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}
{{- include "ddp.withRegistry" (list . $ref) -}}
{{- end -}}

{{/* The Deployment strategy: controller.strategy, else Recreate for one replica and a
rolling update that takes one pod down at a time for more (a new pod is a standby: Note
[Standby replicas] in controller/kubernetes/kubernetes_runtime.h). */}}
{{- define "ddp.strategy" -}}
{{- if .Values.controller.strategy -}}
{{- toYaml .Values.controller.strategy -}}
{{- else if le (int .Values.controller.replicas) 1 -}}
type: Recreate
{{- else -}}
type: RollingUpdate
rollingUpdate:
  maxSurge: 1
  maxUnavailable: 1
{{- end -}}
{{- end -}}

{{/* The Secret holding the REST API token, and its key. */}}
{{- define "ddp.tokenSecretName" -}}
{{- default (printf "%s-api-token" (include "ddp.fullname" .)) .Values.apiToken.existingSecret -}}
{{- end -}}
{{- define "ddp.tokenSecretKey" -}}
{{- if .Values.apiToken.existingSecret -}}{{ .Values.apiToken.existingSecretKey }}{{- else -}}token{{- end -}}
{{- end -}}

{{/* "true" when /metrics answers without the API token: only for the scrape annotations, which
cannot carry one (the ServiceMonitor sends the token from its Secret). */}}
{{- define "ddp.metricsOpen" -}}
{{- if .Values.metrics.scrapeAnnotations -}}true{{- end -}}
{{- end -}}

{{/* The name of the checkpoint PersistentVolumeClaim. */}}
{{- define "ddp.checkpointClaimName" -}}
{{- printf "%s-checkpoints" (include "ddp.fullname" .) -}}
{{- end -}}
