// One way to find a free port: the cluster launcher's own.
export { freePort, freePorts } from '@eso-mtls/devtools/cluster';
