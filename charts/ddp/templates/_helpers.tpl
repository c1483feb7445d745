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

{{/* An image of the chart's values: [global.imageRegistry/]repository, then @digest when set, else :tag (tag defaults to the appVersion): include "ddp.imageRef" (list . .Values.image). */}}
{{- define "ddp.imageRef" -}}
{{- $root := index . 0 -}}
{{- $image := index . 1 -}}
{{- $ref := "" -}}
{{- if $image.digest -}}
{{- $ref = printf "%s@%s" $image.repository $image.digest -}}
{{- else -}}
{{- $ref = printf "%s:%s" $image.repository (default $root.Chart.AppVersion $image.tag) -}}
{{- end -}}
{{- include "ddp.withRegistry" (list $root $ref) -}}
{{- end -}}

{{/* The full image (image.*): the workers' default. */}}
{{- define "ddp.image" -}}
{{- include "ddp.imageRef" (list . .Values.image) -}}
{{- end -}}

{{/* The controller image (controller.image.*: the Dockerfile's controller target, no CUDA). */}}
{{- define "ddp.controllerImage" -}}
{{- include "ddp.imageRef" (list . .Values.controller.image) -}}
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

{{/* The namespaces whose DDPJobs the controller serves by name: the release namespace first
(the REST API's jobs go there), then controller.watchNamespaces. */}}
{{- define "ddp.watchNamespaces" -}}
{{- toYaml (prepend (without (.Values.controller.watchNamespaces | default list) .Release.Namespace) .Release.Namespace | uniq) -}}
{{- end -}}

{{/* The controller's rules in a namespace it serves (its Role there, or its ClusterRole).
What the controller does with each resource, and nothing more (the verbs its code uses):
worker pods are listed and watched (the launcher's pod watch, the schedule timeout, the
cleanPodPolicy), created and deleted; pod logs read; the headless Service created and deleted;
a pod, Service or Secret of a job's name read before it is taken or deleted (whose it is: Note
[Object ownership] in controller/launch/kubernetes/object_ownership.h); the controller's own pod
patched with the leader label the Service selects (Note [Leader label] in
controller/kubernetes/leader_elector.h; in the release namespace);
the per-job Secret read (adopting a job), created and deleted (and, in the release namespace,
the API token's Secret read and created: Note [Token Secret]); Events created (each one new,
never patched); DDPJobs listed and watched, deleted at their TTL; their status patched (merge
patch); the finalizers subresource of DDPJobs updated: the worker pods, Service and Secret
carry ownerReferences with blockOwnerDeletion: true, which an API server enforcing owner
permissions (the OwnerReferencesPermissionEnforcement admission plugin, on OpenShift) allows
only to a client that may update the owner's finalizers (the controller never writes them
otherwise); the job's PodGroup created and deleted when the controller runs with a gang
scheduler (--gang-scheduler-name volcano or scheduler-plugins-scheduler, through
controller.extraArgs; rules for an API group the cluster lacks are harmless). (Leases:
leader-election-role.yaml.) */}}
{{- define "ddp.controllerRules" -}}
- apiGroups: [""]
  resources: [pods]
  verbs: [get, list, watch, create, patch, delete]
- apiGroups: [""]
  resources: [pods/log]
  verbs: [get]
- apiGroups: [""]
  resources: [services]
  verbs: [get, create, delete]
- apiGroups: [""]
  resources: [secrets]
  verbs: [get, create, delete]
- apiGroups: [""]
  resources: [events]
  verbs: [create]
- apiGroups: [ddp.dev]
  resources: [ddpjobs]
  verbs: [list, watch, delete]
- apiGroups: [ddp.dev]
  resources: [ddpjobs/status]
  verbs: [patch]
- apiGroups: [ddp.dev]
  resources: [ddpjobs/finalizers]
  verbs: [update]
- apiGroups: [scheduling.x-k8s.io, scheduling.volcano.sh]
  resources: [podgroups]
  verbs: [get, create, delete]
{{- end -}}
