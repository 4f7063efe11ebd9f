/**
 * `@eso-mtls/devtools`: the developer commands of `eso-mtls` (`demo`, `dev-cluster`, `dev-certs`)
 * and the rotation timeline chart of `simulate --chart`, which the `eso-mtls` command of
 * `@eso-mtls/controller` finds here when this package is installed beside it; and the demo's
 * stand-ins for a kubelet's Secret volume and for ESO core's calls, which tests reuse. The
 * launcher of local clusters is the entry point `@eso-mtls/devtools/cluster`.
 *
 * @packageDocumentation
 * @module @eso-mtls/devtools
 */
export { runDeveloperCommand, writeSimulationChart } from './developer-commands.js';
export { type AtomicWrite, type VolumePayload, writeAtomically } from './demo/atomic-writer.js';
export { type CallFailure, type CallTarget, EsoCaller, type EsoCallerOptions } from './demo/eso-caller.js';
export { type Delivery, type DeliveryKind, KubeletVolume, type KubeletVolumeOptions, samePayload } from './demo/kubelet-volume.js';
