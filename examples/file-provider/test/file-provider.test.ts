import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import * as grpc from '@grpc/grpc-js';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'yaml';
import { createSecretStoreProviderClient, SecretNotFoundError, type SecretStoreProviderClient } from '@eso-mtls/grpc';
import { runFileProvider, type RunningFileProvider } from '../src/main.js';
import { eventually } from '@eso-mtls/test-kit/eventually';
import { failureOf } from '@eso-mtls/test-kit/failure';
import { writeCertDir } from '@eso-mtls/test-kit/pki';
import { clientChannel, createTestPkiSet, type TestPkiSet } from '@eso-mtls/test-kit/provider-fixture';

const DATA = `# secrets served to External Secrets Operator
secrets:
  team-a/db/password:
    value: hunter2
    tags: { env: prod, tier: db }
  team-a/db/config:
    properties: { user: admin, host: db.internal }
    tags: { env: prod, tier: db }
  team-a/web/token:
    valueBase64: AP8=
    tags: { env: staging }
  team-b/api:
    value: '{"id":"b","port":443}'
`;

let pki: TestPkiSet;
let dir: string;
let dataFile: string;
let certDir: string;
let provider: RunningFileProvider;
let channel: grpc.Channel;
let client: SecretStoreProviderClient;

/** Waits until Validate reports the data file invalid, and returns that report: reloads are asynchronous (watch event or poll). */
const invalidReport = () =>
  eventually(async () => {
    const v = await client.validate({});
    if (v.valid) throw new Error('not reloaded yet');
    return v;
  });

/** Replaces the data file the way editors and config tools do: write elsewhere, rename over it. */
function replaceDataFile(text: string): void {
  writeFileSync(join(dir, 'edit.tmp'), text);
  renameSync(join(dir, 'edit.tmp'), dataFile);
}

beforeAll(async () => {
  pki = await createTestPkiSet();
  dir = mkdtempSync(join(tmpdir(), 'file-provider-'));
  dataFile = join(dir, 'secrets.yaml');
  writeFileSync(dataFile, DATA);
  certDir = writeCertDir({ ca: pki.ca.cert, cert: pki.server.cert, key: pki.server.key });
  provider = await runFileProvider({
    dataFile,
    certDir,
    certLayout: 'secret',
    minTlsVersion: 'TLSv1.3',
    host: '127.0.0.1',
    port: 0,
    healthPort: 0,
    metrics: undefined,
  });
  channel = clientChannel(`127.0.0.1:${provider.server.port}`, pki.ca.cert, pki.client);
  client = createSecretStoreProviderClient(channel, { retry: false });
});

afterAll(async () => {
  channel?.close();
  await provider?.close();
  for (const d of [dir, certDir]) if (d) rmSync(d, { recursive: true, force: true });
});

describe('reading', () => {
  it('GetSecret: text value, base64 bytes, a property, and a properties-only secret as JSON', async () => {
    expect(await client.getSecret({ remoteRef: { key: 'team-a/db/password' } })).toEqual(Buffer.from('hunter2'));
    expect(await client.getSecret({ remoteRef: { key: 'team-a/web/token' } })).toEqual(Buffer.from([0, 255]));
    expect(await client.getSecret({ remoteRef: { key: 'team-a/db/config', property: 'user' } })).toEqual(Buffer.from('admin'));
    expect(JSON.parse((await client.getSecret({ remoteRef: { key: 'team-a/db/config' } })).toString())).toEqual({ user: 'admin', host: 'db.internal' });
  });

  it('NOT_FOUND for a missing secret or property; INVALID_ARGUMENT for an empty key', async () => {
    const missing = await failureOf(client.getSecret({ remoteRef: { key: 'team-a/nope' } }));
    expect([missing instanceof SecretNotFoundError, (missing as Error).message]).toEqual([true, 'secret "team-a/nope" does not exist']);
    const noProperty = await failureOf(client.getSecret({ remoteRef: { key: 'team-a/db/config', property: 'port' } }));
    expect((noProperty as Error).message).toBe('secret "team-a/db/config" has no property "port"');
    expect((await failureOf(client.getSecret({ remoteRef: { key: '' } }))).code).toBe(grpc.status.INVALID_ARGUMENT);
  });

  it('GetSecretMap: properties, the fields of a JSON value, and FAILED_PRECONDITION for a plain value', async () => {
    expect(await client.getSecretMap({ remoteRef: { key: 'team-a/db/config' } })).toEqual({ user: Buffer.from('admin'), host: Buffer.from('db.internal') });
    expect(await client.getSecretMap({ remoteRef: { key: 'team-b/api' } })).toEqual({ id: Buffer.from('b'), port: Buffer.from('443') });
    expect((await failureOf(client.getSecretMap({ remoteRef: { key: 'team-a/db/password' } }))).code).toBe(grpc.status.FAILED_PRECONDITION);
    await expect(client.getSecretMap({ remoteRef: { key: 'gone' } })).rejects.toBeInstanceOf(SecretNotFoundError);
  });

  it('GetAllSecrets applies the path prefix, the name regexp and every tag', async () => {
    const keys = async (find: object) => Object.keys(await client.getAllSecrets({ find })).sort();
    expect(await keys({ path: 'team-a/' })).toEqual(['team-a/db/config', 'team-a/db/password', 'team-a/web/token']);
    expect(await keys({ path: 'team-a/', name: { regexp: 'pass|tok' } })).toEqual(['team-a/db/password', 'team-a/web/token']);
    expect(await keys({ tags: { env: 'prod' } })).toEqual(['team-a/db/config', 'team-a/db/password']);
    expect(await keys({ tags: { env: 'prod', tier: 'cache' } })).toEqual([]);
    expect(await keys({ path: 'team-a/', name: { regexp: 'db' }, tags: { env: 'staging' } })).toEqual([]);
    expect(await client.getAllSecrets({ find: { name: { regexp: '^team-b/' } } })).toEqual({ 'team-b/api': Buffer.from('{"id":"b","port":443}') });
    const invalid = await failureOf(client.getAllSecrets({ find: { name: { regexp: '(' } } }));
    expect([invalid.code, invalid.details]).toEqual([
      grpc.status.INVALID_ARGUMENT,
      expect.stringContaining('find.name.regexp "(" is not a valid regular expression'),
    ]);
  });

  it('Validate and Capabilities', async () => {
    expect(await client.validate({})).toEqual({ valid: true, error: '', warnings: [] });
    expect(await client.capabilities({})).toBe('READ_WRITE');
  });
});

