// `npm run test:k8s-compat`: the Secret-mode Kubernetes suites on the oldest Kubernetes we claim,
// 1.30 (ValidatingAdmissionPolicy with params is GA there; testing/envtest/compat pins v1.30.14),
// built and cached like the default test control plane. With them, the provider-label policies
// (testing/policies/provider-label-*): which subresources discovery lists differs by version.
// Pod-certificate suites are left out: that mode needs Kubernetes 1.37.
import { execFileSync, spawnSync } from 'node:child_process';

const assets = execFileSync('bash', ['testing/envtest/build-testbin.sh'], {
  env: { ...process.env, ESO_MTLS_TESTBIN_MODULES: 'testing/envtest/compat' },
  stdio: ['ignore', 'pipe', 'inherit'],
  encoding: 'utf8',
}).trim();
console.error(`k8s-compat: kube-apiserver and etcd from ${assets}`);
const suites = ['packages/kubernetes/test', 'packages/controller/test', 'packages/devtools/test', 'testing/envtest/test', 'testing/policies/provider-label-'];
const run = spawnSync(
  process.execPath,
  ['--experimental-vm-modules', 'node_modules/jest/bin/jest.js', ...suites, '--testPathIgnorePatterns', 'pod-certificate', 'fuzz', ...process.argv.slice(2)],
  { stdio: 'inherit', env: { ...process.env, KUBEBUILDER_ASSETS: assets } },
);
process.exit(run.status ?? 1);
