package masternode

// masterPort is one of a master's listening ports, named as MooseFS names
// them; the name is also the port label of the metrics and the logs.
type masterPort uint8

const (
	portML masterPort = 1 + iota // matoml: the other masters (9419)
	portCS                       // matocs: chunkservers (9420)
	portCL                       // matocl: clients and mfscli (9421)
)

func (p masterPort) String() string {
	switch p {
	case portML:
		return "matoml"
	case portCS:
		return "matocs"
	case portCL:
		return "matocl"
	}
	return "port?"
}
