// Package adversary plays hostile peers over the real wire: it speaks the
// frames of pkg/wire/frame with the messages of pkg/roles and
// internal/node (never redeclared), from any source address a test gives
// it, against real mfsmaster processes. Each attack proves one finding of
// the security review (../shared/reviews/security.md) stays fixed;
// internal/cluster/adversary_test.go runs every one of them in make test
// with assertions.
//
//   - Impostor (C1, E2): a chunkserver connection with the hello id of a
//     registered chunkserver, from the attacker's own address, that proves
//     AUTH_CODE when it holds it (the proof binds the attacker's address,
//     so the code alone must not make it that chunkserver) and acks every
//     heartbeat it is sent. Today it takes over the member's vote session:
//     two LEADERs behind a partition, a reconnect fight without one.
//   - The cloned chunkserver of the issue is a real mfschunkserver started
//     from a copy of a registered one's DATA_PATH (cluster.CloneCS); it
//     needs nothing from this package.
//   - EpochBomb (H2, E3): a VoteHello claiming MaxEpoch near 2^64 or far
//     above the current epoch, from an unregistered id or a registered id
//     at the wrong address, optionally nominating the master, and refusing
//     any heartbeat with that epoch. Today one unseats a healthy LEADER,
//     and near 2^64 newEpoch wraps so that no master can be elected again.
//   - Forger and Crafted (M6, E5, T3): a peer connection to a master's
//     9419 from another master's address, with that master's hello id,
//     carrying Appends whose epochs fall, a config entry without a config,
//     versions with gaps, epochs and commit points at the top of the range,
//     snapshot chunks with absurd totals, a catch-up answer and a
//     PeerStatus claiming a newer epoch. Today the first Append panics its
//     receiver.
//   - RegistrationFlood (H1, E1): one source asks for ids for many ports,
//     votes with every id it gets, then leaves. Today the dead fakes stay
//     in the registry and no master can be elected again.
//   - SlowLoris and CSInfoFlood (M1, E4, E7): half-sent 4 MiB frames held
//     open on the client port, and 4 MiB CSInfo frames under unregistered
//     ids. Today the first takes a master to about 850 MB resident and the
//     second leaves about 430 MB held after the attacker has gone.
//   - Client.Fill and Client.Flood (M2, E6, E6b): 10,000 keys, then 300
//     pipelined lists of every key beside 10,000 pipelined writes. Today
//     the LEADER fences itself for want of heartbeats.
//
// Authenticated, Proof and MasterProof compute AUTH_CODE proofs the way an
// honest chunkserver or master does; the tests check them against a live
// master first, so that an attack refused after the challenge is refused
// for what it claims, not for a proof computed wrong.
//
// Every loop here is bounded in count and in time (a context, a window or a
// hold), and nothing dials anything but the Target a test names: loopback,
// or a network namespace through Target.Dial.
package adversary
