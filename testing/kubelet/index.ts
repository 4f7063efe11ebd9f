/**
 * A stand-in for the kubelet's pod-certificate duties on the test control plane (no kubelet runs
 * there): a node that runs pods with a `podCertificate` projected volume, asks for their
 * certificates as `system:node:<name>` with real keys and stub PKCS#10 requests, waits for the
 * signer's answer, and keeps each pod's folder (credential bundle and trust anchors) the way the
 * kubelet writes it. The signer is not here: tests run the real one, or act as one.
 *
 * Only what some test imports is exported here (knip); the modules export more (keys.ts,
 * outcome.ts, pem-files.ts): add a name here when a test needs it.
 */
export { type ClusterTrustBundle, type PodCertificateRequest, podCertificateRequestPath, podCertificateRequestsPath } from './api.js';
export { KUBELET_KEY_TYPES, type KubeletKeyType, weakExponentRsaKey } from './keys.js';
export { type KubeletPod, labelSelectorQuery, PodCertificateKubelet, type PodCertificatePodSpec } from './kubelet.js';
export { PodCertificateVolume } from './volume.js';
