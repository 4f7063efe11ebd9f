{{/* The name of every object the chart renders (deploy/base's names by default). */}}
{{- define "eso-mtls.fullname" -}}
{{- default "eso-mtls-controller" .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* ESO's namespace (--namespace): every namespaced object of the chart lives here. */}}
{{- define "eso-mtls.namespace" -}}
{{- default .Release.Namespace .Values.namespaceOverride -}}
{{- end -}}

{{- define "eso-mtls.serviceAccountName" -}}
{{- default (include "eso-mtls.fullname" .) .Values.serviceAccount.name -}}
{{- end -}}

{{- define "eso-mtls.leaseName" -}}
{{- default (include "eso-mtls.fullname" .) .Values.leaderElection.id -}}
{{- end -}}

{{- define "eso-mtls.leaseNamespace" -}}
{{- default (include "eso-mtls.namespace" .) .Values.leaderElection.namespace -}}
{{- end -}}

{{/* The pods' labels that the Deployment, the metrics Service and the monitors select by. */}}
{{- define "eso-mtls.selectorLabels" -}}
app.kubernetes.io/name: {{ include "eso-mtls.fullname" . }}
{{- end -}}

{{/* deploy/base's labels plus Helm's. */}}
{{- define "eso-mtls.labels" -}}
{{ include "eso-mtls.selectorLabels" . }}
app.kubernetes.io/part-of: eso-mtls
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{/* repository:tag, or repository@digest when a digest is given. */}}
{{- define "eso-mtls.image" -}}
{{- if .image.digest -}}
{{ .image.repository }}@{{ .image.digest }}
{{- else -}}
{{ .image.repository }}:{{ default .appVersion .image.tag }}
{{- end -}}
{{- end -}}

{{/*
Rules across values that the schema cannot word clearly; each failure names the values and what to do.
*/}}
{{- define "eso-mtls.validate" -}}
{{- $v := .Values -}}
{{- if and (gt (int $v.replicaCount) 1) (not $v.leaderElection.enabled) -}}
{{- fail (printf "replicaCount is %d but leaderElection.enabled is false: every replica would write certificates. Enable leader election or set replicaCount: 1" (int $v.replicaCount)) -}}
{{- end -}}
{{- if and $v.metrics.serviceMonitor.enabled $v.metrics.podMonitor.enabled -}}
{{- fail "metrics.serviceMonitor.enabled and metrics.podMonitor.enabled are both true: each scrapes every pod, so every series would be collected twice. Enable one" -}}
{{- end -}}
{{- range $value := list "caSecretName" "clientSecretName" -}}
{{- if eq (get $v $value) "external-secrets-provider-tls" -}}
{{- fail (printf "%s is \"external-secrets-provider-tls\", the provider Secret name: choose another" $value) -}}
{{- end -}}
{{- end -}}
{{- if and $v.metrics.serviceMonitor.enabled (not $v.metrics.service.enabled) -}}
{{- fail "metrics.serviceMonitor.enabled needs metrics.service.enabled: the ServiceMonitor finds the pods through the metrics Service. Enable the Service, or use metrics.podMonitor" -}}
{{- end -}}
{{- if eq $v.caSecretName $v.clientSecretName -}}
{{- fail (printf "caSecretName and clientSecretName are both %q: the CA and client Secrets need different names" $v.caSecretName) -}}
{{- end -}}
{{- if and $v.podDisruptionBudget.enabled (not (kindIs "invalid" $v.podDisruptionBudget.minAvailable)) (not (kindIs "invalid" $v.podDisruptionBudget.maxUnavailable)) -}}
{{- fail "podDisruptionBudget: set minAvailable or maxUnavailable, not both (set the other to null)" -}}
{{- end -}}
{{- if and $v.pruneOrphanedSecrets.enabled (not (has "secret" $v.modes)) -}}
{{- fail "pruneOrphanedSecrets.enabled needs modes to include secret: pod-certificate-only mode never reads provider Secrets" -}}
{{- end -}}
{{- if and $v.providerLabelPolicy.controllerCheck (not $v.providerLabelPolicy.namespaceLabelValue) -}}
{{- fail (printf "providerLabelPolicy.controllerCheck needs providerLabelPolicy.namespaceLabelValue: --require-namespace-label takes key=value with a value, e.g. %s=true" $v.providerLabelPolicy.namespaceLabel) -}}
{{- end -}}
{{- if and $v.podDisruptionBudget.enabled (lt (int $v.replicaCount) 2) -}}
{{- fail (printf "podDisruptionBudget.enabled with replicaCount %d would block every node drain: run at least 2 replicas or disable the budget" (int $v.replicaCount)) -}}
{{- end -}}
{{- end -}}

{{/*
The controller's V8 old-space size in MiB (--max-old-space-size): half of resources.limits.memory
given in Mi or Gi, and at least 256, which is what Node picks under any limit up to 512Mi. Another
unit, or no limit: 256.
*/}}
{{- define "eso-mtls.maxOldSpaceMiB" -}}
{{- $limit := toString (dig "limits" "memory" "" (.Values.resources | default dict)) -}}
{{- $mib := 0 -}}
{{- if regexMatch "^[0-9]+Mi$" $limit -}}
{{- $mib = trimSuffix "Mi" $limit | int -}}
{{- else if regexMatch "^[0-9]+Gi$" $limit -}}
{{- $mib = mul (trimSuffix "Gi" $limit | int) 1024 -}}
{{- end -}}
{{- max 256 (div $mib 2) -}}
{{- end -}}
