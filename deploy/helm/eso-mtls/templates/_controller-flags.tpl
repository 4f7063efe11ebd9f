{{/*
The controller's flags: the arguments the values become, and the controller's start-up checks on
them that values.schema.json cannot express (one value against another, a duration's size). A value
the controller would refuse fails here instead, so a bad value never reaches a crash-looping pod.
testing/helm/controller-flags.test.ts runs the controller's own parser on the same values and
checks that the two agree; change both together.
*/}}

{{/* The controller container's arguments, as a YAML list: the deployment renders them, the checks below read them. */}}
{{- define "eso-mtls.controllerArgs" -}}
- controller
- --cluster-domain={{ .Values.clusterDomain }}
- --service-account={{ .Values.eso.serviceAccount }}
- --ca-secret-name={{ .Values.caSecretName }}
- --client-secret-name={{ .Values.clientSecretName }}
- --key-algorithm={{ .Values.keyAlgorithm }}
- --reconcile-interval={{ .Values.reconcileInterval }}
- --propagation-delay={{ .Values.propagationDelay }}
- --max-issuances-per-reconcile={{ int .Values.floodControl.maxIssuancesPerReconcile }}
- --max-namespaces={{ int .Values.floodControl.maxNamespaces }}
{{- if .Values.providerLabelPolicy.controllerCheck }}
- --require-namespace-label={{ .Values.providerLabelPolicy.namespaceLabel }}={{ .Values.providerLabelPolicy.namespaceLabelValue }}
{{- end }}
{{- if has "pod-certificate" .Values.modes }}
- --modes={{ if has "secret" .Values.modes }}secret,{{ end }}pod-certificate
- --server-signer-name={{ .Values.podCertificate.serverSignerName }}
- --client-signer-name={{ .Values.podCertificate.clientSignerName }}
- --pod-certificate-max-validity={{ .Values.podCertificate.maxValidity }}
- --pod-certificate-max-pending={{ int .Values.podCertificate.maxPending }}
- --pod-certificate-max-pending-per-namespace={{ int .Values.podCertificate.maxPendingPerNamespace }}
{{- end }}
{{- if .Values.pruneOrphanedSecrets.enabled }}
- --prune-orphaned-secrets-after={{ .Values.pruneOrphanedSecrets.after }}
{{- end }}
{{- if .Values.hsm.enabled }}
{{ include "eso-mtls.hsmArgs" . }}
{{- end }}
{{- if ne .Values.ca.source "selfSigned" }}
{{ include "eso-mtls.caSourceArgs" . }}
{{- end }}
{{- if .Values.leaderElection.enabled }}
- --leader-elect
{{- with .Values.leaderElection.namespace }}
- --leader-election-namespace={{ . }}
{{- end }}
- --leader-election-id={{ include "eso-mtls.leaseName" . }}
- --leader-election-lease-duration={{ .Values.leaderElection.leaseDuration }}
- --leader-election-renew-deadline={{ .Values.leaderElection.renewDeadline }}
- --leader-election-retry-period={{ .Values.leaderElection.retryPeriod }}
{{- end }}
- --metrics-bind-address=:{{ .Values.metrics.port }}
- --health-probe-bind-address=:{{ .Values.healthProbePort }}
- --log-level={{ .Values.logLevel }}
{{- end -}}

{{/*
Every flag `eso-mtls controller` knows (packages/controller/src/flags.ts), and which of them are
switches that need no value. An unknown flag in extraArgs makes the controller exit 2.
*/}}
{{- define "eso-mtls.controllerFlagNames" -}}
kubeconfig namespace cluster-domain ca-secret-name client-secret-name service-account reconcile-interval propagation-delay max-issuances-per-reconcile max-namespaces require-namespace-label key-algorithm modes server-signer-name client-signer-name pod-certificate-max-validity pod-certificate-max-pending pod-certificate-max-pending-per-namespace prune-orphaned-secrets-after ca-issuer ca-issuer-group ca-intermediate-duration ca-request-deadline ca-from-secret ca-trust-anchors leader-elect leader-election-namespace leader-election-id leader-election-identity leader-election-lease-duration leader-election-renew-deadline leader-election-retry-period metrics-bind-address health-probe-bind-address hsm-module hsm-token-label hsm-key-label-prefix hsm-pin-file hsm-keep-retired-keys log-level
{{- end -}}
{{- define "eso-mtls.controllerBoolFlags" -}}
leader-elect hsm-keep-retired-keys
{{- end -}}

