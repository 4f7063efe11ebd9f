# Sourced by every script that builds a Go tool the tests run (kube-apiserver and etcd, the real
# node's binaries, kubectl, helm, kustomize, zlint, cert-manager, the Go images): the flags their
# builds share, so each is built the same way.
#   -trimpath                   no local paths in the binary: it depends on the sources and Go alone
#   -gcflags=all=-dwarf=false   no debug information from the compiler, which `-ldflags -w` drops at
#                               link anyway; the binary is as small, and a cold build takes about 12%
#                               less time (docs/benchmarks.md, "Go compile flags")
# shellcheck disable=SC2034 # used by the scripts that source this file
go_tool_flags=(-trimpath -gcflags=all=-dwarf=false)
