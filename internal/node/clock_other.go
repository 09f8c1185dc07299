//go:build !linux

package node

import "time"

func boottime() (time.Duration, bool) { return 0, false }
