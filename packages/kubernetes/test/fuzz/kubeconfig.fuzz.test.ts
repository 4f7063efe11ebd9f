// Fuzzes the kubeconfig reader (loadKubeconfigFile) with arbitrary bytes, arbitrary text, YAML
// alias bombs and kubeconfig-shaped documents (YAML or JSON, then mutated) whose every field may
// hold any value, with arbitrary proxy variables and files that are missing or unreadable. The
// files are handed over through the reader's injected readFile, so no disk is needed.
//
// Properties: the reader returns a usable connection (an https or http server URL string, Buffers
// for TLS material, credential headers that are strings) or throws one of its classified errors:
// UnsupportedKubeconfigError, or an Error whose message starts with `kubeconfig <path>:` or names
// the proxy variable it refuses. Never a TypeError or any other error, never a hang.
// Memory bound: the YAML parser expands at most 100 aliases (yaml's maxAliasCount), so a document
// costs memory in proportion to its size; an alias bomb is refused as unreadable.
import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { stringify } from 'yaml';
import { type ClusterConnection, UnsupportedKubeconfigError, loadInClusterConnection, loadKubeconfigFile } from '../../src/index.js';
import { fuzzParameters } from '../../../../testing/fuzz/runs.js';

const PATH = '/fuzz/kubeconfig';
const PROXY_VARIABLES = ['HTTPS_PROXY', 'https_proxy', 'HTTP_PROXY', 'http_proxy'];

/** Any YAML/JSON value a field may hold, with strings that look like the ones a kubeconfig has. */
const value: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
  any: fc.oneof(
    { arbitrary: tie('scalar'), weight: 6 },
    { arbitrary: fc.array(tie('any'), { maxLength: 3 }), weight: 1 },
    { arbitrary: fc.dictionary(fc.string({ maxLength: 8 }), tie('any'), { maxKeys: 3 }), weight: 1 },
  ),
  scalar: fc.oneof(
    fc.string({ maxLength: 30 }),
    fc.constantFrom(
      'c',
      'k',
      'u',
      '',
      '__proto__',
      'constructor',
      'https://10.0.0.1:6443',
      'https://[::1]:6443/prefix',
      'http://127.0.0.1:8080',
      'https://',
      'https://[::1',
      'http://proxy:3128',
      'https://proxy:3128',
      'socks5://proxy:1080',
      'http://user:pa:ss@proxy',
      'http://%zz@proxy',
      'ca.crt',
      '../../etc/passwd',
      'Q0EgUEVN',
      '!!!not base64',
    ),
    fc.integer(),
    fc.double(),
    fc.boolean(),
    fc.constant(null),
  ),
})).any;

/** A field of a cluster or user: a known key (so the reader reaches deep code) or any key. */
const fields = (keys: readonly string[]) =>
  fc.dictionary(fc.oneof({ arbitrary: fc.constantFrom(...keys), weight: 4 }, { arbitrary: fc.string({ maxLength: 6 }), weight: 1 }), value, {
    maxKeys: 6,
  });
const CLUSTER_KEYS = ['server', 'certificate-authority', 'certificate-authority-data', 'insecure-skip-tls-verify', 'tls-server-name', 'proxy-url'];
const USER_KEYS = [
  'token',
  'tokenFile',
  'username',
  'password',
  'client-certificate',
  'client-certificate-data',
  'client-key',
  'client-key-data',
  'exec',
  'auth-provider',
  'as',
];

const clusterFields = fc
  .tuple(fc.oneof(fc.constantFrom('https://10.0.0.1:6443', 'https://[::1]:6443/prefix', 'http://127.0.0.1:8080'), value), fields(CLUSTER_KEYS))
  .map(([server, rest]) => ({ server, ...rest }));

/** A list of named entries that usually holds `name` (so the reader gets past the lookup), plus any others. */
const named = (field: string, name: string, body: fc.Arbitrary<unknown>) =>
  fc
    .tuple(
      fc.option(body, { freq: 5 }),
      fc.array(fc.oneof(fc.record({ name: fc.oneof(fc.constantFrom('c', 'k', 'u'), value), [field]: body }), value), { maxLength: 2 }),
    )
    .map(([mine, others]) => (mine === null ? others : [{ name, [field]: mine }, ...others]));

