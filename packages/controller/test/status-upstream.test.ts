// `eso-mtls status` with an upstream CA source: the intermediate the core placed after the openssl
// CLI answered its request as an organisation's CA issuer would; the path up to the anchor, the
// pending CertificateRequest, what the CA waits for, and the source's problems as the controller
// reports them, in text and JSON.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  CertificateCache,
  type Instant,
  MemoryStore,
  type SecretState,
  type UpstreamObservation,
  days,
  executePlan,
  hours,
  materializeCaRequest,
  planRotation,
  resolvePolicy,
} from '@eso-mtls/core';
import { createNodeCryptoBackend } from '@eso-mtls/core/node';
import { COMPONENT_LABEL, type CaSource, INSTALLATION_ANNOTATION, MANAGED_BY, MANAGED_BY_LABEL, installationId, installationOf } from '@eso-mtls/kubernetes';
import type { V1Secret, V1Service } from '@kubernetes/client-node';
import type { ClusterState } from '../src/status/cluster-state.js';
import { evaluateStatus } from '../src/status/evaluate.js';
import { renderJson } from '../src/status/render-data.js';
import { paletteFor, renderText } from '../src/status/render-text.js';

const crypto = createNodeCryptoBackend();
const policy = resolvePolicy();
const ESO = policy.esoNamespace;
const NOW = Math.floor(Date.now() / 1000) * 1000 + 60_000;
const SOURCE = 'issuer/ClusterIssuer/org-ca';
const caSource: CaSource = {
  kind: 'issuer',
  issuer: { kind: 'ClusterIssuer', name: 'org-ca', group: 'cert-manager.io' },
  trustAnchors: { kind: 'ConfigMap', name: 'org-roots', key: 'ca.crt' },
  requestDeadline: hours(1),
};
const settings = { policy, caSecretName: 'eso-provider-ca-internal', clientSecretName: 'eso-provider-client-tls' };
const assumed = { ...installationOf({ ...settings, caSource }, 'status-test'), sources: new Map() };
const plain = paletteFor(false, {});

// The organisation's PKI: a root made by openssl, which answers our PKCS#10 requests.
let dir: string;
let rootPem: string;
const openssl = (args: string[]): string => execFileSync('openssl', args, { cwd: dir, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'status-upstream-'));
  writeFileSync(
    join(dir, 'ext.cnf'),
    [
      '[root]',
      'basicConstraints = critical, CA:TRUE',
      'keyUsage = critical, keyCertSign, cRLSign',
      'subjectKeyIdentifier = hash',
      '[intermediate]',
      'basicConstraints = critical, CA:TRUE, pathlen:0',
      'keyUsage = critical, keyCertSign, cRLSign',
      'subjectKeyIdentifier = hash',
      'authorityKeyIdentifier = keyid:always',
      '',
    ].join('\n'),
  );
  openssl(
    ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', 'root.key', '-out', 'root.pem'].concat([
      '-subj',
      '/O=Acme/CN=Acme Root',
      '-days',
      '3650',
      '-config',
      'ext.cnf',
      '-extensions',
      'root',
    ]),
  );
  rootPem = readFileSync(join(dir, 'root.pem'), 'utf8');
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The issuer's answer to `csrPem`: an intermediate valid for a year, signed by the root. */
function answer(csrPem: string): string {
  writeFileSync(join(dir, 'request.csr'), csrPem);
  openssl(
    ['x509', '-req', '-in', 'request.csr', '-CA', 'root.pem', '-CAkey', 'root.key', '-set_serial', '4660', '-days', '365', '-out', 'intermediate.pem'].concat([
      '-extfile',
      'ext.cnf',
      '-extensions',
      'intermediate',
    ]),
  );
  return readFileSync(join(dir, 'intermediate.pem'), 'utf8');
}

