// Command etcd is upstream's server main, built from the published
// go.etcd.io/etcd/server/v3 module (go install cannot build it: etcd#18501).
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
