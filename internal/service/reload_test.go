package service

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mfs-election/mfs-election/internal/settings"
	"github.com/rs/zerolog"
	"github.com/urfave/cli/v2"
)

// reloadCfg is what the test table fills.
type reloadCfg struct {
	Password string
	Level    string
	Lease    time.Duration
	Port     int
}

var reloadSpec = settings.Spec[reloadCfg]{
	Daemon:   "mfstest",
	Defaults: func() reloadCfg { return reloadCfg{Level: "info", Lease: time.Second, Port: 9419} },
	Keys: func(c *reloadCfg) []settings.Key {
		return []settings.Key{
			settings.Field("PASSWORD", &c.Password, "A secret.").Live(),
			settings.Field("LEVEL", &c.Level, "How much to log.").Live(),
			settings.Ranged("LEASE", &c.Lease, time.Millisecond, time.Minute, "A timing."),
			settings.Ranged("PORT", &c.Port, 0, 65535, "A port."),
		}
	},
}

// TestReloadConfig (issue 12): a reload applies the changed live keys
// through apply and names, one log line each, every other key whose value
// differs from the running one (again at the next reload, until a
// restart); a refused apply or a bad file changes nothing and says why.
func TestReloadConfig(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mfstest.cfg")
	write := func(text string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("PASSWORD = old-password-0123456\nLEASE = 1s\n")
	var log bytes.Buffer
	var applied []reloadCfg
	apply := func(c reloadCfg) error {
		if len(c.Password) < 16 {
			return errors.New("PASSWORD is too short")
		}
		applied = append(applied, c)
		return nil
	}
	// reload runs ReloadConfig in a real cli run (the -c flag, the
	// key flags) and returns the log it wrote.
	var v settings.Values
	reload := func() string {
		t.Helper()
		log.Reset()
		app := &cli.App{Flags: append(reloadSpec.Flags(), &cli.StringFlag{Name: "c"}), Action: func(c *cli.Context) error {
			v = ReloadConfig(reloadSpec, c, zerolog.New(&log), v, apply)
			return nil
		}}
		if err := app.Run([]string{"mfstest", "-c", path, "--port", "9500"}); err != nil {
			t.Fatal(err)
		}
		return log.String()
	}
	var err error
	if _, v, err = reloadSpec.Resolve(path, true, nil); err != nil {
		t.Fatal(err)
	}

	write("PASSWORD = new-password-0123456\nLEVEL = debug\nLEASE = 2s\n")
	out := reload()
	if len(applied) != 1 || applied[0].Password != "new-password-0123456" || applied[0].Level != "debug" {
		t.Fatalf("applied %+v", applied)
	}
	for _, want := range []string{`"key":"LEASE"`, "reload: LEASE changed; it takes effect at the next restart", `"key":"PORT"`, `"keys":["PASSWORD","LEVEL"]`, "reload: applied"} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "new-password") || strings.Contains(out, "old-password") || strings.Contains(out, `"key":"LEVEL"`) {
		t.Errorf("the log shows a secret or names a live key as waiting:\n%s", out)
	}
	if v.String("PASSWORD") != "new-password-0123456" || v.Duration("LEASE") != time.Second || v.Int("PORT") != 9419 {
		t.Errorf("in force: PASSWORD %q, LEASE %v, PORT %d", v.String("PASSWORD"), v.Duration("LEASE"), v.Int("PORT"))
	}

	// Nothing live changed: apply is not called, the waiting keys are
	// named again.
	out = reload()
	if len(applied) != 1 || !strings.Contains(out, `"key":"LEASE"`) || !strings.Contains(out, "nothing to apply") {
		t.Errorf("second reload: applied %d times, log:\n%s", len(applied), out)
	}

	// apply refuses: nothing changes.
	write("PASSWORD = short\nLEVEL = warn\nLEASE = 2s\n")
	out = reload()
	if len(applied) != 1 || !strings.Contains(out, "PASSWORD is too short") || !strings.Contains(out, "config not taken") ||
		v.String("PASSWORD") != "new-password-0123456" || v.String("LEVEL") != "debug" {
		t.Errorf("refused apply: applied %d times, LEVEL %q, log:\n%s", len(applied), v.String("LEVEL"), out)
	}

	// A bad file: nothing changes.
	write("LEASE = 2h\nNO_SUCH = 1\n")
	out = reload()
	if !strings.Contains(out, "LEASE") || !strings.Contains(out, "unknown key NO_SUCH") || !strings.Contains(out, "config not taken") || v.String("LEVEL") != "debug" {
		t.Errorf("bad file: LEVEL %q, log:\n%s", v.String("LEVEL"), out)
	}
}