{{/*
A duration in whole milliseconds, read as the controller reads it (packages/controller/src/duration.ts):
terms of a number and a unit (ms, s, m, h, d), `0` alone for zero. "invalid" for anything else, a
fraction of a millisecond, or more than JavaScript's largest safe integer. Call with the text.
*/}}
{{- define "eso-mtls.durationMs" -}}
{{- $text := toString . -}}
{{- if eq $text "0" -}}
0
{{- else if not (regexMatch "^([0-9]+(\\.[0-9]+)?(ms|s|m|h|d))+$" $text) -}}
invalid
{{- else -}}
{{- $units := dict "ms" 1 "s" 1000 "m" 60000 "h" 3600000 "d" 86400000 -}}
{{- $total := 0.0 -}}
{{- range regexFindAll "[0-9]+(\\.[0-9]+)?(ms|s|m|h|d)" $text -1 -}}
{{- $unit := regexFind "(ms|s|m|h|d)$" . -}}
{{- $total = addf $total (mulf (trimSuffix $unit . | float64) (get $units $unit)) -}}
{{- end -}}
{{- $whole := round $total 0 -}}
{{- $error := subf $total $whole -}}
{{- if or (gt $whole 9007199254740991.0) (gt $error 0.000001) (lt $error -0.000001) -}}
invalid
{{- else -}}
{{- printf "%.0f" $whole -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/*
The longest --reconcile-interval plus --propagation-delay the controller's certificate policy accepts
(packages/core/src/policy/policy.ts, with its defaults): a CA must enter rotation at least leafLookahead +
leafJitter + propagationDelay + maxConnectionAge + reconcileInterval before its notAfter, so
60d - (35d + 3d + 30m) = 527h30m (527h25m for reconcileInterval with the default propagationDelay 5m).
*/}}
{{- define "eso-mtls.maxReconcilePlusPropagationMs" -}}
1899000000
{{- end -}}

{{/* Fails with `message` when duration `value` of `name` is not one the controller reads; returns its milliseconds. Call with (list name value). */}}
{{- define "eso-mtls.requireDurationMs" -}}
{{- $name := index . 0 -}}
{{- $value := index . 1 -}}
{{- $ms := include "eso-mtls.durationMs" $value -}}
{{- if eq $ms "invalid" -}}
{{- fail (printf "%s is %q: the controller reads a duration such as 500ms, 15s, 10m or 1h30m, in whole milliseconds and at most 9007199254740991ms" $name (toString $value)) -}}
{{- end -}}
{{- $ms -}}
{{- end -}}

