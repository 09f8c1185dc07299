// Package linearize holds the porcupine model both the simulator and the
// real-process tests check client histories against: one register per key.
package linearize

import (
	"os"

	"github.com/anishathalye/porcupine"
)

// Input is one client operation: a write of Val to Key, or a read of Key.
type Input struct {
	Write bool
	Key   string
	Val   string
}

// Output is what the client saw.
type Output struct {
	Val     string
	Found   bool
	Unknown bool // a write whose outcome the client never learned
}

// Pending is the Return time to give a write whose outcome is unknown: it
// may take effect at any point after its call.
const Pending = int64(1) << 61

// KV is a register per key; "" is "absent" (written values are never
// empty).
var KV = porcupine.Model{
	Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
		byKey := map[string][]porcupine.Operation{}
		var keys []string
		for _, op := range history {
			k := op.Input.(Input).Key
			if _, ok := byKey[k]; !ok {
				keys = append(keys, k)
			}
			byKey[k] = append(byKey[k], op)
		}
		var out [][]porcupine.Operation
		for _, k := range keys {
			out = append(out, byKey[k])
		}
		return out
	},
	Init: func() any { return "" },
	Step: func(state, input, output any) (bool, any) {
		in, out, st := input.(Input), output.(Output), state.(string)
		if in.Write {
			return true, in.Val
		}
		if out.Found {
			return out.Val == st, st
		}
		return st == "", st
	},
	Equal: func(a, b any) bool { return a.(string) == b.(string) },
}

// Visualize writes porcupine's picture of a history that failed the check
// into dir and returns the file's path.
func Visualize(info porcupine.LinearizationInfo, dir string) (string, error) {
	f, err := os.CreateTemp(dir, "mfs-history-*.html")
	if err != nil {
		return "", err
	}
	defer f.Close()
	if err := porcupine.Visualize(KV, info, f); err != nil {
		return "", err
	}
	return f.Name(), nil
}
