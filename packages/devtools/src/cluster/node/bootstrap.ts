import { CLUSTER_NETWORK } from './addresses.js';

/** The user CoreDNS reads the cluster as (a static token of the control plane). */
export const COREDNS_USER = 'system:coredns';

/**
 * What a cluster's add-on manager would create: cluster DNS as a Service with a fixed ClusterIP and
 * no selector (CoreDNS runs as a process of the control plane, not a pod), its EndpointSlice
 * pointing at the control plane's address, which every node routes to, and the read-only rights CoreDNS needs. Returned as objects for a server-side apply.
 */
export function bootstrapObjects(): readonly Record<string, unknown>[] {
  const ports = [
    { name: 'dns', port: 53, protocol: 'UDP' },
    { name: 'dns-tcp', port: 53, protocol: 'TCP' },
  ];
  return [
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name: COREDNS_USER },
      rules: [
        { apiGroups: [''], resources: ['services', 'pods', 'namespaces'], verbs: ['list', 'watch'] },
        { apiGroups: ['discovery.k8s.io'], resources: ['endpointslices'], verbs: ['list', 'watch'] },
      ],
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name: COREDNS_USER },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: COREDNS_USER },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: COREDNS_USER }],
    },
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'kube-dns', namespace: 'kube-system', labels: { 'k8s-app': 'kube-dns' } },
      spec: { clusterIP: CLUSTER_NETWORK.dnsServiceIp, ports: ports.map((p) => ({ ...p, targetPort: 53 })) },
    },
    {
      apiVersion: 'discovery.k8s.io/v1',
      kind: 'EndpointSlice',
      metadata: {
        name: 'kube-dns-control-plane',
        namespace: 'kube-system',
        labels: { 'kubernetes.io/service-name': 'kube-dns', 'endpointslice.kubernetes.io/managed-by': 'eso-mtls-real-node' },
      },
      addressType: 'IPv4',
      endpoints: [{ addresses: [CLUSTER_NETWORK.controlPlaneIp], conditions: { ready: true } }],
      ports,
    },
  ];
}
