import { countWithNoun } from './count-with-noun.js';
import type {
  CertificateFacts,
  Checked,
  LeafReport,
  LeaseReport,
  PodCertificatesReport,
  Problem,
  ReasonCount,
  StatusReport,
  UpstreamCaReport,
} from './report.js';

/** SGR colours, or none: plain text when piped, under NO_COLOR, or on a dumb terminal. */
export interface Palette {
  readonly ok: (s: string) => string;
  readonly bad: (s: string) => string;
  readonly warn: (s: string) => string;
  readonly dim: (s: string) => string;
  readonly bold: (s: string) => string;
}

const sgr =
  (code: string) =>
  (s: string): string =>
    `\u001b[${code}m${s}\u001b[0m`;
const plain = (s: string): string => s;

/** Colours on a terminal; plain text when `isTTY` is false, NO_COLOR is set (no-color.org), or TERM is dumb. */
export function paletteFor(isTTY: boolean | undefined, env: Readonly<Record<string, string | undefined>>): Palette {
  const colour = isTTY === true && (env.NO_COLOR ?? '') === '' && env.TERM !== 'dumb';
  return colour
    ? { ok: sgr('32'), bad: sgr('31'), warn: sgr('33'), dim: sgr('2'), bold: sgr('1') }
    : { ok: plain, bad: plain, warn: plain, dim: plain, bold: plain };
}

const yesNo = (v: boolean | null | undefined, p: Palette): string => (v === null || v === undefined ? p.warn('unknown') : v ? p.ok('yes') : p.bad('no'));

function days(c: Pick<CertificateFacts, 'daysLeft'>, p: Palette): string {
  const text = c.daysLeft < 0 ? `expired ${countWithNoun(-c.daysLeft, 'day')} ago` : `${countWithNoun(c.daysLeft, 'day')} left`;
  return c.daysLeft < 0 ? p.bad(text) : text;
}

function verdict(r: Pick<Checked, 'checked' | 'problems'>, p: Palette): string {
  if (!r.checked) return p.warn('NOT CHECKED');
  return r.problems.length === 0 ? p.ok('OK') : p.bad(countWithNoun(r.problems.length, 'PROBLEM'));
}

function problems(list: readonly Problem[], p: Palette): string[] {
  return list.map((x) => `  ${p.bad(`problem (${x.kind}):`)} ${x.message}`);
}

function leafLines(r: LeafReport, p: Palette): string[] {
  const lines: string[] = [];
  if (r.certificate) {
    lines.push(`  notAfter         ${r.certificate.notAfter} (${days(r.certificate, p)}), serial ${r.certificate.serialNumber}`);
    lines.push(
      `  signed by the active CA: ${yesNo(r.signedByActiveCa, p)}; chains to its ca.crt: ${yesNo(r.chainsToBundle, p)}; ca.crt current: ${yesNo(r.bundleCurrent, p)}`,
    );
  }
  if (r.nextRotation) {
    const at = r.nextRotation.at ?? 'when a CA signs again';
    lines.push(`  next rotation    ${at} (${r.nextRotation.reason})`);
  }
  return lines;
}

/** The leader election Lease: its holder, and why that is no replica of ours when it is not. */
function leaseLines(r: LeaseReport, p: Palette): string[] {
  const lines = [`${p.bold('Leader election Lease')} ${r.lease}  ${verdict(r, p)}`];
  if (!r.checked) lines.push(`  ${p.warn(r.unchecked ?? '')}`);
  else if (r.exists === false) lines.push(`  ${p.dim('does not exist: no controller with --leader-elect has started yet')}`);
  else {
    const holder = r.holder === '' ? p.dim('none (released)') : JSON.stringify(r.holder);
    lines.push(
      `  holder           ${holder}, leaseDurationSeconds ${r.leaseDurationSeconds} (ours write at most ${r.maxLeaseDurationSeconds}), renewed ${r.renewTime ?? p.dim('never')}`,
    );
  }
  return [...lines, ...problems(r.problems, p), ''];
}

