{{/*
Pod-certificate mode (modes has pod-certificate; docs/pod-certificates.md): the signer's ClusterRole
rules, the projected volume pods mount, and the rules across its values. The same rules and volume
as deploy/overlays/pod-certificates/signer-rbac and deploy/examples/file-provider-pod-certificates.
*/}}

{{/* The label the controller puts on its ClusterTrustBundles; every projection selects by it. */}}
{{- define "eso-mtls.trustBundleSelector" -}}
matchLabels:
  eso-mtls.io/trust-bundle: "true"
{{- end -}}

{{/* The signer's ClusterRole rules, appended after the Events rule. */}}
{{- define "eso-mtls.podCertificateRules" -}}
{{- $p := .Values.podCertificate -}}
# sign: every status write (Issued, Denied, Failed) of a PodCertificateRequest for our signers.
# attest: every create and update of their ClusterTrustBundles. Our two signer names only.
- apiGroups: ["certificates.k8s.io"]
  resources: ["signers"]
  resourceNames: [{{ $p.serverSignerName | quote }}, {{ $p.clientSignerName | quote }}]
  verbs: ["sign", "attest"]
# The kubelets' requests, in every namespace; the verdict goes into the status subresource (PUT).
- apiGroups: ["certificates.k8s.io"]
  resources: ["podcertificaterequests"]
  verbs: ["get", "list", "watch"]
- apiGroups: ["certificates.k8s.io"]
  resources: ["podcertificaterequests/status"]
  verbs: ["update"]
# The CA set, published as <signer name with / replaced by :>:ca.
- apiGroups: ["certificates.k8s.io"]
  resources: ["clustertrustbundles"]
  verbs: ["get", "list", "watch", "create", "update"]
# The pods' labels, matched against labelled Services' selectors; read as metadata only.
- apiGroups: [""]
  resources: ["pods"]
  verbs: ["get", "list", "watch"]
{{- end -}}

{{/*
The projected volume's sources: the pod's key and chain from `signer` in credentials.pem, and the
CAs of `trustSigner` in ca.crt. Call with (dict "signer" ... "trustSigner" ...).
*/}}
{{- define "eso-mtls.podCertificateSources" -}}
- podCertificate:
    signerName: {{ .signer }}
    keyType: ECDSAP256
    # 24 hours: a changed Service name or selector reaches the pod at its next refresh.
    maxExpirationSeconds: 86400
    credentialBundlePath: credentials.pem
# With a signerName and no labelSelector a projection matches nothing: keep the selector.
- clusterTrustBundle:
    signerName: {{ .trustSigner }}
    labelSelector:
      {{- include "eso-mtls.trustBundleSelector" . | nindent 6 }}
    path: ca.crt
{{- end -}}

{{/* Rules across the pod-certificate values; each failure names the values and what to do. */}}
{{- define "eso-mtls.validatePodCertificate" -}}
{{- $p := .Values.podCertificate -}}
{{- if and (has "pod-certificate" .Values.modes) (eq $p.serverSignerName $p.clientSignerName) -}}
{{- fail (printf "podCertificate.serverSignerName and podCertificate.clientSignerName are both %q: the server and client signers need different names" $p.serverSignerName) -}}
{{- end -}}
{{- end -}}
