// Fuzzes the controller's kubeconfig loading (loadConnection) end to end: arbitrary bytes and
// kubeconfig-shaped YAML or JSON in a real file, including the settings that hand the file to
// client-node (exec plugins, auth providers, impersonation), with arbitrary proxy variables.
// Exec plugins only ever name commands that do nothing (`false`, a missing path): a fuzzer must
// not run what it generates. Auth providers that reach the network or run commands (oidc, gcp,
// azure) are left out for the same reason.
//
// Properties: loadConnection resolves with a connection whose server is a string, or rejects with
// an Error (no subclass such as TypeError) whose message names the kubeconfig (`--kubeconfig
// <path>:` or the reader's `kubeconfig <path>:`) or the proxy variable it refuses; never a hang.
// Memory bound: in proportion to the file (the reader's YAML parser expands at most 100 aliases).
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { stringify } from 'yaml';
import { loadConnection } from '../../src/kube-config.js';
import { fuzzParameters } from '../../../../testing/fuzz/runs.js';

const PROXY_VARIABLES = ['HTTPS_PROXY', 'https_proxy', 'HTTP_PROXY', 'http_proxy'];

let dir: string;
let file: string;
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'fuzz-kube-config-'));
  file = join(dir, 'kubeconfig');
  writeFileSync(join(dir, 'ca.crt'), 'not a certificate');
  // client-node costs seconds to import the first time; outside of any run's clock.
  await import('@kubernetes/client-node');
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const scalar = fc.oneof(
  fc.string({ maxLength: 20 }),
  fc.constantFrom('', 'k', 'u', 'c', 'https://127.0.0.1:6443', 'https://[::1', 'http://127.0.0.1:1', 'socks5://p:1', 'http://p:3128', 'ca.crt', '/nonexistent'),
  fc.integer(),
  fc.boolean(),
  fc.constant(null),
);
const value: fc.Arbitrary<unknown> = fc.oneof(
  { arbitrary: scalar, weight: 5 },
  { arbitrary: fc.array(scalar, { maxLength: 3 }), weight: 1 },
  { arbitrary: fc.dictionary(fc.string({ maxLength: 5 }), scalar, { maxKeys: 3 }), weight: 1 },
);
const someOf = (keys: readonly string[]) => fc.dictionary(fc.constantFrom(...keys), value, { maxKeys: 4 });

/** The settings that make the file client-node's, each with harmless values. */
const clientNodeFeature = fc.oneof(
  fc.record({
    exec: fc.oneof(
      fc.record(
        {
          command: fc.constantFrom('false', '/nonexistent/eso-mtls-fuzz-plugin', ''),
          apiVersion: fc.oneof(fc.constant('client.authentication.k8s.io/v1'), scalar),
          args: fc.oneof(fc.array(fc.string({ maxLength: 8 }), { maxLength: 2 }), scalar),
          env: fc.oneof(fc.array(fc.record({ name: fc.string({ maxLength: 6 }), value: fc.string({ maxLength: 6 }) }), { maxLength: 2 }), scalar),
          interactiveMode: fc.constantFrom('Never', 'IfAvailable', 'Always'),
        },
        { requiredKeys: ['command'] },
      ),
      scalar,
    ),
  }),
  fc.record({
    'auth-provider': fc.record(
      {
        name: fc.string({ maxLength: 8 }).filter((n) => !['oidc', 'gcp', 'azure'].includes(n)),
        config: fc.dictionary(fc.string({ maxLength: 8 }), fc.string({ maxLength: 8 })),
      },
      { requiredKeys: [] },
    ),
  }),
  fc.record({ as: value }, { requiredKeys: [] }).map((r) => ({ as: 'someone', ...r })),
  fc.record({ 'as-groups': value, 'as-uid': value }),
);

const clusterFields = fc
  .tuple(
    fc.oneof({ arbitrary: fc.constant('https://127.0.0.1:6443'), weight: 3 }, { arbitrary: value, weight: 1 }),
    someOf(['certificate-authority', 'certificate-authority-data', 'insecure-skip-tls-verify', 'tls-server-name', 'proxy-url']),
  )
  .map(([server, rest]) => ({ server, ...rest }));
const userFields = fc
  .tuple(
    fc.option(clientNodeFeature, { freq: 4 }),
    someOf(['token', 'tokenFile', 'username', 'password', 'client-certificate', 'client-certificate-data', 'client-key', 'client-key-data']),
  )
  .map(([feature, rest]) => ({ ...rest, ...feature }));

