package frame

import (
	"testing"

	"github.com/mfs-election/mfs-election/pkg/changelog"
)

func BenchmarkMarshalEntry(b *testing.B) {
	e := changelog.Entry{Pos: changelog.Pos{Version: 12345, Epoch: 7}, Kind: changelog.EntryPut, Client: 99, Seq: 5, Key: "bench/12/345", Value: "v345"}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Marshal(&e); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkUnmarshalEntry(b *testing.B) {
	e := changelog.Entry{Pos: changelog.Pos{Version: 12345, Epoch: 7}, Kind: changelog.EntryPut, Client: 99, Seq: 5, Key: "bench/12/345", Value: "v345"}
	raw, _ := Marshal(&e)
	b.ReportAllocs()
	for b.Loop() {
		var x changelog.Entry
		if err := Unmarshal(raw, &x); err != nil {
			b.Fatal(err)
		}
	}
}
