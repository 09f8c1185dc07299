package sim

import (
	"fmt"
	"os"
	"sort"
	"testing"
)

func TestZZCompare(t *testing.T) {
	var lines []string
	RunSeeds(1, 300, func(r Result) {
		lines = append(lines, fmt.Sprintf("%d ev=%d lead=%d acked=%d heal=%v fail=%v viol=%d live=%q", r.Seed, r.Events, r.Leaders, r.Acked, r.HealToLead, r.Failed(), len(r.Violations), r.Liveness))
	})
	sort.Strings(lines)
	f, _ := os.Create(os.Getenv("ZZOUT"))
	for _, l := range lines {
		fmt.Fprintln(f, l)
	}
	f.Close()
}
