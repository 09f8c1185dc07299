package main

import (
	"github.com/mfs-election/mfs-election/internal/node"
	"github.com/mfs-election/mfs-election/pkg/masterhost"
	"github.com/mfs-election/mfs-election/pkg/secret"
)

// noAdminPassword is the warning while ADMIN_PASSWORD is empty: at every
// start, and at a reload that empties it.
const noAdminPassword = "no ADMIN_PASSWORD: admin commands are open to anyone who reaches port 9421 (set ADMIN_PASSWORD in the mfsmaster.cfg of every master)"

// checkSecrets refuses an AUTH_CODE or ADMIN_PASSWORD shorter than
// secret.MinLen characters.
func checkSecrets(cfg config) error {
	if err := secret.Check("AUTH_CODE", cfg.Node.AuthCode); err != nil {
		return err
	}
	return secret.Check("ADMIN_PASSWORD", cfg.Node.AdminPassword)
}

// startChecks decides whether this master may start as configured
// (docs/operations.md, "Secrets"), and what to warn about at every start:
// secrets of at least secret.MinLen characters; AUTH_CODE required unless
// every address of the master and of MASTER_HOST is loopback or INSECURE
// is set; a warning while ADMIN_PASSWORD is empty. The HTTP endpoint is
// left out: it serves metrics only, nothing AUTH_CODE protects.
func startChecks(cfg config, list []masterhost.Master) (warnings []string, err error) {
	if err := checkSecrets(cfg); err != nil {
		return nil, err
	}
	hosts := []node.Host{
		{Key: "MATOML_LISTEN_HOST", Value: cfg.ML.Host},
		{Key: "MATOCS_LISTEN_HOST", Value: cfg.CS.Host},
		{Key: "MATOCL_LISTEN_HOST", Value: cfg.CL.Host},
	}
	if cfg.BindHost != "" {
		hosts = append(hosts, node.Host{Key: "BIND_HOST", Value: cfg.BindHost})
	}
	for _, m := range list {
		hosts = append(hosts, node.Host{Key: "MASTER_HOST", Value: m.Addr.Addr().String()})
	}
	w, err := node.AuthCodeRule("master", cfg.Node.AuthCode, cfg.Insecure, node.Exposed(hosts))
	if err != nil {
		return nil, err
	}
	if w != "" {
		warnings = append(warnings, w)
	}
	if cfg.Node.AdminPassword == "" {
		warnings = append(warnings, noAdminPassword)
	}
	return warnings, nil
}
