import { CA_REQUEST_ANNOTATION, PENDING_KEY_FIELDS, pendingKeyOf } from '../ca/upstream.js';
import type { CaRequestAction } from '../ca/upstream-plan.js';
import { truncateToSecond } from '../common/time.js';
import type { CryptoBackend } from '../crypto/crypto.js';
import type { SecretState } from '../secret/snapshot.js';
import { encodeCaCertificationRequest } from '../x509/certification-request.js';
import { toHex } from '../x509/der.js';
import { textOf } from '../x509/pem.js';
import { sha256 } from '../x509/sha256.js';
import type { SecretWrite } from './execute.js';
import type { Plan } from './vocabulary.js';

/*
 * Asking an upstream issuer for an intermediate (docs/chaining-to-your-pki.md): the key is made
 * where CA keys are made (the HSM when there is one), stored in the CA Secret as pending BEFORE
 * anything is sent, so a restart finds it; then its PKCS#10 request goes out. The adapter sends
 * it as a cert-manager CertificateRequest named after the key.
 */

/** A request ready to send, and the CA Secret write that must land first. */
export interface CaRequestMaterial {
  /** The CertificateRequest's name: `eso-mtls-ca-` and the first 10 hex digits of the key's SHA-256. */
  readonly name: string;
  /** The PKCS#10 request, PEM. */
  readonly csrPem: string;
  /** The CA Secret write storing a new pending key; absent when the pending key's request is sent again. */
  readonly write?: SecretWrite;
  /** Why, for logs and Events. */
  readonly message: string;
}

/** The CertificateRequest name of a key: stable, so a restart or a retry of the same key finds its request. */
export function caRequestName(subjectPublicKeyInfo: Uint8Array): string {
  return `eso-mtls-ca-${toHex(sha256(subjectPublicKeyInfo)).slice(0, 10)}`;
}

/**
 * Makes the request the plan's upstream part asks for, from the CA Secret as planned from (absent:
 * it is created holding only the pending key). Call it only for a plan without a CA write (the two
 * would race on the Secret); throws otherwise.
 */
export async function materializeCaRequest(plan: Plan, caSecret: SecretState | undefined, crypto: CryptoBackend): Promise<CaRequestMaterial> {
  const action: CaRequestAction | undefined = plan.upstream?.request;
  if (!action) throw new Error('the plan asks for no intermediate');
  if (plan.ca) throw new Error('the plan writes the CA Secret: ask for the intermediate after that write lands');
  const signer = crypto.caSigner ?? crypto.signer;
  const stored = action.kind === 'submit' && caSecret ? pendingKeyOf(caSecret.data) : undefined;
  const key = stored ?? (await signer.generateKey(plan.policy.keyAlgorithm)).privateKeyPem;
  const spki = crypto.caSigner?.holds(key) ? crypto.caSigner.publicKeyOf(key) : crypto.verifier.publicKeyOf(key);
  if (spki === undefined) throw new Error('the pending CA key in the CA Secret is unreadable');
  const name = caRequestName(spki);
  const day = new Date(truncateToSecond(plan.now)).toISOString().slice(0, 10).replaceAll('-', '');
  const request = await encodeCaCertificationRequest({
    subject: { commonName: `eso-provider-ca-${day}-${name.slice(-8)}` },
    subjectPublicKeyInfo: spki,
    sign: (data) => signer.sign(key, data),
  });
  if (stored !== undefined) return { name, csrPem: request.pem, message: `${action.message}: sending ${name} again` };
  const data: Record<string, string> = {};
  for (const [k, v] of Object.entries(caSecret?.data ?? {})) if (v !== undefined && !(PENDING_KEY_FIELDS as readonly string[]).includes(k)) data[k] = textOf(v);
  data[crypto.caSigner?.holds(key) ? PENDING_KEY_FIELDS[1] : PENDING_KEY_FIELDS[0]] = key;
  const write: SecretWrite = {
    target: 'ca',
    kind: 'ca',
    data,
    create: caSecret === undefined,
    base: caSecret?.version,
    annotations: { [CA_REQUEST_ANNOTATION]: name },
    reason: action.reason,
    message: `${action.message}: asking ${plan.upstream!.source} for an intermediate (${name})`,
    services: [],
    promptedBy: [],
  };
  return { name, csrPem: request.pem, write, message: write.message! };
}
