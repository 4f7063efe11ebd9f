// One way to find a free port: the controller's own, which the cluster launcher uses.
export { freePort, freePorts } from '../../../packages/controller/src/cluster/ports.js';
