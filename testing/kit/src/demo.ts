// The demo's pieces that tests reuse, so each exists once. The kubelet's AtomicWriter
// (pkg/volume/util/atomic_writer.go) is how a mounted Secret changes on disk: the provider tests
// use the demo's as their kubelet too, and the soak its kubelet volume and ESO caller.
export { type AtomicWrite, type VolumePayload, writeAtomically } from '../../../packages/controller/src/demo/atomic-writer.js';
export { type Delivery, KubeletVolume, samePayload } from '../../../packages/controller/src/demo/kubelet-volume.js';
export { type CallTarget, EsoCaller } from '../../../packages/controller/src/demo/eso-caller.js';
