{{/*
The CA source (ca.source; docs/chaining-to-your-pki.md): the --ca-* flags, the names the RBAC reads
by, and the rules across its values that values.schema.json cannot express. Nothing here renders
while ca.source is selfSigned.
*/}}

{{/* The CA source's flags, appended to the controller's args. Call only when ca.source is not selfSigned. */}}
{{- define "eso-mtls.caSourceArgs" -}}
{{- $ca := .Values.ca -}}
{{- if eq $ca.source "issuer" -}}
- --ca-issuer={{ $ca.issuer.kind }}/{{ $ca.issuer.name }}
- --ca-issuer-group={{ $ca.issuer.group }}
{{- with $ca.issuer.duration }}
- --ca-intermediate-duration={{ . }}
{{- end }}
- --ca-request-deadline={{ $ca.issuer.requestDeadline }}
{{- else -}}
- --ca-from-secret={{ $ca.secret.name }}
{{- end }}
- --ca-trust-anchors={{ $ca.trustAnchors.kind }}/{{ $ca.trustAnchors.name }}/{{ $ca.trustAnchors.key }}
{{- end -}}

{{/*
The Secrets of the CA source the controller reads and never writes, as a JSON list: the source
Secret and the trust anchors' Secret, once each (the anchors may be a key of the source Secret).
Empty with the self-signed CA.
*/}}
{{- define "eso-mtls.caInputSecretNames" -}}
{{- $ca := .Values.ca -}}
{{- $names := list -}}
{{- if eq $ca.source "secret" -}}
{{- $names = append $names $ca.secret.name -}}
{{- end -}}
{{- if and (ne $ca.source "selfSigned") (eq $ca.trustAnchors.kind "Secret") -}}
{{- $names = append $names $ca.trustAnchors.name -}}
{{- end -}}
{{- $names | uniq | toJson -}}
{{- end -}}

{{/*
The shortest ca.issuer.duration the controller takes (--ca-intermediate-duration), in ms: twice the
certificate policy's CA lookahead of 60 days (minimumIntermediateDuration in
packages/controller/src/flags.ts); and the longest, 2562047h (Go's time.Duration, which cert-manager
reads spec.duration into, ends just past it).
*/}}
{{- define "eso-mtls.minIntermediateDurationMs" -}}
10368000000
{{- end -}}
{{- define "eso-mtls.maxIntermediateDurationMs" -}}
9223369200000
{{- end -}}

{{/* Rules across the CA source's values, as the controller checks them at start-up; each failure names the values and what to do. */}}
{{- define "eso-mtls.validateCaSource" -}}
{{- $v := .Values -}}
{{- $ca := $v.ca -}}
{{- if ne $ca.source "selfSigned" -}}
{{- if and (eq $ca.source "secret") $v.hsm.enabled -}}
{{- fail "ca.source secret cannot be used with hsm.enabled: the intermediate's key would be read from the Secret's tls.key, and the controller never puts a key into the HSM (--ca-from-secret, --hsm-module). With an HSM, use ca.source issuer: the intermediate's key is then generated in the token" -}}
{{- end -}}
{{- $written := dict $v.caSecretName "caSecretName" $v.clientSecretName "clientSecretName" "external-secrets-provider-tls" "the provider Secret name" -}}
{{- $inputs := dict -}}
{{- if eq $ca.source "secret" -}}
{{- $_ := set $inputs "ca.secret.name" $ca.secret.name -}}
{{- end -}}
{{- if eq $ca.trustAnchors.kind "Secret" -}}
{{- $_ := set $inputs "ca.trustAnchors.name" $ca.trustAnchors.name -}}
{{- end -}}
{{- range $value, $name := $inputs -}}
{{- if hasKey $written $name -}}
{{- fail (printf "%s is %q, the same as %s: the controller writes that Secret, and an input must be a Secret you maintain. Name another" $value $name (get $written $name)) -}}
{{- end -}}
{{- end -}}
{{- if eq $ca.source "issuer" -}}
{{- with $ca.issuer.duration -}}
{{- $ms := include "eso-mtls.requireDurationMs" (list "ca.issuer.duration" .) | int64 -}}
{{- if lt $ms (include "eso-mtls.minIntermediateDurationMs" $ | int64) -}}
{{- fail (printf "ca.issuer.duration is %q: too short, the least is 120d (--ca-intermediate-duration). An intermediate is renewed 60d (the CA lookahead) before its notAfter, so a shorter one would spend more of its life being replaced than signing. Ask for 120d or more, or leave it empty for the CA validity" (toString .)) -}}
{{- end -}}
{{- if gt $ms (include "eso-mtls.maxIntermediateDurationMs" $ | int64) -}}
{{- fail (printf "ca.issuer.duration is %q: the longest is 2562047h (--ca-intermediate-duration), what cert-manager can read as spec.duration" (toString .)) -}}
{{- end -}}
{{- end -}}
{{- $deadline := include "eso-mtls.requireDurationMs" (list "ca.issuer.requestDeadline" $ca.issuer.requestDeadline) | int64 -}}
{{- /* 1m and 7d: MIN_CA_REQUEST_DEADLINE and MAX_CA_REQUEST_DEADLINE in packages/controller/src/flags.ts. */ -}}
{{- if or (lt $deadline 60000) (gt $deadline 604800000) -}}
{{- fail (printf "ca.issuer.requestDeadline is %q: the controller accepts from 1m to 7d (--ca-request-deadline) and exits at start-up otherwise" (toString $ca.issuer.requestDeadline)) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
