//go:build !tests_only

package main

import (
	challenges "github.com/cert-manager/cert-manager/pkg/controller/acmechallenges"
	orders "github.com/cert-manager/cert-manager/pkg/controller/acmeorders"
	ingressshim "github.com/cert-manager/cert-manager/pkg/controller/certificate-shim/ingresses"
	cracme "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/acme"
	crapprover "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/approver"
	crca "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/ca"
	crselfsigned "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/selfsigned"
	crvault "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/vault"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/issuing"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/keymanager"
	certificatesmetrics "github.com/cert-manager/cert-manager/pkg/controller/certificates/metrics"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/readiness"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/requestmanager"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/revisionmanager"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/trigger"
	"github.com/cert-manager/cert-manager/pkg/controller/clusterissuers"
	"github.com/cert-manager/cert-manager/pkg/controller/issuers"

	// The issuer types the issuers and clusterissuers controllers set up, as upstream links them.
	_ "github.com/cert-manager/cert-manager/pkg/issuer/acme"
	_ "github.com/cert-manager/cert-manager/pkg/issuer/ca"
	_ "github.com/cert-manager/cert-manager/pkg/issuer/selfsigned"
	_ "github.com/cert-manager/cert-manager/pkg/issuer/vault"
)

// Upstream's DefaultEnabledControllers, without certificaterequests-issuer-venafi: what
// bench/cert-manager.bench.ts compares against.
var defaultControllers = []string{
	issuers.ControllerName, clusterissuers.ControllerName, certificatesmetrics.ControllerName,
	ingressshim.ControllerName, orders.ControllerName, challenges.ControllerName,
	cracme.CRControllerName, crapprover.ControllerName, crca.CRControllerName,
	crselfsigned.CRControllerName, crvault.CRControllerName,
	trigger.ControllerName, issuing.ControllerName, keymanager.ControllerName,
	requestmanager.ControllerName, readiness.ControllerName, revisionmanager.ControllerName,
}
