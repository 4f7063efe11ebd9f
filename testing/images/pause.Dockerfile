# The pod sandbox image of the real-node suite, tagged with the name containerd pins
# (DefaultSandboxImage of the containerd version testing/node/containerd builds; scripts/ensure-images.sh
# reads it from that module) because no registry is reachable to pull the real one. The context holds
# `pause`, testing/images/pause built static (CGO_ENABLED=0). Like the real image: nothing but the
# program, run as uid and gid 65535.
FROM scratch
COPY pause /pause
USER 65535:65535
ENTRYPOINT ["/pause"]
