/**
 * `@eso-mtls/controller`: the `eso-mtls` command and the pieces it is built from (configuration,
 * leader election, probes, logging), for programs that embed the controller. Everything not named
 * here is internal, and so is what is named here marked internal: the flag reading and the
 * signals `@eso-mtls/devtools` shares, which holds the developer commands (demo, dev-cluster,
 * dev-certs).
 *
 * @packageDocumentation
 * @module @eso-mtls/controller
 */
export { type BindAddress, formatBindAddress, parseBindAddress } from './bind-address.js';
export { type CliStreams, type ControllerCommandOptions, EXIT_USAGE, runControllerCommand } from './cli/controller.js';
export { type Clock, systemClock } from './clock.js';
export { ConfigError, type ConfigResult, type ControllerConfig, type LeaderElectionTimings, type LogLevel, parseControllerConfig } from './config.js';
export { type ControllerDependencies, type RunningController, startController } from './controller.js';
export { formatFlagDuration, parseDuration } from './duration.js';
export { type ArgvResult, type CommandLine, type Flag, type FlagErrorWords, goFlagWords, type HelpRow, helpTable, readArgv } from './command-line/args.js';
export { CHART_FILE_ACCEPTS, isChartFileName } from './cli/chart-file-name.js';
export { type DeveloperCommand, type DeveloperTools, type SimulationChart } from './cli/developer-tools.js';
export { runSimulateCommand } from './cli/simulate.js';
export { EXIT_INTERRUPTED, listenForStop, type StopSignals } from './cli/stop-signals.js';
export { CONTROLLER_FLAGS, controllerUsage, envVarOf } from './flags.js';
export { type KubeConfigSource, loadConnection } from './kube-config.js';
export { type LeaderElectionStats, LeaderElector, type LeaderElectorOptions } from './leader-election.js';
export { LeaseLock, LeaseRaceError, type LeaseRecord, type ObservedLease } from './lease-lock.js';
export { createLogger, type LoggerOptions, scrubPrivateKeys } from './logger.js';
export { pingCheck, PROBE_PATHS, type ProbeCheck, type ProbeServer, type ProbeServerOptions, startProbeServer } from './probes.js';
export { type ProviderCertificateWiring, type ProviderCertificateWiringOptions, wireProviderCertificates } from './wiring.js';
export { isTerminal, type MaybeTerminal } from './cli/terminal.js';
