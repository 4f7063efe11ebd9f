import type { CaPhase, RotationReason } from '@eso-mtls/core';
import { EXIT_INTERRUPTED } from '@eso-mtls/controller';

/** Something the run promised to show, and whether it did. */
export interface ScenarioCheck {
  readonly name: string;
  readonly ok: boolean;
}

/** What a demo run did, as printed at the end and as the last JSON line. */
export interface DemoSummary {
  readonly durationMs: number;
  readonly providers: number;
  readonly seed: number;
  readonly calls: { readonly made: number; readonly failed: number };
  /** mTLS connections the providers accepted that carried calls (one full handshake each). */
  readonly handshakes: number;
  /** Leaves issued (server and client certificates), by reason. */
  readonly rotations: Readonly<Partial<Record<RotationReason, number>>>;
  /** CA Secret writes, by phase. */
  readonly caPhases: Readonly<Partial<Record<CaPhase, number>>>;
  /** Server certificates issued per provider namespace. */
  readonly serverRotations: Readonly<Record<string, number>>;
  /** Certificate swaps after the first load: the providers' and ESO's client. */
  readonly reloads: number;
  /** Reloads refused (the last good pair kept): the providers' and ESO's client. */
  readonly refusedReloads: number;
  readonly checks: readonly ScenarioCheck[];
  /** Ended early by Ctrl-C (SIGINT) or SIGTERM. */
  readonly interrupted: boolean;
}

/**
 * 0 when every call succeeded and every step of the scenario was seen; 1 when a call failed or a
 * step was not seen; {@link EXIT_INTERRUPTED} when stopped early without a failed call.
 */
export function demoExitCode(summary: DemoSummary): number {
  if (summary.calls.failed > 0) return 1;
  if (summary.interrupted) return EXIT_INTERRUPTED;
  return summary.calls.made > 0 && summary.checks.every((c) => c.ok) ? 0 : 1;
}

const count = (n: number): string => n.toLocaleString('en-US');

function byKey(record: Readonly<Partial<Record<string, number>>>): string {
  const entries = Object.entries(record).filter(([, n]) => (n ?? 0) > 0);
  return entries.length === 0 ? 'none' : entries.map(([k, n]) => `${k} ${n}`).join(', ');
}

/** The summary as text. */
export function formatSummary(s: DemoSummary): string {
  const leaves = Object.values(s.rotations).reduce((a, b) => a + (b ?? 0), 0);
  const verdict =
    s.calls.failed > 0
      ? `FAILED: ${count(s.calls.failed)} call(s) failed`
      : s.interrupted
        ? `STOPPED early: no call failed in ${(s.durationMs / 1000).toFixed(0)}s`
        : s.calls.made === 0
          ? 'FAILED: no call was made'
          : s.checks.every((c) => c.ok)
            ? 'OK: every call succeeded through every rotation'
            : 'INCOMPLETE: a step of the scenario was not seen (see the checks)';
  const lines = [
    '',
    `Summary (${(s.durationMs / 1000).toFixed(0)}s, ${s.providers} providers, seed ${s.seed})`,
    `  calls made          ${count(s.calls.made)}`,
    `  calls failed        ${count(s.calls.failed)}`,
    `  handshakes          ${count(s.handshakes)}  (mTLS connections the providers accepted)`,
    `  rotations           ${leaves}  (${byKey(s.rotations)})`,
    `  CA phases           ${byKey(s.caPhases)}`,
    `  per provider        ${byKey(s.serverRotations)}`,
    `  reloads             ${count(s.reloads)}`,
    `  refused reloads     ${count(s.refusedReloads)}  (the last good certificate kept serving)`,
    '',
    'Scenario',
    ...s.checks.map((c) => `  ${c.ok ? 'ok     ' : 'MISSING'}  ${c.name}`),
    '',
    verdict,
  ];
  return `${lines.join('\n')}\n`;
}
