import { type CaPhase, type RotationReason, type SecretWrite, parseCertificate } from '@eso-mtls/core';
import type { ProviderLogRecord } from '@eso-mtls/grpc';
import type { Delivery } from './kubelet-volume.js';
import type { ScenarioPlayer } from './scenario-player.js';
import type { ScenarioCheck } from './summary.js';
import type { DemoEvent } from './timeline.js';

/** Lower-case hex without leading zero octets, as the core writes serial numbers. */
const normalSerial = (serial: string | undefined): string => (serial ?? '').toLowerCase().replace(/^(00)+(?=.)/, '');

/** The normalised serial of a PEM certificate, or '' when it does not parse (a damaged file). */
function serialOf(pem: string | undefined): string {
  try {
    return normalSerial(parseCertificate(pem ?? '').serialNumber);
  } catch {
    return '';
  }
}

/**
 * What a run counts and remembers, for the timeline's wording and the summary: issuances by
 * reason and namespace, CA phases, provider reloads and refusals, and whether each scenario step
 * had its effect. A provider's reload names only the serial it now serves, so the book keeps the
 * DNS names of every server certificate issued and the last delivery to each folder.
 */
export class RunBook {
  readonly rotations: Partial<Record<RotationReason, number>> = {};
  readonly caPhases: Partial<Record<CaPhase, number>> = {};
  readonly serverRotations: Record<string, number> = {};
  readonly providerReloads = { reloads: 0, refused: 0 };
  private readonly recreated = new Set<string>();
  private readonly relabelled = new Set<string>();
  private readonly refusedDamaged = new Set<string>();
  private readonly repaired = new Set<string>();
  private readonly lastDelivery = new Map<string, { serial: string; delayMs?: number }>();
  private readonly dnsNamesBySerial = new Map<string, readonly string[]>();
  private readonly servedSerial = new Map<string, string>();
  /** Set once the scenario runs; what it did decides what a write or a refusal means. */
  player: ScenarioPlayer | undefined;

  /** Counts a write the store accepted. */
  written(w: SecretWrite): void {
    if (w.kind === 'ca') for (const p of w.phases ?? []) this.caPhases[p] = (this.caPhases[p] ?? 0) + 1;
    if ((w.kind === 'serverLeaf' || w.kind === 'clientLeaf') && w.reason) this.rotations[w.reason] = (this.rotations[w.reason] ?? 0) + 1;
    if (w.kind !== 'serverLeaf' || typeof w.target !== 'object') return;
    const ns = w.target.namespace;
    this.dnsNamesBySerial.set(serialOf(w.data['tls.crt']), parseCertificate(w.data['tls.crt'] ?? '').dnsNames);
    this.serverRotations[ns] = (this.serverRotations[ns] ?? 0) + 1;
    if (w.reason === 'secret_missing' && this.player?.deleted.has(ns)) this.recreated.add(ns);
    if (w.reason === 'dns_changed' && this.player?.unlabelled.has(ns)) this.relabelled.add(ns);
  }

  /** Notes a swap beginning in a provider's folder; a good one after a damaged one repairs it. */
  delivering(namespace: string, d: Delivery): void {
    const serial = d.kind === 'damage' ? '' : serialOf(d.payload['tls.crt']);
    this.lastDelivery.set(namespace, { serial, ...(d.delayMs === undefined ? {} : { delayMs: d.delayMs }) });
    if (d.kind === 'mount') this.servedSerial.set(namespace, serial);
    if (d.kind !== 'damage' && this.player?.damaged.delete(namespace) && this.refusedDamaged.has(namespace)) this.repaired.add(namespace);
  }

  /** The timeline line of a provider's log record, and the DNS names it serves after a reload. */
  providerLog(namespace: string, r: ProviderLogRecord): { event: DemoEvent; dnsNames: readonly string[] } {
    const served = normalSerial(r.serialNumber);
    const subject = `namespace/${namespace}`;
    if (r.level !== 'info') {
      this.providerReloads.refused++;
      if (this.player?.damaged.has(namespace)) this.refusedDamaged.add(namespace);
      const message = `reload REFUSED, still serving ${served.slice(0, 8)}…: ${r.detail ?? r.message}`;
      return { event: { source: 'provider', subject, message, reason: r.reason }, dnsNames: [] };
    }
    this.providerReloads.reloads++;
    const what = this.servedSerial.get(namespace) === served ? `new ca.crt, same certificate ${served.slice(0, 8)}…` : `now serving ${served.slice(0, 8)}…`;
    this.servedSerial.set(namespace, served);
    const last = this.lastDelivery.get(namespace);
    const delay =
      last?.serial === served && last.delayMs !== undefined ? ` (the kubelet delivered it ${(last.delayMs / 1000).toFixed(1)}s after the Secret changed)` : '';
    return { event: { source: 'provider', subject, message: `reloaded: ${what}${delay}` }, dnsNames: this.dnsNamesBySerial.get(served) ?? [] };
  }

  /** Leaves issued so far, server and client. */
  get issued(): number {
    return Object.values(this.rotations).reduce((a, b) => a + (b ?? 0), 0);
  }

  /** Whether each promised step was seen; `secondServiceCalled` comes from the caller's counts. */
  checks(namespaces: readonly string[], secondServiceCalled: boolean): ScenarioCheck[] {
    return [
      { name: 'several leaf rotations per provider (3 or more each)', ok: namespaces.every((ns) => (this.serverRotations[ns] ?? 0) >= 3) },
      {
        name: 'a full overlap CA rotation: prepare, activate, retire',
        ok: (['prepare', 'activate', 'retire'] as const).every((p) => (this.caPhases[p] ?? 0) > 0),
      },
      { name: 'a Secret deleted and recreated', ok: this.recreated.size > 0 },
      { name: 'a damaged mounted file refused, then repaired', ok: this.repaired.size > 0 },
      { name: 'a second Service labelled into a namespace, served and called', ok: secondServiceCalled },
      { name: 'its label removed and the certificate re-issued without it', ok: this.relabelled.size > 0 },
    ];
  }
}
