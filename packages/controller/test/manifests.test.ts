import { describe, expect, it } from '@jest/globals';
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { createInterface } from 'node:readline';
import { join, relative, resolve } from 'node:path';
import type {
  V1ClusterRole,
  V1ConfigMap,
  V1Deployment,
  V1Role,
  V1Service,
  V1ValidatingAdmissionPolicy,
  V1ValidatingAdmissionPolicyBinding,
} from '@kubernetes/client-node';
import { PROVIDER_SECRET_NAME, issueCa, issueServerLeaf, resolvePolicy } from '@eso-mtls/core';
import { createNodeCryptoBackend } from '@eso-mtls/core/node';
import { freePort } from '@eso-mtls/test-kit/ports';
import { PROBE_PATHS, parseControllerConfig } from '../src/index.js';
import { find, kustomizeBuild } from '@eso-mtls/test-kit/manifests';
import { repoRoot } from '@eso-mtls/test-kit/repo';

// Static checks of what `kustomize build deploy` emits against what the CLI accepts. The same
// manifests are applied to a real apiserver in rbac.test.ts.
const manifests = kustomizeBuild('deploy');
const deployment = find<V1Deployment>(manifests, 'Deployment', 'eso-mtls-controller');
const pod = deployment.spec!.template.spec!;
const container = pod.containers.find((c) => c.name === 'controller')!;

/** The container's args and env as the CLI sees them (fieldRef values stand in for the kubelet). */
function cliInput(): { argv: string[]; env: Record<string, string> } {
  const [subcommand, ...argv] = container.args ?? [];
  expect(subcommand).toBe('controller');
  const env: Record<string, string> = {};
  for (const e of container.env ?? []) {
    if (e.value !== undefined) env[e.name] = e.value;
    else if (e.valueFrom?.fieldRef?.fieldPath === 'metadata.name') env[e.name] = 'eso-mtls-controller-7d9f8-abcde';
    else if (e.valueFrom?.fieldRef?.fieldPath === 'metadata.namespace') env[e.name] = deployment.metadata!.namespace!;
    else throw new Error(`env ${e.name} has a source this test does not model: ${JSON.stringify(e.valueFrom)}`);
  }
  return { argv, env };
}

function portNumber(nameOrNumber: string | number | undefined): number {
  if (typeof nameOrNumber === 'number') return nameOrNumber;
  const port = container.ports?.find((p) => p.name === nameOrNumber);
  if (!port) throw new Error(`container port ${String(nameOrNumber)} is not declared`);
  return port.containerPort;
}