/** A cluster with one provider Service, planned and written by the core with the issuer upstream. */
class Cluster {
  readonly store = new MemoryStore();
  readonly cache = new CertificateCache(crypto.verifier);
  request?: UpstreamObservation['request'];
  constructor() {
    this.store.setServices('team-a', [{ name: 'vault' }]);
  }
  observation(): UpstreamObservation {
    return {
      kind: 'issuer',
      source: SOURCE,
      anchors: { ok: true, text: rootPem },
      issuer: { state: 'ready', message: 'Signing CA verified' },
      ...(this.request ? { request: this.request } : {}),
      requestedValidity: days(365),
      requestDeadline: hours(1),
    };
  }
  /** One round of the controller: the request the plan asks for, or its writes. Returns the CSR sent, if any. */
  async round(now: Instant): Promise<string | undefined> {
    const plan = planRotation({ ...this.store.snapshot(), upstream: this.observation() }, { now, policy, cache: this.cache });
    if (plan.upstream?.request && !plan.ca) {
      const material = await materializeCaRequest(plan, this.store.get('ca'), crypto);
      this.store.apply(material.write!);
      this.request = { name: material.name, state: 'pending', since: now, message: 'waiting for approval' };
      return material.csrPem;
    }
    for (const w of await executePlan(plan, { crypto, now })) this.store.apply(w);
    return undefined;
  }
  /** What status reads, as the apiserver holds it. */
  state(upstream: UpstreamObservation | undefined): ClusterState {
    const ca = this.store.get('ca');
    const client = this.store.get('client');
    const provider = this.store.get({ namespace: 'team-a' });
    return {
      services: [service('team-a', 'vault')],
      providerSecrets: provider ? [secret('team-a', 'external-secrets-provider-tls', 'provider-tls', provider)] : [],
      unreadableNamespaces: new Map(),
      caSecret: { kind: 'read', secret: ca && secret(ESO, assumed.caSecretName, 'ca', ca) },
      clientSecret: { kind: 'read', secret: client && secret(ESO, assumed.clientSecretName, 'client-tls', client) },
      ...(upstream ? { upstream } : {}),
    };
  }
}

const service = (namespace: string, name: string): V1Service => ({ metadata: { namespace, name, labels: { 'external-secrets.io/provider': 'true' } } });
const b64 = (v: string | Uint8Array): string => Buffer.from(v).toString('base64');

/** A Secret of this installation as the controller writes it, from the store's state. */
function secret(namespace: string, name: string, component: string, state: SecretState): V1Secret {
  return {
    type: component === 'ca' ? 'Opaque' : 'kubernetes.io/tls',
    metadata: {
      name,
      namespace,
      resourceVersion: state.version ?? '1',
      labels: { [MANAGED_BY_LABEL]: MANAGED_BY, [COMPONENT_LABEL]: component },
      annotations: { ...state.annotations, [INSTALLATION_ANNOTATION]: installationId(ESO, assumed.caSecretName) },
    },
    data: Object.fromEntries(Object.entries(state.data).flatMap(([k, v]) => (v === undefined ? [] : [[k, b64(v as string | Uint8Array)]]))),
  };
}

