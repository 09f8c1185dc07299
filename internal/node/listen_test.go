package node

import "testing"

func TestListenAddr(t *testing.T) {
	if got := ListenAddr("*", 9419); got != ":9419" {
		t.Errorf("ListenAddr(*) = %q", got)
	}
	if got := ListenAddr("127.0.0.11", 9420); got != "127.0.0.11:9420" {
		t.Errorf("ListenAddr = %q", got)
	}
}
