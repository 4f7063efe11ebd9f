// Package gointerop holds Go programs that talk provider.v1 with the TypeScript implementation:
// a client (as ESO core would be) and a server (as a Go provider would be).
package gointerop

// Regenerate the committed code from OUR .proto (needs protoc, protoc-gen-go, protoc-gen-go-grpc):
//go:generate protoc -I ../../packages/grpc/proto --go_out=. --go_opt=module=eso-mtls/testing/go-interop --go_opt=Mprovider/v1/provider.proto=eso-mtls/testing/go-interop/gen/providerv1 --go-grpc_out=. --go-grpc_opt=module=eso-mtls/testing/go-interop --go-grpc_opt=Mprovider/v1/provider.proto=eso-mtls/testing/go-interop/gen/providerv1 provider/v1/provider.proto
