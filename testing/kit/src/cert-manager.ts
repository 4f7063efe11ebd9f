// The suite hooks around cert-manager-process.ts: one control plane for a test file with cert-manager's
// CRDs, and every cert-manager a test starts stopped after it. Benchmarks use cert-manager-process.ts.
import { afterAll, afterEach, beforeAll } from '@jest/globals';
import { KubeRestClient, connectionFromKubeConfig } from '@eso-mtls/kubernetes';
import { type ControlPlane, startControlPlane } from '../../envtest/src/index.js';
import { TestCluster } from './adapter.js';
import { type CertManagerOptions, type RunningCertManager, installCertManagerCrds, startCertManager } from './cert-manager-process.js';

/** What {@link useCertManager} gives a suite; read its fields inside tests (they are set in beforeAll). */
export interface CertManagerSuite {
  readonly plane: ControlPlane;
  readonly cluster: TestCluster;
  /** A client of the admin's, closed after the suite. */
  readonly admin: KubeRestClient;
  /** Starts cert-manager for this test; it is stopped after the test. */
  start(options?: CertManagerOptions): Promise<RunningCertManager>;
}

/**
 * Registers the suite's hooks: one control plane for the file with cert-manager's CRDs, and every
 * cert-manager a test starts stopped after that test.
 */
export function useCertManager(): CertManagerSuite {
  let plane: ControlPlane | undefined;
  let cluster: TestCluster | undefined;
  let admin: KubeRestClient | undefined;
  const running: RunningCertManager[] = [];
  const ready = <T>(value: T | undefined): T => {
    if (value === undefined) throw new Error('the control plane is not started: use the suite inside tests only');
    return value;
  };

  beforeAll(async () => {
    plane = await startControlPlane();
    cluster = new TestCluster(plane);
    admin = new KubeRestClient(await connectionFromKubeConfig(plane.adminKubeConfig));
    await installCertManagerCrds(plane);
  }, 180_000);
  afterEach(async () => {
    for (const run of running.splice(0)) await run.stop();
  });
  afterAll(async () => {
    for (const run of running.splice(0)) await run.stop();
    admin?.close();
    await plane?.stop();
  });

  return {
    get plane() {
      return ready(plane);
    },
    get cluster() {
      return ready(cluster);
    },
    get admin() {
      return ready(admin);
    },
    async start(options) {
      const run = await startCertManager(ready(plane), options);
      running.push(run);
      return run;
    },
  };
}