/** An upstream CA source: which is configured and recorded, each slot's path up to its anchor, and what the CA waits for. */
function upstreamLines(u: UpstreamCaReport, p: Palette): string[] {
  const anchors = u.trustAnchors ? ` (trust anchors ${u.trustAnchors})` : '';
  const recorded = u.recorded === undefined ? 'self-signed' : u.recorded;
  const lines = [`  ${'source'.padEnd(16)} ${u.configured}${anchors}; the CA Secret records ${recorded === u.configured ? 'the same' : recorded}`];
  for (const path of u.paths) {
    path.certificates.forEach((c, i) => {
      const label = i === 0 ? `${path.slot} path` : '';
      const role = c.anchor ? ', trust anchor' : '';
      lines.push(`  ${label.padEnd(16)} ${i === 0 ? '' : '<- '}${c.subject}, serial ${c.serialNumber}, notAfter ${c.notAfter} (${days(c, p)}${role})`);
    });
  }
  if (u.pendingRequest) lines.push(`  ${'pending request'.padEnd(16)} ${u.pendingRequest}`);
  if (u.waitingFor) lines.push(`  ${'waiting for'.padEnd(16)} ${u.waitingFor}`);
  if (!u.sourceRead) lines.push(`  ${p.warn('the source was not read: its problems, and what the CA waits for, are not shown')}`);
  return lines;
}

const reasons = (list: readonly ReasonCount[]): string => (list.length === 0 ? '' : ` (${list.map((r) => `${r.reason} ${r.count}`).join(', ')})`);

/** The pod-certificate mode: one block per signer's trust bundle and per signer's requests. */
function podCertificateLines(pods: PodCertificatesReport, p: Palette): string[] {
  const out: string[] = [];
  for (const b of pods.trustBundles) {
    out.push(`${p.bold('Trust bundle')} ${b.name}  ${verdict(b, p)}`);
    out.push(`  signer           ${b.signerName}`);
    if (!b.checked) out.push(`  ${p.warn(b.unchecked ?? '')}`);
    for (const c of b.certificates ?? []) out.push(`  CA               ${c.subject}, serial ${c.serialNumber}, notAfter ${c.notAfter} (${days(c, p)})`);
    if (b.ours) out.push(`  holds the CA Secret's bundle: ${yesNo(b.current, p)}`);
    out.push(...problems(b.problems, p), '');
  }
  const strays = pods.strays;
  out.push(`${p.bold('Other trust bundles')} selected by the projections of our signers  ${verdict(strays, p)}`);
  if (!strays.checked) out.push(`  ${p.warn(strays.unchecked ?? '')}`);
  else if (strays.names.length === 0) out.push(`  ${p.dim('none')}`);
  out.push(...problems(strays.problems, p), '');
  for (const r of pods.signers) {
    out.push(`${p.bold('Requests')} ${r.signerName}  ${verdict(r, p)}`);
    if (!r.checked) out.push(`  ${p.warn(r.unchecked ?? '')}`);
    else {
      out.push(`  issued ${r.issued}, denied ${r.denied}${reasons(r.deniedReasons)}, failed ${r.failed}${reasons(r.failedReasons)}, pending ${r.pending}`);
      if (r.truncated) out.push(`  ${p.warn('only the first requests were counted: there are more')}`);
      for (const l of r.longPending) out.push(`  pending since ${l.createdAt}: ${l.request} (pod ${l.pod})`);
    }
    out.push(...problems(r.problems, p), '');
  }
  out.push(
    p.dim(
      `Requests are those the apiserver still holds (it deletes each 30 minutes after creation); a request pending longer than ${pods.pendingThreshold} needs attention.`,
    ),
    '',
  );
  return out;
}

