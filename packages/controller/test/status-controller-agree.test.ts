// `eso-mtls status` and the controller plan with one plan context: under --max-namespaces and
// --require-namespace-label, on a real apiserver, status says the same namespaces are served, left
// out by the cap and refused by the requirement as the controller (its own wiring, in-process)
// serves and reports them. Scale: four provider namespaces of one Service each, a cap of two.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import { type ControlPlane, startControlPlane } from '../../../testing/envtest/src/index.js';
import type { RunningController } from '../src/index.js';
import type { StatusReport } from '../src/status/report.js';
import { ESO_NS, PROVIDER_SECRET, createProviderService } from '@eso-mtls/test-kit/cluster';
import { eventually } from '@eso-mtls/test-kit/eventually';
import { runCli, startTestController } from '@eso-mtls/test-kit/cli-run';

const ALLOWED = 'eso-mtls.io/providers-allowed';
const FLAGS = [`--require-namespace-label=${ALLOWED}=true`, '--max-namespaces=2'];
// Three carry the label (the cap admits two of them), one does not.
const LABELLED = ['agree-a', 'agree-b', 'agree-c'];
const UNLABELLED = 'agree-d';

/** Which namespaces are served, left out by the cap, and refused for the missing label. */
interface Verdicts {
  readonly served: string[];
  readonly cap: string[];
  readonly notAllowed: string[];
}

describe('eso-mtls status and the controller under --max-namespaces and --require-namespace-label', () => {
  let plane: ControlPlane;
  let admin: KubeConfig;
  let core: CoreV1Api;
  let controller: RunningController | undefined;

  // The controller's verdicts, as it acted on them: the namespaces it wrote a provider Secret in,
  // and the Services it gave a NamespaceNotServed or NamespaceNotAllowed Event.
  const controllerVerdicts = async (): Promise<Verdicts> => {
    const all = [...LABELLED, UNLABELLED];
    const secrets = (await core.listSecretForAllNamespaces({ fieldSelector: `metadata.name=${PROVIDER_SECRET}` })).items;
    const eventNamespaces = async (reason: string): Promise<string[]> => {
      const events = (await core.listEventForAllNamespaces({ fieldSelector: `reason=${reason}` })).items;
      return [...new Set(events.map((e) => e.involvedObject.namespace!))].filter((ns) => all.includes(ns)).sort();
    };
    return {
      served: secrets
        .map((s) => s.metadata!.namespace!)
        .filter((ns) => all.includes(ns))
        .sort(),
      cap: await eventNamespaces('NamespaceNotServed'),
      notAllowed: await eventNamespaces('NamespaceNotAllowed'),
    };
  };

  beforeAll(async () => {
    plane = await startControlPlane();
    admin = plane.adminKubeConfig;
    core = admin.makeApiClient(CoreV1Api);
    await core.createNamespace({ body: { metadata: { name: ESO_NS } } });
    for (const name of [...LABELLED, UNLABELLED]) {
      await core.createNamespace({ body: { metadata: { name, labels: name === UNLABELLED ? {} : { [ALLOWED]: 'true' } } } });
      await createProviderService(admin, name, 'provider');
    }
    controller = await startTestController(plane.adminKubeconfigPath, FLAGS);
    await eventually(
      async () => {
        const v = await controllerVerdicts();
        return v.served.length === 2 && v.cap.length === 1 && v.notAllowed.length === 1;
      },
      60_000,
      'the controller to serve two namespaces and report the other two',
    );
  }, 180_000);
  afterAll(async () => {
    await controller?.stop();
    await plane?.stop();
  });

  it('reports the namespaces served, capped and not allowed that the controller served and reported', async () => {
    const run = await runCli('status', ['--kubeconfig', plane.adminKubeconfigPath, '-o', 'json', ...FLAGS]);
    expect(run.stderr).toBe('');
    const report = JSON.parse(run.stdout) as StatusReport;
    const withProblem = (kind: string): string[] =>
      report.namespaces
        .filter((n) => n.problems.some((p) => p.kind === kind))
        .map((n) => n.namespace)
        .sort();
    const excluded = new Set([...withProblem('not_served'), ...withProblem('not_allowed')]);
    const statusVerdicts: Verdicts = {
      served: report.namespaces
        .map((n) => n.namespace)
        .filter((ns) => !excluded.has(ns))
        .sort(),
      cap: withProblem('not_served'),
      notAllowed: withProblem('not_allowed'),
    };
    const ours = await controllerVerdicts();
    expect(statusVerdicts).toEqual(ours);
    // Not a vacuous match: each verdict names a namespace, and the served ones are healthy in status too.
    expect(ours.served).toHaveLength(2);
    expect(ours.notAllowed).toEqual([UNLABELLED]);
    for (const n of report.namespaces.filter((r) => ours.served.includes(r.namespace))) expect(n.problems).toEqual([]);
  });
});
