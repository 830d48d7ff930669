package main

import (
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// newClient builds a client with the same bounds for every scenario; the context passed to each
// call is the overall limit, these keep a single dial or request from using all of it.
func newClient(bootstrap string, extra ...kgo.Opt) (*kgo.Client, error) {
	opts := []kgo.Opt{
		kgo.SeedBrokers(bootstrap),
		kgo.ClientID("gregor-compat-franz-go"),
		kgo.DialTimeout(5 * time.Second),
		kgo.RequestTimeoutOverhead(10 * time.Second),
		kgo.RetryTimeout(15 * time.Second),
	}
	cl, err := kgo.NewClient(append(opts, extra...)...)
	if err != nil {
		return nil, fmt.Errorf("creating client: %w", err)
	}
	return cl, nil
}
