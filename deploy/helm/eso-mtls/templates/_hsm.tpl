{{/*
The HSM mode (hsm.enabled; docs/hsm.md): the CA keys in a PKCS#11 token. The controller's flags, the
PIN Secret mounted as a file, the image that can load a module, and the rules across its values.
Nothing here renders while hsm.enabled is false.
*/}}

{{/* Where the PIN Secret's key is mounted: a folder of its own, read-only, holding the one file. */}}
{{- define "eso-mtls.hsmPinDir" -}}
/var/run/secrets/eso-mtls/hsm
{{- end -}}

{{/* The HSM flags, appended to the controller's args. The PIN is a file, never a flag value. */}}
{{- define "eso-mtls.hsmArgs" -}}
{{- $h := .Values.hsm -}}
- {{ printf "--hsm-module=%s" $h.modulePath | quote }}
- {{ printf "--hsm-token-label=%s" $h.tokenLabel | quote }}
- {{ printf "--hsm-key-label-prefix=%s" $h.keyLabelPrefix | quote }}
- --hsm-pin-file={{ include "eso-mtls.hsmPinDir" . }}/pin
- --hsm-keep-retired-keys={{ $h.keepRetiredKeys }}
{{- end -}}

{{/* The pod's volumes: the PIN Secret's one key as the file `pin`, then hsm.volumes. */}}
{{- define "eso-mtls.hsmVolumes" -}}
{{- $h := .Values.hsm -}}
- name: hsm-pin
  secret:
    secretName: {{ $h.pinSecret.name }}
    # 0440 with the pod's fsGroup: readable by the controller's group, by no one else.
    defaultMode: 288
    items:
    - key: {{ $h.pinSecret.key | quote }}
      path: pin
{{- with $h.volumes }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* The controller container's mounts: the PIN folder, read-only, then hsm.volumeMounts. */}}
{{- define "eso-mtls.hsmVolumeMounts" -}}
- name: hsm-pin
  mountPath: {{ include "eso-mtls.hsmPinDir" . }}
  readOnly: true
{{- with .Values.hsm.volumeMounts }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* The controller's image values: hsm.image when the mode is on and it names a repository, else image. */}}
{{- define "eso-mtls.controllerImage" -}}
{{- $image := .Values.image -}}
{{- if and .Values.hsm.enabled .Values.hsm.image.repository -}}
{{- $image = .Values.hsm.image -}}
{{- end -}}
{{- include "eso-mtls.image" (dict "image" $image "appVersion" .Chart.AppVersion) -}}
{{- end -}}

{{/* Rules across the HSM values; each failure names the values and what to do. */}}
{{- define "eso-mtls.validateHsm" -}}
{{- $h := .Values.hsm -}}
{{- if $h.enabled -}}
{{- if not $h.modulePath -}}
{{- fail "hsm.enabled needs hsm.modulePath (--hsm-module): the PKCS#11 module's path in the image or a volume, e.g. /opt/hsm/libsofthsm2.so (docs/hsm.md)" -}}
{{- end -}}
{{- if not $h.tokenLabel -}}
{{- fail "hsm.enabled needs hsm.tokenLabel (--hsm-token-label): the label of the token holding the CA keys" -}}
{{- end -}}
{{- if not $h.pinSecret.name -}}
{{- fail (printf "hsm.enabled needs hsm.pinSecret.name: an existing Secret holding the token's user PIN under hsm.pinSecret.key (the chart never renders it). Create one with: kubectl -n %s create secret generic eso-mtls-hsm-pin --from-file=%s=<pin file>" (include "eso-mtls.namespace" .) $h.pinSecret.key) -}}
{{- end -}}
{{- range $.Values.extraEnv -}}
{{- if eq .name "ESO_MTLS_HSM_PIN" -}}
{{- fail "extraEnv sets ESO_MTLS_HSM_PIN, but with hsm.enabled the chart passes the PIN as a file (hsm.pinSecret, --hsm-pin-file) and the controller takes exactly one: remove it from extraEnv" -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
