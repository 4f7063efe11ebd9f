package gointerop

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"slices"
	"strings"
	"time"
)

// MaterialError is material refused before it could replace the one in use. Reason is the
// label our TypeScript watcher uses for the same problem (packages/grpc/src/tls/material.ts).
type MaterialError struct {
	Reason  string
	Message string
}

func (e *MaterialError) Error() string { return e.Message }

func refuse(reason, format string, args ...any) error {
	return &MaterialError{Reason: reason, Message: fmt.Sprintf(format, args...)}
}

// SecretFiles are the three values of a mounted certificate folder: a kubernetes.io/tls Secret
// with a bundle, or a pod certificate's credentials.pem split into key and chain, and its ca.crt.
type SecretFiles struct {
	Certificate []byte     // tls.crt: the leaf, optionally followed by intermediates
	PrivateKey  []byte     // tls.key
	CABundle    []byte     // ca.crt: one CA, two or three during a CA rotation
	names       *partNames // where the parts came from, for messages; nil: the Secret's files
}

func (f SecretFiles) partNames() partNames {
	if f.names != nil {
		return *f.names
	}
	return secretNames
}

func (f SecretFiles) equal(o SecretFiles) bool {
	return bytes.Equal(f.Certificate, o.Certificate) && bytes.Equal(f.PrivateKey, o.PrivateKey) && bytes.Equal(f.CABundle, o.CABundle)
}

// Material is one checked version of the folder: safe to serve or present.
type Material struct {
	Certificate    tls.Certificate // tls.crt + tls.key; Certificate.Leaf is the parsed leaf
	Roots          *x509.CertPool  // ca.crt, to verify the peer
	CACertificates []*x509.Certificate
	files          SecretFiles
}

// ClockSkewTolerance is how far outside its validity a leaf is still accepted: as ours, 5 minutes.
const ClockSkewTolerance = 5 * time.Minute

// doc:begin check-material

// CheckMaterial judges f the way a TLS peer will, in the order and with the reasons of our
// TypeScript checkTlsMaterial: every value present, each PEM parses, the key is the leaf's, ca.crt
// holds only CAs, the leaf carries the purpose's extendedKeyUsage, is within its validity (5
// minutes of tolerance) and chains to a CA of ca.crt. Nothing half-checked is ever returned.
func CheckMaterial(f SecretFiles, purpose x509.ExtKeyUsage, now time.Time) (*Material, error) {
	n := f.partNames() // tls.crt, tls.key, ca.crt; or credentials.pem, its key, ca.crt
	blank := func(b []byte) bool { return len(bytes.TrimSpace(b)) == 0 }
	switch {
	case blank(f.Certificate) && blank(f.PrivateKey) && blank(f.CABundle):
		return nil, refuse("empty", "%s, %s and %s are all empty; the Secret has not been issued yet", n.certificate, n.privateKey, n.caBundle)
	case blank(f.Certificate):
		return nil, refuse("missing_certificate", "%s is empty", n.certificate)
	case blank(f.PrivateKey):
		return nil, refuse("missing_key", "%s is empty", n.privateKey)
	case blank(f.CABundle):
		return nil, refuse("missing_ca_bundle", "%s is empty; it must hold the CA certificate(s) to trust", n.caBundle)
	}
	chain, err := parseCertificates(f.Certificate, n.certificate)
	if err != nil {
		return nil, err
	}
	if !privateKeyParses(f.PrivateKey) {
		return nil, refuse("garbage_pem", "%s is not a PEM private key", n.privateKey)
	}
	cas, err := parseCertificates(f.CABundle, n.caBundle)
	if err != nil {
		return nil, err
	}
	pair, err := tls.X509KeyPair(f.Certificate, f.PrivateKey)
	if err != nil {
		return nil, refuse("key_mismatch", "%s is not the private key of %s %s (%v); a half-updated pair?", n.privateKey, n.certificate, describe(chain[0]), err)
	}
	leaf := chain[0]
	pair.Leaf = leaf
	roots := x509.NewCertPool()
	for _, ca := range cas {
		if !ca.IsCA {
			return nil, refuse("not_a_ca", "%s holds %s, which is not a CA certificate", n.caBundle, describe(ca))
		}
		roots.AddCert(ca)
	}
	// Go treats a leaf without extendedKeyUsage as good for anything; ours requires the purpose.
	if !slices.Contains(leaf.ExtKeyUsage, purpose) {
		return nil, refuse("wrong_purpose", "%s %s lacks extendedKeyUsage %s", n.certificate, describe(leaf), purposeName(purpose))
	}
	if now.Before(leaf.NotBefore.Add(-ClockSkewTolerance)) {
		return nil, refuse("not_yet_valid", "%s %s is valid only from %s (now %s); check the clocks", n.certificate, describe(leaf), leaf.NotBefore.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339))
	}
	if now.After(leaf.NotAfter.Add(ClockSkewTolerance)) {
		return nil, refuse("expired", "%s %s expired at %s (now %s)", n.certificate, describe(leaf), leaf.NotAfter.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339))
	}
	intermediates := x509.NewCertPool()
	for _, c := range chain[1:] {
		intermediates.AddCert(c)
	}
	// Verified at now, moved into the leaf's validity when within the tolerance above.
	at := now
	if at.Before(leaf.NotBefore) {
		at = leaf.NotBefore
	} else if at.After(leaf.NotAfter) {
		at = leaf.NotAfter
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, Intermediates: intermediates, CurrentTime: at, KeyUsages: []x509.ExtKeyUsage{purpose}}); err != nil {
		return nil, refuse("untrusted", "%s %s does not chain to a CA of %s valid now (%v); was the bundle updated before the CA that signs it?", n.certificate, describe(leaf), n.caBundle, err)
	}
	return &Material{Certificate: pair, Roots: roots, CACertificates: cas, files: f}, nil
}

// doc:end check-material

func parseCertificates(data []byte, file string) ([]*x509.Certificate, error) {
	var out []*x509.Certificate
	for rest := data; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, refuse("garbage_pem", "%s is not a PEM certificate list: %v; write PEM CERTIFICATE blocks", file, err)
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, refuse("garbage_pem", "%s is not a PEM certificate list: no CERTIFICATE block; write PEM CERTIFICATE blocks", file)
	}
	return out, nil
}

// privateKeyParses tells a key that is not a key (garbage_pem) from one of another pair (key_mismatch).
func privateKeyParses(data []byte) bool {
	for rest := data; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			return false
		}
		if !strings.HasSuffix(block.Type, "PRIVATE KEY") {
			continue
		}
		if _, err := x509.ParsePKCS8PrivateKey(block.Bytes); err == nil {
			return true
		}
		if _, err := x509.ParseECPrivateKey(block.Bytes); err == nil {
			return true
		}
		_, err := x509.ParsePKCS1PrivateKey(block.Bytes)
		return err == nil
	}
}

// SerialHex is a certificate's serial as our logs and metrics print it: lower-case hex.
func SerialHex(c *x509.Certificate) string { return c.SerialNumber.Text(16) }

func describe(c *x509.Certificate) string {
	return fmt.Sprintf("%s (serial %s)", c.Subject, SerialHex(c))
}

func purposeName(p x509.ExtKeyUsage) string {
	switch p {
	case x509.ExtKeyUsageServerAuth:
		return "serverAuth"
	case x509.ExtKeyUsageClientAuth:
		return "clientAuth"
	}
	return fmt.Sprintf("%d", p)
}
