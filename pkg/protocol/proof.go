package protocol

import (
	"crypto/hmac"
	"crypto/sha256"
	"net/netip"

	"github.com/mfs-election/mfs-election/pkg/secret"
	"github.com/mfs-election/mfs-election/pkg/wire/frame"
)

// The proofs of docs/wire.md, "Authentication". No secret crosses the
// wire or keys a MAC directly: each is stretched by secret.Key, under a
// purpose of its own, so that a proof made for one purpose never passes
// for another.

// ChunkserverProof is what a chunkserver proves AUTH_CODE with
// (AuthProof): bound to the challenge, the cluster and its own address, so
// a proof cannot be replayed on another connection or by another
// chunkserver. Its key is derived from the code and the cluster id by a
// slow KDF (secret.Key), so a captured proof gives no fast offline
// guessing.
func ChunkserverProof(code string, nonce []byte, cluster string, cs netip.Addr) []byte {
	return proofMAC(secret.Key(code, cluster, secret.Chunkserver), nonce, cluster, cs)
}

// MasterProof is what a master proves AUTH_CODE with on 9419 (AuthProof).
// Its key is derived from the code under its own purpose, so no chunkserver
// proof (whose nonce a fake master may choose freely) can ever equal a
// master proof: the domain is separated in the key, where no nonce
// reaches.
func MasterProof(code string, nonce []byte, cluster string, m netip.Addr) []byte {
	return proofMAC(secret.Key(code, cluster, secret.Master), nonce, cluster, m)
}

// AuthNonceLen is the length of every AUTH_CODE challenge's nonce: a
// prover refuses any other.
const AuthNonceLen = 32

func proofMAC(key, nonce []byte, cluster string, addr netip.Addr) []byte {
	h := hmac.New(sha256.New, key)
	h.Write(nonce)
	h.Write([]byte{0})
	h.Write([]byte(cluster))
	h.Write([]byte{0})
	h.Write(addr.AsSlice())
	return h.Sum(nil)
}

// ClientProof is what a client proves a password of mfsexports.cfg with:
// HMAC-SHA256 keyed by the key derived from the password and the cluster
// id (secret.Key, purpose mfs-client), over the nonce of the master's hello
// on this connection, a zero byte and the cluster id. The password never
// crosses the wire, and the proof is good for this connection only.
func ClientProof(password string, nonce []byte, cluster string) []byte {
	h := hmac.New(sha256.New, secret.Key(password, cluster, secret.Client))
	h.Write(nonce)
	h.Write([]byte{0})
	h.Write([]byte(cluster))
	return h.Sum(nil)
}

// AdminProof is what mfscli proves ADMIN_PASSWORD with: an HMAC, keyed
// by the key derived from the password and the cluster id (secret.Key,
// purpose mfs-admin), over the nonce of the master's hello on this
// connection, the cluster id, the master the command is meant for
// (req.Target) and the request itself (its Proof empty). The password
// never crosses the wire, a proof is good for one request on one
// connection to one master, and it cannot be moved to another request or
// another master.
func AdminProof(password string, nonce []byte, cluster string, req AdminReq) []byte {
	req.Proof = nil
	body, err := frame.Marshal(req)
	if err != nil {
		return nil
	}
	h := hmac.New(sha256.New, secret.Key(password, cluster, secret.Admin))
	h.Write(nonce)
	h.Write([]byte{0})
	h.Write([]byte(cluster))
	h.Write([]byte{0})
	h.Write(req.Target.AsSlice())
	h.Write([]byte{0})
	h.Write(body)
	return h.Sum(nil)
}
