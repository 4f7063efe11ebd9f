// What the tests of the Go reloading programs (testing/go-interop/cmd/reloading-provider and
// cmd/reloading-client) share: the Service they are named after, their event lines, serials as
// numbers, their builds, and a call load that counts per client (chain-handshakes.test.ts's too).
import { X509Certificate } from 'node:crypto';
import { rmSync } from 'node:fs';
import { dirname } from 'node:path';
import { afterAll, beforeAll } from '@jest/globals';
import type { SecretWrite } from '@eso-mtls/core';
import type { SecretStoreProviderClient } from '@eso-mtls/grpc';
import { type GoProgram, buildGoCommands } from './go-interop.js';

export const NAMESPACE = 'provider-system';
export const SERVICE = 'file-provider';
/** The name ESO verifies: the host of the provider's address. */
export const SERVER_NAME = `${SERVICE}.${NAMESPACE}.svc`;
export const ADDRESS = `${SERVER_NAME}:8080`;
/** A cold build downloads grpc-go and fsnotify from the Go proxy and compiles them: minutes, once per machine. */
export const BUILD_TIMEOUT = 10 * 60_000;
/** A hang guard only: how long the rotations take is the machine's business, not the test's. */
export const TEST_TIMEOUT = 120_000;
// A harness gone wrong must not fill the memory with failures.
const MAX_FAILURES = 1000;

/** A serial in hex (any case, any leading zeros) as a number, so Go's and Node's spellings compare. */
export const serial = (hex: string): bigint => BigInt(`0x${hex}`);
/** The serial of the leaf a write puts in tls.crt. */
export const leafSerial = (w: SecretWrite): bigint => serial(new X509Certificate(w.data['tls.crt']!).serialNumber);

/** CA certificates in a write's ca.crt. */
export function countCas(w: SecretWrite): number {
  return (w.data['ca.crt']!.match(/-----BEGIN CERTIFICATE-----/g) ?? []).length;
}

/** One JSON event line of a Go program: its CertificateWatcher's, or the reloading client's own. */
interface GoEvent {
  readonly event: 'loaded' | 'reloaded' | 'refused' | 'call_failed' | 'server_certificate' | 'summary';
  readonly reason?: string;
  readonly serial?: string;
  readonly cas?: number;
  readonly at?: string;
}
const WATCHER_EVENTS: readonly GoEvent['event'][] = ['loaded', 'reloaded', 'refused'];
const eventOf = (line: string): GoEvent | undefined => (line.startsWith('{') ? (JSON.parse(line) as GoEvent) : undefined);
const isWatcherEvent = (e: GoEvent | undefined): e is GoEvent => e !== undefined && WATCHER_EVENTS.includes(e.event);

/** Reads a Go program's watcher events from a cursor on, one at a time, in order. */
export class GoEvents {
  private next = 0;
  constructor(private readonly program: GoProgram) {}
  /** The next watcher event after those already taken. */
  async take(): Promise<GoEvent> {
    const { line, index } = await this.program.nextLine((l) => isWatcherEvent(eventOf(l)), this.next);
    this.next = index + 1;
    return eventOf(line)!;
  }
  /** Every watcher event printed so far. */
  all(): GoEvent[] {
    return this.program.lines.map(eventOf).filter(isWatcherEvent);
  }
  /** The serials of the provider certificates the reloading client handshook with, in the order first seen. */
  serverCertificates(): bigint[] {
    return this.program.lines
      .map(eventOf)
      .filter((e) => e?.event === 'server_certificate')
      .map((e) => serial(e!.serial!));
  }
}

/** Calls back to back on every client until stopped, counting per client so a step can wait for calls after it. */
export class Load {
  running = true;
  ok = 0;
  readonly failures: string[] = [];
  private readonly perClient: number[];
  private readonly loops: Promise<void>[];

  constructor(clients: readonly SecretStoreProviderClient[], key: string) {
    this.perClient = clients.map(() => 0);
    this.loops = clients.map(async (client, i) => {
      while (this.running && this.failures.length < MAX_FAILURES) {
        try {
          await client.getSecret({ remoteRef: { key } });
          this.ok++;
          this.perClient[i]!++;
        } catch (e) {
          this.failures.push(`client ${i}: ${(e as Error).message}`);
        }
      }
    });
  }

  /** Waits until every client has completed `n` more calls. */
  async callsAfterStep(n = 5): Promise<void> {
    const target = this.perClient.map((c) => c + n);
    const deadline = Date.now() + 20_000;
    while (this.perClient.some((c, i) => c < target[i]!)) {
      if (Date.now() > deadline)
        throw new Error(`calls stalled: ${this.perClient.join(', ')} of ${target.join(', ')}; failures: ${this.failures.slice(0, 3).join(' | ')}`);
      await new Promise((r) => setTimeout(r, 2));
    }
  }

  async stop(): Promise<void> {
    this.running = false;
    await Promise.all(this.loops);
  }
}

/**
 * Builds cmd/`name` once for the test file (removed after it) and returns a getter of its path, to
 * read inside tests.
 */
export function useGoCommand(name: 'reloading-client' | 'reloading-provider'): () => string {
  let bin: string | undefined;
  beforeAll(async () => {
    bin = (await buildGoCommands([name]))[name];
  }, BUILD_TIMEOUT);
  afterAll(() => {
    if (bin) rmSync(dirname(bin), { recursive: true, force: true });
  });
  return () => {
    if (bin === undefined) throw new Error(`cmd/${name} is not built: read its path inside tests only`);
    return bin;
  };
}
