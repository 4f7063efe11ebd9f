import { status } from '@grpc/grpc-js';
import type { CertificateFailure } from '../tls/client-channel.js';
import type { HandshakeProblem } from '../tls/handshake-probe.js';
import type { ProviderMethodName } from '../wire/service.js';
import { ProviderCallError } from './call-error.js';

const WHAT_TO_DO: Record<HandshakeProblem, string> = {
  server_name:
    'dial the name the provider certificate carries, or issue it for this name (the Service must be labelled external-secrets.io/provider: "true"); retrying cannot help',
  untrusted_authority:
    "the provider's certificate and ESO's bundle come from different CAs: mount the bundle (ca.crt) of the CA that signed it; the call is retried only once the client folder reloads",
  validity:
    "the provider's certificate is outside its validity: check the controller renews it and the provider reloads its folder, and the clocks; retried only once the client folder reloads",
  client_refused:
    "the provider does not trust ESO's client certificate (another CA, expired, or not clientAuth): check the provider's ca.crt and ESO's tls.crt; retried only once the client folder reloads",
};

const folderOf = (o: CertificateFailure): string => (o.clientFolder === undefined ? 'fixed material (no folder)' : o.clientFolder);

/**
 * A call whose TLS handshake failed on certificates, not on the network: it is not UNAVAILABLE
 * and is never retried on the same material. Names the name expected, the names served, and
 * where each certificate came from. One subclass per cause.
 */
export class ProviderCertificateError extends ProviderCallError {
  /** The subclass's name, e.g. ServerNameMismatchError. */
  override readonly name: string = 'ProviderCertificateError';
  /** What was wrong. */
  readonly problem: HandshakeProblem;
  /** Node's or OpenSSL's code, e.g. ERR_TLS_CERT_ALTNAME_INVALID or CERT_HAS_EXPIRED. */
  readonly tlsCode: string;
  /** The name the server certificate must carry: the host of the provider address. */
  readonly expectedName: string;
  /** The subjectAltName entries of the certificate the provider served. */
  readonly servedNames: readonly string[];
  /** The folder of ESO's client certificate and CA bundle (undefined for fixed material). */
  readonly clientFolder: string | undefined;
  /** The address dialled (the provider address, or the `connectTo` given), whose server presented the certificate. */
  readonly target: string;

  /** Built by the client from a diagnostic handshake's `failure`; `code` is {@link CERTIFICATE_PROBLEM_STATUS} of its problem. */
  constructor(method: ProviderMethodName, code: status, attempts: number, failure: CertificateFailure, options?: ErrorOptions) {
    const { diagnosis: d } = failure;
    super(
      method,
      code,
      `TLS handshake with ${failure.target} failed (${d.tlsCode}): expected name ${d.expectedName}, served names [${d.servedNames.join(', ')}] ` +
        `(${d.served}; served by the provider at ${failure.target}); client certificate and CA bundle from ${folderOf(failure)}. ${WHAT_TO_DO[d.problem]}`,
      attempts,
      options,
    );
    this.problem = d.problem;
    this.tlsCode = d.tlsCode;
    this.expectedName = d.expectedName;
    this.servedNames = d.servedNames;
    this.clientFolder = failure.clientFolder;
    this.target = failure.target;
  }
}

/** The provider's certificate does not carry the name dialled (ERR_TLS_CERT_ALTNAME_INVALID). FAILED_PRECONDITION, never retried. */
export class ServerNameMismatchError extends ProviderCertificateError {
  /** Always `ServerNameMismatchError`. */
  override readonly name = 'ServerNameMismatchError';
}

/** The provider's certificate does not chain to ESO's CA bundle (unknown issuer, self-signed). FAILED_PRECONDITION. */
export class UntrustedProviderCertificateError extends ProviderCertificateError {
  /** Always `UntrustedProviderCertificateError`. */
  override readonly name = 'UntrustedProviderCertificateError';
}

/** The provider's certificate has expired or is not yet valid (CERT_HAS_EXPIRED, CERT_NOT_YET_VALID). FAILED_PRECONDITION. */
export class ExpiredProviderCertificateError extends ProviderCertificateError {
  /** Always `ExpiredProviderCertificateError`. */
  override readonly name = 'ExpiredProviderCertificateError';
}

/** The provider closed the connection instead of accepting ESO's client certificate. UNAUTHENTICATED. */
export class ClientCertificateRefusedError extends ProviderCertificateError {
  /** Always `ClientCertificateRefusedError`. */
  override readonly name = 'ClientCertificateRefusedError';
}

/**
 * The gRPC status of each problem. FAILED_PRECONDITION for ours to fix (gRPC: "do not retry until
 * the system state has been explicitly fixed"); UNAUTHENTICATED when the provider did not accept
 * our credentials. Neither is in RETRYABLE_CODES.
 */
export const CERTIFICATE_PROBLEM_STATUS: Readonly<Record<HandshakeProblem, status>> = Object.freeze({
  server_name: status.FAILED_PRECONDITION,
  untrusted_authority: status.FAILED_PRECONDITION,
  validity: status.FAILED_PRECONDITION,
  client_refused: status.UNAUTHENTICATED,
});

const CLASSES = {
  server_name: ServerNameMismatchError,
  untrusted_authority: UntrustedProviderCertificateError,
  validity: ExpiredProviderCertificateError,
  client_refused: ClientCertificateRefusedError,
} as const;

/** The named error for `failure`. */
export function certificateError(method: ProviderMethodName, attempts: number, failure: CertificateFailure, options?: ErrorOptions): ProviderCertificateError {
  const { problem } = failure.diagnosis;
  return new CLASSES[problem](method, CERTIFICATE_PROBLEM_STATUS[problem], attempts, failure, options);
}
