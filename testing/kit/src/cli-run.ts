import { RbacAuthorizationV1Api, type KubeConfig } from '@kubernetes/client-node';
import { runRenewCommand } from '../../../packages/controller/src/cli/renew.js';
import { runStatusCommand } from '../../../packages/controller/src/cli/status.js';
import { type ControllerConfig, type RunningController, createLogger, parseControllerConfig, startController } from '@eso-mtls/controller';

/** What a CLI command printed, and its exit code. */
export interface CliRun {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs `eso-mtls status` or `eso-mtls renew` in-process, as from a pipe, with `env` only. */
export async function runCli(command: 'status' | 'renew', argv: readonly string[], env: Record<string, string> = {}): Promise<CliRun> {
  let stdout = '';
  let stderr = '';
  const streams = { stdout: { write: (s: string) => (stdout += s), isTTY: false }, stderr: { write: (s: string) => (stderr += s) } };
  const code = command === 'status' ? await runStatusCommand(argv, env, streams) : await runRenewCommand(argv, env, streams);
  return { code, stdout, stderr };
}

/** The controller in-process with `kubeconfig` and `flags`, no servers, silent. */
export async function startTestController(kubeconfig: string, flags: readonly string[] = []): Promise<RunningController> {
  const parsed = parseControllerConfig(
    ['--kubeconfig', kubeconfig, '--metrics-bind-address=0', '--health-probe-bind-address=0', '--log-level=silent', ...flags],
    {},
  );
  if (parsed.kind !== 'config') throw new Error(`controller flags: ${JSON.stringify(parsed)}`);
  const config: ControllerConfig = parsed.config;
  const controller = await startController(config, { logger: createLogger('silent'), identity: 'status-test' });
  await controller.synced;
  return controller;
}

/** Binds ClusterRole `role` to the static-token user `user`, cluster-wide. */
export async function bindClusterRole(admin: KubeConfig, user: string, role: string): Promise<void> {
  await admin.makeApiClient(RbacAuthorizationV1Api).createClusterRoleBinding({
    body: {
      metadata: { name: `${role}-${user}` },
      subjects: [{ kind: 'User', name: user, apiGroup: 'rbac.authorization.k8s.io' }],
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: role },
    },
  });
}
