import { describe, expect, it } from '@jest/globals';
import { DEFAULT_POLICY, minutes, seconds } from '@eso-mtls/core';
import { CONTROLLER_FLAGS, type ConfigResult, type ControllerConfig, envVarOf, parseControllerConfig } from '../src/index.js';

function ok(result: ConfigResult): ControllerConfig {
  if (result.kind !== 'config') throw new Error(`expected a config, got ${result.kind}: ${result.kind === 'error' ? result.error.message : ''}`);
  return result.config;
}
function error(result: ConfigResult): string {
  if (result.kind !== 'error') throw new Error(`expected an error, got ${result.kind}`);
  return result.error.message;
}

describe('parseControllerConfig', () => {
  it('gives the documented defaults with no flags and no environment', () => {
    const c = ok(parseControllerConfig([], {}));
    expect(c.kubeconfig).toBeUndefined();
    expect(c.policy).toEqual({ ...DEFAULT_POLICY, reconcileInterval: minutes(10) });
    expect(c.caSecretName).toBe('eso-provider-ca-internal');
    expect(c.clientSecretName).toBe('eso-provider-client-tls');
    expect(c.leaderElection).toEqual({
      enabled: false,
      namespace: 'external-secrets-system',
      leaseName: 'eso-mtls-controller',
      identity: undefined,
      leaseDuration: seconds(15),
      renewDeadline: seconds(10),
      retryPeriod: seconds(2),
    });
    expect(c.metricsBindAddress).toEqual({ host: undefined, port: 8080 });
    expect(c.healthProbeBindAddress).toEqual({ host: undefined, port: 8081 });
    expect(c.logLevel).toBe('info');
  });

  it('reads every flag, in both --flag value and --flag=value forms', () => {
    const c = ok(
      parseControllerConfig(
        [
          '--kubeconfig',
          '/tmp/kc',
          '--namespace=eso',
          '--cluster-domain',
          'example.internal',
          '--ca-secret-name=my-ca',
          '--client-secret-name',
          'my-client',
          '--service-account=eso-core',
          '--reconcile-interval',
          '1h30m',
          '--key-algorithm=RSA-3072',
          '--leader-elect',
          '--leader-election-namespace',
          'kube-system',
          '--leader-election-id=my-lease',
          '--leader-election-identity',
          'pod-a',
          '--leader-election-lease-duration=6s',
          '--leader-election-renew-deadline',
          '4s',
          '--leader-election-retry-period=500ms',
          '--metrics-bind-address',
          '127.0.0.1:9090',
          '--health-probe-bind-address=[::1]:0',
          '--log-level',
          'debug',
        ],
        {},
      ),
    );
    expect(c.kubeconfig).toBe('/tmp/kc');
    expect(c.policy).toMatchObject({
      esoNamespace: 'eso',
      clusterDomain: 'example.internal',
      serviceAccount: 'eso-core',
      reconcileInterval: minutes(90),
      keyAlgorithm: 'RSA-3072',
    });
    expect([c.caSecretName, c.clientSecretName]).toEqual(['my-ca', 'my-client']);
    expect(c.leaderElection).toEqual({
      enabled: true,
      namespace: 'kube-system',
      leaseName: 'my-lease',
      identity: 'pod-a',
      leaseDuration: 6000,
      renewDeadline: 4000,
      retryPeriod: 500,
    });
    expect(c.metricsBindAddress).toEqual({ host: '127.0.0.1', port: 9090 });
    expect(c.healthProbeBindAddress).toEqual({ host: '::1', port: 0 });
    expect(c.logLevel).toBe('debug');
  });

  it('reads every flag from its ESO_MTLS_ variable, and a flag wins over its variable', () => {
    const env = {
      ESO_MTLS_NAMESPACE: 'from-env',
      ESO_MTLS_KEY_ALGORITHM: 'RSA-2048',
      ESO_MTLS_LEADER_ELECT: 'true',
      ESO_MTLS_METRICS_BIND_ADDRESS: '0',
      ESO_MTLS_RECONCILE_INTERVAL: '30s',
      ESO_MTLS_LOG_LEVEL: 'warn',
    };
    const fromEnv = ok(parseControllerConfig([], env));
    expect(fromEnv.policy.esoNamespace).toBe('from-env');
    expect(fromEnv.leaderElection.namespace).toBe('from-env');
    expect(fromEnv.policy.keyAlgorithm).toBe('RSA-2048');
    expect(fromEnv.leaderElection.enabled).toBe(true);
    expect(fromEnv.metricsBindAddress).toBeNull();
    expect(fromEnv.policy.reconcileInterval).toBe(seconds(30));
    const flagWins = ok(parseControllerConfig(['--namespace=from-flag', '--leader-elect=false', '--key-algorithm', 'ECDSA-P256'], env));
    expect(flagWins.policy.esoNamespace).toBe('from-flag');
    expect(flagWins.leaderElection.enabled).toBe(false);
    expect(flagWins.policy.keyAlgorithm).toBe('ECDSA-P256');
  });

  it('has an environment variable named after every flag', () => {
    expect(envVarOf('leader-election-renew-deadline')).toBe('ESO_MTLS_LEADER_ELECTION_RENEW_DEADLINE');
    for (const flag of CONTROLLER_FLAGS) {
      const sample = flag.name === 'leader-elect' ? 'true' : flag.name.endsWith('-address') ? ':1234' : undefined;
      if (sample === undefined) continue;
      const c = ok(parseControllerConfig([], { [envVarOf(flag.name)]: sample }));
      expect(JSON.stringify(c)).toContain(flag.name === 'leader-elect' ? '"enabled":true' : '"port":1234');
    }
  });

  it.each([
    [['--key-algorithm', 'RSA-1024'], '"RSA-1024" for --key-algorithm (env ESO_MTLS_KEY_ALGORITHM): accepts ECDSA-P256, RSA-2048 or RSA-3072'],
    [['--reconcile-interval=10'], '"10" for --reconcile-interval (env ESO_MTLS_RECONCILE_INTERVAL): accepts a duration'],
    [['--reconcile-interval=10 minutes'], '--reconcile-interval'],
    [['--namespace', 'Not_A_Label'], '"Not_A_Label" for --namespace (env ESO_MTLS_NAMESPACE): accepts a DNS-1123 label'],
    [['--metrics-bind-address', '8080'], '"8080" for --metrics-bind-address (env ESO_MTLS_METRICS_BIND_ADDRESS): accepts host:port'],
    [['--health-probe-bind-address', ':99999'], '--health-probe-bind-address'],
    [['--leader-elect=yes'], '"yes" for --leader-elect (env ESO_MTLS_LEADER_ELECT): accepts true or false'],
    [['--log-level', 'verbose'], '--log-level (env ESO_MTLS_LOG_LEVEL): accepts trace, debug, info'],
    [['--ca-secret-name', 'UPPER'], '--ca-secret-name'],
    [['--leader-election-retry-period=0s'], '--leader-election-retry-period'],
    [['--no-such-flag'], 'unknown flag --no-such-flag'],
    [['controller'], 'unexpected argument "controller"'],
    [['--namespace'], 'flag --namespace needs a value'],
  ])('rejects %j, naming the flag, its variable and what it accepts', (argv, expected) => {
    expect(error(parseControllerConfig(argv, {}))).toContain(expected);
  });

  it('names the environment variable first when the bad value came from the environment', () => {
    expect(error(parseControllerConfig([], { ESO_MTLS_KEY_ALGORITHM: 'ed25519' }))).toBe(
      'invalid value "ed25519" for ESO_MTLS_KEY_ALGORITHM (flag --key-algorithm): accepts ECDSA-P256, RSA-2048 or RSA-3072',
    );
  });

  it('surfaces policy errors from the core with the flag that set the value', () => {
    // Too long an interval breaks the core's rule that leaves are renewed with a day to spare.
    const message = error(parseControllerConfig(['--reconcile-interval=800h'], {}));
    expect(message).toMatch(/^--reconcile-interval \(env ESO_MTLS_RECONCILE_INTERVAL\): invalid policy: leafLookahead=35d/);
    expect(error(parseControllerConfig(['--reconcile-interval=500ms'], {}))).toBe(
      '--reconcile-interval (env ESO_MTLS_RECONCILE_INTERVAL): invalid policy: reconcileInterval=500ms: must be at least one second',
    );
    expect(error(parseControllerConfig(['--cluster-domain=-bad-'], {}))).toMatch(
      /^--cluster-domain \(env ESO_MTLS_CLUSTER_DOMAIN\): invalid policy: clusterDomain="-bad-": must be a DNS name/,
    );
    expect(error(parseControllerConfig(['--service-account=Bad_SA'], {}))).toMatch(/^--service-account .*serviceAccount="Bad_SA"/);
  });

  it('checks the lease timings against each other as client-go does', () => {
    expect(error(parseControllerConfig(['--leader-election-lease-duration=10s'], {}))).toBe(
      '--leader-election-lease-duration (10s) must be greater than --leader-election-renew-deadline (10s)',
    );
    expect(error(parseControllerConfig(['--leader-election-retry-period=9s'], {}))).toBe(
      '--leader-election-renew-deadline (10s) must be greater than 1.2 x --leader-election-retry-period (9s)',
    );
  });

  it('refuses the same name for the CA and client Secrets', () => {
    expect(error(parseControllerConfig(['--ca-secret-name=x', '--client-secret-name=x'], {}))).toContain('need different names');
  });

  it('ignores empty environment variables, as a Deployment with an unset value gives them', () => {
    expect(ok(parseControllerConfig([], { ESO_MTLS_NAMESPACE: '' })).policy.esoNamespace).toBe('external-secrets-system');
  });

  it('answers --help with usage naming every flag and variable', () => {
    const result = parseControllerConfig(['--namespace=x', '--help'], {});
    expect(result.kind).toBe('help');
    const text = result.kind === 'help' ? result.text : '';
    for (const f of CONTROLLER_FLAGS) {
      expect(text).toContain(`--${f.name}`);
      expect(text).toContain(envVarOf(f.name));
    }
  });
});

