import type { PodCertificateRequest } from './api.js';

/** A request the signer issued: the chain as the API holds it, and the times the kubelet acts on. */
export interface IssuedOutcome {
  readonly condition: 'Issued';
  readonly request: PodCertificateRequest;
  /** `status.certificateChain`, verbatim (the kubelet cleans it when writing the volume). */
  readonly certificateChain: string;
  readonly notBefore: Date;
  readonly notAfter: Date;
  /** From this instant the kubelet asks for a new certificate (it adds up to 5 minutes of jitter; this stand-in does not). */
  readonly beginRefreshAt: Date;
}

/** A request the signer denied or failed, with the condition's reason and message. */
export interface RefusedOutcome {
  readonly condition: 'Denied' | 'Failed';
  readonly request: PodCertificateRequest;
  readonly reason: string;
  readonly message: string;
}

/** How a PodCertificateRequest ended. */
export type RequestOutcome = IssuedOutcome | RefusedOutcome;

const TERMINAL = new Set(['Issued', 'Denied', 'Failed']);

/** The outcome `request` has reached, or undefined while no Issued, Denied or Failed condition is True. */
export function outcomeOf(request: PodCertificateRequest): RequestOutcome | undefined {
  const condition = request.status?.conditions?.find((c) => TERMINAL.has(c.type) && c.status === 'True');
  if (condition === undefined) return undefined;
  if (condition.type !== 'Issued') {
    return { condition: condition.type as RefusedOutcome['condition'], request, reason: condition.reason ?? '', message: condition.message ?? '' };
  }
  const status = request.status!;
  const time = (field: 'notBefore' | 'notAfter' | 'beginRefreshAt'): Date => {
    const value = status[field];
    if (value === undefined) throw new Error(`PodCertificateRequest ${request.metadata.namespace}/${request.metadata.name} is Issued without status.${field}`);
    return new Date(value);
  };
  return {
    condition: 'Issued',
    request,
    certificateChain: status.certificateChain ?? '',
    notBefore: time('notBefore'),
    notAfter: time('notAfter'),
    beginRefreshAt: time('beginRefreshAt'),
  };
}
