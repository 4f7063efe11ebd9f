import { afterAll, describe, expect, it } from '@jest/globals';
import type { V1Deployment } from '@kubernetes/client-node';
import { SELF_SIGNED } from '@eso-mtls/kubernetes';
import { type Manifest, find, kustomizeBuild } from '@eso-mtls/test-kit/manifests';
import { Helm, type Values, chartDir } from '@eso-mtls/test-kit/helm';
import { expectRefusals } from './support/refusals.js';
import { containerOf, flagsOf } from './support/pod-certificates.js';
import { parsedControllerConfig } from './support/release.js';
import {
  CERTIFICATE_REQUEST_RULE,
  ISSUER_OVERLAY_VALUES,
  OVERLAY_NAMES,
  SECRET_OVERLAY_VALUES,
  addedRules,
  readByName,
  ruleLine,
} from './support/ca-source.js';

// The CA source in the chart (ca.*) and in deploy/overlays/ca-issuer and ca-from-secret (issue 35
// item 6): the --ca-* flags, which the controller's own parser reads into its CaSource; least
// privilege, each source adding only its read rules and, for an issuer, CertificateRequests in
// ESO's namespace; the admission policies as strict as before; and the chart refusing what the
// controller would. Rendered by real helm and kustomize; ca-source-rbac.test.ts asks a real
// apiserver what the rules allow.
const helm = new Helm();
afterAll(() => helm.remove());

const NAME = 'eso-mtls-controller';
const ESO_NS = 'external-secrets-system';
const render = (values: Values) => helm.template(chartDir, 'eso-mtls', ESO_NS, values);
const deploymentOf = (ms: Manifest[]) => find<V1Deployment>(ms, 'Deployment', NAME);
const caFlags = (ms: Manifest[]) =>
  Object.fromEntries(
    Object.entries(flagsOf(containerOf(deploymentOf(ms), 'controller').args ?? [])).filter(([f]) => f.startsWith('ca-') && f !== 'ca-secret-name'),
  );
const key = (m: Manifest): string => `${m.kind} ${m.metadata?.namespace ?? ''}/${m.metadata?.name}`;
/** The admission policies, their bindings and their parameters: what judges the controller's writes. */
const admission = (ms: Manifest[]) =>
  ms
    .filter((m) => m.kind!.startsWith('ValidatingAdmissionPolicy') || (m.kind === 'ConfigMap' && m.metadata!.name!.endsWith('-admission')))
    .sort((a, b) => key(a).localeCompare(key(b)));

const ISSUER: Values = {
  ca: {
    source: 'issuer',
    issuer: { kind: 'Issuer', name: 'vault-issuer', group: 'vault.example.com', duration: '180d', requestDeadline: '15m' },
    trustAnchors: { kind: 'Secret', name: 'org-roots', key: 'root.pem' },
  },
};
const SECRET: Values = { ca: { source: 'secret', secret: { name: 'org-intermediate' }, trustAnchors: { kind: 'ConfigMap', name: 'org-roots' } } };

