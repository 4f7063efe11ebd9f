export { startControlPlane, stopAllControlPlanes, type ControlPlane, type ControlPlaneOptions, type AuditEvent } from './control-plane.js';
export { ADMIN, nodeIdentity, type Identity, type IdentitySpec } from './identities.js';
export { locateTestBinaries, type TestBinaries } from './binaries.js';
export { liveProcessGroups } from './process-group.js';
export { freePort, freePorts } from './ports.js';
