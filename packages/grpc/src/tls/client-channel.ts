import { isIP } from 'node:net';
import { checkServerIdentity, createSecureContext } from 'node:tls';
import * as grpc from '@grpc/grpc-js';
import { probeHandshake, type HandshakeDiagnosis } from './handshake-probe.js';
import type { TlsMaterial } from './material.js';
import { MIN_TLS_VERSION } from './server-credentials.js';
import { CertificateWatcher } from './watcher.js';

/**
 * Fixed client material, or a watcher over the folder of ESO's client certificate: the mounted
 * client Secret, or with `layout: 'pod-certificate'` the pod's own certificate (credentials.pem)
 * and the provider-server signer's trust bundle (ca.crt).
 */
export type ClientMaterialSource = TlsMaterial | CertificateWatcher;

/** A Provider address split into the name its certificate must carry and the port. */
export interface ProviderAddress {
  /** A DNS name or an IP literal (without brackets). */
  readonly host: string;
  /** The TCP port. */
  readonly port: number;
}

/** Splits `host:port` (`[v6]:port` for an IPv6 literal). Throws naming the address and the expected form. */
export function parseProviderAddress(address: string): ProviderAddress {
  const m = /^(?:\[([0-9A-Fa-f:.]+)\]|([A-Za-z0-9.-]+)):(\d{1,5})$/.exec(address);
  const port = Number(m?.[3]);
  if (!m || port < 1 || port > 65535) {
    throw new Error(`provider address ${JSON.stringify(address)} is not host:port, e.g. provider-aws.provider-system.svc:8080`);
  }
  return { host: (m[1] ?? m[2])!.toLowerCase(), port };
}

/**
 * The channel options every {@link ProviderChannel} starts from; `channelOptions` may override
 * them. A provider pod on a lost node neither answers nor resets its connections, and without
 * pings every call would time out on such a connection until TCP gave up (about 15 minutes):
 * - a keepalive ping after 10 s without a read, calls or none, and the connection dropped when it
 *   goes unanswered for 10 s, so the next call dials again and reaches a live endpoint;
 * - reconnect backoff capped at 5 s (grpc-js's default is 120 s), so a provider back after an
 *   outage is called again within seconds.
 * The provider must permit pings every 10 s without calls: `startProviderServer` does; a grpc-go
 * server needs a `KeepaliveEnforcementPolicy` (docs/provider-developers.md).
 */
export const PROVIDER_CHANNEL_DEFAULTS: Readonly<grpc.ChannelOptions> = Object.freeze({
  'grpc.keepalive_time_ms': 10_000,
  'grpc.keepalive_timeout_ms': 10_000,
  'grpc.keepalive_permit_without_calls': 1,
  'grpc.max_reconnect_backoff_ms': 5_000,
});

/** Options of {@link ProviderChannel}. */
export interface ProviderChannelOptions {
  /** `<service>.<namespace>.svc:<port>`: where to call, and the name the server certificate must carry. */
  readonly address: string;
  /** ESO's client certificate, key and CA bundle: a watcher or fixed material. */
  readonly material: ClientMaterialSource;
  /**
   * Dial this `host:port` instead of the address (tests on loopback, a port-forward). The server
   * certificate is still verified against the host of `address`; there is no way to skip that.
   */
  readonly connectTo?: string;
  /**
   * Extra grpc-js channel options, over {@link PROVIDER_CHANNEL_DEFAULTS}; the server-name options
   * are always ours.
   */
  readonly channelOptions?: grpc.ChannelOptions;
  /**
   * A replaced channel is closed when its last call finishes, or after this long regardless (a
   * caller that never reports the end of its call must not pin it). Default 10 minutes, the
   * provider server's default connection-age grace.
   */
  readonly drainTimeoutMs?: number;
}

interface Generation {
  readonly channel: grpc.Channel;
  readonly material: TlsMaterial;
  inFlight: number;
  retiring: boolean;
  drainTimer?: NodeJS.Timeout;
}

