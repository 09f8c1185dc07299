package node

import (
	"reflect"

	"github.com/mfs-election/mfs-election/pkg/wire"
)

// deref turns the pointer a registry decodes into the value the core takes.
func deref(m wire.Message) wire.Message {
	return reflect.ValueOf(m).Elem().Interface().(wire.Message)
}
