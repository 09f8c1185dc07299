package masternode

import (
	"crypto/rand"
	"encoding/binary"
)

// randomSalt is 32 random bits for roles.IncarnationBase. Without a
// random source the machine is broken beyond what a master can run on.
func randomSalt() uint32 {
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("crypto/rand: " + err.Error())
	}
	return binary.BigEndian.Uint32(b[:])
}
