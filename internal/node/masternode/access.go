package masternode

import (
	"crypto/hmac"
	"fmt"
	"time"

	"github.com/mfs-election/mfs-election/internal/exports"
	"github.com/mfs-election/mfs-election/internal/node"
	"github.com/mfs-election/mfs-election/internal/obs"
	"github.com/mfs-election/mfs-election/pkg/changelog"
	"github.com/mfs-election/mfs-election/pkg/protocol"
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/secret"
	"github.com/mfs-election/mfs-election/pkg/wire"
	"github.com/mfs-election/mfs-election/pkg/wire/frame"
)

// exportsNow is the table in force: nil when there is no file (every
// client may read and change every key).
type exportsNow struct{ t *exports.Table }

// loadExports reads path (empty: no file).
func loadExports(path string) (*exports.Table, error) {
	if path == "" {
		return nil, nil
	}
	return exports.Load(path)
}

// useExports puts t in force, logs what it is, and derives the keys of its
// passwords for cluster now rather than in a client's first request.
func (a *acceptor) useExports(t *exports.Table, cluster string) {
	if t == nil {
		a.log.Warn().Str("file", a.opt.ExportsFile).
			Msg("no mfsexports.cfg: every client that reaches port 9421 may read and change every key")
	} else {
		for _, w := range t.Warnings {
			a.log.Warn().Msg("mfsexports.cfg: " + w)
		}
		for _, p := range t.Passwords() {
			secret.Warm(p, cluster)
		}
		a.log.Info().Str("file", t.File).Int("rules", len(t.Rules)).Msg("client access list in force")
	}
	a.exports.Store(&exportsNow{t: t})
}

// Reload re-reads mfsexports.cfg and resolves MASTER_HOST again (SIGHUP:
// service.Serve calls it). A file that does not parse is not taken: the
// old list stays in force and the error is logged with the lines that
// are wrong.
func (n *MasterNode) Reload() {
	n.Resolve()
	t, err := loadExports(n.opt.ExportsFile)
	if err != nil {
		n.log.Error().Err(err).Str("file", n.opt.ExportsFile).Msg("reload: mfsexports.cfg not taken; the previous client access list stays in force")
		return
	}
	n.acc.useExports(t, n.hello().Cluster)
}

// SetAdminPassword puts a new ADMIN_PASSWORD in force (mfsmaster reload);
// a password shorter than secret.MinLen is refused and the old one stays.
// The slow key derivation is done here, before the swap, so that no
// reader waits for it; the swap is one atomic store, and each admin
// command is checked against the old password or the new one, never a
// mix. Empty opens admin commands to anyone who reaches 9421.
func (n *MasterNode) SetAdminPassword(pw string) error {
	if err := secret.Check("ADMIN_PASSWORD", pw); err != nil {
		return err
	}
	secret.Warm(pw, n.hello().Cluster)
	n.acc.adminPassword.Store(&pw)
	return nil
}

// clientProof tracks what one client connection proved (the reader's).
type clientProof struct {
	mac    []byte
	proved map[string]bool // password -> its proof checks
}

// clientAccess judges a client request against mfsexports.cfg on the
// connection's reader; a refusal is the reply to send (the core never sees
// the request). ours is the hello this master sent on the connection: its
// nonce and cluster id are what the proof covers.
func (a *acceptor) clientAccess(c *node.Conn, ours frame.Hello, p *clientProof, msg wire.Message) *roles.ClientReply {
	var (
		client     changelog.ClientID
		seq        uint64
		key, what  string
		list, chng bool
	)
	switch m := msg.(type) {
	case roles.ClientWrite:
		client, seq, key, chng, what = m.Client, m.Seq, m.Key, true, "key"
	case roles.ClientRead:
		client, seq, key, list, what = m.Client, m.Seq, m.Key, m.Prefix, "key"
		if m.Prefix {
			what = "prefix"
		}
	default:
		return nil
	}
	now := a.exports.Load()
	if now == nil || now.t == nil {
		return nil
	}
	at := time.Now()
	blocked := a.auth.blocked(c.Remote, at)
	proof := func(password string) (given, ok bool) {
		if len(p.mac) == 0 || blocked {
			return len(p.mac) > 0, false
		}
		ok, seen := p.proved[password]
		if !seen {
			ok = len(ours.Nonce) > 0 && hmac.Equal(p.mac, protocol.ClientProof(password, ours.Nonce, ours.Cluster))
			if p.proved == nil {
				p.proved = map[string]bool{}
			}
			p.proved[password] = ok
		}
		return true, ok
	}
	d := now.t.Check(c.Remote, key, list, chng, proof)
	if d == exports.Allowed {
		return nil
	}
	text, code, reason := protocol.ErrExportsDenied, wire.CodeDenied, "exports-"+d.String()
	switch d {
	case exports.ReadOnly:
		text = protocol.ErrExportsReadOnly
	case exports.PasswordMissing:
		text = protocol.ErrExportsPasswordMissing
	case exports.PasswordWrong:
		text = protocol.ErrExportsPasswordWrong
		if blocked {
			text, code, reason = protocol.ErrExportsThrottled, wire.CodeThrottled, "auth_rate"
		} else if a.auth.failed(c.Remote, at) {
			a.log.Warn().Str(obs.FieldPeer, c.Remote.String()).
				Msgf("%d wrong password proofs within %v: client requests from this address that need a password are refused for %v", authFailMax, authFailWindow, authBlock)
		}
	}
	a.metrics.ConnRefused(portCL.String(), reason)
	if ok, missed := a.refusals.allow("matocl|"+reason+"|"+c.Remote.String(), at); ok {
		a.log.Warn().Str(obs.FieldPeer, c.Remote.String()).Str(obs.FieldReason, reason).Str(what, key).Bool("change", chng).
			Int("not_logged", missed).Msg("client request refused by mfsexports.cfg")
	}
	return &roles.ClientReply{From: a.opt.Core.ID, Client: client, Seq: seq, Code: code,
		Err: fmt.Sprintf("%s: client %v, %s %q", text, c.Remote, what, key)}
}
