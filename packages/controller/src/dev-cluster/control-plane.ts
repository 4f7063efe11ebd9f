import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { createServer } from 'node:net';
import { join } from 'node:path';
import type { ControlPlaneBinaries } from './clone.js';
import { ServerProcess } from './process-group.js';

/** A running etcd and kube-apiserver on 127.0.0.1, with their files in one folder. */
export interface DevControlPlane {
  /** https://127.0.0.1:<port> */
  readonly url: string;
  /** The apiserver's serving CA (PEM), as the kubeconfigs trust it. */
  readonly caPem: string;
  /** The admin's static bearer token (group system:masters). */
  readonly adminToken: string;
  readonly processes: readonly ServerProcess[];
  /** Resolves when etcd or kube-apiserver exits by itself, naming it. */
  readonly died: Promise<ServerProcess>;
  /** SIGTERM to both (apiserver first), SIGKILL after a grace period. */
  stop(): Promise<void>;
}

/** Marks a folder as a dev-cluster's, so an existing folder of something else is never used (or removed). */
const MARKER = '.eso-mtls-dev-cluster';

/**
 * Makes `dir` ready for a control plane: creates it, or reuses one a previous run kept (`--keep`:
 * its etcd data, admin token and service-account signing key, so earlier tokens stay valid).
 * Throws, naming the folder, if it exists and belongs to something else.
 */
export function prepareDataDir(dir: string): { readonly reused: boolean } {
  if (existsSync(dir)) {
    const entries = readdirSync(dir);
    if (entries.length > 0 && !entries.includes(MARKER)) {
      throw new Error(`--dir ${dir} exists and is not a dev-cluster folder (no ${MARKER} in it): choose another --dir, or remove it`);
    }
    if (entries.length > 0) return { reused: true };
  }
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  writeFileSync(join(dir, MARKER), 'made by eso-mtls dev-cluster; removed with this folder on Ctrl-C unless --keep\n');
  return { reused: false };
}

// The admin token: read back from a kept folder, else a new one written as the apiserver's token file.
function adminToken(dir: string): string {
  const file = join(dir, 'tokens.csv');
  const kept = existsSync(file) ? /^([0-9a-f]{48}),admin,/.exec(readFileSync(file, 'utf8'))?.[1] : undefined;
  if (kept !== undefined) return kept;
  const token = randomBytes(24).toString('hex');
  writeFileSync(file, `${token},admin,uid-admin,"system:masters"\n`, { mode: 0o600 });
  return token;
}

// The key that signs ServiceAccount tokens (TokenRequest): kept with the folder, so tokens outlive a restart.
function serviceAccountKey(dir: string): string {
  const file = join(dir, 'sa.key');
  if (!existsSync(file)) {
    const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    writeFileSync(file, privateKey.export({ type: 'pkcs8', format: 'pem' }), { mode: 0o600 });
  }
  return file;
}

/**
 * Starts etcd and kube-apiserver on free loopback ports with their data in `dir`, as the test
 * harness does (testing/envtest): RBAC authorisation, a static admin token in system:masters,
 * ServiceAccount token signing. Resolves once /readyz answers 200; retries with fresh ports if
 * another process took one first.
 */
export async function startDevControlPlane(binaries: ControlPlaneBinaries, dir: string, timeoutMs = 120_000): Promise<DevControlPlane> {
  const token = adminToken(dir);
  const saKey = serviceAccountKey(dir);
  let last: unknown;
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      return await startOnce(binaries, dir, token, saKey, timeoutMs);
    } catch (e) {
      last = e;
      if (!(e instanceof PortTakenError)) throw e;
    }
  }
  throw last;
}

class PortTakenError extends Error {}