/** Counters of a {@link ProviderChannel}. */
export interface ProviderChannelStats {
  /** Channels created: the first plus one per material change. */
  readonly channels: number;
  /** Channels closed once their calls had finished (replaced ones, and all on close()). */
  readonly drained: number;
  /** Replaced channels closed by drainTimeoutMs with calls still counted. */
  readonly forcedCloses: number;
  /** Calls started and not yet reported finished, over all channels. */
  readonly inFlight: number;
  /** Times a channel entered TRANSIENT_FAILURE (a failed connect or handshake). */
  readonly transientFailures: number;
  /** Failed calls that a diagnostic handshake traced to certificates (see {@link ProviderChannel.explainFailure}). */
  readonly certificateFailures: number;
}

/** Why calls on a channel failed on certificates, and where the certificates came from. */
export interface CertificateFailure {
  /** What the diagnostic handshake found. */
  readonly diagnosis: HandshakeDiagnosis;
  /** The folder of ESO's client certificate and CA bundle; undefined for fixed material. */
  readonly clientFolder: string | undefined;
  /** What was dialled. */
  readonly target: string;
}

/**
 * ESO's connection to one provider over mTLS: presents the client certificate, trusts only the
 * bundle, and verifies the server certificate against the host of the address.
 *
 * When the client material changes (a rotated client certificate, a bundle with a new CA), new
 * calls get a new channel built from it, and the previous channel is closed once the calls that
 * started on it have finished: closing a channel with queued calls would fail them. Implements the
 * `ProviderChannelSource` of `createSecretStoreProviderClient`: every `getChannel()` must be
 * followed by one `callFinished(channel)`.
 */
export class ProviderChannel {
  readonly address: string;
  /** The DNS name (or IP) the server certificate is verified against. */
  readonly serverName: string;
  /** What is dialled. */
  readonly target: string;
  private current: Generation;
  private readonly generations = new Map<grpc.Channel, Generation>();
  private readonly counters = { channels: 0, drained: 0, forcedCloses: 0, transientFailures: 0, certificateFailures: 0 };
  private readonly materialWaiters = new Set<() => void>();
  private readonly unsubscribe: (() => void) | undefined;
  private closing: Promise<void> | undefined;
  private allClosed: (() => void) | undefined;

  constructor(private readonly options: ProviderChannelOptions) {
    this.address = options.address;
    this.serverName = parseProviderAddress(options.address).host;
    this.target = options.connectTo ?? options.address;
    if (options.connectTo !== undefined) parseProviderAddress(options.connectTo);
    if (options.channelOptions?.['grpc.ssl_target_name_override'] !== undefined) {
      throw new Error(
        `channel option grpc.ssl_target_name_override=${JSON.stringify(options.channelOptions['grpc.ssl_target_name_override'])} is not accepted: the server certificate is always verified against ${this.serverName}, the host of ${options.address}; use connectTo to dial elsewhere`,
      );
    }
    const source = options.material;
    if (source instanceof CertificateWatcher) {
      if (source.current === undefined) {
        throw new Error(`client material for ${options.address} is not loaded yet (watcher on ${source.directory}); await watcher.start() first`);
      }
      this.current = this.open(source.current);
      this.unsubscribe = source.onMaterial((m) => this.updateMaterial(m));
    } else {
      this.current = this.open(source);
    }
  }

  /** The channel for a new call; counts the call until {@link callFinished}. */
  getChannel(): grpc.Channel {
    if (this.closing) throw new Error(`provider channel to ${this.address} is closed`);
    this.current.inFlight++;
    return this.current.channel;
  }

  /** Reports the end of a call started on `channel`; closes a replaced channel after its last call. */
  callFinished(channel: grpc.Channel): void {
    const g = this.generations.get(channel);
    if (g === undefined) return;
    g.inFlight = Math.max(0, g.inFlight - 1);
    if (g.retiring && g.inFlight === 0) this.shut(g, 'drained');
  }

  /** Switches new calls to channels built from `material`; a no-op when nothing changed. */
  updateMaterial(material: TlsMaterial): void {
    if (this.closing || material === this.current.material) return;
    const old = this.current;
    this.current = this.open(material);
    this.retire(old);
    for (const wake of [...this.materialWaiters]) wake();
  }

