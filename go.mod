module github.com/mfs-election/mfs-election

go 1.26

require (
	github.com/anishathalye/porcupine v1.3.1
	pgregory.net/rapid v1.3.0
)

require github.com/hashicorp/go-msgpack/v2 v2.1.5
