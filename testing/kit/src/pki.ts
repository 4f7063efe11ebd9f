// Test certificates issued by @eso-mtls/core exactly as the controller issues them.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  type Issued,
  clientSpiffeId,
  issueCa,
  issueClientLeaf,
  issueServerLeaf,
  resolvePolicy,
  type IssueContext,
  type KeyedCertificate,
  type Policy,
} from '@eso-mtls/core';
import { createNodeCryptoBackend } from '@eso-mtls/core/node';

/** A certificate and its private key, PEM. */
export interface KeyPair {
  readonly cert: string;
  readonly key: string;
}

/** The DNS name tests dial (with ssl_target_name_override), as the core names a Service. */
export const TEST_SERVER_NAME = 'file-provider.provider-system.svc';
/** The policy the test certificates are issued under: the design's defaults. */
export const TEST_POLICY: Policy = resolvePolicy();
/** The URI SAN the core puts in the ESO client certificate under {@link TEST_POLICY}. */
export const TEST_CLIENT_SPIFFE_ID = clientSpiffeId(TEST_POLICY.clusterDomain, TEST_POLICY.esoNamespace, TEST_POLICY.serviceAccount);

const crypto = createNodeCryptoBackend();
const context = (policy: Policy = TEST_POLICY): IssueContext => ({ crypto, policy, now: Date.now() });
const asPair = (k: KeyedCertificate): KeyPair => ({ cert: k.certificate.pem, key: k.privateKeyPem });

/** A CA as the core keeps it: a certificate for bundles and the key that signs leaves. */
export interface TestCa extends KeyPair {
  readonly keyed: KeyedCertificate;
}

/** A fresh CA. */
export async function issueTestCa(): Promise<TestCa> {
  const keyed = await issueCa(context());
  return { ...asPair(keyed), keyed };
}

/** A server leaf (EKU serverAuth only) for `dnsNames`. */
export async function issueTestServer(ca: TestCa, dnsNames: readonly string[] = [TEST_SERVER_NAME]): Promise<KeyPair> {
  return asPair(await issueServerLeaf(context(), ca.keyed, dnsNames));
}

/** The ESO client leaf (EKU clientAuth only, CN external-secrets-core, SPIFFE URI SAN). */
export async function issueTestClient(ca: TestCa, policy?: Partial<Policy>): Promise<KeyPair> {
  return asPair(await issueClientLeaf(context(resolvePolicy(policy)), ca.keyed));
}

/** Writes ca.crt, tls.crt and tls.key, as the mounted Secret has them, into a fresh folder. */
export function writeCertDir(material: { ca: string; cert: string; key: string }): string {
  const dir = mkdtempSync(join(tmpdir(), 'provider-certs-'));
  writeFileSync(join(dir, 'ca.crt'), material.ca);
  writeFileSync(join(dir, 'tls.crt'), material.cert);
  writeFileSync(join(dir, 'tls.key'), material.key, { mode: 0o600 });
  return dir;
}

/** A CA nobody in the cluster trusts (an attacker's, or another cluster's), and a leaf it signed. */
export async function rogueCa(dnsNames: readonly string[]): Promise<{ ca: Issued; leaf: Issued }> {
  const ctx = context();
  const ca = await issueCa(ctx, { commonName: 'rogue-ca' });
  const leaf = await issueServerLeaf(ctx, ca, dnsNames);
  return { ca, leaf };
}