const document = fc
  .record(
    {
      'current-context': fc.oneof({ arbitrary: fc.constant('c'), weight: 6 }, { arbitrary: value, weight: 1 }),
      contexts: fc.oneof({ arbitrary: fc.constant([{ name: 'c', context: { cluster: 'k', user: 'u' } }]), weight: 6 }, { arbitrary: value, weight: 1 }),
      clusters: fc.oneof({ arbitrary: clusterFields.map((cluster) => [{ name: 'k', cluster }]), weight: 6 }, { arbitrary: value, weight: 1 }),
      users: fc.oneof({ arbitrary: userFields.map((user) => [{ name: 'u', user }]), weight: 6 }, { arbitrary: value, weight: 1 }),
    },
    { requiredKeys: [] },
  )
  .chain((doc) =>
    fc.tuple(fc.boolean(), fc.option(fc.nat(), { freq: 5 })).map(([json, cut]) => {
      const text = json ? JSON.stringify(doc) : stringify(doc);
      return Buffer.from(cut === null ? text : text.slice(0, cut % (text.length + 1)));
    }),
  );

const bytes = fc.oneof({ arbitrary: document, weight: 8 }, { arbitrary: fc.uint8Array({ maxLength: 200 }).map((b) => Buffer.from(b)), weight: 1 });
const environment = fc.dictionary(
  fc.constantFrom(...PROXY_VARIABLES, 'NO_PROXY'),
  fc.oneof(fc.string({ maxLength: 12 }), fc.constantFrom('proxy:3128', 'https://proxy', '*', '127.0.0.1')),
  { maxKeys: 2 },
);

function classified(e: unknown, path: string): boolean {
  if (!(e instanceof Error) || Object.getPrototypeOf(e) !== Error.prototype) return false;
  return [`--kubeconfig ${path}: `, `kubeconfig ${path}: `, ...PROXY_VARIABLES.map((v) => `${v} `)].some((prefix) => e.message.startsWith(prefix));
}

describe('loadConnection under arbitrary kubeconfig files', () => {
  it('resolves with a connection or rejects naming the kubeconfig or the proxy variable', async () => {
    await fc.assert(
      fc.asyncProperty(bytes, environment, async (content, env) => {
        writeFileSync(file, content);
        try {
          const { connection } = await loadConnection(file, env);
          expect(typeof connection.server).toBe('string');
        } catch (e) {
          if (!classified(e, file)) throw new Error(`unclassified error for ${JSON.stringify(content.toString('utf8'))}: ${String(e)}`, { cause: e });
        }
      }),
      fuzzParameters(150),
    );
  });

  // Found by this fuzzer: client-node reads the files and runs the exec plugin only when the
  // connection is built, and its errors escaped without naming the kubeconfig, some as TypeErrors.
  it('regression: a client-node kubeconfig with client-key-data of the wrong type is refused naming the file, not with a TypeError', async () => {
    writeFileSync(
      file,
      stringify({
        'current-context': 'c',
        contexts: [{ name: 'c', context: { cluster: 'k', user: 'u' } }],
        clusters: [{ name: 'k', cluster: { server: 'https://127.0.0.1:6443', 'certificate-authority-data': {} } }],
        users: [{ name: 'u', user: { 'client-key-data': [null, 1], exec: 'k' } }],
      }),
    );
    const error = await loadConnection(file, {}).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Error);
    expect(Object.getPrototypeOf(error)).toBe(Error.prototype);
    expect((error as Error).message).toMatch(new RegExp(`^--kubeconfig ${file}: .*\\(read with client-node, for its user exec\\)$`));
  });

  it('regression: a missing exec plugin or certificate file of a client-node kubeconfig is named with the kubeconfig', async () => {
    const users = [
      { exec: { apiVersion: 'client.authentication.k8s.io/v1', command: '/nonexistent/eso-mtls-fuzz-plugin' } },
      { as: 'someone', 'client-certificate': '/nonexistent/tls.crt', 'client-key': '/nonexistent/tls.key' },
    ];
    for (const user of users) {
      writeFileSync(
        file,
        stringify({
          'current-context': 'c',
          contexts: [{ name: 'c', context: { cluster: 'k', user: 'u' } }],
          clusters: [{ name: 'k', cluster: { server: 'https://127.0.0.1:6443' } }],
          users: [{ name: 'u', user }],
        }),
      );
      await expect(loadConnection(file, {})).rejects.toThrow(
        new RegExp(`^--kubeconfig ${file}: .*/nonexistent/.*\\(read with client-node, for its user (exec|as)\\)$`),
      );
    }
  });
});