describe('deploy/ manifests', () => {
  it('passes the container args and env through the CLI parser without error', () => {
    const { argv, env } = cliInput();
    const result = parseControllerConfig(argv, env);
    if (result.kind !== 'config') throw new Error(`the Deployment's args do not parse: ${result.kind === 'error' ? result.error.message : result.kind}`);
    const c = result.config;
    expect(c.leaderElection.enabled).toBe(true);
    expect(c.leaderElection.identity).toBe('eso-mtls-controller-7d9f8-abcde');
    expect(c.policy.esoNamespace).toBe(deployment.metadata!.namespace);
    expect(c.leaderElection.namespace).toBe(deployment.metadata!.namespace);
    expect(c.kubeconfig).toBeUndefined(); // in-cluster
  });

  it('probes the paths and port the CLI serves, and exposes the metrics port it binds', () => {
    const { argv, env } = cliInput();
    const result = parseControllerConfig(argv, env);
    if (result.kind !== 'config') throw new Error('args do not parse');
    const health = result.config.healthProbeBindAddress!;
    const metrics = result.config.metricsBindAddress!;
    expect(health.host).toBeUndefined(); // every interface: the kubelet probes the pod IP
    expect(metrics.host).toBeUndefined();
    expect(container.livenessProbe!.httpGet!.path).toBe(PROBE_PATHS.liveness);
    expect(container.readinessProbe!.httpGet!.path).toBe(PROBE_PATHS.readiness);
    expect(portNumber(container.livenessProbe!.httpGet!.port)).toBe(health.port);
    expect(portNumber(container.readinessProbe!.httpGet!.port)).toBe(health.port);
    expect(portNumber('metrics')).toBe(metrics.port);
    const service = find<V1Service>(manifests, 'Service', 'eso-mtls-controller-metrics');
    expect(portNumber(service.spec!.ports![0]!.targetPort)).toBe(metrics.port);
    for (const [k, v] of Object.entries(service.spec!.selector!)) expect(deployment.spec!.template.metadata!.labels![k]).toBe(v);
  });

  it('restarts only a controller that makes no progress: liveness waits 5 s for an answer and a minute of misses in a row', () => {
    // 1 s and 3 misses restarted both replicas 3 times on a starved node (load 125 on 2 cores), moving leadership each time.
    expect(container.livenessProbe).toMatchObject({ periodSeconds: 10, timeoutSeconds: 5, failureThreshold: 6 });
  });

  it('runs non-root with a read-only root filesystem, no capabilities and the runtime seccomp profile', () => {
    expect(pod.securityContext).toMatchObject({ runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } });
    expect(pod.securityContext!.runAsUser).toBeGreaterThan(0);
    expect(container.securityContext).toMatchObject({
      runAsNonRoot: true,
      readOnlyRootFilesystem: true,
      allowPrivilegeEscalation: false,
      capabilities: { drop: ['ALL'] },
    });
    expect(container.resources!.requests).toMatchObject({ cpu: expect.any(String), memory: expect.any(String) });
    expect(container.resources!.limits).toMatchObject({ memory: expect.any(String) });
    expect(pod.serviceAccountName).toBe('eso-mtls-controller');
  });

  it('runs the bin the controller package declares, from the image the Dockerfile builds', () => {
    const dockerfile = readFileSync(resolve(repoRoot, 'deploy/docker/controller.Dockerfile'), 'utf8');
    const entrypoint = /^ENTRYPOINT\s+(\[.*\])\s*$/m.exec(dockerfile);
    expect(entrypoint).not.toBeNull();
    const [node, script] = JSON.parse(entrypoint![1]!) as string[];
    expect(node).toMatch(/node$/);
    const pkg = JSON.parse(readFileSync(resolve(repoRoot, 'packages/controller/package.json'), 'utf8')) as { bin: Record<string, string> };
    const workdir = /^WORKDIR\s+(\S+)\s*$/gm;
    const dirs = [...dockerfile.matchAll(workdir)].map((m) => m[1]);
    expect(script).toBe(resolve(dirs.at(-1)!, 'packages/controller', pkg.bin['eso-mtls']!));
    const user = [...dockerfile.matchAll(/^USER\s+(\S+)\s*$/gm)].map((m) => m[1]).at(-1);
    expect(user).toBe(String(pod.securityContext!.runAsUser));
    expect(container.image).toMatch(/^eso-mtls\/controller:/);
  });

  it('grants Secrets by name only, except create (which the admission policy restricts)', () => {
    const cluster = find<V1ClusterRole>(manifests, 'ClusterRole', 'eso-mtls-controller');
    const secretRules = cluster.rules!.filter((r) => r.resources!.includes('secrets'));
    for (const r of secretRules) {
      if (r.resourceNames) expect(r.resourceNames).toEqual(['external-secrets-provider-tls']);
      else expect(r.verbs).toEqual(['create']);
    }
    expect(cluster.rules!.flatMap((r) => r.verbs)).not.toContain('delete');
    expect(cluster.rules!.some((r) => r.resources!.includes('*') || r.verbs.includes('*'))).toBe(false);
    const role = find<V1Role>(manifests, 'Role', 'eso-mtls-controller-secrets');
    expect(role.rules).toEqual([
      {
        apiGroups: [''],
        resources: ['secrets'],
        resourceNames: ['eso-provider-ca-internal', 'eso-provider-client-tls'],
        verbs: ['get', 'list', 'watch', 'update', 'patch'],
      },
    ]);
    find(manifests, 'ValidatingAdmissionPolicy', 'eso-mtls-controller-secret-writes');
    find(manifests, 'ValidatingAdmissionPolicyBinding', 'eso-mtls-controller-secret-writes');
  });

  it("gives the admission policies, as parameters, the names the Deployment's flags and ServiceAccount use", () => {
    const { argv, env } = cliInput();
    const result = parseControllerConfig(argv, env);
    if (result.kind !== 'config') throw new Error('args do not parse');
    const c = result.config;
    const params = find<V1ConfigMap>(manifests, 'ConfigMap', 'eso-mtls-controller-admission');
    expect(params.data).toEqual({
      serviceAccountNamespace: deployment.metadata!.namespace,
      serviceAccountName: pod.serviceAccountName,
      esoNamespace: c.policy.esoNamespace,
      caSecretName: c.caSecretName,
      clientSecretName: c.clientSecretName,
      providerSecretName: PROVIDER_SECRET_NAME,
      leaseNamespace: c.leaderElection.namespace,
      leaseName: c.leaderElection.leaseName,
    });
    for (const name of ['eso-mtls-controller-secret-writes', 'eso-mtls-controller-lease-creates']) {
      const policy = find<V1ValidatingAdmissionPolicy>(manifests, 'ValidatingAdmissionPolicy', name);
      expect(policy.spec!.paramKind).toEqual({ apiVersion: 'v1', kind: 'ConfigMap' });
      expect(policy.spec!.failurePolicy).toBe('Fail');
      const binding = find<V1ValidatingAdmissionPolicyBinding>(manifests, 'ValidatingAdmissionPolicyBinding', name);
      expect(binding.spec).toEqual({
        policyName: name,
        validationActions: ['Deny'],
        paramRef: {
          name: params.metadata!.name,
          namespace: params.metadata!.namespace,
          parameterNotFoundAction: 'Allow',
        },
      });
      // Every name comes from the parameters: none of them appears as a literal in the CEL.
      const cel = JSON.stringify([policy.spec!.matchConditions, policy.spec!.variables, policy.spec!.validations]);
      for (const value of Object.values(params.data!)) expect({ name, literal: cel.includes(`'${value}'`) }).toEqual({ name, literal: false });
    }
    // An overlay's namespace: transformer moves the bindings' paramRef along with the ConfigMap (kustomizeconfig.yaml).
    const overlay = mkdtempSync(join(tmpdir(), 'eso-mtls-ns-overlay-'));
    try {
      writeFileSync(join(overlay, 'kustomization.yaml'), `namespace: other-ns\nresources:\n- ${relative(overlay, resolve(repoRoot, 'deploy/base'))}\n`);
      const moved = kustomizeBuild(overlay);
      expect(find<V1ConfigMap>(moved, 'ConfigMap', 'eso-mtls-controller-admission').metadata!.namespace).toBe('other-ns');
      expect(
        moved.filter((m) => m.kind === 'ValidatingAdmissionPolicyBinding').map((b) => (b as V1ValidatingAdmissionPolicyBinding).spec!.paramRef!.namespace),
      ).toEqual(['other-ns', 'other-ns']);
    } finally {
      rmSync(overlay, { recursive: true, force: true });
    }
    const leaseRole = find<V1Role>(manifests, 'Role', 'eso-mtls-controller-leader-election');
    expect(leaseRole.metadata!.namespace).toBe(c.leaderElection.namespace);
    expect(leaseRole.rules!.find((r) => r.verbs.includes('get'))!.resourceNames).toEqual([c.leaderElection.leaseName]);
  });

  it('keeps the PrometheusRule out of the default build; the opt-in overlay adds exactly it', () => {
    expect(manifests.filter((m) => m.kind === 'PrometheusRule')).toEqual([]);
    const withRule = kustomizeBuild('deploy/overlays/prometheus-rule');
    const rules = withRule.filter((m) => m.kind === 'PrometheusRule');
    expect(rules).toHaveLength(1);
    expect(rules[0]!.metadata!.namespace).toBe(deployment.metadata!.namespace);
    expect(withRule.filter((m) => m.kind !== 'PrometheusRule')).toEqual(manifests);
  });
});

