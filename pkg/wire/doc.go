// Package wire is the leaf of the import graph: the typed ids every other
// package shares and the messages masters and chunkservers exchange.
//
// Contract: nothing here performs I/O or keeps state. Message types are an
// append-only registry: a type number, once shipped, is never reused.
package wire
