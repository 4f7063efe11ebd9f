export {
  startControlPlane,
  stopAllControlPlanes,
  liveProcessGroups,
  type ControlPlane,
  type ControlPlaneOptions,
  type AuditEvent,
  type Identity,
} from './control-plane.js';
export { ADMIN, KUBE_CONTROLLER_MANAGER, KUBE_PROXY, KUBE_SCHEDULER, nodeIdentity, type IdentitySpec } from '@eso-mtls/devtools/cluster';
export { locateTestBinaries, type TestBinaries } from './binaries.js';
