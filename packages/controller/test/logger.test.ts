import { describe, expect, it } from '@jest/globals';
import { generateKeyPairSync } from 'node:crypto';
import { Writable } from 'node:stream';
import { createLogger, scrubPrivateKeys } from '../src/index.js';

function capture(): { stream: Writable; lines: () => Record<string, unknown>[]; text: () => string } {
  const chunks: string[] = [];
  const stream = new Writable({
    write(chunk, _enc, cb) {
      chunks.push(String(chunk));
      cb();
    },
  });
  return {
    stream,
    text: () => chunks.join(''),
    lines: () =>
      chunks
        .join('')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l)),
  };
}

describe('createLogger', () => {
  const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const pem = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();

  it('writes one JSON object per line with level names and an ISO time', () => {
    const out = capture();
    const log = createLogger('info', { destination: out.stream });
    log.info({ namespace: 'team-a', reason: 'initial' }, 'issued');
    log.debug('not shown at info');
    const [line, ...rest] = out.lines();
    expect(rest).toHaveLength(0);
    expect(line).toMatchObject({ level: 'info', msg: 'issued', namespace: 'team-a', reason: 'initial', component: 'eso-mtls-controller' });
    expect(Date.parse(String(line!.time))).not.toBeNaN();
  });

  it('names the component an embedder gives, on every line', () => {
    const out = capture();
    const log = createLogger('info', { destination: out.stream, component: 'example-operator' });
    log.info({}, 'started');
    log.child({ namespace: 'team-a' }).warn({}, 'refused');
    expect(out.lines().map((l) => l.component)).toEqual(['example-operator', 'example-operator']);
    expect(out.text()).not.toContain('eso-mtls-controller');
  });

  it('censors Secret data and keys passed as fields', () => {
    const out = capture();
    const log = createLogger('info', { destination: out.stream });
    const b64 = Buffer.from(pem).toString('base64');
    log.info({ secret: { data: { 'tls.key': b64 } }, data: { 'tls.key': b64 }, issued: { privateKeyPem: pem } }, 'oops');
    expect(out.text()).not.toContain(b64);
    expect(out.text()).not.toContain('PRIVATE KEY');
    expect(out.text()).toContain('[REDACTED]');
  });

  it('scrubs a PEM private key that slipped into a message or an error', () => {
    const out = capture();
    const log = createLogger('info', { destination: out.stream });
    log.error({ err: new Error(`request failed: ${pem}`) }, `body was ${pem}`);
    expect(out.text()).not.toContain('PRIVATE KEY-----\\n');
    expect(out.text()).not.toContain(pem.split('\n')[1]!);
    expect(out.text()).toContain('[REDACTED PRIVATE KEY]');
    expect(out.lines()).toHaveLength(1);
  });

  it('scrubPrivateKeys leaves lines without keys untouched', () => {
    const line = '{"msg":"certificate issued","notAfter":"2027-01-01T00:00:00Z"}';
    expect(scrubPrivateKeys(line)).toBe(line);
  });
});
