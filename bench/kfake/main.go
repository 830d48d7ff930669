// Command kfake runs franz-go's in-memory fake Kafka (pkg/kfake) as a
// standalone single broker on loopback, as a peer in gregor's benchmarks.
//
//	kfake [-port N]
//
// It prints "listening 127.0.0.1:PORT" once it accepts connections, and stops
// on SIGINT, SIGTERM or when its standard input closes (so a benchmark that
// dies does not leave it running).
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/twmb/franz-go/pkg/kfake"
)

func main() {
	port := flag.Int("port", 0, "loopback port to listen on; 0 picks a free one")
	flag.Parse()

	c, err := kfake.NewCluster(kfake.Ports(*port), kfake.NumBrokers(1))
	if err != nil {
		fmt.Fprintf(os.Stderr, "kfake: cannot start: %v\n", err)
		os.Exit(1)
	}
	addrs := c.ListenAddrs()
	if len(addrs) != 1 {
		fmt.Fprintf(os.Stderr, "kfake: expected one listen address, got %v\n", addrs)
		os.Exit(1)
	}
	fmt.Printf("listening %s\n", addrs[0])

	done := make(chan struct{}, 1)
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		done <- struct{}{}
	}()
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	select {
	case <-sig:
	case <-done:
	}
	c.Close()
}
