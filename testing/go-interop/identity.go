package gointerop

import (
	"context"
	"crypto/x509"
	"slices"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
)

// ESOClientCommonName is the subject CN of ESO core's client certificate.
const ESOClientCommonName = "external-secrets-core"

// doc:begin identity

// RequireESOClient refuses calls whose verified client certificate is not ESO core's, as our
// TypeScript server does per call (packages/grpc/src/server/identity.ts): extendedKeyUsage
// clientAuth and CN external-secrets-core. A certificate from the CA alone is not enough.
func RequireESOClient(ctx context.Context, req any, _ *grpc.UnaryServerInfo, next grpc.UnaryHandler) (any, error) {
	p, ok := peer.FromContext(ctx)
	if !ok {
		return nil, status.Error(codes.Unauthenticated, "no peer")
	}
	info, ok := p.AuthInfo.(credentials.TLSInfo)
	if !ok || len(info.State.VerifiedChains) == 0 {
		return nil, status.Error(codes.Unauthenticated, "no verified client certificate")
	}
	leaf := info.State.VerifiedChains[0][0]
	if !slices.Contains(leaf.ExtKeyUsage, x509.ExtKeyUsageClientAuth) {
		return nil, status.Errorf(codes.PermissionDenied, "client certificate (serial %s) lacks extendedKeyUsage clientAuth", SerialHex(leaf))
	}
	if cn := leaf.Subject.CommonName; cn != ESOClientCommonName {
		return nil, status.Errorf(codes.PermissionDenied, "client certificate subject CN %q (serial %s) is not the required %q", cn, SerialHex(leaf), ESOClientCommonName)
	}
	return next(ctx, req)
}

// doc:end identity