/** The report as text for a person: one block per Secret, problems named, a closing summary. */
export function renderText(report: StatusReport, p: Palette): string {
  const out: string[] = [];
  const pol = report.policy;
  const src = (flag: string): string => p.dim(`(${pol.sources[flag] ?? 'default'})`);
  out.push(p.bold('Policy assumed') + p.dim(" (the controller's flags and ESO_MTLS_* environment; pass the same ones the controller runs with)"));
  out.push(
    `  ESO namespace ${pol.esoNamespace} ${src('eso-namespace')}, cluster domain ${pol.clusterDomain} ${src('cluster-domain')}, service account ${pol.serviceAccount} ${src('service-account')}`,
  );
  out.push(
    `  CA Secret ${pol.caSecretName} ${src('ca-secret-name')}, client Secret ${pol.clientSecretName} ${src('client-secret-name')}, key algorithm ${pol.keyAlgorithm} ${src('key-algorithm')}, reconcile interval ${pol.reconcileInterval} ${src('reconcile-interval')}, propagation delay ${pol.propagationDelay} ${src('propagation-delay')}`,
  );
  out.push(
    `  leaves: valid ${pol.leafValidity}, renewed ${pol.leafLookahead} before notAfter (up to ${pol.leafJitter} earlier); CA: valid ${pol.caValidity}, rotated ${pol.caLookahead} before notAfter`,
  );
  if (pol.modes.includes('pod-certificate')) {
    out.push(
      `  modes ${pol.modes.join(',')} ${src('modes')}; signers ${pol.serverSignerName} ${src('server-signer-name')} and ${pol.clientSignerName} ${src('client-signer-name')}, pod certificates valid at most ${pol.podCertificateMaxValidity} ${src('pod-certificate-max-validity')}`,
    );
  }
  if (pol.requireNamespaceLabel) {
    out.push(`  provider namespaces served: only those labelled ${pol.requireNamespaceLabel} ${src('require-namespace-label')}`);
  }
  if (pol.maxNamespaces !== undefined) {
    out.push(`  provider namespaces served: at most ${pol.maxNamespaces}, the newest beyond it left out ${src('max-namespaces')}`);
  }
  // With a cap every namespace is read, to rank them as the controller does.
  if (report.namespaceFilter && pol.maxNamespaces === undefined)
    out.push(p.dim(`  only namespace ${report.namespaceFilter} was read: the CA schedule below sees its bundle only`));
  out.push('');

  if (report.leaderElection) out.push(...leaseLines(report.leaderElection, p));

  const ca = report.ca;
  out.push(`${p.bold('CA')} ${ca.secret}  ${verdict(ca, p)}`);
  if (!ca.checked)
    out.push(
      `  ${p.warn(ca.unchecked ?? '')}`,
      `  ${p.dim('without it, whether leaves are signed by the active CA and whether bundles are current is unknown')}`,
    );
  for (const c of ca.certificates) out.push(`  ${c.slot.padEnd(8)} ${c.subject}, serial ${c.serialNumber}, notAfter ${c.notAfter} (${days(c, p)})`);
  if (ca.checked && !ca.certificates.some((c) => c.slot === 'next')) out.push(`  ${'next'.padEnd(8)} ${p.dim('none')}`);
  if (ca.checked && !ca.certificates.some((c) => c.slot === 'retired')) out.push(`  ${'retired'.padEnd(8)} ${p.dim('none')}`);
  for (const k of ca.keys ?? []) out.push(`  ${'key'.padEnd(8)} ${k.slot} CA (${k.field}): ${k.checked ? p.ok(k.detail) : p.warn(k.detail)}`);
  if (ca.due) out.push(`  due now: ${ca.due.phases.join(', ')}${ca.due.reason ? ` (${ca.due.reason})` : ''}`);
  if (ca.signingPausedUntil) out.push(`  no CA signs until ${ca.signingPausedUntil}`);
  if (ca.upstream) out.push(...upstreamLines(ca.upstream, p));
  out.push(...problems(ca.problems, p), '');

  const cl = report.client;
  out.push(`${p.bold('Client certificate')} ${cl.secret}  ${verdict(cl, p)}`);
  if (!cl.checked) out.push(`  ${p.warn(cl.unchecked ?? '')}`);
  if (cl.certificate) out.push(`  identity         ${cl.commonName ? `CN=${cl.commonName} ` : ''}URI ${cl.uris.join(', ') || p.dim('none')}`);
  out.push(...leafLines(cl, p), ...problems(cl.problems, p), '');

  if (!pol.modes.includes('secret'))
    out.push(p.dim('Pod-certificate mode only: providers get their certificates from the kubelet, no provider Secret is expected.'), '');
  else if (report.namespaces.length === 0) out.push(p.dim(`No Service is labelled external-secrets.io/provider=true: no provider namespace to show.`), '');
  for (const ns of report.namespaces) {
    out.push(`${p.bold('Namespace')} ${ns.namespace}  ${verdict(ns, p)}`);
    out.push(`  Services         ${ns.services.join(', ') || p.dim('none')}`);
    if (!ns.checked) out.push(`  ${p.warn(ns.unchecked ?? '')}`);
    if (ns.dnsNames.length > 0) out.push(`  SANs             ${ns.dnsNames.join(', ')}`);
    out.push(...leafLines(ns, p), ...problems(ns.problems, p), '');
  }

  if (report.podCertificates) out.push(...podCertificateLines(report.podCertificates, p));

  const s = report.summary;
  const parts = [s.problems === 0 ? p.ok('no problem') : p.bad(`${countWithNoun(s.problems, 'problem')} ${s.problems === 1 ? 'needs' : 'need'} attention`)];
  if (s.unchecked > 0) parts.push(p.warn(`${countWithNoun(s.unchecked, 'object')} not checked for lack of rights`));
  out.push(`${p.bold('Summary')}: ${parts.join('; ')} (exit code ${s.exitCode})`);
  out.push(p.dim('Private keys were read only to check that each matches its certificate; none is printed, logged or written.'));
  return `${out.join('\n')}\n`;
}
