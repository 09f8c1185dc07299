package node

// Group commit, the same in both daemons' loops: what is already queued
// behind an input is handled with it, and the group's effects share one
// write.

// GroupMax bounds how many inputs share one fsync: enough to batch a burst
// of client changes and acknowledgements, few enough that a tick is never
// held back long.
const GroupMax = 256

// Group handles first, then whatever is already queued behind it (at most
// GroupMax), stopping at the first error: the inputs whose effects share
// one write.
func Group[T any](first T, inbox <-chan T, handle func(T) error) error {
	err := handle(first)
	for i := 0; i < GroupMax && err == nil; i++ {
		select {
		case in := <-inbox:
			err = handle(in)
		default:
			return nil
		}
	}
	return err
}
