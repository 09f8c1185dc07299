package main

import (
	"github.com/mfs-election/mfs-election/internal/node"
	"github.com/mfs-election/mfs-election/internal/settings"
	"github.com/mfs-election/mfs-election/pkg/masterhost"
	"github.com/mfs-election/mfs-election/pkg/secret"
)

// startChecks decides whether this master may start as configured
// (docs/operations.md, "Secrets"), and what to warn about at every start:
// secrets of at least secret.MinLen characters; AUTH_CODE required unless
// every address of the master and of MASTER_HOST is loopback or INSECURE
// is set; a warning while ADMIN_PASSWORD is empty. The HTTP endpoint is
// left out: it serves metrics only, nothing AUTH_CODE protects.
func startChecks(v settings.Values, list []masterhost.Master) (warnings []string, err error) {
	for _, k := range []string{"AUTH_CODE", "ADMIN_PASSWORD"} {
		if err := secret.Check(k, v.String(k)); err != nil {
			return nil, err
		}
	}
	hosts := []node.Host{}
	for _, k := range []string{"MATOML_LISTEN_HOST", "MATOCS_LISTEN_HOST", "MATOCL_LISTEN_HOST"} {
		hosts = append(hosts, node.Host{Key: k, Value: v.String(k)})
	}
	if b := v.String("BIND_HOST"); b != "" {
		hosts = append(hosts, node.Host{Key: "BIND_HOST", Value: b})
	}
	for _, m := range list {
		hosts = append(hosts, node.Host{Key: "MASTER_HOST", Value: m.Addr.Addr().String()})
	}
	w, err := node.AuthCodeRule("master", v.String("AUTH_CODE"), v.Bool("INSECURE"), node.Exposed(hosts))
	if err != nil {
		return nil, err
	}
	if w != "" {
		warnings = append(warnings, w)
	}
	if v.String("ADMIN_PASSWORD") == "" {
		warnings = append(warnings, "no ADMIN_PASSWORD: admin commands are open to anyone who reaches port 9421 (set ADMIN_PASSWORD in the mfsmaster.cfg of every master)")
	}
	return warnings, nil
}
