package node

import (
	"reflect"

	"github.com/mfs-election/mfs-election/pkg/wire"
)

// Deref turns the pointer a registry decodes into the value the core takes.
func Deref(m wire.Message) wire.Message {
	return reflect.ValueOf(m).Elem().Interface().(wire.Message)
}
