package gointerop

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
)

// doc:begin server-config

// ServerTLSConfig is a provider's TLS: per handshake it takes the newest good material of w (the
// mounted external-secrets-provider-tls) and serves its pair while verifying the client
// certificate against its ca.crt. Both come from one snapshot, so a new pair and a new bundle
// never mix; established connections keep what they were made with.
func ServerTLSConfig(w *CertificateWatcher) *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS13,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			m := w.Current()
			if m == nil {
				return nil, errors.New("no good certificate loaded yet")
			}
			return &tls.Config{
				MinVersion:   tls.VersionTLS13,
				Certificates: []tls.Certificate{m.Certificate},
				ClientCAs:    m.Roots, // two CAs during a CA rotation's overlap
				ClientAuth:   tls.RequireAndVerifyClientCert,
				// A resumed session skips verification: a ticket from before a CA retirement
				// must not stand in for a client certificate the current bundle refuses.
				SessionTicketsDisabled: true,
			}, nil
		},
	}
}

// doc:end server-config

// doc:begin client-config

// ClientTLSConfig is ESO core's TLS towards one provider: it presents the newest good client
// certificate of w (the mounted eso-provider-client-tls) at every handshake and verifies the
// provider against w's newest ca.crt and serverName. crypto/tls would verify only against a
// fixed RootCAs, so its check is replaced by the same one against the current bundle.
func ClientTLSConfig(w *CertificateWatcher, serverName string) *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS13,
		ServerName: serverName,
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			m := w.Current()
			if m == nil {
				return nil, errors.New("no good client certificate loaded yet")
			}
			return &m.Certificate, nil
		},
		InsecureSkipVerify: true, // replaced, not skipped: VerifyConnection runs on every handshake
		VerifyConnection: func(cs tls.ConnectionState) error {
			m := w.Current()
			if m == nil || len(cs.PeerCertificates) == 0 {
				return errors.New("no bundle loaded yet, or no server certificate")
			}
			intermediates := x509.NewCertPool()
			for _, c := range cs.PeerCertificates[1:] {
				intermediates.AddCert(c)
			}
			_, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{
				Roots:         m.Roots,
				Intermediates: intermediates,
				DNSName:       serverName,
				KeyUsages:     []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
			})
			return err
		},
	}
}

// ServerNameOf is the name a provider's certificate must carry: the host of its address as ESO
// is given it (`<service>.<namespace>.svc:<port>`, one of the SANs the controller issues).
func ServerNameOf(address string) (string, error) {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return "", fmt.Errorf("provider address %q is not host:port: %w", address, err)
	}
	if net.ParseIP(host) != nil {
		return "", fmt.Errorf("provider address %q names an IP; use the Service's DNS name, which its certificate carries", address)
	}
	return host, nil
}

// doc:end client-config