describe('--propagation-delay', () => {
  it("feeds the policy's propagationDelay, from the flag or its variable; the default is the core's 5 minutes", () => {
    expect(ok(parseControllerConfig([], {})).policy.propagationDelay).toBe(DEFAULT_POLICY.propagationDelay);
    expect(DEFAULT_POLICY.propagationDelay).toBe(minutes(5));
    expect(ok(parseControllerConfig(['--propagation-delay=30s'], {})).policy.propagationDelay).toBe(seconds(30));
    expect(ok(parseControllerConfig([], { ESO_MTLS_PROPAGATION_DELAY: '2m' })).policy.propagationDelay).toBe(minutes(2));
    expect(ok(parseControllerConfig(['--propagation-delay', '10s'], { ESO_MTLS_PROPAGATION_DELAY: '2m' })).policy.propagationDelay).toBe(seconds(10));
    expect(ok(parseControllerConfig(['--propagation-delay=1h'], {})).policy.propagationDelay).toBe(minutes(60));
  });

  it.each(['9s', '9999ms', '0', '1h1ms', '2h', '5', 'soon'])('refuses %j, naming the value, the flag, its variable and the bounds', (value) => {
    expect(error(parseControllerConfig([`--propagation-delay=${value}`], {}))).toBe(
      `invalid value ${JSON.stringify(value)} for --propagation-delay (env ESO_MTLS_PROPAGATION_DELAY): accepts a duration such as 500ms, 15s, 10m or 1h30m, from 10s to 1h`,
    );
    expect(error(parseControllerConfig([], { ESO_MTLS_PROPAGATION_DELAY: value }))).toMatch(
      new RegExp(`^invalid value ${JSON.stringify(value)} for ESO_MTLS_PROPAGATION_DELAY \\(flag --propagation-delay\\): .*from 10s to 1h$`),
    );
  });

  it("holds to the core's rules with --reconcile-interval: the two together fit in the CA's lookahead", () => {
    // caLookahead 60d >= leafLookahead 35d + leafJitter 3d + maxConnectionAge 30m + both: at most 527h30m together.
    expect(ok(parseControllerConfig(['--reconcile-interval=526h30m', '--propagation-delay=1h'], {})).policy.propagationDelay).toBe(minutes(60));
    expect(error(parseControllerConfig(['--reconcile-interval=526h30m1s', '--propagation-delay=1h'], {}))).toMatch(
      /^--reconcile-interval \(env ESO_MTLS_RECONCILE_INTERVAL\): invalid policy: caLookahead=60d: must be at least/,
    );
  });

  it('says in --help that production keeps the default, and what a lower value breaks', () => {
    const help = parseControllerConfig(['--help'], {});
    const text = (help.kind === 'help' ? help.text : '').replace(/\s+/g, ' ');
    expect(text).toContain('Keep the default in production');
    expect(text).toContain('(default 5m)');
    expect(text).toMatch(/syncFrequency x 1\.5 plus its Secret cache TTL/);
  });
});
