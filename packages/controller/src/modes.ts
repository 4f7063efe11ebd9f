import type { ControllerConfig } from './config.js';
import { formatFlagDuration } from './duration.js';

/** How a controller operates, as its start-up line shows it: each field named after its flag. */
export interface OperatingModes {
  /** As `--modes` reads: `secret`, `pod-certificate`, or `secret,pod-certificate`. */
  readonly modes: string;
  /** Pod-certificate mode: the server and client signer names; absent otherwise. */
  readonly podCertificateSigners?: string;
  /** Where the CA keys are: `ca-secret`, or `hsm` (a PKCS#11 token, `--hsm-module`). */
  readonly caKeys: 'ca-secret' | 'hsm';
  /** With `hsm`: the token's label. */
  readonly hsmToken?: string;
  /** The label a namespace must carry, `key=value`, or `off`. */
  readonly requireNamespaceLabel: string;
  /** The cap on provider namespaces, or `off`. */
  readonly maxNamespaces: number | 'off';
  /** The most certificates issued per reconcile, or `off`. */
  readonly maxIssuancesPerReconcile: number | 'off';
  /** Grace before an orphaned provider Secret is deleted, or `off`. */
  readonly pruneOrphanedSecretsAfter: string;
}

/**
 * The operating modes of `config`, for the start-up line: an operator reading the log learns what
 * this controller does (and does not) without finding its flags.
 */
export function operatingModes(config: ControllerConfig): OperatingModes {
  const pod = config.podCertificates;
  const requirement = config.namespaceRequirement;
  return {
    modes: [config.secretMode ? 'secret' : undefined, pod ? 'pod-certificate' : undefined].filter((m) => m !== undefined).join(','),
    ...(pod ? { podCertificateSigners: `${pod.serverSignerName},${pod.clientSignerName}` } : {}),
    caKeys: config.pkcs11 ? 'hsm' : 'ca-secret',
    ...(config.pkcs11 ? { hsmToken: config.pkcs11.tokenLabel } : {}),
    requireNamespaceLabel: requirement ? `${requirement.key}=${requirement.value}` : 'off',
    maxNamespaces: config.maxNamespaces ?? 'off',
    maxIssuancesPerReconcile: config.maxIssuancesPerReconcile ?? 'off',
    pruneOrphanedSecretsAfter: config.pruneOrphanedSecretsAfter > 0 ? formatFlagDuration(config.pruneOrphanedSecretsAfter) : 'off',
  };
}
