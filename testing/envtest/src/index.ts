export {
  startControlPlane,
  stopAllControlPlanes,
  liveProcessGroups,
  type ControlPlane,
  type ControlPlaneOptions,
  type AuditEvent,
  type Identity,
} from './control-plane.js';
export {
  ADMIN,
  KUBE_CONTROLLER_MANAGER,
  KUBE_PROXY,
  KUBE_SCHEDULER,
  nodeIdentity,
  type IdentitySpec,
} from '../../../packages/controller/src/cluster/identities.js';
export { locateTestBinaries, type TestBinaries } from './binaries.js';
