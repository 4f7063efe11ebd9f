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
The controller's V8 old-space size in MiB (--max-old-space-size): half of resources.limits.memory,
so that the heap, its young generation and Node's own memory stay under the limit however lazily V8
collects (Node would pick 256 under any limit up to 512Mi: all of a 256Mi limit, and the kernel
kills the container before V8 collects; docs/benchmarks.md). No limit: 256. The limit is
read as Kubernetes reads a quantity ("eso-mtls.memoryBytes"), so 1.5Gi, 2G, 600000Ki, 1e9 and
plain bytes count as well as whole Mi and Gi.
*/}}
{{- define "eso-mtls.maxOldSpaceMiB" -}}
{{- $limit := dig "limits" "memory" "" (.Values.resources | default dict) -}}
{{- if eq (toString $limit) "" -}}
256
{{- else -}}
{{- $bytes := include "eso-mtls.memoryBytes" (dict "name" "resources.limits.memory" "value" $limit) | float64 -}}
{{- /* The floor: loaded and idle the controller's RSS is about 75 MiB (docs/benchmarks.md), and its
  two 16 MiB semi-spaces (--max-semi-space-size=16) may add 32 MiB at the first burst of work; under
  128Mi the kernel kills it at its first reconcile, over and over. */ -}}
{{- if lt $bytes 134217728.0 -}}
{{- fail (printf "resources.limits.memory %v is %.1f MiB: the controller needs at least 128Mi (about 75 MiB loaded and idle, and up to 32 MiB more for its young generation); raise the limit (256Mi is the default)" $limit (divf $bytes 1048576.0)) -}}
{{- end -}}
{{- floor (divf $bytes 2097152.0) | int -}}
{{- end -}}
{{- end -}}

{{/*
A memory quantity in bytes, as Kubernetes reads it (resource.Quantity): a number with an optional
decimal part, then a binary suffix (Ki Mi Gi Ti Pi Ei), a decimal one (k M G T P E), an exponent
(e9, E+9) or nothing (bytes). Given as dict "name" (for messages) and "value" (a string, or a number
as YAML gives it). A milli, micro or nano suffix (m u n) is a quantity but counts thousandths of a
byte and fewer, never meant for memory: refused, as is anything else that is no quantity.
*/}}
{{- define "eso-mtls.memoryBytes" -}}
{{- $name := .name -}}
{{- $text := toString .value | trim -}}
{{- $quantity := `^\+?((?:[0-9]+(?:\.[0-9]*)?)|(?:\.[0-9]+))((?:[KMGTPE]i)|[numkMGTPE]|(?:[eE][+-]?[0-9]+))?$` -}}
{{- if not (regexMatch $quantity $text) -}}
{{- fail (printf "%s %q is not a Kubernetes memory quantity: write bytes with a suffix, such as 256Mi, 1.5Gi, 2G, 600000Ki or 268435456" $name $text) -}}
{{- end -}}
{{- $number := regexReplaceAll $quantity $text "${1}" | float64 -}}
{{- $suffix := regexReplaceAll $quantity $text "${2}" -}}
{{- if has $suffix (list "m" "u" "n") -}}
{{- fail (printf "%s %q counts in %s of a byte (suffix %s): a memory limit is in bytes; write it with Mi or Gi, such as 256Mi" $name $text (get (dict "m" "thousandths" "u" "millionths" "n" "billionths") $suffix) $suffix) -}}
{{- end -}}
{{- $units := dict "" 1.0 "k" 1e3 "M" 1e6 "G" 1e9 "T" 1e12 "P" 1e15 "E" 1e18 "Ki" 1024.0 "Mi" 1048576.0 "Gi" 1073741824.0 "Ti" 1099511627776.0 "Pi" 1125899906842624.0 "Ei" 1152921504606846976.0 -}}
{{- $bytes := $number -}}
{{- if hasKey $units $suffix -}}
{{- $bytes = mulf $number (get $units $suffix) -}}
{{- else -}}
{{- /* An exponent: ten to it, by repeated multiplication (sprig has no pow), up to 18 either way. Its
  leading zeros are dropped: "int" would read the 09 of a YAML number (2.5e+09) as octal. */ -}}
{{- $exponent := regexReplaceAll `^[eE][+-]?0*` $suffix "" | default "0" | int -}}
{{- if hasPrefix "-" (trimPrefix "E" (trimPrefix "e" $suffix)) -}}{{- $exponent = mul -1 $exponent -}}{{- end -}}
{{- if or (gt $exponent 18) (lt $exponent -18) -}}
{{- fail (printf "%s %q has exponent %d: write a memory limit as bytes, such as 256Mi" $name $text $exponent) -}}
{{- end -}}
{{- range until (max $exponent (mul -1 $exponent) | int) -}}
{{- if gt $exponent 0 -}}{{- $bytes = mulf $bytes 10.0 -}}{{- else -}}{{- $bytes = divf $bytes 10.0 -}}{{- end -}}
{{- end -}}
{{- end -}}
{{- $bytes -}}
{{- end -}}
