package wire

// Type numbers one message kind on the wire. The numbers form an append-only
// registry: a number once shipped keeps its meaning forever.
type Type uint16

// Message is anything that travels between nodes. The concrete message
// structs are owned by the protocol that uses them (pkg/roles); the framing
// layer needs only the type number to pick a decoder.
type Message interface {
	MsgType() Type
}
