//go:build tests_only

package main

import (
	crapprover "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/approver"
	crca "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/ca"
	crselfsigned "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/selfsigned"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/issuing"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/keymanager"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/readiness"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/requestmanager"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/revisionmanager"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/trigger"
	"github.com/cert-manager/cert-manager/pkg/controller/clusterissuers"
	"github.com/cert-manager/cert-manager/pkg/controller/issuers"

	// The only issuer types the test suite uses: CA and SelfSigned. An ACME or Vault issuer is
	// reported by the issuers controllers as of an unknown type.
	_ "github.com/cert-manager/cert-manager/pkg/issuer/ca"
	_ "github.com/cert-manager/cert-manager/pkg/issuer/selfsigned"
)

// What the test suite runs by default (testing/cert-manager picks a subset with --controllers, for
// example without the approver, so a test decides approval itself as a policy approver would):
// the issuers, the CA and SelfSigned signers, the approver, and the chain of controllers that turns
// a Certificate into a Secret.
var defaultControllers = []string{
	issuers.ControllerName, clusterissuers.ControllerName,
	crapprover.ControllerName, crca.CRControllerName, crselfsigned.CRControllerName,
	trigger.ControllerName, keymanager.ControllerName, requestmanager.ControllerName,
	issuing.ControllerName, readiness.ControllerName, revisionmanager.ControllerName,
}