async function startOnce(binaries: ControlPlaneBinaries, dir: string, token: string, saKey: string, timeoutMs: number): Promise<DevControlPlane> {
  const [etcdPort, peerPort, apiPort] = await freePorts(3);
  const etcdUrl = `http://127.0.0.1:${etcdPort}`;
  const etcd = ServerProcess.start(
    'etcd',
    binaries.etcd,
    [
      `--data-dir=${join(dir, 'etcd')}`,
      '--unsafe-no-fsync',
      `--listen-client-urls=${etcdUrl}`,
      `--advertise-client-urls=${etcdUrl}`,
      `--listen-peer-urls=http://127.0.0.1:${peerPort}`,
      `--initial-advertise-peer-urls=http://127.0.0.1:${peerPort}`,
      `--initial-cluster=default=http://127.0.0.1:${peerPort}`,
      '--log-level=warn',
    ],
    join(dir, 'etcd.log'),
  );
  const url = `https://127.0.0.1:${apiPort}`;
  const apiServer = ServerProcess.start(
    'kube-apiserver',
    binaries.kubeApiServer,
    [
      `--etcd-servers=${etcdUrl}`,
      `--cert-dir=${join(dir, 'certs')}`,
      `--secure-port=${apiPort}`,
      '--bind-address=127.0.0.1',
      '--advertise-address=127.0.0.1', // without it the server looks for a default route
      '--authorization-mode=RBAC',
      '--service-cluster-ip-range=10.96.0.0/16',
      '--endpoint-reconciler-type=none', // 127.0.0.1 may not stand in the `kubernetes` Endpoints
      `--token-auth-file=${join(dir, 'tokens.csv')}`,
      '--service-account-issuer=https://kubernetes.default.svc',
      `--service-account-key-file=${saKey}`,
      `--service-account-signing-key-file=${saKey}`,
    ],
    join(dir, 'kube-apiserver.log'),
  );
  const processes = [apiServer, etcd];
  const stop = async (): Promise<void> => {
    await apiServer.stop();
    await etcd.stop();
  };
  try {
    await waitReady(url, token, processes, timeoutMs);
  } catch (e) {
    await stop();
    throw e;
  }
  return {
    url,
    caPem: readFileSync(join(dir, 'certs', 'apiserver.crt'), 'utf8'),
    adminToken: token,
    processes,
    died: Promise.race(processes.map((p) => p.whenExited().then(() => p))),
    stop,
  };
}

async function waitReady(url: string, token: string, processes: readonly ServerProcess[], timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = '';
  while (Date.now() < deadline) {
    for (const p of processes) {
      if (!p.running) {
        const log = p.logTail();
        const message = `${p.name} exited while starting; the end of ${p.logPath}:\n${log}`;
        throw /address already in use/.test(log) ? new PortTakenError(message) : new Error(message);
      }
    }
    last = await readyz(`${url}/readyz`, token);
    if (last === '200') return;
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`kube-apiserver at ${url} was not ready after ${timeoutMs / 1000}s (last /readyz: ${last}); see ${processes[0]!.logPath}`);
}

function readyz(url: string, token: string): Promise<string> {
  return new Promise((resolveStatus) => {
    // The serving certificate is generated as the server starts, so there is nothing to pin yet.
    const req = request(url, { rejectUnauthorized: false, headers: { Authorization: `Bearer ${token}` }, timeout: 2000 }, (res) => {
      res.resume();
      res.on('end', () => resolveStatus(String(res.statusCode)));
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', (e) => resolveStatus(e.message));
    req.end();
  });
}

// Ports the OS just handed out on 127.0.0.1; another process may take one before the server binds,
// which startDevControlPlane retries.
async function freePorts(n: number): Promise<number[]> {
  const ports = new Set<number>();
  while (ports.size < n) {
    ports.add(
      await new Promise<number>((resolvePort, reject) => {
        const server = createServer();
        server.once('error', reject);
        server.listen(0, '127.0.0.1', () => {
          const address = server.address();
          server.close(() => (typeof address === 'object' && address ? resolvePort(address.port) : reject(new Error('no port assigned on 127.0.0.1'))));
        });
      }),
    );
  }
  return [...ports];
}
