// The demo's pieces that tests reuse, so each exists once. The kubelet's AtomicWriter
// (pkg/volume/util/atomic_writer.go) is how a mounted Secret changes on disk: the provider tests
// use the demo's as their kubelet too, and the soak its kubelet volume and ESO caller.
export {
  type AtomicWrite,
  type CallTarget,
  type Delivery,
  EsoCaller,
  KubeletVolume,
  type VolumePayload,
  samePayload,
  writeAtomically,
} from '@eso-mtls/devtools';
