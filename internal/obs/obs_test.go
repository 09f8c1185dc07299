package obs

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/rs/zerolog"
)

func TestLoggerJSON(t *testing.T) {
	var buf bytes.Buffer
	log, err := NewLoggerTo(&buf, "NOTICE", "mfsmaster", false)
	if err != nil {
		t.Fatal(err)
	}
	log.Debug().Msg("hidden")
	log.Info().Uint64(FieldEpoch, 7).Str(FieldPeer, "10.0.0.2:9419").Msg("hello")
	var m map[string]any
	if err := json.Unmarshal(buf.Bytes(), &m); err != nil {
		t.Fatalf("%v: %q", err, buf.String())
	}
	if m[FieldDaemon] != "mfsmaster" || m["level"] != "info" || m[FieldEpoch] != 7.0 || m["message"] != "hello" {
		t.Errorf("fields: %v", m)
	}
	if _, err := time.Parse(time.RFC3339Nano, m["time"].(string)); err != nil {
		t.Errorf("time: %v", err)
	}

	buf.Reset()
	log, _ = NewLoggerTo(&buf, "warning", "mfschunkserver", true)
	log.Warn().Msg("console")
	if s := buf.String(); !strings.Contains(s, "console") || !strings.Contains(s, "mfschunkserver") {
		t.Errorf("console: %q", s)
	}

	_, err = NewLoggerTo(io.Discard, "loud", "x", false)
	if err == nil || !strings.Contains(err.Error(), `"loud"`) || !strings.Contains(err.Error(), "warning") {
		t.Errorf("bad level error: %v", err)
	}
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestServeMetrics(t *testing.T) {
	reg := NewRegistry()
	m := NewMasterMetrics(reg)
	cs := NewChunkserverMetrics(reg, []string{"m1:9420", "m2:9420"})
	var healthy atomic.Bool
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := Serve(ln, reg, func() (bool, string) {
		if healthy.Load() {
			return true, "LEADER"
		}
		return false, "no quorum"
	}, zerolog.Nop())
	defer srv.Shutdown(context.Background())
	base := "http://" + ln.Addr().String()

	m.Set(MasterSnapshot{Role: roles.Leader, Epoch: 3, QuorumHeld: true, Sync: roles.Synced,
		VotesByLocation: map[string]int{"dc1": 2, "dc2": 1}, FollowerDelay: 1500 * time.Millisecond})
	m.LeaderChange()
	m.HeartbeatRTT(300 * time.Microsecond)
	m.ConnRefused("matocs", "auth")
	cs.Set(ChunkserverSnapshot{VoteFor: "m2:9420", Connected: map[string]bool{"m1:9420": true}, PromiseLeft: -time.Second})

	code, body := get(t, base+"/metrics")
	for _, want := range []string{
		`mfs_master_role{role="LEADER"} 1`, `mfs_master_role{role="FOLLOWER"} 0`,
		`mfs_master_sync_state{state="SYNCED"} 1`, `mfs_master_votes{location="dc2"} 1`,
		`mfs_master_epoch 3`, `mfs_master_follower_delay_seconds 1.5`, `mfs_master_leader_changes_total 1`,
		`mfs_master_connections_refused_total{port="matocs",reason="auth"} 1`,
		`mfs_master_connections_refused_total{port="matoml",reason="garbage"} 0`,
		`mfs_master_heartbeat_rtt_seconds_bucket{le="0.0004"} 1`,
		`mfs_chunkserver_vote{master="m2:9420"} 1`, `mfs_chunkserver_vote{master="m1:9420"} 0`,
		`mfs_chunkserver_master_connected{master="m1:9420"} 1`, `mfs_chunkserver_promise_remaining_seconds 0`,
		`go_goroutines `, `process_start_time_seconds `,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("code %d, missing %q", code, want)
		}
	}

	m.Set(MasterSnapshot{Role: roles.Follower, VotesByLocation: map[string]int{"dc1": 2}})
	_, body = get(t, base+"/metrics")
	if strings.Contains(body, `location="dc2"`) || !strings.Contains(body, `mfs_master_role{role="LEADER"} 0`) {
		t.Errorf("after drop:\n%s", body)
	}
	if n := testutil.CollectAndCount(m.roleGauges, "mfs_master_votes"); n != 1 {
		t.Errorf("vote series: %d", n)
	}
	if !strings.Contains(body, `mfs_master_role{role="FOLLOWER"} 1`) {
		t.Errorf("FOLLOWER not 1:\n%s", body)
	}

	if code, body := get(t, base+"/healthz"); code != 503 || body != "no quorum\n" {
		t.Errorf("healthz: %d %q", code, body)
	}
	if code, body := get(t, base+"/livez"); code != 200 || body != "ok\n" {
		t.Errorf("livez: %d %q", code, body)
	}
	healthy.Store(true)
	if code, body := get(t, base+"/healthz"); code != 200 || body != "LEADER\n" {
		t.Errorf("healthz: %d %q", code, body)
	}
}