describe('deploy/examples/file-provider manifests', () => {
  const example = kustomizeBuild('deploy/examples/file-provider');
  const providerDeployment = find<V1Deployment>(example, 'Deployment', 'file-provider');
  const providerPod = providerDeployment.spec!.template.spec!;
  const provider = providerPod.containers[0]!;
  const service = find<V1Service>(example, 'Service', 'file-provider');

  it('labels the Service for the controller and points it at the gRPC port of the pods', () => {
    expect(service.metadata!.labels!['external-secrets.io/provider']).toBe('true');
    for (const [k, v] of Object.entries(service.spec!.selector!)) expect(providerDeployment.spec!.template.metadata!.labels![k]).toBe(v);
    const target = service.spec!.ports![0]!.targetPort;
    expect(provider.ports!.find((p) => p.name === target)?.name).toBe('grpc');
  });

  it('mounts external-secrets-provider-tls at /etc/provider/certs, never with subPath', () => {
    const volume = providerPod.volumes!.find((v) => v.secret?.secretName === 'external-secrets-provider-tls')!;
    const mounts = provider.volumeMounts!.filter((m) => m.name === volume.name);
    expect(mounts).toEqual([{ name: volume.name, mountPath: '/etc/provider/certs', readOnly: true }]);
    expect(mounts.some((m) => m.subPath !== undefined || m.subPathExpr !== undefined)).toBe(false);
    const raw = readFileSync(resolve(repoRoot, 'deploy/examples/file-provider/deployment.yaml'), 'utf8');
    expect(raw).toMatch(/NEVER mount this Secret with subPath/);
  });

  it('passes its args and env through the provider CLI parser, with ports and cert dir matching the manifest', async () => {
    const { parseFileProviderConfig } = await import('../../../examples/file-provider/src/config.js');
    const env: Record<string, string> = {};
    for (const e of provider.env ?? []) {
      if (e.value !== undefined) env[e.name] = e.value;
      else if (e.valueFrom?.fieldRef?.fieldPath === 'metadata.namespace') env[e.name] = providerDeployment.metadata!.namespace!;
      else throw new Error(`env ${e.name}: source not modelled`);
    }
    const config = parseFileProviderConfig(provider.args ?? [], env);
    expect(config.certDir).toBe('/etc/provider/certs');
    expect(config.port).toBe(provider.ports!.find((p) => p.name === 'grpc')!.containerPort);
    expect(config.healthPort).toBe(provider.ports!.find((p) => p.name === 'health')!.containerPort);
    expect(config.metrics).toEqual({ namespace: 'provider-file', service: service.metadata!.name });
    const dataMount = provider.volumeMounts!.find((m) => config.dataFile.startsWith(`${m.mountPath}/`));
    expect(providerPod.volumes!.find((v) => v.name === dataMount?.name)?.emptyDir).toBeDefined(); // writable under a read-only root
    for (const probe of [provider.livenessProbe!, provider.readinessProbe!]) {
      expect(provider.ports!.find((p) => p.name === probe.httpGet!.port)!.containerPort).toBe(config.healthPort);
    }
    expect(provider.livenessProbe!.httpGet!.path).toBe('/healthz');
    expect(provider.readinessProbe!.httpGet!.path).toBe('/readyz');
    expect(provider.securityContext).toMatchObject({ readOnlyRootFilesystem: true, runAsNonRoot: true, capabilities: { drop: ['ALL'] } });
  });

  it('judges liveness only once the provider has started (5 minutes for a start), then restarts it only after a minute of misses', () => {
    // 33 of 80 providers started at once on a starved node were restarted before they ever served.
    expect(provider.startupProbe).toEqual({
      httpGet: provider.livenessProbe!.httpGet,
      periodSeconds: 5,
      timeoutSeconds: 5,
      failureThreshold: 60,
    });
    expect(provider.livenessProbe).toMatchObject({ periodSeconds: 10, timeoutSeconds: 5, failureThreshold: 6 });
  });
});

