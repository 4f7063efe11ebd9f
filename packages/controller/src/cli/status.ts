import { CertificateCache } from '@eso-mtls/core';
import { createNodeCryptoBackend } from '@eso-mtls/core/node';
import { loadPkcs11Backend } from '../controller.js';
import { createLogger } from '../logger.js';
import { tokenAwareVerifier } from '../status/ca-keys.js';
import { ClusterUnreachableError, readClusterState } from '../status/cluster-state.js';
import { evaluateStatus } from '../status/evaluate.js';
import { StatusExit } from '../status/exit-codes.js';
import { STATUS_FLAGS, commandUsage } from '../status/options.js';
import { OUTPUT_FORMATS, type OutputFormat, renderJson, renderYaml } from '../status/render-data.js';
import { paletteFor, renderText } from '../status/render-text.js';
import type { CliStreams } from './controller.js';
import { type UserCommand, openUserCommand } from './user-command.js';

const COMMAND = 'eso-mtls status';

/** The text `eso-mtls status --help` prints. */
export function statusUsage(): string {
  return commandUsage(
    `${COMMAND} [flags]`,
    [
      'Shows the CA, the client certificate and each provider namespace as the controller sees them, and',
      "what is wrong; with --modes including pod-certificate, also each signer's ClusterTrustBundle and",
      "PodCertificateRequests; and the leader election Lease's holder, a problem when it is no replica",
      'of the controller. Reads with your own kubeconfig credentials; see docs/cli.md for the RBAC',
      'each check needs (ClusterRole eso-mtls-status). Private keys are read only to check, never printed.',
      'Exit codes: 0 healthy, 1 needs attention, 2 usage error, 3 cannot reach or read the cluster,',
      '4 healthy as far as it could see, but some objects could not be read.',
    ].join('\n'),
    STATUS_FLAGS,
  );
}

const STATUS: UserCommand<OutputFormat> = {
  name: COMMAND,
  flags: STATUS_FLAGS,
  usage: statusUsage,
  choose: (values) => {
    const output = (values.get('output') ?? 'text') as OutputFormat;
    return OUTPUT_FORMATS.includes(output) ? output : { error: `-o ${JSON.stringify(output)} is not an output format: use text, json or yaml` };
  },
};

/** A stream status writes its report to, with the terminal flag colour depends on. */
export interface StatusStreams extends CliStreams {
  readonly stdout: CliStreams['stdout'] & { readonly isTTY?: boolean };
}

/**
 * `eso-mtls status [flags]`: reads the cluster with the user's credentials, judges it with the
 * core's own observe and plan code under the controller's policy, prints the report and resolves
 * with its exit code ({@link StatusExit}).
 */
export async function runStatusCommand(
  argv: readonly string[],
  env: Readonly<Record<string, string | undefined>> = process.env,
  streams: StatusStreams = { stdout: process.stdout, stderr: process.stderr },
  now: () => number = Date.now,
): Promise<number> {
  const opened = await openUserCommand(STATUS, argv, env, streams);
  if (typeof opened === 'number') return opened;
  const { options, chosen: output, api } = opened;
  const { values, assumed } = options;
  const namespace = values.get('namespace');
  let state;
  try {
    state = await readClusterState(api, assumed, {
      ...(namespace !== undefined ? { namespace } : {}),
      ...(assumed.lease ? { lease: { namespace: assumed.lease.namespace, name: assumed.lease.name } } : {}),
    });
  } catch (e) {
    const why = e instanceof ClusterUnreachableError ? e.message : `cannot read the cluster at ${api.connection.server}: ${(e as Error).message}`;
    streams.stderr.write(`${COMMAND}: ${why}\n`);
    return StatusExit.unreachable;
  }
  // With --hsm-*, the CA keys in the token are checked through the controller's own PKCS#11 backend.
  let token;
  try {
    token = options.pkcs11 && (await loadPkcs11Backend(options.pkcs11, env, createLogger('silent')));
  } catch (e) {
    streams.stderr.write(`${COMMAND}: ${(e as Error).message}\n`);
    return StatusExit.usage;
  }
  let report;
  try {
    const { verifier, keys } = tokenAwareVerifier(
      createNodeCryptoBackend().verifier,
      token && options.pkcs11 && { label: options.pkcs11.tokenLabel, verifier: token.verifier },
    );
    report = evaluateStatus(state, assumed, now(), new CertificateCache(verifier), namespace, keys);
  } finally {
    token?.close();
  }
  try {
    if (output === 'json') streams.stdout.write(renderJson(report));
    else if (output === 'yaml') streams.stdout.write(renderYaml(report));
    else streams.stdout.write(renderText(report, paletteFor(streams.stdout.isTTY, env)));
  } catch (e) {
    streams.stderr.write(`${COMMAND}: ${(e as Error).message}\n`);
    return StatusExit.usage;
  }
  return report.summary.exitCode;
}
