package gointerop

import (
	"bytes"
	"encoding/pem"
	"fmt"
	"strings"
)

// Layout is what a mounted certificate folder holds, as our TypeScript CertificateLayout
// (packages/grpc/src/tls/layout.ts) and the file provider's -cert-layout name it.
type Layout string

const (
	// LayoutSecret is a kubernetes.io/tls Secret volume: tls.crt (leaf, then intermediates),
	// tls.key and ca.crt.
	LayoutSecret Layout = "secret"
	// LayoutPodCertificate is a projected volume: a podCertificate source writing
	// `credentialBundlePath: credentials.pem` (the key the kubelet generated, one PKCS#8
	// PRIVATE KEY block, then the CERTIFICATE blocks of the chain, leaf first) and a
	// clusterTrustBundle source writing `path: ca.crt`.
	LayoutPodCertificate Layout = "pod-certificate"
)

// Layouts is every Layout, e.g. to validate a flag naming one.
var Layouts = []Layout{LayoutSecret, LayoutPodCertificate}

// ParseLayout is the Layout a -cert-layout flag names; the error says which ones exist.
func ParseLayout(s string) (Layout, error) {
	for _, l := range Layouts {
		if string(l) == s {
			return l, nil
		}
	}
	names := make([]string, len(Layouts))
	for i, l := range Layouts {
		names[i] = string(l)
	}
	return "", fmt.Errorf("cert-layout=%q is not one of %s", s, strings.Join(names, ", "))
}

// partNames are how messages name the three parts of the material in one layout.
type partNames struct{ certificate, privateKey, caBundle string }

// names of a zero SecretFiles are the Secret layout's, so files built by hand read as a Secret.
var secretNames = partNames{certificate: "tls.crt", privateKey: "tls.key", caBundle: "ca.crt"}

const (
	credentialBundleFile = "credentials.pem"
	caBundleFile         = "ca.crt"
)

// files are the files read from one version of a folder of layout l.
func (l Layout) files() []string {
	if l == LayoutPodCertificate {
		return []string{credentialBundleFile, caBundleFile}
	}
	return []string{"tls.crt", "tls.key", caBundleFile}
}

// mountHint says what to mount, for a message about a file that cannot be read.
func (l Layout) mountHint() string {
	if l == LayoutPodCertificate {
		return "project a podCertificate credential bundle at " + credentialBundleFile + " and a clusterTrustBundle at " + caBundleFile + " there"
	}
	return "mount a Secret holding tls.crt, tls.key, ca.crt there"
}

// secretFiles are the three parts in texts (one per file of l.files()).
func (l Layout) secretFiles(texts [][]byte) (SecretFiles, error) {
	if l != LayoutPodCertificate {
		return SecretFiles{Certificate: texts[0], PrivateKey: texts[1], CABundle: texts[2]}, nil
	}
	bundle, caBundle := texts[0], texts[1]
	if len(bytes.TrimSpace(bundle)) == 0 {
		if len(bytes.TrimSpace(caBundle)) == 0 {
			return SecretFiles{}, refuse("empty", "%s and %s are both empty; the kubelet has not written the pod certificate yet", credentialBundleFile, caBundleFile)
		}
		return SecretFiles{}, refuse("missing_certificate", "%s is empty; the kubelet has not written the pod certificate yet", credentialBundleFile)
	}
	key, chain, err := splitCredentialBundle(bundle, credentialBundleFile)
	if err != nil {
		return SecretFiles{}, err
	}
	names := partNames{certificate: credentialBundleFile, privateKey: "the PRIVATE KEY block of " + credentialBundleFile, caBundle: caBundleFile}
	return SecretFiles{Certificate: chain, PrivateKey: key, CABundle: caBundle, names: &names}, nil
}

// splitCredentialBundle is the key and the chain of a pod-certificate credential bundle, as our
// TypeScript credentialBundlePems: exactly one PKCS#8 PRIVATE KEY block, first, then one or more
// CERTIFICATE blocks, as the kubelet writes it. Unlike pem.Decode, which skips what is not a
// block, anything between or after the blocks is refused, so a bundle cut short is never half
// read. Whether the key belongs to the leaf is judged later, by CheckMaterial.
func splitCredentialBundle(data []byte, file string) (key, chain []byte, err error) {
	var blocks []*pem.Block
	for rest := bytes.TrimSpace(data); len(rest) > 0; rest = bytes.TrimSpace(rest) {
		var block *pem.Block
		next := rest
		if bytes.HasPrefix(rest, []byte("-----BEGIN ")) {
			block, next = pem.Decode(rest)
		}
		// pem.Decode skips a broken block to the next good one: what it read must be one block.
		read := rest[:len(rest)-len(next)]
		if block == nil || len(block.Headers) > 0 || bytes.Count(read, []byte("-----BEGIN ")) != 1 {
			return nil, nil, refuse("garbage_pem", "%s is not a PEM credential bundle: what follows block %d is not a bare PEM block; it must hold a PRIVATE KEY block, then CERTIFICATE blocks", file, len(blocks))
		}
		blocks = append(blocks, block)
		rest = next
	}
	labels := make([]string, len(blocks))
	keyAt := -1
	for i, b := range blocks {
		labels[i] = b.Type
		if keyAt < 0 && b.Type == "PRIVATE KEY" {
			keyAt = i
		}
	}
	switch {
	case keyAt < 0:
		return nil, nil, refuse("missing_key", "%s holds no PKCS#8 PRIVATE KEY block (found %s); the kubelet writes the key first, then the certificates", file, strings.Join(labels, ", "))
	case keyAt > 0:
		return nil, nil, refuse("garbage_pem", "%s must begin with its PRIVATE KEY block; block 1 is a %s, the key is block %d", file, labels[0], keyAt+1)
	}
	for i, b := range blocks[1:] {
		if b.Type != "CERTIFICATE" {
			return nil, nil, refuse("garbage_pem", "%s: PEM block %d is a %s; only CERTIFICATE blocks may follow the PRIVATE KEY block", file, i+2, b.Type)
		}
		chain = append(chain, pem.EncodeToMemory(b)...)
	}
	if len(chain) == 0 {
		return nil, nil, refuse("missing_certificate", "%s holds a PRIVATE KEY block but no CERTIFICATE block", file)
	}
	return pem.EncodeToMemory(blocks[0]), chain, nil
}