describe('deploy/docker/file-provider.Dockerfile', () => {
  const dockerfile = readFileSync(resolve(repoRoot, 'deploy/docker/file-provider.Dockerfile'), 'utf8');
  const tsconfig = JSON.parse(readFileSync(resolve(repoRoot, 'deploy/docker/file-provider.tsconfig.json'), 'utf8')) as {
    compilerOptions: { rootDir: string; outDir: string };
  };

  it('runs the file the image compiles from examples/file-provider/src/main.ts', () => {
    const [, script] = JSON.parse(/^ENTRYPOINT\s+(\[.*\])\s*$/m.exec(dockerfile)![1]!) as string[];
    const workdir = [...dockerfile.matchAll(/^WORKDIR\s+(\S+)\s*$/gm)].map((m) => m[1]!).at(-1)!;
    const outDir = resolve(repoRoot, 'deploy/docker', tsconfig.compilerOptions.outDir);
    expect(resolve(repoRoot, 'deploy/docker', tsconfig.compilerOptions.rootDir)).toBe(resolve(repoRoot, 'examples/file-provider/src'));
    expect(script).toBe(join(workdir, outDir.slice(repoRoot.length + 1), 'main.js'));
    expect(dockerfile).toContain('npx tsc -p deploy/docker/file-provider.tsconfig.json');
  });

  it('compiles with that tsconfig, and the compiled entrypoint serves the probe paths of the manifest', async () => {
    const out = mkdtempSync(join(repoRoot, 'deploy/docker/dist-test-'));
    const certs = mkdtempSync(join(tmpdir(), 'eso-mtls-fp-'));
    try {
      execFileSync(
        process.execPath,
        [resolve(repoRoot, 'node_modules/typescript/bin/tsc'), '-p', resolve(repoRoot, 'deploy/docker/file-provider.tsconfig.json'), '--outDir', out],
        { stdio: 'pipe' },
      );
      const container = find<V1Deployment>(kustomizeBuild('deploy/examples/file-provider'), 'Deployment', 'file-provider').spec!.template.spec!.containers[0]!;
      // What the controller would put into the mounted Secret.
      const ctx = { crypto: createNodeCryptoBackend(), policy: resolvePolicy(), now: Date.now() };
      const ca = await issueCa(ctx);
      const leaf = await issueServerLeaf(ctx, ca, ['file-provider.provider-file.svc']);
      writeFileSync(join(certs, 'ca.crt'), ca.certificate.pem);
      writeFileSync(join(certs, 'tls.crt'), leaf.certificate.pem);
      writeFileSync(join(certs, 'tls.key'), leaf.privateKeyPem);
      const healthPort = await freePort();
      // The manifest's args, then (last wins) loopback, free ports and a temp dir instead of the pod's.
      const child = spawn(
        process.execPath,
        [
          join(out, 'main.js'),
          ...(container.args ?? []),
          '--host=127.0.0.1',
          '--port=0',
          `--health-port=${healthPort}`,
          `--cert-dir=${certs}`,
          `--data-file=${join(certs, 'data.yaml')}`,
        ],
        { stdio: ['ignore', 'pipe', 'pipe'] },
      );
      try {
        await new Promise<void>((resolveLine, reject) => {
          const timer = setTimeout(() => reject(new Error('the compiled provider did not log "serving" within 20 s')), 20_000);
          createInterface({ input: child.stdout! }).on('line', (l) => {
            if ((JSON.parse(l) as { message: string }).message === 'serving') {
              clearTimeout(timer);
              resolveLine();
            }
          });
          child.once('exit', (code) => reject(new Error(`compiled provider exited with ${code}`)));
        });
        const base = `http://127.0.0.1:${healthPort}`;
        expect((await fetch(base + container.livenessProbe!.httpGet!.path)).status).toBe(200);
        expect((await fetch(base + container.readinessProbe!.httpGet!.path)).status).toBe(200);
      } finally {
        child.kill('SIGKILL');
      }
    } finally {
      rmSync(out, { recursive: true, force: true });
      rmSync(certs, { recursive: true, force: true });
    }
  }, 60_000);
});
