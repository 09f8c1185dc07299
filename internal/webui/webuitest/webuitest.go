// Package webuitest finds the Chromium the web page's browser tests drive.
// For tests only.
package webuitest

import "os/exec"

// Browser is the path of a Chromium (or Chrome) on PATH, "" when there is
// none (the tests then skip).
func Browser() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}
