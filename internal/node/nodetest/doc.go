// Package nodetest is what the tests of both drivers share: a founder's
// store, a master's status asked as mfscli asks it, polling, metric reads,
// the goroutine-leak check, and the fuzz harness of the ports' message
// registries. Only tests import it.
package nodetest