const kubeconfigShaped = fc.record(
  {
    'current-context': fc.oneof({ arbitrary: fc.constant('c'), weight: 6 }, { arbitrary: value, weight: 1 }),
    contexts: fc.oneof(
      {
        arbitrary: named(
          'context',
          'c',
          fc.record(
            {
              cluster: fc.oneof({ arbitrary: fc.constant('k'), weight: 6 }, { arbitrary: value, weight: 1 }),
              user: fc.oneof({ arbitrary: fc.constant('u'), weight: 4 }, { arbitrary: value, weight: 1 }),
            },
            { requiredKeys: ['cluster'] },
          ),
        ),
        weight: 6,
      },
      { arbitrary: value, weight: 1 },
    ),
    clusters: fc.oneof({ arbitrary: named('cluster', 'k', clusterFields), weight: 6 }, { arbitrary: value, weight: 1 }),
    users: fc.oneof({ arbitrary: named('user', 'u', fields(USER_KEYS)), weight: 6 }, { arbitrary: value, weight: 1 }),
  },
  { requiredKeys: [] },
);

/** A document written as YAML or JSON, then possibly cut and with a few characters replaced. */
const documentText = fc
  .tuple(
    kubeconfigShaped,
    fc.boolean(),
    fc.nat(),
    fc.oneof(
      { arbitrary: fc.constant([]), weight: 2 },
      {
        arbitrary: fc.array(fc.tuple(fc.nat(), fc.constantFrom(':', '-', ' ', '\n', '&a', '*a', '!!binary ', '{', '[', '"', "'", '#', '\t', '\0', '<<: ')), {
          maxLength: 3,
        }),
        weight: 1,
      },
    ),
  )
  .map(([doc, asJson, cut, edits]) => {
    let text = asJson ? JSON.stringify(doc) : stringify(doc);
    if (cut % 5 === 0) text = text.slice(0, cut % (text.length + 1));
    for (const [at, piece] of edits) {
      const i = at % (text.length + 1);
      text = text.slice(0, i) + piece + text.slice(i);
    }
    return Buffer.from(text);
  });

/** A billion-laughs document: each level an anchored list of the previous alias, `width` times. */
const aliasBomb = fc.tuple(fc.integer({ min: 2, max: 12 }), fc.integer({ min: 2, max: 12 })).map(([levels, width]) => {
  const lines = ['l0: &l0 [lol]'];
  for (let i = 1; i <= levels; i++) lines.push(`l${i}: &l${i} [${Array.from({ length: width }, () => `*l${i - 1}`).join(', ')}]`);
  lines.push(`current-context: *l${levels}`);
  return Buffer.from(lines.join('\n'));
});

const kubeconfigBytes: fc.Arbitrary<Buffer> = fc.oneof(
  { arbitrary: documentText, weight: 12 },
  { arbitrary: fc.uint8Array({ maxLength: 300 }).map((b) => Buffer.from(b)), weight: 1 },
  { arbitrary: fc.string({ maxLength: 300, unit: 'grapheme' }).map((s) => Buffer.from(s)), weight: 1 },
  { arbitrary: aliasBomb, weight: 1 },
);

/** Other files the kubeconfig names: some readable, the rest throwing as fs does, or worse. */
const otherFile = fc.oneof(
  fc.uint8Array({ maxLength: 40 }).map((b) => ({ bytes: Buffer.from(b) })),
  fc.constantFrom({ code: 'ENOENT' }, { code: 'EACCES' }, { code: 'EISDIR' }, { code: 'EIO' }),
);

const environment = fc.dictionary(
  fc.constantFrom(...PROXY_VARIABLES, 'NO_PROXY', 'no_proxy'),
  fc.oneof(fc.string({ maxLength: 20 }), fc.constantFrom('proxy:3128', 'http://proxy:3128', 'https://proxy', '*', '10.0.0.0/8', '.svc', '[::1]')),
  { maxKeys: 3 },
);

function fsError(code: string): NodeJS.ErrnoException {
  return Object.assign(new Error(`${code}: simulated failure, open '...'`), { code });
}

