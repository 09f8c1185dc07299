package main

import (
	"net/netip"

	"github.com/mfs-election/mfs-election/internal/node"
	"github.com/mfs-election/mfs-election/pkg/masterhost"
	"github.com/mfs-election/mfs-election/pkg/secret"
)

// startChecks decides whether this chunkserver may start as configured
// (docs/operations.md, "Secrets"): AUTH_CODE of at least secret.MinLen
// characters, and required unless the address its connections leave from
// (bind) and every master are loopback, or INSECURE is set (then warning
// is what to log at every start). The data and HTTP ports are left out:
// AUTH_CODE protects neither.
func startChecks(cfg config, bind netip.Addr, masters []masterhost.Master) (warning string, err error) {
	if err := secret.Check("AUTH_CODE", cfg.Node.AuthCode); err != nil {
		return "", err
	}
	hosts := []node.Host{{Key: "BIND_HOST", Value: bind.String()}}
	for _, m := range masters {
		hosts = append(hosts, node.Host{Key: "MASTER_HOST", Value: m.Addr.Addr().String()})
	}
	return node.AuthCodeRule("chunkserver", cfg.Node.AuthCode, cfg.Insecure, node.Exposed(hosts))
}