describe('writing persists to the data file atomically', () => {
  const onDisk = () => parse(readFileSync(dataFile, 'utf8')) as { secrets: Record<string, Record<string, unknown>> };

  it('PushSecret of one key, of a property, and of a whole Secret', async () => {
    await client.pushSecret({ secretData: { token: Buffer.from([1, 2, 3]) }, pushSecretData: { remoteKey: 'team-c/token', secretKey: 'token' } });
    await client.pushSecret({
      secretData: { pw: Buffer.from('s3cret') },
      pushSecretData: { remoteKey: 'team-a/db/config', secretKey: 'pw', property: 'password' },
    });
    await client.pushSecret({ secretData: { a: Buffer.from('1'), b: Buffer.from('2') }, pushSecretData: { remoteKey: 'team-c/all' } });
    expect(onDisk().secrets['team-c/token']).toEqual({ valueBase64: 'AQID' });
    expect(onDisk().secrets['team-a/db/config']).toEqual({
      properties: { user: 'admin', host: 'db.internal', password: 's3cret' },
      tags: { env: 'prod', tier: 'db' },
    });
    expect(onDisk().secrets['team-c/all']).toEqual({ properties: { a: '1', b: '2' } });
    expect(await client.getSecret({ remoteRef: { key: 'team-c/token' } })).toEqual(Buffer.from([1, 2, 3]));
    expect(readdirSync(dir).filter((f) => f.endsWith('.tmp'))).toEqual([]);
  });

  it('PushSecret names a secretKey that is not in the data', async () => {
    const error = await failureOf(client.pushSecret({ secretData: { a: Buffer.from('1') }, pushSecretData: { remoteKey: 'x', secretKey: 'b' } }));
    expect([error.code, error.details]).toEqual([grpc.status.INVALID_ARGUMENT, 'secretData has no key "b"; it has a']);
  });

  it('DeleteSecret of a property and of a secret; NOT_FOUND for a missing one; SecretExists follows', async () => {
    expect(await client.secretExists({ remoteRef: { remoteKey: 'team-a/db/config', property: 'password' } })).toBe(true);
    await client.deleteSecret({ remoteRef: { remoteKey: 'team-a/db/config', property: 'password' } });
    expect(await client.secretExists({ remoteRef: { remoteKey: 'team-a/db/config', property: 'password' } })).toBe(false);
    await client.deleteSecret({ remoteRef: { remoteKey: 'team-c/all' } });
    expect(await client.secretExists({ remoteRef: { remoteKey: 'team-c/all' } })).toBe(false);
    expect(onDisk().secrets['team-c/all']).toBeUndefined();
    await expect(client.deleteSecret({ remoteRef: { remoteKey: 'team-c/all' } })).rejects.toBeInstanceOf(SecretNotFoundError);
  });
});

describe('the data file is watched', () => {
  it('a change on disk is served without a restart', async () => {
    replaceDataFile(`${readFileSync(dataFile, 'utf8')}  team-d/new:\n    value: fresh\n`);
    expect(await eventually(() => client.getSecret({ remoteRef: { key: 'team-d/new' } }))).toEqual(Buffer.from('fresh'));
  });

  it('a broken file keeps the last good contents, fails Validate and blocks writes; fixing it recovers', async () => {
    const good = readFileSync(dataFile, 'utf8');
    replaceDataFile('secrets:\n  broken: [not, an, object]\n');
    const report = await invalidReport();
    expect(report.error).toContain('secrets["broken"] must be an object');
    expect(await client.getSecret({ remoteRef: { key: 'team-d/new' } })).toEqual(Buffer.from('fresh'));
    const push = await failureOf(client.pushSecret({ secretData: { a: Buffer.from('1') }, pushSecretData: { remoteKey: 'x', secretKey: 'a' } }));
    expect([push.code, push.details]).toEqual([grpc.status.FAILED_PRECONDITION, expect.stringContaining('fix the file, then retry')]);
    expect(readFileSync(dataFile, 'utf8')).toBe('secrets:\n  broken: [not, an, object]\n');
    replaceDataFile(good);
    await eventually(async () => expect(await client.validate({})).toMatchObject({ valid: true }));
  });

  it('a FIFO in place of the data file is refused at once, not read; the last good contents stay served', async () => {
    const good = readFileSync(dataFile, 'utf8');
    execFileSync('mkfifo', [join(dir, 'fifo.tmp')]);
    renameSync(join(dir, 'fifo.tmp'), dataFile);
    const report = await invalidReport();
    expect(report.error).toContain('is a FIFO');
    expect(await client.getSecret({ remoteRef: { key: 'team-d/new' } })).toEqual(Buffer.from('fresh'));
    replaceDataFile(good);
    await eventually(async () => expect(await client.validate({})).toMatchObject({ valid: true }));
  });
});