  /**
   * Why calls on `channel` failed, if it was the certificates: one real TLS handshake with the
   * material `channel` was built from (grpc-js reports every failed handshake as UNAVAILABLE).
   * Undefined for a network failure, or once the provider accepts that material.
   */
  async explainFailure(channel: grpc.Channel, timeoutMs: number): Promise<CertificateFailure | undefined> {
    const g = this.generations.get(channel);
    if (g === undefined) return undefined;
    const diagnosis = await probeHandshake(parseProviderAddress(this.target), this.serverName, g.material, timeoutMs);
    if (diagnosis === undefined) return undefined;
    this.counters.certificateFailures++;
    const source = this.options.material;
    return { diagnosis, clientFolder: source instanceof CertificateWatcher ? source.directory : undefined, target: this.target };
  }

  /**
   * Resolves true once new calls get a channel built from other material than `channel`'s (the
   * client folder reloaded), false if that has not happened within `waitMs`.
   */
  awaitNewMaterial(channel: grpc.Channel, waitMs: number): Promise<boolean> {
    const changed = (): boolean => this.current.channel !== channel;
    if (changed() || this.closing || waitMs <= 0) return Promise.resolve(changed());
    return new Promise<boolean>((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        this.materialWaiters.delete(done);
        resolve(changed());
      };
      const timer = setTimeout(done, waitMs);
      this.materialWaiters.add(done);
    });
  }

  /** Counters for tests, benchmarks and metrics. */
  get stats(): ProviderChannelStats {
    let inFlight = 0;
    for (const g of this.generations.values()) inFlight += g.inFlight;
    return { ...this.counters, inFlight };
  }

  /** Stops new calls; resolves when every channel has been closed (after its calls, or by the drain timeout). */
  close(): Promise<void> {
    this.closing ??= new Promise<void>((resolve) => {
      this.unsubscribe?.();
      for (const wake of [...this.materialWaiters]) wake();
      this.allClosed = resolve;
      for (const g of [...this.generations.values()]) this.retire(g);
      if (this.generations.size === 0) resolve();
    });
    return this.closing;
  }

  private open(material: TlsMaterial): Generation {
    const context = createSecureContext({ ca: material.caBundle, cert: material.certificate, key: material.privateKey, minVersion: MIN_TLS_VERSION });
    const name = this.serverName;
    // A DNS name goes out as SNI and grpc-js checks the certificate against it; an IP (no SNI
    // allowed) is checked against the certificate's IP SANs by our own identity check.
    const byIp = isIP(name) !== 0;
    const credentials = grpc.credentials.createFromSecureContext(
      context,
      byIp ? { checkServerIdentity: (_host, cert) => checkServerIdentity(name, cert) } : {},
    );
    const channel = new grpc.Channel(this.target, credentials, {
      ...PROVIDER_CHANNEL_DEFAULTS,
      ...this.options.channelOptions,
      ...(byIp ? {} : { 'grpc.ssl_target_name_override': name }),
      'grpc.default_authority': this.address,
    });
    const g: Generation = { channel, material, inFlight: 0, retiring: false };
    this.generations.set(channel, g);
    this.counters.channels++;
    this.followState(channel, channel.getConnectivityState(false));
    return g;
  }

  private followState(channel: grpc.Channel, last: grpc.connectivityState): void {
    channel.watchConnectivityState(last, Infinity, () => {
      const state = channel.getConnectivityState(false);
      if (state === grpc.connectivityState.TRANSIENT_FAILURE) this.counters.transientFailures++;
      if (state !== grpc.connectivityState.SHUTDOWN) this.followState(channel, state);
    });
  }

  private retire(g: Generation): void {
    if (g.retiring) return;
    g.retiring = true;
    if (g.inFlight === 0) {
      this.shut(g, 'drained');
      return;
    }
    g.drainTimer = setTimeout(() => this.shut(g, 'forcedCloses'), this.options.drainTimeoutMs ?? 600_000);
    g.drainTimer.unref();
  }

  private shut(g: Generation, how: 'drained' | 'forcedCloses'): void {
    if (!this.generations.delete(g.channel)) return;
    clearTimeout(g.drainTimer);
    this.counters[how]++;
    g.channel.close();
    if (this.closing && this.generations.size === 0) this.allClosed?.();
  }
}
