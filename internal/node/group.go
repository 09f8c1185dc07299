package node

// Group commit, the same in both daemons' loops: what is already queued
// behind an input is handled with it, and the group's effects share one
// write.

// groupMax bounds how many inputs share one fsync: enough to batch a burst
// of client changes and acknowledgements, few enough that a tick is never
// held back long.
const groupMax = 256

// group handles first, then whatever is already queued behind it (at most
// groupMax), stopping at the first error: the inputs whose effects share
// one write.
func group[T any](first T, inbox <-chan T, handle func(T) error) error {
	err := handle(first)
	for i := 0; i < groupMax && err == nil; i++ {
		select {
		case in := <-inbox:
			err = handle(in)
		default:
			return nil
		}
	}
	return err
}