// TestRoleFrom: with a source set, each scrape asks it once and builds the
// role, epoch, sync, quorum and vote gauges from that one answer, whatever
// Set said before; the other gauges still come from Set.
func TestRoleFrom(t *testing.T) {
	reg := NewRegistry()
	m := NewMasterMetrics(reg)
	m.Set(MasterSnapshot{Role: roles.Leader, Epoch: 3, QuorumHeld: true, Sync: roles.Synced, Registered: 6,
		VotesByLocation: map[string]int{"dc1": 2, "dc2": 2}})
	var calls atomic.Int32
	m.RoleFrom(func() MasterRole {
		calls.Add(1)
		return MasterRole{Role: roles.Follower, Epoch: 4, Sync: roles.Desync, VotesByLocation: map[string]int{"dc1": 0, "dc2": 0}}
	})
	want := `
# HELP mfs_master_quorum_held 1 if this master holds a quorum of chunkserver votes at the instant of the scrape, else 0.
# TYPE mfs_master_quorum_held gauge
mfs_master_quorum_held 0
# HELP mfs_master_epoch Election epoch this master is in.
# TYPE mfs_master_epoch gauge
mfs_master_epoch 4
# HELP mfs_master_votes Chunkserver votes this master may count at the instant of the scrape, per location.
# TYPE mfs_master_votes gauge
mfs_master_votes{location="dc1"} 0
mfs_master_votes{location="dc2"} 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "mfs_master_quorum_held", "mfs_master_epoch", "mfs_master_votes"); err != nil {
		t.Error(err)
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("the source was asked %d times in one scrape", n)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		switch mf.GetName() {
		case "mfs_master_role":
			for _, s := range mf.GetMetric() {
				if on := s.GetGauge().GetValue() == 1; on != (s.GetLabel()[0].GetValue() == "FOLLOWER") {
					t.Errorf("role %s = %v", s.GetLabel()[0].GetValue(), s.GetGauge().GetValue())
				}
			}
		case "mfs_master_chunkservers_registered":
			if v := mf.GetMetric()[0].GetGauge().GetValue(); v != 6 {
				t.Errorf("registered %v, want 6 from Set", v)
			}
		}
	}
}

// TestCanceledScrapesQuiet: a scrape its client gave up on is logged once
// a minute, with the count of those left out; any other error each time.
func TestCanceledScrapesQuiet(t *testing.T) {
	var buf bytes.Buffer
	now := time.Unix(1000, 0)
	el := newErrLog(zerolog.New(&buf))
	el.canceled.now = func() time.Time { return now }
	for range 40 {
		el.Println("error encoding and sending metric family: write tcp: context canceled")
	}
	el.Println("error gathering metrics: boom")
	now = now.Add(61 * time.Second)
	el.Println("error encoding and sending metric family: context canceled")
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d lines, want 3 (one canceled, the other error, one canceled a minute later):\n%s", len(lines), buf.String())
	}
	if !strings.Contains(lines[0], `"since_last":0`) || !strings.Contains(lines[1], "boom") || !strings.Contains(lines[2], `"since_last":39`) {
		t.Errorf("lines:\n%s", buf.String())
	}
}

// TestBuildInfo: mfs_build_info is 1 with the daemon, version and Go
// version as labels.
func TestBuildInfo(t *testing.T) {
	reg := prometheus.NewRegistry()
	RegisterBuildInfo(reg, "mfsmaster", "1.2.3")
	mfs, err := reg.Gather()
	if err != nil || len(mfs) != 1 || mfs[0].GetName() != "mfs_build_info" {
		t.Fatalf("gathered %v, %v", mfs, err)
	}
	m := mfs[0].GetMetric()[0]
	labels := map[string]string{}
	for _, l := range m.GetLabel() {
		labels[l.GetName()] = l.GetValue()
	}
	if m.GetGauge().GetValue() != 1 || labels["daemon"] != "mfsmaster" || labels["version"] != "1.2.3" || labels["goversion"] != runtime.Version() {
		t.Fatalf("mfs_build_info %v = %v", labels, m.GetGauge().GetValue())
	}
}

// TestLogFormat: LOG_FORMAT's values, and a bad one named with what is
// accepted.
func TestLogFormat(t *testing.T) {
	for _, f := range LogFormats {
		if why := LogFormatRule(f); why != "" {
			t.Errorf("%s refused: %s", f, why)
		}
		if _, err := DaemonLogger("info", f, "mfstest"); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	if why := LogFormatRule("xml"); why != "want auto, json, console" {
		t.Errorf("xml: %q", why)
	}
	if _, err := DaemonLogger("info", "xml", "mfstest"); err == nil || !strings.Contains(err.Error(), `LOG_FORMAT "xml"`) {
		t.Errorf("xml: %v", err)
	}
}
