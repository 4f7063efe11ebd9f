// The kubelet's AtomicWriter (pkg/volume/util/atomic_writer.go), how a mounted Secret changes on
// disk: one implementation, the demo's, which the provider tests use as their kubelet too.
export { writeAtomically } from '../../../controller/src/demo/atomic-writer.js';
