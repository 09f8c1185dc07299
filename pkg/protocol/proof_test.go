package protocol

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"net/netip"
	"testing"

	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/secret"
)

// Secrets of the tests: at least secret.MinLen characters.
const (
	testCode     = "test-auth-code-0123"
	testPassword = "test-admin-password"
)

// TestProofsUseSlowKey (review L3): no proof is keyed by its secret
// directly; each uses the key derived from the secret and the cluster id
// by secret.Key under its own purpose, so one captured exchange gives no
// fast offline guessing.
func TestProofsUseSlowKey(t *testing.T) {
	nonce := bytes.Repeat([]byte{7}, AuthNonceLen)
	addr := netip.MustParseAddr("10.0.0.7")
	want := func(key []byte) []byte {
		h := hmac.New(sha256.New, key)
		h.Write(nonce)
		h.Write([]byte{0})
		h.Write([]byte("C1"))
		h.Write([]byte{0})
		h.Write(addr.AsSlice())
		return h.Sum(nil)
	}
	if got := ChunkserverProof(testCode, nonce, "C1", addr); !bytes.Equal(got, want(secret.Key(testCode, "C1", secret.Chunkserver))) {
		t.Error("a chunkserver's proof is not keyed by the derived chunkserver key")
	}
	if got := MasterProof(testCode, nonce, "C1", addr); !bytes.Equal(got, want(secret.Key(testCode, "C1", secret.Master))) {
		t.Error("a master's proof is not keyed by the derived master key")
	}
	if bytes.Equal(ChunkserverProof(testCode, nonce, "C1", addr), ChunkserverProof(testCode, nonce, "C2", addr)) {
		t.Error("a proof does not depend on the cluster id")
	}
	req := AdminReq{ID: 1, Kind: roles.AdminShutdown, Target: addr}
	plain := hmac.New(sha256.New, []byte(testPassword))
	plain.Write([]byte("mfs-admin\x00"))
	if p := AdminProof(testPassword, nonce, "C1", req); bytes.Equal(p, plain.Sum(nil)) || len(p) != sha256.Size {
		t.Error("the admin proof is keyed by the password itself")
	}
}
