import { ROTATE_ANNOTATION } from '@eso-mtls/core';
import { KubeApiError } from '@eso-mtls/kubernetes';
import { StatusExit } from '../status/exit-codes.js';
import { RENEW_FLAGS, commandUsage } from '../status/options.js';
import { NothingToRenewError, type RenewTarget, renewToken, requestRenewal } from '../status/renew-request.js';
import type { CliStreams } from './controller.js';
import { type UserCommand, openUserCommand } from './user-command.js';

const COMMAND = 'eso-mtls renew';

/** The text `eso-mtls renew --help` prints. */
export function renewUsage(): string {
  return commandUsage(
    `${COMMAND} (--namespace N | --client | --ca [--emergency]) [flags]`,
    [
      `Asks the controller for a new certificate now, as cmctl renew does: sets the annotation ${ROTATE_ANNOTATION}`,
      'to a fresh value on the labelled Services of namespace N, on the client Secret, or on the CA Secret.',
      'The controller re-issues with reason forced. Needs ClusterRole eso-mtls-renew (docs/cli.md).',
      'Exit codes: 0 requested, 1 nothing to renew, 2 usage error, 3 cannot reach the cluster or not allowed.',
    ].join('\n'),
    RENEW_FLAGS,
  );
}

/** Exactly one target, and --emergency only with --ca; else the error to print. */
function targetOf(values: ReadonlyMap<string, string>): RenewTarget | string {
  const on = (flag: string): boolean | string => {
    const v = values.get(flag);
    if (v === undefined || v === 'false') return false;
    return v === 'true' ? true : `--${flag}=${v}: accepts true or false`;
  };
  const client = on('client');
  const ca = on('ca');
  const emergency = on('emergency');
  for (const v of [client, ca, emergency]) if (typeof v === 'string') return v;
  const namespace = values.get('namespace');
  const chosen = [namespace !== undefined, client === true, ca === true].filter(Boolean).length;
  if (chosen !== 1) return 'give exactly one of --namespace N, --client and --ca';
  if (emergency === true && ca !== true) return '--emergency goes with --ca only';
  if (namespace !== undefined) return { kind: 'namespace', namespace };
  return client === true ? { kind: 'client' } : { kind: 'ca', emergency: emergency === true };
}

const RENEW: UserCommand<RenewTarget> = {
  name: COMMAND,
  flags: RENEW_FLAGS,
  usage: renewUsage,
  choose: (values) => {
    const target = targetOf(values);
    return typeof target === 'string' ? { error: `${target}; see ${COMMAND} --help` } : target;
  },
};

/**
 * `eso-mtls renew`: sets a fresh rotation request with the user's credentials and says what the
 * controller will do with it. Resolves with the exit code ({@link StatusExit}).
 */
export async function runRenewCommand(
  argv: readonly string[],
  env: Readonly<Record<string, string | undefined>> = process.env,
  streams: CliStreams = { stdout: process.stdout, stderr: process.stderr },
  now: () => number = Date.now,
): Promise<number> {
  const opened = await openUserCommand(RENEW, argv, env, streams);
  if (typeof opened === 'number') return opened;
  const { options, chosen: target, api } = opened;
  const { assumed } = options;
  const token = renewToken(now(), target.kind === 'ca' && target.emergency);
  let annotated;
  try {
    annotated = await requestRenewal(api, target, token, assumed);
  } catch (e) {
    if (e instanceof NothingToRenewError) {
      streams.stderr.write(`${COMMAND}: ${e.message}\n`);
      return StatusExit.attention;
    }
    const refused = e instanceof KubeApiError && (e.code === 401 || e.code === 403);
    streams.stderr.write(`${COMMAND}: ${(e as Error).message}${refused ? '; it needs ClusterRole eso-mtls-renew (docs/cli.md)' : ''}\n`);
    return StatusExit.unreachable;
  }
  for (const a of annotated) streams.stdout.write(`${a.kind} ${a.namespace}/${a.name} annotated ${ROTATE_ANNOTATION}=${token}\n`);
  const what =
    target.kind === 'namespace'
      ? `the certificate of namespace ${target.namespace} (once, reason forced)`
      : target.kind === 'client'
        ? 'the client certificate (reason forced)'
        : target.emergency
          ? 'a new active CA at once, every older CA dropped, and every leaf (reason forced): calls fail until peers reload'
          : 'an overlap CA rotation: a next CA is published, activated after the propagation delay, then every leaf is re-issued (reason ca_rotated)';
  const watch = target.kind === 'namespace' ? `eso-mtls status --namespace ${target.namespace}` : 'eso-mtls status';
  streams.stdout.write(`The controller issues ${what}. Follow it with: ${watch}\n`);
  return StatusExit.healthy;
}
