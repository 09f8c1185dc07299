package obs

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/rs/zerolog"
)

// TestServeProfiles: served on loopback, refused elsewhere or malformed,
// with the reason named.
func TestServeProfiles(t *testing.T) {
	for _, bad := range []string{"0.0.0.0:6060", "10.1.2.3:6060", "[::]:6060", "localhost", "127.0.0.1"} {
		if srv, _, err := ServeProfiles(bad, zerolog.Nop()); err == nil {
			srv.Close()
			t.Errorf("%s: served", bad)
		} else if !strings.Contains(err.Error(), "PPROF_LISTEN") {
			t.Errorf("%s: %v does not name the key", bad, err)
		}
	}
	srv, addr, err := ServeProfiles("127.0.0.1:0", zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	resp, err := http.Get("http://" + addr + "/debug/pprof/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "goroutine") {
		t.Errorf("index: %s\n%s", resp.Status, body)
	}
}
