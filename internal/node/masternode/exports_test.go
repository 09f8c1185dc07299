package masternode

import (
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mfs-election/mfs-election/internal/node/nodetest"
	"github.com/mfs-election/mfs-election/pkg/masterhost"
	"github.com/mfs-election/mfs-election/pkg/metadata"
	"github.com/mfs-election/mfs-election/pkg/protocol"
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/roles/master"
	"github.com/mfs-election/mfs-election/pkg/wire"
	"github.com/mfs-election/mfs-election/pkg/wire/frame"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

const exportPassword = "export-password-0123"

// exportClient is a hand-driven client connection from src: hello, then
// a ClientAuth with password's proof when password is set.
type exportClient struct {
	t   *testing.T
	nc  net.Conn
	seq uint64
}

func newExportClient(t *testing.T, n *MasterNode, src, password string) *exportClient {
	t.Helper()
	_, _, cl := n.Addrs()
	nc := dialFrom(t, src, cl)
	t.Cleanup(func() { nc.Close() })
	theirs, err := frame.DialHello(nc, frame.Hello{Proto: frame.ProtocolVersion, Kind: frame.KindClient}, "", frame.KindMaster, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if password != "" {
		if err := frame.WriteFrame(nc, protocol.ClientAuth{MAC: protocol.ClientProof(password, theirs.Nonce, theirs.Cluster)}); err != nil {
			t.Fatal(err)
		}
	}
	return &exportClient{t: t, nc: nc}
}

// do sends one request and returns the reply's error text ("" when OK);
// a refusal must be coded DENIED.
func (c *exportClient) do(m wire.Message) string {
	c.t.Helper()
	_ = c.nc.SetDeadline(time.Now().Add(3 * time.Second))
	if err := frame.WriteFrame(c.nc, m); err != nil {
		c.t.Fatal(err)
	}
	r, err := protocol.ClientIn().ReadFrame(c.nc, frame.DefaultMaxFrame)
	if err != nil {
		c.t.Fatal(err)
	}
	rep := *r.(*roles.ClientReply)
	if rep.OK {
		return ""
	}
	if rep.Err == "" {
		return "not OK"
	}
	if rep.Code != wire.CodeDenied {
		c.t.Errorf("the refusal %q is coded %v, want %v", rep.Err, rep.Code, wire.CodeDenied)
	}
	return rep.Err
}

func (c *exportClient) write(key string) string {
	c.seq++
	return c.do(roles.ClientWrite{Client: 77, Seq: c.seq, Key: key, Value: "v"})
}

func (c *exportClient) read(key string) string {
	c.seq++
	return c.do(roles.ClientRead{Client: 77, Seq: c.seq, Key: key})
}

func (c *exportClient) list(prefix string) string {
	c.seq++
	return c.do(roles.ClientRead{Client: 77, Seq: c.seq, Key: prefix, Prefix: true})
}

// TestExportsEnforced (issue 10, H3): with an mfsexports.cfg a master
// refuses the changes and reads the file does not allow, before the core
// sees them, with a clear error; a password line needs the client's proof
// over its connection's nonce; SIGHUP's reload takes a new file and keeps
// the old one when the new one is bad; the status says whether the
// namespace, admin commands and the ports are open.
func TestExportsEnforced(t *testing.T) {
	nodetest.NoLeaks(t)
	file := filepath.Join(t.TempDir(), "mfsexports.cfg")
	write := func(s string) {
		if err := os.WriteFile(file, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("127.0.0.31 / rw\n127.0.0.32 /app rw\n127.0.0.32 / ro\n127.0.0.33 / rw,password=" + exportPassword + "\n")
	// A LEADER with a voter (changes need one to commit).
	n, reg, _ := leaderWithVoter(t, "127.0.0.2", 40001, func(o *MasterOptions) {
		o.ExportsFile = file
		o.AdminPassword = testPassword
	})
	if st := nodetest.StatusOf(t, n); st.ExportsOpen || !st.NoAuthCode || st.AdminOpen {
		t.Fatalf("a master with ADMIN_PASSWORD and an exports file, without AUTH_CODE, reports %+v", st)
	}

	rw := newExportClient(t, n, "127.0.0.31", "")
	if e := rw.write("a"); e != "" {
		t.Fatalf("rw line: %s", e)
	}
	ro := newExportClient(t, n, "127.0.0.32", "")
	for _, c := range []struct{ got, want string }{
		{ro.write("app/x"), ""},
		{ro.write("a"), protocol.ErrExportsReadOnly},
		{ro.write("apple"), protocol.ErrExportsReadOnly},
		{ro.read("a"), ""},
		{ro.list("app/"), ""},
		{newExportClient(t, n, "127.0.0.34", "").read("a"), protocol.ErrExportsDenied},
		{newExportClient(t, n, "127.0.0.34", "").list(""), protocol.ErrExportsDenied},
		{newExportClient(t, n, "127.0.0.33", "").write("b"), protocol.ErrExportsPasswordMissing},
		{newExportClient(t, n, "127.0.0.33", "wrong-password-0123").write("b"), protocol.ErrExportsPasswordWrong},
		{newExportClient(t, n, "127.0.0.33", exportPassword).write("b"), ""},
	} {
		if !strings.HasPrefix(c.got, c.want) || (c.want == "") != (c.got == "") {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
	if e := ro.write("a"); !strings.Contains(e, "127.0.0.32") || !strings.Contains(e, `"a"`) {
		t.Errorf("the refusal does not name the address and key: %s", e)
	}
	if v := nodetest.Labelled(t, reg, "mfs_master_connections_refused_total", map[string]string{"port": "matocl", "reason": "exports-read-only"}); v < 1 {
		t.Errorf("read-only refusals counted: %v", v)
	}

	// Reload: a bad file is not taken; a good one is.
	write("127.0.0.34 / ro\nnonsense\n")
	n.Reload()
	if e := newExportClient(t, n, "127.0.0.34", "").read("a"); !strings.HasPrefix(e, protocol.ErrExportsDenied) {
		t.Errorf("a bad file was taken on reload: %q", e)
	}
	write("127.0.0.34 / ro\n")
	n.Reload()
	if e := newExportClient(t, n, "127.0.0.34", "").read("a"); e != "" {
		t.Errorf("the new file was not taken on reload: %q", e)
	}
	if e := newExportClient(t, n, "127.0.0.31", "").write("a"); !strings.HasPrefix(e, protocol.ErrExportsDenied) {
		t.Errorf("the old file still counts: %q", e)
	}
	// Removed: open again, and said so.
	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	n.Reload()
	if e := newExportClient(t, n, "127.0.0.35", "").write("c"); e != "" {
		t.Errorf("without the file: %q", e)
	}
	if !nodetest.StatusOf(t, n).ExportsOpen {
		t.Error("no exports file, and the status does not say the namespace is open")
	}
}

// TestOpenMasterReported: a master without AUTH_CODE, ADMIN_PASSWORD and
// exports file says so in its status (mfscli's alarm).
func TestOpenMasterReported(t *testing.T) {
	nodetest.NoLeaks(t)
	self := netip.MustParseAddr("127.0.0.1")
	n, _, _ := startSolo(t, nodetest.StoreWithChanges(t, self, 3), self)
	if st := nodetest.StatusOf(t, n); !st.NoAuthCode || !st.AdminOpen || !st.ExportsOpen {
		t.Fatalf("an open master reports %+v", st)
	}
}

// TestBadExportsFileStopsStart: a bad mfsexports.cfg at start is an error
// naming the line; the master does not start.
func TestBadExportsFileStopsStart(t *testing.T) {
	nodetest.NoLeaks(t)
	self := netip.MustParseAddr("127.0.0.1")
	file := filepath.Join(t.TempDir(), "mfsexports.cfg")
	if err := os.WriteFile(file, []byte("* / rw,password=short\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	st, err := metadata.OpenMaster(nodetest.StoreWithChanges(t, self, 3))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	id := masterhost.IDOf(self)
	_, err = StartMaster(MasterOptions{Core: master.DefaultConfig(id, []wire.MasterID{id}), Self: self,
		Masters:  []masterhost.Master{{ID: id, Addr: netip.AddrPortFrom(self, 9419)}},
		ListenML: "127.0.0.1:0", ListenCS: "127.0.0.1:0", ListenCL: "127.0.0.1:0", ExportsFile: file,
		Log: zerolog.New(zerolog.NewTestWriter(t)), Metrics: prometheus.NewRegistry()}, st)
	if err == nil || !strings.Contains(err.Error(), file+":1") || !strings.Contains(err.Error(), "at least 16") {
		t.Fatalf("%v", err)
	}
}
