import { afterAll, afterEach, beforeAll, expect } from '@jest/globals';
import type { Policy } from '@eso-mtls/core';
import { type ControlPlane, startControlPlane } from '../../envtest/src/index.js';
import { type RecordingAdapter, TestCluster, converge, startAdapter } from './adapter.js';
import { TestClock } from './clock.js';
import { eventually } from './eventually.js';
import { text } from './secrets.js';

/** A converged installation: its adapter, the clock it plans with, and its ESO namespace. */
export interface Installation {
  readonly run: RecordingAdapter;
  readonly clock: TestClock;
  readonly eso: string;
}

/** What {@link useControlPlane} gives a suite; read its fields inside tests (they are set in beforeAll). */
export interface ControlPlaneSuite {
  readonly plane: ControlPlane;
  readonly cluster: TestCluster;
}

/** What {@link useInstallations} gives a suite; read its fields inside tests (they are set in beforeAll). */
export interface InstallationSuite extends ControlPlaneSuite {
  /**
   * A fresh installation (own ESO namespace `eso-<name>`) with one labelled Service `provider` per
   * namespace, converged. `realClock` plans with Date.now instead of the test clock.
   */
  setup(name: string, namespaces: string[], policy?: Partial<Policy>, realClock?: boolean): Promise<Installation>;
  /** Deletes this Service after the test too (one the test labelled itself). */
  deleteAfterTest(namespace: string, service: string): void;
}

/** Registers the hooks that start one control plane for the file before its tests and stop it after them. */
export function useControlPlane(): ControlPlaneSuite {
  let plane: ControlPlane | undefined;
  let cluster: TestCluster | undefined;
  const ready = <T>(value: T | undefined): T => {
    if (value === undefined) throw new Error('the control plane is not started: use the suite inside tests only');
    return value;
  };

  beforeAll(async () => {
    plane = await startControlPlane();
    cluster = new TestCluster(plane);
  }, 120_000);
  afterAll(async () => {
    await plane?.stop();
  });

  return {
    get plane() {
      return ready(plane);
    },
    get cluster() {
      return ready(cluster);
    },
  };
}

/**
 * Registers the suite's hooks: one control plane for the file, and after each test every
 * installation it set up is stopped and its labelled Services deleted, so the next test's
 * adapters do not see them.
 */
export function useInstallations(): InstallationSuite {
  const control = useControlPlane();
  const running: RecordingAdapter[] = [];
  const services: [string, string][] = [];

  afterEach(async () => {
    for (const run of running.splice(0)) await run.adapter.stop();
    for (const [ns, name] of services.splice(0)) await control.cluster.deleteService(ns, name).catch(() => undefined);
  });

  return {
    get plane() {
      return control.plane;
    },
    get cluster() {
      return control.cluster;
    },
    async setup(name, namespaces, policy = {}, realClock = false) {
      const c = control.cluster;
      const eso = await c.namespace(`eso-${name}`);
      const clock = new TestClock();
      for (const ns of namespaces) {
        await c.namespace(ns);
        await c.labelledService(ns, 'provider');
      }
      const run = await startAdapter(control.plane.adminKubeConfig, eso, { now: realClock ? Date.now : clock.now, policy });
      running.push(run);
      services.push(...namespaces.map((ns): [string, string] => [ns, 'provider']));
      await eventually(async () => {
        for (const ns of namespaces) expect(text(await c.secret(ns), 'tls.crt')).toContain('BEGIN CERTIFICATE');
      });
      await converge(run.adapter);
      return { run, clock, eso };
    },
    deleteAfterTest(namespace, service) {
      services.push([namespace, service]);
    },
  };
}