describe('the CA source in the chart and the kustomize overlays', () => {
  const selfSigned = render({});
  const base = kustomizeBuild('deploy');

  it('renders nothing of it with the self-signed default, whatever the other ca values say', () => {
    expect(caFlags(selfSigned)).toEqual({});
    expect(parsedControllerConfig(deploymentOf(selfSigned)).caSource).toBe(SELF_SIGNED);
    expect(render({ ca: { ...(ISSUER.ca as object), source: 'selfSigned' } })).toEqual(selfSigned);
    expect(render({ ca: { ...(SECRET.ca as object), source: 'selfSigned' } })).toEqual(selfSigned);
  });

  it('passes an issuer as its flags, which the controller reads into its CaSource', () => {
    const ms = render(ISSUER);
    expect(caFlags(ms)).toEqual({
      'ca-issuer': 'Issuer/vault-issuer',
      'ca-issuer-group': 'vault.example.com',
      'ca-intermediate-duration': '180d',
      'ca-request-deadline': '15m',
      'ca-trust-anchors': 'Secret/org-roots/root.pem',
    });
    expect(parsedControllerConfig(deploymentOf(ms)).caSource).toEqual({
      kind: 'issuer',
      issuer: { kind: 'Issuer', name: 'vault-issuer', group: 'vault.example.com' },
      trustAnchors: { kind: 'Secret', name: 'org-roots', key: 'root.pem' },
      duration: 180 * 86_400_000,
      requestDeadline: 15 * 60_000,
    });
    // The defaults: cert-manager.io, 1h, no duration (the CA validity), ca.crt.
    const defaults = render({ ca: { source: 'issuer', issuer: { name: 'org-ca' }, trustAnchors: { name: 'org-roots' } } });
    expect(caFlags(defaults)).toEqual({
      'ca-issuer': 'ClusterIssuer/org-ca',
      'ca-issuer-group': 'cert-manager.io',
      'ca-request-deadline': '1h',
      'ca-trust-anchors': 'Secret/org-roots/ca.crt',
    });
  });

  it('passes a Secret source as its flags, which the controller reads into its CaSource', () => {
    const ms = render(SECRET);
    expect(caFlags(ms)).toEqual({ 'ca-from-secret': 'org-intermediate', 'ca-trust-anchors': 'ConfigMap/org-roots/ca.crt' });
    expect(parsedControllerConfig(deploymentOf(ms)).caSource).toEqual({
      kind: 'secret',
      secretName: 'org-intermediate',
      trustAnchors: { kind: 'ConfigMap', name: 'org-roots', key: 'ca.crt' },
    });
  });

  it('adds, for an issuer, CertificateRequests in its namespace and read on the one issuer and the anchors; nothing else', () => {
    expect(addedRules(selfSigned, render(ISSUER))).toEqual(
      [
        ruleLine(`Role ${NAME}-ca-issuer`, CERTIFICATE_REQUEST_RULE),
        ruleLine(`Role ${NAME}-ca-issuer`, readByName('vault.example.com', 'issuers', ['vault-issuer'])),
        ruleLine(`Role ${NAME}-secrets`, readByName('', 'secrets', ['org-roots'])),
      ].sort(),
    );
    expect(addedRules(selfSigned, render(ISSUER_OVERLAY_VALUES))).toEqual(
      [
        ruleLine(`Role ${NAME}-ca-issuer`, CERTIFICATE_REQUEST_RULE),
        ruleLine(`ClusterRole ${NAME}-ca-issuer`, readByName('cert-manager.io', 'clusterissuers', [OVERLAY_NAMES.clusterIssuer])),
        ruleLine(`Role ${NAME}-secrets`, readByName('', 'configmaps', [OVERLAY_NAMES.roots])),
      ].sort(),
    );
    // Nothing taken away, in any source.
    for (const values of [ISSUER, ISSUER_OVERLAY_VALUES, SECRET, SECRET_OVERLAY_VALUES]) expect(addedRules(render(values), selfSigned)).toEqual([]);
  });

  it("adds, for an external issuer's own kind, read on the one issuer through its resource, in the scope given", () => {
    const external = (scope: string) => ({
      ca: {
        source: 'issuer',
        issuer: { kind: 'AWSPCAClusterIssuer', name: 'org-pca', group: 'awspca.cert-manager.io', resource: 'awspcaclusterissuers', scope },
        trustAnchors: { name: 'org-roots' },
      },
    });
    expect(addedRules(selfSigned, render(external('Cluster')))).toEqual(
      [
        ruleLine(`Role ${NAME}-ca-issuer`, CERTIFICATE_REQUEST_RULE),
        ruleLine(`ClusterRole ${NAME}-ca-issuer`, readByName('awspca.cert-manager.io', 'awspcaclusterissuers', ['org-pca'])),
        ruleLine(`Role ${NAME}-secrets`, readByName('', 'secrets', ['org-roots'])),
      ].sort(),
    );
    expect(addedRules(selfSigned, render(external('Namespaced')))).toEqual(
      [
        ruleLine(`Role ${NAME}-ca-issuer`, CERTIFICATE_REQUEST_RULE),
        ruleLine(`Role ${NAME}-ca-issuer`, readByName('awspca.cert-manager.io', 'awspcaclusterissuers', ['org-pca'])),
        ruleLine(`Role ${NAME}-secrets`, readByName('', 'secrets', ['org-roots'])),
      ].sort(),
    );
    expect(parsedControllerConfig(deploymentOf(render(external('Cluster')))).caSource).toMatchObject({
      issuer: { kind: 'AWSPCAClusterIssuer', name: 'org-pca', group: 'awspca.cert-manager.io' },
    });
  });

  it('adds, for a Secret, read by name on it and the anchors, and no write verb; the anchors may be the same Secret', () => {
    expect(addedRules(selfSigned, render(SECRET))).toEqual(
      [
        ruleLine(`Role ${NAME}-secrets`, readByName('', 'secrets', ['org-intermediate'])),
        ruleLine(`Role ${NAME}-secrets`, readByName('', 'configmaps', ['org-roots'])),
      ].sort(),
    );
    expect(addedRules(selfSigned, render(SECRET_OVERLAY_VALUES))).toEqual([
      ruleLine(`Role ${NAME}-secrets`, readByName('', 'secrets', [OVERLAY_NAMES.intermediateSecret, OVERLAY_NAMES.roots])),
    ]);
    const same = render({ ca: { source: 'secret', secret: { name: 'org-intermediate' }, trustAnchors: { name: 'org-intermediate', key: 'root.crt' } } });
    expect(addedRules(selfSigned, same)).toEqual([ruleLine(`Role ${NAME}-secrets`, readByName('', 'secrets', ['org-intermediate']))]);
  });

  it('keeps the admission policies, their bindings and parameters exactly as they are: the controller writes no new Secret', () => {
    for (const values of [ISSUER, SECRET, ISSUER_OVERLAY_VALUES, SECRET_OVERLAY_VALUES]) expect(admission(render(values))).toEqual(admission(selfSigned));
    for (const overlay of ['deploy/overlays/ca-issuer', 'deploy/overlays/ca-from-secret']) expect(admission(kustomizeBuild(overlay))).toEqual(admission(base));
  });

  it.each([
    ['deploy/overlays/ca-issuer', ISSUER_OVERLAY_VALUES],
    ['deploy/overlays/ca-from-secret', SECRET_OVERLAY_VALUES],
  ])('renders, with the matching values, what kustomize build %s renders: the same objects, rules and configuration', (dir, values) => {
    const overlay = kustomizeBuild(dir);
    const chart = render(values);
    expect(chart.map(key).sort()).toEqual(overlay.map(key).sort());
    expect(addedRules(base, overlay)).toEqual(addedRules(selfSigned, chart));
    expect(addedRules(overlay, base)).toEqual([]);
    for (const m of overlay.filter((o) => o.kind === 'RoleBinding' || o.kind === 'ClusterRoleBinding')) {
      const c = find(chart, m.kind!, m.metadata!.name!);
      expect({ binding: key(m), roleRef: c.roleRef, subjects: c.subjects }).toEqual({ binding: key(m), roleRef: m.roleRef, subjects: m.subjects });
    }
    // The overlay's labels are deploy/base's, on its new objects too.
    for (const m of overlay)
      expect({ object: key(m), labels: m.metadata!.labels }).toMatchObject({ object: key(m), labels: { 'app.kubernetes.io/part-of': 'eso-mtls' } });
    expect(parsedControllerConfig(deploymentOf(chart))).toEqual(parsedControllerConfig(deploymentOf(overlay)));
  });

  it('passes helm lint --strict with each source', () => {
    for (const values of [ISSUER, SECRET, ISSUER_OVERLAY_VALUES]) {
      expect(helm.run(['lint', chartDir, '--strict', ...helm.valuesArgs(values)])).toContain('1 chart(s) linted, 0 chart(s) failed');
    }
  });

  it('refuses an incomplete issuer reference, an unknown kind, a missing trust-anchor input, and what the controller would refuse, naming each value', () => {
    const issuer = { source: 'issuer', issuer: { name: 'org-ca' }, trustAnchors: { name: 'org-roots' } };
    const secret = { source: 'secret', secret: { name: 'org-intermediate' }, trustAnchors: { name: 'org-roots' } };
    const hsm = { enabled: true, modulePath: '/opt/hsm/libsofthsm2.so', tokenLabel: 'eso', pinSecret: { name: 'pin' } };
    expectRefusals(render, [
      [{ ca: { source: 'issuer' } }, "at '/ca/issuer/name': minLength: got 0, want 1"],
      [{ ca: { ...issuer, issuer: { name: 'org-ca', kind: null } } }, "at '/ca/issuer': missing property 'kind'"],
      [{ ca: { ...issuer, issuer: { name: 'org-ca', group: null } } }, "at '/ca/issuer': missing property 'group'"],
      [{ ca: { ...issuer, issuer: { name: 'org-ca', kind: 'Certificate' } } }, "at '/ca/issuer/kind': value must be one of 'ClusterIssuer', 'Issuer'"],
      [{ ca: { ...issuer, issuer: { name: 'org-ca', kind: 'clusterissuer' } } }, "at '/ca/issuer/kind'"],
      [
        { ca: { ...issuer, issuer: { name: 'org-ca', kind: 'AWSPCAClusterIssuer', group: 'awspca.cert-manager.io' } } },
        "at '/ca/issuer/resource': minLength: got 0, want 1",
      ],
      [
        {
          ca: {
            ...issuer,
            issuer: { name: 'org-ca', kind: 'AWSPCAClusterIssuer', group: 'awspca.cert-manager.io', resource: 'awspcaclusterissuers', scope: '' },
          },
        },
        "at '/ca/issuer/scope': value must be one of 'Cluster', 'Namespaced'",
      ],
      [
        { ca: { ...issuer, issuer: { name: 'org-ca', kind: 'OrgIssuer', group: 'pki.example.com', resource: 'OrgIssuers', scope: 'Namespaced' } } },
        "at '/ca/issuer/resource'",
      ],
      [{ ca: { ...issuer, trustAnchors: { name: '' } } }, "at '/ca/trustAnchors/name': minLength: got 0, want 1"],
      [{ ca: { source: 'secret', secret: { name: 'org-intermediate' } } }, "at '/ca/trustAnchors/name': minLength: got 0, want 1"],
      [{ ca: { ...secret, secret: { name: '' } } }, "at '/ca/secret/name': minLength: got 0, want 1"],
      [
        { ca: { ...secret, trustAnchors: { name: 'org-roots', kind: 'ClusterTrustBundle' } } },
        "at '/ca/trustAnchors/kind': value must be one of 'Secret', 'ConfigMap'",
      ],
      [{ ca: { ...secret, trustAnchors: { name: 'org-roots', key: '..' } } }, "at '/ca/trustAnchors/key'"],
      [{ ca: { ...issuer, source: 'vault' } }, "at '/ca/source': value must be one of 'selfSigned', 'issuer', 'secret'"],
      [{ ca: { ...issuer, issuer: { name: 'Org_CA' } } }, "at '/ca/issuer/name'"],
      [{ ca: { ...issuer, issuer: { name: 'org-ca', group: 'cert-manager' } } }, "at '/ca/issuer/group'"],
      [{ ca: { ...issuer, extra: true } }, "additional properties 'extra' not allowed"],
      [
        { ca: secret, hsm },
        "ca.source secret cannot be used with hsm.enabled: the intermediate's key would be read from the Secret's tls.key, and the controller never puts a key into the HSM (--ca-from-secret, --hsm-module). With an HSM, use ca.source issuer",
      ],
      [
        { ca: { ...secret, secret: { name: 'eso-provider-ca-internal' } } },
        'ca.secret.name is "eso-provider-ca-internal", the same as caSecretName: the controller writes that Secret, and an input must be a Secret you maintain',
      ],
      [
        { ca: { ...issuer, trustAnchors: { name: 'platform-client' } }, clientSecretName: 'platform-client' },
        'ca.trustAnchors.name is "platform-client", the same as clientSecretName',
      ],
      [
        { ca: { ...issuer, issuer: { name: 'org-ca', duration: '90d' } } },
        'ca.issuer.duration is "90d": too short, the least is 120d (--ca-intermediate-duration)',
      ],
      [
        { ca: { ...issuer, issuer: { name: 'org-ca', requestDeadline: '30s' } } },
        'ca.issuer.requestDeadline is "30s": the controller accepts from 1m to 7d (--ca-request-deadline)',
      ],
    ]);
    // The HSM with an issuer is the supported pairing: the intermediate's key is generated in the token.
    expect(parsedControllerConfig(deploymentOf(render({ ca: issuer, hsm }))).caSource.kind).toBe('issuer');
    // A ConfigMap of the CA Secret's name is no Secret the controller writes.
    expect(
      parsedControllerConfig(deploymentOf(render({ ca: { ...issuer, trustAnchors: { kind: 'ConfigMap', name: 'eso-provider-ca-internal' } } }))).caSource.kind,
    ).toBe('issuer');
  });
});
