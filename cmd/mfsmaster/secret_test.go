package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/mfs-election/mfs-election/internal/service"
	"github.com/mfs-election/mfs-election/internal/settings"
	"github.com/rs/zerolog"
	"github.com/urfave/cli/v2"
)

// TestSecretFlagWarned (review L3): a secret given as a flag, where ps
// shows it, is warned about by name; one from the file or unset is not.
func TestSecretFlagWarned(t *testing.T) {
	var v settings.Values
	app := &cli.App{Flags: spec.Flags(), Action: func(c *cli.Context) (err error) {
		_, v, err = spec.Resolve("", false, c)
		return err
	}}
	if err := app.Run([]string{"mfsmaster", "--auth-code", "s3cret"}); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	service.WarnSecretFlags(zerolog.New(&buf), v, "AUTH_CODE", "ADMIN_PASSWORD")
	out := buf.String()
	if !strings.Contains(out, `"key":"AUTH_CODE"`) || strings.Contains(out, "ADMIN_PASSWORD") || strings.Contains(out, "s3cret") {
		t.Fatalf("warnings: %s", out)
	}
}