function classified(e: unknown): boolean {
  if (e instanceof UnsupportedKubeconfigError) return true;
  if (!(e instanceof Error) || Object.getPrototypeOf(e) !== Error.prototype) return false;
  return e.message.startsWith(`kubeconfig ${PATH}: `) || PROXY_VARIABLES.some((v) => e.message.startsWith(`${v} `));
}

async function expectUsable(c: ClusterConnection): Promise<void> {
  expect(typeof c.server).toBe('string');
  expect(c.server).not.toBe('');
  for (const part of [c.tls.ca, c.tls.cert, c.tls.key]) if (part !== undefined) expect(Buffer.isBuffer(part)).toBe(true);
  expect(typeof c.description).toBe('string');
  const headers: Record<string, string> = {};
  await c.authorize(headers).catch((e: unknown) => {
    // A tokenFile that became unreadable: the reader's own message.
    if (!(e instanceof Error && e.message.startsWith(`kubeconfig ${PATH}: `))) throw e;
  });
  for (const v of Object.values(headers)) expect(typeof v).toBe('string');
}

describe('the kubeconfig reader under arbitrary documents', () => {
  it('returns a usable connection or throws a classified error', async () => {
    await fc.assert(
      fc.asyncProperty(kubeconfigBytes, otherFile, environment, async (bytes, other, env) => {
        const readFile = (p: string): Buffer => {
          if (p === PATH) return bytes;
          if ('bytes' in other) return other.bytes;
          throw fsError(other.code);
        };
        let connection: ClusterConnection;
        try {
          connection = loadKubeconfigFile(PATH, { readFile, env, now: () => 0 });
        } catch (e) {
          if (!classified(e)) throw new Error(`unclassified error for ${JSON.stringify(bytes.toString('utf8'))}: ${String(e)}`, { cause: e });
          return;
        }
        await expectUsable(connection);
      }),
      fuzzParameters(200),
    );
  });

  it('refuses an alias bomb (10^10 nodes when expanded) as unreadable', () => {
    const letter = (i: number) => String.fromCharCode(97 + i);
    const levels = Array.from(
      { length: 9 },
      (_, i) =>
        `${letter(i + 1)}: &${letter(i + 1)} [${Array(10)
          .fill(`*${letter(i)}`)
          .join(', ')}]`,
    );
    const bomb = Buffer.from(['a: &a [x, x, x, x, x, x, x, x, x, x]', ...levels, 'current-context: *j'].join('\n'));
    expect(() => loadKubeconfigFile(PATH, { readFile: () => bomb })).toThrow(/^kubeconfig \/fuzz\/kubeconfig: cannot read it: .*alias/i);
  });

  it('in-cluster: returns a usable connection or an error saying what is missing, for any service environment and files', async () => {
    const serviceEnv = fc.record(
      {
        KUBERNETES_SERVICE_HOST: fc.oneof(fc.constantFrom('10.96.0.1', 'fd00::1', 'kubernetes.default', ''), fc.string({ maxLength: 12 })),
        KUBERNETES_SERVICE_PORT: fc.oneof(fc.constantFrom('443', '0', '70000', ''), fc.string({ maxLength: 6 })),
      },
      { requiredKeys: [] },
    );
    await fc.assert(
      fc.asyncProperty(serviceEnv, environment, otherFile, otherFile, async (service, proxies, ca, token) => {
        const files: Record<string, typeof ca> = { '/sa/ca.crt': ca, '/sa/token': token };
        const readFile = (p: string): Buffer => {
          const f = files[p];
          if (f !== undefined && 'bytes' in f) return f.bytes;
          throw fsError(f?.code ?? 'ENOENT');
        };
        let connection: ClusterConnection;
        try {
          connection = loadInClusterConnection({ env: { ...service, ...proxies }, serviceAccountDir: '/sa', readFile, now: () => 0 });
        } catch (e) {
          const known = [
            'not running in a cluster',
            'in-cluster configuration needs',
            'in-cluster service account token',
            ...PROXY_VARIABLES.map((v) => `${v} `),
          ];
          if (!(e instanceof Error && Object.getPrototypeOf(e) === Error.prototype && known.some((k) => e.message.startsWith(k)))) {
            throw new Error(`unclassified error for ${JSON.stringify(service)}: ${String(e)}`, { cause: e });
          }
          return;
        }
        expect(connection.server.startsWith('https://')).toBe(true);
        const headers: Record<string, string> = {};
        await connection.authorize(headers);
        expect(headers.Authorization).toMatch(/^Bearer \S/);
      }),
      fuzzParameters(300),
    );
  });

  it('a -data field is read as client-go decodes it, or refused naming the field', () => {
    const data = fc.oneof(
      fc.uint8Array({ minLength: 1, maxLength: 60 }).map((b) => Buffer.from(b).toString('base64')),
      fc.uint8Array({ minLength: 1, maxLength: 60 }).map((b) => Buffer.from(b).toString('base64').replace(/=+$/, '')),
      fc.uint8Array({ minLength: 1, maxLength: 60 }).map((b) => Buffer.from(b).toString('base64url')),
      fc.string({ minLength: 1, maxLength: 40 }),
      fc.stringMatching(/^[A-Za-z0-9+/=\r\n]{1,12}$/),
    );
    fc.assert(
      fc.property(fc.constantFrom('certificate-authority-data', 'client-certificate-data'), data, (field, text) => {
        const cluster: Record<string, unknown> = { server: 'https://10.0.0.1:6443' };
        const user: Record<string, unknown> = { token: 't' };
        if (field === 'certificate-authority-data') cluster[field] = text;
        else Object.assign(user, { [field]: text, 'client-key-data': 'S0VZ' });
        const doc = Buffer.from(
          JSON.stringify({
            'current-context': 'c',
            contexts: [{ name: 'c', context: { cluster: 'k', user: 'u' } }],
            clusters: [{ name: 'k', cluster }],
            users: [{ name: 'u', user }],
          }),
        );
        // Go's base64.StdEncoding: whole quanta of the standard alphabet, padded; line breaks skipped.
        const compact = text.replace(/[\r\n]/g, '');
        const base64 = compact.length % 4 === 0 && /^[A-Za-z0-9+/]*={0,2}$/.test(compact);
        let c: ClusterConnection;
        try {
          c = loadKubeconfigFile(PATH, { readFile: () => doc });
        } catch (e) {
          expect((e as Error).message).toMatch(new RegExp(`^kubeconfig ${PATH}: (cluster "k"|user "u") ${field} is not base64`));
          expect(base64).toBe(false);
          return;
        }
        expect(base64).toBe(true);
        expect(field === 'certificate-authority-data' ? c.tls.ca : c.tls.cert).toEqual(Buffer.from(compact, 'base64'));
      }),
      fuzzParameters(300),
    );
  });

  // Found by the property above: `-data` fields were decoded with Buffer.from(text, 'base64'),
  // which skips what it cannot read, so garbage became a CA or key of whatever bytes were left,
  // and the error came only at the TLS handshake, far from the kubeconfig.
  it('regression: a -data field that is not base64 is refused naming the field; base64 with line breaks is read as client-go reads it', () => {
    const config = (data: string) =>
      Buffer.from(
        stringify({
          'current-context': 'c',
          contexts: [{ name: 'c', context: { cluster: 'k', user: 'u' } }],
          clusters: [{ name: 'k', cluster: { server: 'https://10.0.0.1:6443', 'certificate-authority-data': data } }],
          users: [{ name: 'u', user: { token: 't' } }],
        }),
      );
    for (const garbage of ['!!!not base64', 'Q0EgUEV', 'Q0Eg UEVN', 'Q0EgUEVN=']) {
      expect(() => loadKubeconfigFile(PATH, { readFile: () => config(garbage) })).toThrow(
        `kubeconfig ${PATH}: cluster "k" certificate-authority-data is not base64 (standard alphabet, padded, as kubectl writes it)`,
      );
    }
    const wrapped = `${Buffer.from('CA PEM, long enough to wrap').toString('base64').slice(0, 16)}\n${Buffer.from('CA PEM, long enough to wrap').toString('base64').slice(16)}`;
    expect(loadKubeconfigFile(PATH, { readFile: () => config(wrapped) }).tls.ca).toEqual(Buffer.from('CA PEM, long enough to wrap'));
  });
});
