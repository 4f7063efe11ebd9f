// The upstream CA source against the real cert-manager (v1.21.2's controllers, testing/kit's
// cert-manager helper) and a real kube-apiserver: a CA ClusterIssuer holding a test organisation
// root signs the intermediate we ask for; without the approver the test decides as a policy
// approver would; a ClusterIssuer whose CA Secret is broken is reported, and what cert-manager
// does with a request to it is recorded here.
import { describe, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { days, encodeCaCertificationRequest, splitPemCertificates } from '@eso-mtls/core';
import { createNodeCryptoBackend } from '@eso-mtls/core/node';
import { corePath } from '@eso-mtls/kubernetes';
import { useCertManager } from '@eso-mtls/test-kit/cert-manager';
import { WITHOUT_APPROVER } from '@eso-mtls/test-kit/cert-manager-process';
import { eventually } from '@eso-mtls/test-kit/eventually';
import { opensslP256Ca } from '@eso-mtls/test-kit/pod-certificates';
import { opensslVerifyChain } from '@eso-mtls/test-kit/upstream-pki';
import type { KeyPair } from '@eso-mtls/test-kit/pki';
import type { IssuerReference } from '../../src/installation/ca-source.js';
import { INSTALLATION_ANNOTATION } from '../../src/installation/ownership.js';
import { type CaRequestStatus } from '../../src/upstream/certificate-request-status.js';
import {
  CA_REQUEST_SELECTOR,
  CaRequestConflictError,
  type CertificateRequestObject,
  caRequestManifest,
  caRequestPath,
  caRequestStatus,
  createCaRequest,
  deleteCaRequest,
  getCaRequest,
  isOurCaRequest,
} from '../../src/upstream/certificate-requests.js';
import { readIssuerReadiness } from '../../src/upstream/issuer-readiness.js';
import { MAX_UPSTREAM_PEM_BYTES } from '../../src/upstream/pem-bound.js';
import { readSourceSecret } from '../../src/upstream/source-secret.js';

const suite = useCertManager();
const crypto = createNodeCryptoBackend();
const CLUSTER_RESOURCES = 'kube-system';
// cert-manager's chain of controllers on a loaded 2-core machine: generous, as every wait here.
const ISSUED_MS = 120_000;
const b64 = (text: string): string => Buffer.from(text).toString('base64');

/** The test organisation's root, made by openssl (no pathLenConstraint, as organisation roots have). */
let root: Promise<KeyPair> | undefined;
const organisationRoot = (): Promise<KeyPair> => (root ??= opensslP256Ca('eso-mtls test organisation root'));

/** A CA ClusterIssuer `name` whose Secret (of the same name) holds `tls` (kept when the test's file made it already). */
async function clusterIssuer(name: string, tls: { 'tls.crt': string; 'tls.key': string }): Promise<IssuerReference> {
  const exists = (e: { code?: number }): void => {
    if (e.code !== 409) throw e;
  };
  const data = { 'tls.crt': b64(tls['tls.crt']), 'tls.key': b64(tls['tls.key']) };
  await suite.admin.create(corePath('secrets', CLUSTER_RESOURCES), { metadata: { name }, type: 'kubernetes.io/tls', data }).catch(exists);
  await suite.admin
    .create('/apis/cert-manager.io/v1/clusterissuers', {
      apiVersion: 'cert-manager.io/v1',
      kind: 'ClusterIssuer',
      metadata: { name },
      spec: { ca: { secretName: name } },
    })
    .catch(exists);
  return { kind: 'ClusterIssuer', name, group: 'cert-manager.io' };
}

/** A fresh P-256 key and a CA request for it, through the core's CSR builder. */
async function caRequest(namespace: string, issuer: IssuerReference) {
  const key = await crypto.signer.generateKey('ECDSA-P256');
  const csr = await encodeCaCertificationRequest({
    subject: { organizationName: 'Acme', commonName: 'eso-mtls provider CA intermediate' },
    subjectPublicKeyInfo: key.subjectPublicKeyInfo,
    sign: (data) => crypto.signer.sign(key.privateKeyPem, data),
  });
  const manifest = caRequestManifest({ namespace, installation: `${namespace}/eso-provider-ca-internal`, csrPem: csr.pem, issuer, duration: days(30) });
  return { key, manifest };
}

/** The request's status once it satisfies `done`. */
function statusWhen(namespace: string, name: string, done: (s: CaRequestStatus) => boolean, what: string): Promise<CaRequestStatus> {
  return eventually(
    async () => {
      const request = await getCaRequest(suite.admin, namespace, name);
      const status = request && caRequestStatus(request);
      return status !== undefined && done(status) ? status : false;
    },
    ISSUED_MS,
    what,
  );
}

/** Sets a condition on the request's status subresource, as an approver does. */
async function decide(namespace: string, name: string, type: 'Approved' | 'Denied', message: string): Promise<void> {
  const condition = { type, status: 'True', reason: 'eso-mtls.io/test-approver', message, lastTransitionTime: new Date().toISOString() };
  await suite.admin.mergePatch(`${caRequestPath(namespace, name)}/status`, { status: { conditions: [condition] } });
}

/** Runs `work` with a scratch folder holding `files`. */
function withFiles<T>(files: Record<string, string>, work: (path: (name: string) => string) => T): T {
  const dir = mkdtempSync(join(tmpdir(), 'cm-upstream-'));
  try {
    for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
    return work((name) => join(dir, name));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** `openssl x509 -text` of a certificate. */
const opensslText = (pem: string): string =>
  withFiles({ 'c.pem': pem }, (path) => execFileSync('openssl', ['x509', '-noout', '-text', '-in', path('c.pem')], { encoding: 'utf8' }));

describe('a CA ClusterIssuer holding the organisation root, with the approver', () => {
  it('approves and issues our request: a CA for our key, chained to the root; the request is found, listed and deleted', async () => {
    const ns = await suite.cluster.namespace('eso-issued');
    const org = await organisationRoot();
    const issuer = await clusterIssuer('org-root', { 'tls.crt': org.cert, 'tls.key': org.key });
    await suite.start();
    await eventually(async () => (await readIssuerReadiness(suite.admin, issuer, ns)).state === 'ready', ISSUED_MS, 'the ClusterIssuer Ready');

    const { key, manifest } = await caRequest(ns, issuer);
    expect(manifest.metadata.name).toMatch(/^eso-mtls-ca-[0-9a-f]{10}$/);
    const first = await createCaRequest(suite.admin, manifest);
    expect(first.created).toBe(true);
    // Asked again after a crash between the create and its record, with a CSR signed anew for the
    // same key: the same request, not a second one.
    const resigned = await encodeCaCertificationRequest({
      subject: { organizationName: 'Acme', commonName: 'eso-mtls provider CA intermediate' },
      subjectPublicKeyInfo: key.subjectPublicKeyInfo,
      sign: (data) => crypto.signer.sign(key.privateKeyPem, data),
    });
    const again = caRequestManifest({ namespace: ns, installation: `${ns}/eso-provider-ca-internal`, csrPem: resigned.pem, issuer, duration: days(30) });
    expect(again.spec.request).not.toBe(manifest.spec.request);
    expect(await createCaRequest(suite.admin, again)).toMatchObject({ created: false, request: { metadata: { uid: first.request.metadata.uid } } });
    // The name taken by a request for another key (or another installation's): refused, nothing replaced.
    const other = (await caRequest(ns, issuer)).manifest;
    const squatter = { ...other, metadata: { ...other.metadata, name: manifest.metadata.name } };
    await expect(createCaRequest(suite.admin, squatter)).rejects.toThrow(CaRequestConflictError);
    const otherInstallation = { ...manifest, metadata: { ...manifest.metadata, annotations: { [INSTALLATION_ANNOTATION]: `${ns}/another-ca-secret` } } };
    await expect(createCaRequest(suite.admin, otherInstallation)).rejects.toThrow(
      `CertificateRequest ${ns}/${manifest.metadata.name} exists and is not ours for this key (installation "${ns}/another-ca-secret"): delete it, or let its owner do so`,
    );

    const issued = await statusWhen(ns, manifest.metadata.name, (s) => s.state === 'issued', 'the request issued');
    expect(issued).toMatchObject({ state: 'issued', reason: 'Issued', message: 'Certificate fetched from issuer successfully' });
    expect(issued.refusal).toBeUndefined();
    // The CA issuer returns the certificate alone (its Secret holds only the root) and the root as status.ca.
    const chain = splitPemCertificates(issued.certificatePem!);
    expect(chain).toHaveLength(1);
    expect(new X509Certificate(issued.caPem!).fingerprint256).toBe(new X509Certificate(org.cert).fingerprint256);

    const intermediate = new X509Certificate(chain[0]!);
    expect(intermediate.ca).toBe(true);
    expect(Buffer.from(intermediate.publicKey.export({ type: 'spki', format: 'der' })).equals(Buffer.from(key.subjectPublicKeyInfo))).toBe(true);
    expect(intermediate.subject).toBe('O=Acme\nCN=eso-mtls provider CA intermediate');
    const text = opensslText(chain[0]!);
    // cert-manager builds the certificate from spec.isCA, not from the CSR's basicConstraints: the
    // pathLenConstraint 0 the CSR asks for is not kept (the intermediate may sign further CAs).
    expect(/X509v3 Basic Constraints: critical\s+(.*)/.exec(text)?.[1]).toBe('CA:TRUE');
    expect(text).toMatch(/X509v3 Key Usage: critical\s+Digital Signature, Certificate Sign, CRL Sign/);
    // 30 days asked, 30 days given.
    expect(Date.parse(intermediate.validTo) - Date.parse(intermediate.validFrom)).toBe(days(30));
    expect(opensslVerifyChain(org.cert, issued.certificatePem!)).toMatchObject({ ok: true });

    // The adapter's cache selects ours by label, then by installation.
    const ours = async (installation: string): Promise<string[]> =>
      (await suite.admin.get<{ items: CertificateRequestObject[] }>(caRequestPath(ns), { labelSelector: CA_REQUEST_SELECTOR })).items
        .filter((r) => isOurCaRequest(r, installation))
        .map((r) => r.metadata.name);
    expect(await ours(`${ns}/eso-provider-ca-internal`)).toEqual([manifest.metadata.name]);
    expect(await ours(`${ns}/another-ca-secret`)).toEqual([]);
    // A precondition on another incarnation's uid deletes nothing.
    expect(await deleteCaRequest(suite.admin, ns, manifest.metadata.name, 'not-its-uid')).toBe('conflict');
    expect(await deleteCaRequest(suite.admin, ns, manifest.metadata.name, first.request.metadata.uid)).toBe('deleted');
    expect(await deleteCaRequest(suite.admin, ns, manifest.metadata.name)).toBe('gone');
    expect(await getCaRequest(suite.admin, ns, manifest.metadata.name)).toBeUndefined();
  });

  it('fills a Secret from a Certificate with isCA, which the source-Secret reader takes', async () => {
    const ns = await suite.cluster.namespace('eso-from-certificate');
    const org = await organisationRoot();
    await clusterIssuer('org-root', { 'tls.crt': org.cert, 'tls.key': org.key });
    await suite.start();
    await suite.admin.create(`/apis/cert-manager.io/v1/namespaces/${ns}/certificates`, {
      apiVersion: 'cert-manager.io/v1',
      kind: 'Certificate',
      metadata: { name: 'upstream-ca' },
      spec: {
        secretName: 'upstream-ca',
        isCA: true,
        commonName: 'eso-mtls provider CA (from a Certificate)',
        duration: '720h',
        usages: ['cert sign', 'crl sign', 'digital signature'],
        privateKey: { algorithm: 'ECDSA', size: 256 },
        issuerRef: { group: 'cert-manager.io', kind: 'ClusterIssuer', name: 'org-root' },
      },
    });
    const secret = await eventually(
      async () => {
        const read = await readSourceSecret(suite.admin, ns, 'upstream-ca');
        return read.ok ? read : false;
      },
      ISSUED_MS,
      'the Certificate Secret',
    );
    expect(new X509Certificate(secret.certificatePem).ca).toBe(true);
    expect(new X509Certificate(secret.certificatePem).checkPrivateKey((await import('node:crypto')).createPrivateKey(secret.keyPem))).toBe(true);
    expect(opensslVerifyChain(org.cert, secret.certificatePem)).toMatchObject({ ok: true });
  });
});

describe('without the approver', () => {
  it('a request waits unsigned until the test denies it: denied, and cert-manager marks it Ready=False Denied', async () => {
    const ns = await suite.cluster.namespace('eso-denied');
    const org = await organisationRoot();
    const issuer = await clusterIssuer('org-root-denial', { 'tls.crt': org.cert, 'tls.key': org.key });
    await suite.start({ controllers: WITHOUT_APPROVER });
    await eventually(async () => (await readIssuerReadiness(suite.admin, issuer, ns)).state === 'ready', ISSUED_MS, 'the ClusterIssuer Ready');
    const { manifest } = await caRequest(ns, issuer);
    await createCaRequest(suite.admin, manifest);
    // cert-manager's CA signer has seen it and waits: its WaitingForApproval Event.
    await eventually(
      async () =>
        (await suite.cluster.core.listNamespacedEvent({ namespace: ns, fieldSelector: `involvedObject.name=${manifest.metadata.name}` })).items.some(
          (e) => e.reason === 'WaitingForApproval',
        ),
      ISSUED_MS,
      'the WaitingForApproval Event',
    );
    expect(caRequestStatus((await getCaRequest(suite.admin, ns, manifest.metadata.name))!)).toMatchObject({ state: 'pending' });

    await decide(ns, manifest.metadata.name, 'Denied', 'intermediates are not allowed for this namespace');
    expect(caRequestStatus((await getCaRequest(suite.admin, ns, manifest.metadata.name))!)).toMatchObject({
      state: 'denied',
      reason: 'eso-mtls.io/test-approver',
      message: 'intermediates are not allowed for this namespace',
    });
    const request = await eventually(
      async () => {
        const r = (await getCaRequest(suite.admin, ns, manifest.metadata.name))!;
        return r.status?.conditions?.some((c) => c.type === 'Ready' && c.reason === 'Denied') ? r : false;
      },
      ISSUED_MS,
      'Ready=False Denied',
    );
    expect(request.status?.certificate).toBeUndefined();
    expect(caRequestStatus(request).state).toBe('denied');
  });

  it('a request the test approves is issued', async () => {
    const ns = await suite.cluster.namespace('eso-approved-by-test');
    const org = await organisationRoot();
    const issuer = await clusterIssuer('org-root-approval', { 'tls.crt': org.cert, 'tls.key': org.key });
    await suite.start({ controllers: WITHOUT_APPROVER });
    const { manifest } = await caRequest(ns, issuer);
    await createCaRequest(suite.admin, manifest);
    await decide(ns, manifest.metadata.name, 'Approved', 'allowed by policy');
    expect(caRequestStatus((await getCaRequest(suite.admin, ns, manifest.metadata.name))!).state).toMatch(/^(approved|issued)$/);
    const issued = await statusWhen(ns, manifest.metadata.name, (s) => s.state === 'issued', 'the request issued');
    expect(opensslVerifyChain(org.cert, issued.certificatePem!)).toMatchObject({ ok: true });
  });
});

describe('an issuer that cannot sign', () => {
  it('a broken CA Secret: the issuer is not ready, and the request stays approved, Pending, until the Secret is mended', async () => {
    const ns = await suite.cluster.namespace('eso-broken-issuer');
    const org = await organisationRoot();
    const issuer = await clusterIssuer('org-root-broken', { 'tls.crt': 'not a certificate', 'tls.key': 'not a key' });
    await suite.start();
    const readiness = await eventually(
      async () => {
        const r = await readIssuerReadiness(suite.admin, issuer, ns);
        return r.state === 'not_ready' && r.reason !== undefined ? r : false;
      },
      ISSUED_MS,
      'the ClusterIssuer not Ready',
    );
    expect(readiness).toMatchObject({ state: 'not_ready', reason: 'ErrGetKeyPair' });
    if (readiness.state === 'not_ready')
      expect(readiness.message).toMatch(/^ClusterIssuer org-root-broken is not Ready \(ErrGetKeyPair\): Error getting keypair for CA issuer: /);

    const { manifest } = await caRequest(ns, issuer);
    await createCaRequest(suite.admin, manifest);
    const waiting = await statusWhen(ns, manifest.metadata.name, (s) => s.state === 'approved' && s.reason === 'Pending', 'the request approved and Pending');
    expect(waiting.message).toBe('Referenced issuer does not have a Ready status condition');

    // Mended: cert-manager sees the Secret change, the issuer becomes Ready, the request is issued.
    await suite.admin.mergePatch(corePath('secrets', CLUSTER_RESOURCES, 'org-root-broken'), { data: { 'tls.crt': b64(org.cert), 'tls.key': b64(org.key) } });
    await eventually(async () => (await readIssuerReadiness(suite.admin, issuer, ns)).state === 'ready', ISSUED_MS, 'the ClusterIssuer Ready once mended');
    const issued = await statusWhen(ns, manifest.metadata.name, (s) => s.state === 'issued', 'the request issued once the issuer is mended');
    expect(opensslVerifyChain(org.cert, issued.certificatePem!)).toMatchObject({ ok: true });
  });

  it('an issuer that does not exist: missing, and the request stays approved, Pending', async () => {
    const ns = await suite.cluster.namespace('eso-missing-issuer');
    await suite.start();
    const issuer: IssuerReference = { kind: 'Issuer', name: 'nowhere', group: 'cert-manager.io' };
    expect(await readIssuerReadiness(suite.admin, issuer, ns)).toEqual({
      state: 'missing',
      message: `Issuer ${ns}/nowhere does not exist; create it, or fix --ca-issuer`,
    });
    expect(await readIssuerReadiness(suite.admin, { kind: 'ClusterIssuer', name: 'x', group: 'issuers.example.com' }, ns)).toMatchObject({
      state: 'missing',
      message:
        'ClusterIssuer.issuers.example.com x cannot be read: the apiserver does not serve the API group issuers.example.com; install the CRDs of the issuer of issuers.example.com (looked for again meanwhile), or fix --ca-issuer',
    });
    const { manifest } = await caRequest(ns, issuer);
    await createCaRequest(suite.admin, manifest);
    const waiting = await statusWhen(ns, manifest.metadata.name, (s) => s.state === 'approved' && s.reason === 'Pending', 'the request approved and Pending');
    expect(waiting.message).toMatch(/^Referenced "Issuer" not found: /);
  });
});

describe('bounds', () => {
  it('a status.certificate over 1 MiB of PEM, as the apiserver stores it: too_large, not read', async () => {
    const ns = await suite.cluster.namespace('eso-status-bound');
    const { manifest } = await caRequest(ns, { kind: 'ClusterIssuer', name: 'unused', group: 'cert-manager.io' });
    await createCaRequest(suite.admin, manifest);
    // No cert-manager runs here: the test writes the status an issuer could.
    const big = b64(`-----BEGIN CERTIFICATE-----\n${'A'.repeat(MAX_UPSTREAM_PEM_BYTES)}\n-----END CERTIFICATE-----\n`);
    await suite.admin.mergePatch(`${caRequestPath(ns, manifest.metadata.name)}/status`, {
      status: {
        certificate: big,
        conditions: [{ type: 'Ready', status: 'True', reason: 'Issued', message: 'issued', lastTransitionTime: new Date().toISOString() }],
      },
    });
    const stored = (await getCaRequest(suite.admin, ns, manifest.metadata.name)) as CertificateRequestObject;
    expect(stored.status?.certificate?.length).toBe(big.length);
    const status = caRequestStatus(stored);
    expect(status).toMatchObject({ state: 'issued', refusal: { reason: 'too_large' } });
    expect(status.refusal?.message).toBe(
      `CertificateRequest ${ns}/${manifest.metadata.name} status.certificate holds ${Buffer.byteLength(big, 'base64')} bytes, over the limit of ${MAX_UPSTREAM_PEM_BYTES} bytes of PEM: not read`,
    );
    expect(status.certificatePem).toBeUndefined();
  });
});
