// Command client calls every provider.v1 method once, as ESO core would, over mTLS with a
// client certificate, verifying the server certificate against -server-name, and prints one
// JSON object with what each call returned.
package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"time"

	gointerop "eso-mtls/testing/go-interop"
	pb "eso-mtls/testing/go-interop/gen/providerv1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
)

func main() {
	addr := flag.String("addr", "", "provider address host:port")
	serverName := flag.String("server-name", "", "DNS name the server certificate must carry")
	caFile := flag.String("ca", "", "CA bundle (ca.crt)")
	certFile := flag.String("cert", "", "client certificate (tls.crt)")
	keyFile := flag.String("key", "", "client key (tls.key)")
	flag.Parse()
	if err := run(*addr, *serverName, *caFile, *certFile, *keyFile); err != nil {
		fmt.Fprintln(os.Stderr, "client:", err)
		os.Exit(1)
	}
}

func run(addr, serverName, caFile, certFile, keyFile string) error {
	pair, err := gointerop.LoadPair(certFile, keyFile)
	if err != nil {
		return err
	}
	roots, err := gointerop.LoadPool(caFile)
	if err != nil {
		return err
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{pair}, RootCAs: roots, ServerName: serverName, MinVersion: tls.VersionTLS13}
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(credentials.NewTLS(cfg)))
	if err != nil {
		return err
	}
	defer conn.Close()
	c := pb.NewSecretStoreProviderClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ref := &pb.ProviderReference{ApiVersion: "external-secrets.io/v1", Kind: "SecretStore", Name: "go", Namespace: "apps", StoreRefKind: "SecretStoreRef"}
	out := map[string]any{}
	var p peer.Peer

	got, err := c.GetSecret(ctx, &pb.GetSecretRequest{RemoteRef: &pb.ExternalSecretDataRemoteRef{Key: "db/password", Version: "v1"}, ProviderRef: ref, SourceNamespace: "apps"}, grpc.Peer(&p))
	if err != nil {
		return fmt.Errorf("GetSecret: %w", err)
	}
	out["getSecret"] = got.GetValue()
	if info, ok := p.AuthInfo.(credentials.TLSInfo); ok {
		leaf := info.State.PeerCertificates[0]
		out["serverCertificate"] = map[string]any{"commonName": leaf.Subject.CommonName, "dnsNames": leaf.DNSNames, "verifiedChains": len(info.State.VerifiedChains)}
	}
	m, err := c.GetSecretMap(ctx, &pb.GetSecretMapRequest{RemoteRef: &pb.ExternalSecretDataRemoteRef{Key: "db/user"}, ProviderRef: ref})
	if err != nil {
		return fmt.Errorf("GetSecretMap: %w", err)
	}
	out["getSecretMap"] = m.GetSecrets()
	_, err = c.GetSecret(ctx, &pb.GetSecretRequest{RemoteRef: &pb.ExternalSecretDataRemoteRef{Key: "missing"}})
	out["missing"] = map[string]string{"code": status.Code(err).String(), "message": status.Convert(err).Message()}

	_, err = c.PushSecret(ctx, &pb.PushSecretRequest{
		ProviderRef: ref, SecretData: map[string][]byte{"token": {0, 1, 2, 255}}, SourceNamespace: "apps", SecretType: "Opaque",
		PushSecretData:    &pb.PushSecretData{Metadata: []byte(`{"apiVersion":"kubernetes.external-secrets.io/v1alpha1"}`), SecretKey: "token", RemoteKey: "pushed", Property: "p"},
		SecretLabels:      map[string]string{"team": "a"},
		SecretAnnotations: map[string]string{"owner": "ops"},
	})
	if err != nil {
		return fmt.Errorf("PushSecret: %w", err)
	}
	exists, err := c.SecretExists(ctx, &pb.SecretExistsRequest{ProviderRef: ref, RemoteRef: &pb.PushSecretRemoteRef{RemoteKey: "pushed/token"}})
	if err != nil {
		return fmt.Errorf("SecretExists: %w", err)
	}
	out["existsAfterPush"] = exists.GetExists()
	all, err := c.GetAllSecrets(ctx, &pb.GetAllSecretsRequest{ProviderRef: ref, Find: &pb.ExternalSecretFind{Path: "db/", Name: &pb.FindName{Regexp: "^db/"}, Tags: map[string]string{}}})
	if err != nil {
		return fmt.Errorf("GetAllSecrets: %w", err)
	}
	out["getAllSecrets"] = all.GetSecrets()
	if _, err = c.DeleteSecret(ctx, &pb.DeleteSecretRequest{ProviderRef: ref, RemoteRef: &pb.PushSecretRemoteRef{RemoteKey: "pushed/token"}}); err != nil {
		return fmt.Errorf("DeleteSecret: %w", err)
	}
	exists, err = c.SecretExists(ctx, &pb.SecretExistsRequest{ProviderRef: ref, RemoteRef: &pb.PushSecretRemoteRef{RemoteKey: "pushed/token"}})
	if err != nil {
		return fmt.Errorf("SecretExists: %w", err)
	}
	out["existsAfterDelete"] = exists.GetExists()
	v, err := c.Validate(ctx, &pb.ValidateRequest{ProviderRef: ref, SourceNamespace: "forbidden"})
	if err != nil {
		return fmt.Errorf("Validate: %w", err)
	}
	out["validate"] = map[string]any{"valid": v.GetValid(), "error": v.GetError(), "warnings": v.GetWarnings()}
	caps, err := c.Capabilities(ctx, &pb.CapabilitiesRequest{ProviderRef: ref})
	if err != nil {
		return fmt.Errorf("Capabilities: %w", err)
	}
	out["capabilities"] = caps.GetCapabilities().String()
	return json.NewEncoder(os.Stdout).Encode(out)
}