{{/* The controller's start-up checks on the values it gets as flags; each failure names the value, the flag and what to do. */}}
{{- define "eso-mtls.validateControllerFlags" -}}
{{- $v := .Values -}}
{{- $propagation := include "eso-mtls.requireDurationMs" (list "propagationDelay" $v.propagationDelay) | int64 -}}
{{- /* 10s and 1h: MIN_PROPAGATION_DELAY and MAX_PROPAGATION_DELAY in packages/controller/src/flags.ts. */ -}}
{{- if or (lt $propagation 10000) (gt $propagation 3600000) -}}
{{- fail (printf "propagationDelay is %q: the controller accepts from 10s to 1h (--propagation-delay) and exits at start-up otherwise. Keep the default 5m in production: below the kubelet's syncFrequency x 1.5 plus its Secret cache TTL and the provider's reload, calls fail during CA rotation" (toString $v.propagationDelay)) -}}
{{- end -}}
{{- $reconcile := include "eso-mtls.requireDurationMs" (list "reconcileInterval" $v.reconcileInterval) | int64 -}}
{{- $maxReconcile := sub (include "eso-mtls.maxReconcilePlusPropagationMs" . | int64) $propagation -}}
{{- if lt $reconcile 1000 -}}
{{- fail (printf "reconcileInterval is %q: the controller needs at least 1s (--reconcile-interval) and exits at start-up otherwise. Use the default 10m" (toString $v.reconcileInterval)) -}}
{{- end -}}
{{- if gt $reconcile $maxReconcile -}}
{{- fail (printf "reconcileInterval is %q with propagationDelay %q: the controller accepts at most 527h30m for the two together (--reconcile-interval, --propagation-delay; 527h25m with the default 5m): a CA must start rotating a reconcile interval and a propagation delay earlier than its leaves' renewal needs, within its 60-day lookahead. Use the default 10m" (toString $v.reconcileInterval) (toString $v.propagationDelay)) -}}
{{- end -}}
{{- if $v.leaderElection.enabled -}}
{{- $le := $v.leaderElection -}}
{{- $lease := include "eso-mtls.requireDurationMs" (list "leaderElection.leaseDuration" $le.leaseDuration) | int64 -}}
{{- $renew := include "eso-mtls.requireDurationMs" (list "leaderElection.renewDeadline" $le.renewDeadline) | int64 -}}
{{- $retry := include "eso-mtls.requireDurationMs" (list "leaderElection.retryPeriod" $le.retryPeriod) | int64 -}}
{{- range $name, $ms := dict "leaseDuration" $lease "renewDeadline" $renew "retryPeriod" $retry -}}
{{- if le $ms 0 -}}
{{- fail (printf "leaderElection.%s is %q: the controller needs a duration above zero" $name (toString (get $le $name))) -}}
{{- end -}}
{{- end -}}
{{- if le $lease $renew -}}
{{- fail (printf "leaderElection.leaseDuration (%s) must be greater than leaderElection.renewDeadline (%s): a leader must give up before another may take over, and the controller exits at start-up otherwise (defaults 15s, 10s)" (toString $le.leaseDuration) (toString $le.renewDeadline)) -}}
{{- end -}}
{{- /* renewDeadline > 1.2 x retryPeriod, in whole numbers: 5 x renewDeadline > 6 x retryPeriod. */ -}}
{{- if le (mul $renew 5) (mul $retry 6) -}}
{{- fail (printf "leaderElection.renewDeadline (%s) must be greater than 1.2 x leaderElection.retryPeriod (%s): the leader needs a retry within its deadline, and the controller exits at start-up otherwise (defaults 10s, 2s)" (toString $le.renewDeadline) (toString $le.retryPeriod)) -}}
{{- end -}}
{{- end -}}
{{- if eq (int $v.metrics.port) (int $v.healthProbePort) -}}
{{- fail (printf "metrics.port and healthProbePort are both %d: the controller cannot listen twice on one port. Choose two ports" (int $v.metrics.port)) -}}
{{- end -}}
{{- if $v.providerLabelPolicy.controllerCheck -}}
{{- $key := $v.providerLabelPolicy.namespaceLabel -}}
{{- if and (contains "/" $key) (gt (len (index (splitList "/" $key) 0)) 253) -}}
{{- fail (printf "providerLabelPolicy.namespaceLabel %q has a prefix longer than 253 characters: a label key's prefix is a DNS subdomain (--require-namespace-label)" $key) -}}
{{- end -}}
{{- end -}}
{{- if $v.hsm.enabled -}}
{{- /* The controller counts UTF-16 code units, as a PKCS#11 label's 32 bytes need: a character beyond U+FFFF is two. */ -}}
{{- $label := $v.hsm.tokenLabel -}}
{{- $units := add (len (splitList "" $label)) (len (regexFindAll "[\\x{10000}-\\x{10FFFF}]" $label -1)) -}}
{{- if gt $units 32 -}}
{{- fail (printf "hsm.tokenLabel %q is %d UTF-16 code units long: --hsm-token-label takes 1 to 32" $label $units) -}}
{{- end -}}
{{- end -}}
{{- include "eso-mtls.validateExtraArgs" . -}}
{{- end -}}

{{/*
extraArgs: each must name a controller flag, give a value to a flag that takes one, and not repeat a
flag the chart renders from a value (the last would win, past the checks above): set the value instead.
*/}}
{{- define "eso-mtls.validateExtraArgs" -}}
{{- $known := splitList " " (include "eso-mtls.controllerFlagNames" .) -}}
{{- $switches := splitList " " (include "eso-mtls.controllerBoolFlags" .) -}}
{{- $rendered := list -}}
{{- range include "eso-mtls.controllerArgs" . | fromYamlArray -}}
{{- $rendered = append $rendered (regexReplaceAll "^--([^=]+).*$" (toString .) "${1}") -}}
{{- end -}}
{{- range .Values.extraArgs -}}
{{- $name := regexReplaceAll "^--([^=]+).*$" . "${1}" -}}
{{- if not (has $name $known) -}}
{{- fail (printf "extraArgs has %q, but the controller has no flag --%s and would exit at start-up: `eso-mtls controller --help` lists its flags" . $name) -}}
{{- end -}}
{{- if and (not (contains "=" .)) (not (has $name $switches)) -}}
{{- fail (printf "extraArgs has %q without a value: give it as --%s=<value> (the controller would take the next argument as its value)" . $name) -}}
{{- end -}}
{{- if has $name $rendered -}}
{{- fail (printf "extraArgs has %q, but the chart already sets --%s from a value: set that value instead (the README's table names it)" . $name) -}}
{{- end -}}
{{- end -}}
{{- end -}}