describe('eso-mtls status with an intermediate from a cert-manager issuer', () => {
  it('shows the source, the active path up to its anchor, and no problem once the issued intermediate signs', async () => {
    const c = new Cluster();
    const csr = await c.round(NOW);
    const intermediate = answer(csr!);
    c.request = { ...c.request!, state: 'issued', since: NOW, certificate: intermediate + rootPem, ca: rootPem };
    await c.round(NOW);
    c.request = undefined; // placed: the CA Secret names no request any more

    const report = evaluateStatus(c.state(c.observation()), assumed, NOW, c.cache);
    expect(report.ca.upstream).toEqual({
      configured: SOURCE,
      trustAnchors: 'ConfigMap/org-roots/ca.crt',
      recorded: SOURCE,
      sourceRead: true,
      paths: [
        {
          slot: 'active',
          certificates: [
            expect.objectContaining({ subject: expect.stringContaining('CN='), serialNumber: '1234', anchor: false, daysLeft: 364 }),
            expect.objectContaining({ subject: 'CN=Acme Root,O=Acme', anchor: true }),
          ],
        },
      ],
    });
    expect(report.ca.problems).toEqual([]);
    expect(report.summary.healthy).toBe(true);

    const text = renderText(report, plain);
    expect(text).toContain(`  source           ${SOURCE} (trust anchors ConfigMap/org-roots/ca.crt); the CA Secret records the same`);
    expect(text).toMatch(
      / {2}active path {6}\S.*serial 1234, notAfter \S+ \(364 days left\)\n {19}<- CN=Acme Root,O=Acme, serial \S+, notAfter \S+ \(\d+ days left, trust anchor\)/,
    );
    const json = JSON.parse(renderJson(report));
    expect(json.ca.upstream.paths[0].certificates.map((x: { anchor: boolean }) => x.anchor)).toEqual([false, true]);
    expect(renderJson(report)).not.toContain('PRIVATE KEY');
  });

  it('names the pending CertificateRequest, what the CA waits for, and the overdue request as a problem', async () => {
    const c = new Cluster();
    await c.round(NOW);
    const name = c.request!.name;
    const later = NOW + hours(2);

    const report = evaluateStatus(c.state(c.observation()), assumed, later, c.cache);
    const upstream = report.ca.upstream!;
    expect(upstream.pendingRequest).toBe(`${ESO}/${name}`);
    expect(upstream.waitingFor).toBe(`CertificateRequest ${ESO}/${name} to be approved and issued by ${SOURCE} (pending: waiting for approval)`);
    expect(upstream.paths).toEqual([]);
    expect(report.ca.problems).toContainEqual({
      kind: 'upstream',
      message: `request_overdue: CertificateRequest ${name} has been pending for over 1h: waiting for approval`,
    });
    expect(report.summary.exitCode).toBe(1);
    const text = renderText(report, plain);
    expect(text).toContain(`  pending request  ${ESO}/${name}\n  waiting for      CertificateRequest ${ESO}/${name} to be approved`);
    expect(text).toContain('problem (upstream): request_overdue: CertificateRequest');
  });

  it('says when it did not read the source, and shows the paths the CA Secret holds all the same', async () => {
    const c = new Cluster();
    const csr = await c.round(NOW);
    c.request = { ...c.request!, state: 'issued', since: NOW, certificate: answer(csr!) + rootPem };
    await c.round(NOW);

    const report = evaluateStatus(c.state(undefined), assumed, NOW, c.cache);
    expect(report.ca.upstream).toMatchObject({ configured: SOURCE, recorded: SOURCE, sourceRead: false });
    expect(report.ca.upstream!.paths[0]!.certificates).toHaveLength(2);
    expect(renderText(report, plain)).toContain('the source was not read: its problems, and what the CA waits for, are not shown');
    // Judged as the controller judges it, not as a self-signed CA due for a rotation back.
    expect(report.ca.due).toBeUndefined();
    expect(report.ca.problems).toEqual([]);
    expect(report.summary).toMatchObject({ healthy: true, problems: 0 });
  });

  it('shows no upstream section for the self-signed CA', async () => {
    const store = new MemoryStore();
    store.setServices('team-a', [{ name: 'vault' }]);
    const cache = new CertificateCache(crypto.verifier);
    const plan = planRotation(store.snapshot(), { now: NOW, policy, cache });
    for (const w of await executePlan(plan, { crypto, now: NOW })) store.apply(w);
    const state: ClusterState = {
      services: [service('team-a', 'vault')],
      providerSecrets: [secret('team-a', 'external-secrets-provider-tls', 'provider-tls', store.get({ namespace: 'team-a' })!)],
      unreadableNamespaces: new Map(),
      caSecret: { kind: 'read', secret: secret(ESO, assumed.caSecretName, 'ca', store.get('ca')!) },
      clientSecret: { kind: 'read', secret: secret(ESO, assumed.clientSecretName, 'client-tls', store.get('client')!) },
    };
    const selfSigned = { ...installationOf(settings, 'status-test'), sources: new Map() };
    const report = evaluateStatus(state, selfSigned, NOW, cache);
    expect(report.ca.upstream).toBeUndefined();
    expect(report.summary.healthy).toBe(true);
    expect(renderText(report, plain)).not.toContain('source ');
  });
});
