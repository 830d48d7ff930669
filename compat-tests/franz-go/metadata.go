package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kadm"
)

// metadataScenario fetches broker metadata and lists topics through kadm. It fails when no broker
// is returned, a broker has no usable address, the controller is not one of the brokers, the
// cluster id is empty, or the topic listing fails.
func metadataScenario(ctx context.Context, bootstrap string) error {
	cl, err := newClient(bootstrap)
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)

	md, err := adm.BrokerMetadata(ctx)
	if err != nil {
		return fmt.Errorf("broker metadata: %w", err)
	}
	fmt.Printf("cluster id: %q\n", md.Cluster)
	fmt.Printf("brokers (%d):\n", len(md.Brokers))
	var problems []error
	ids := map[int32]bool{}
	for _, b := range md.Brokers {
		rack := ""
		if b.Rack != nil {
			rack = " rack=" + *b.Rack
		}
		fmt.Printf("  id=%d %s:%d%s\n", b.NodeID, b.Host, b.Port, rack)
		ids[b.NodeID] = true
		if b.Host == "" {
			problems = append(problems, fmt.Errorf("broker %d has an empty host", b.NodeID))
		}
		if b.Port <= 0 {
			problems = append(problems, fmt.Errorf("broker %d has port %d", b.NodeID, b.Port))
		}
	}
	if len(md.Brokers) == 0 {
		problems = append(problems, errors.New("no brokers returned"))
	}
	fmt.Printf("controller: id=%d\n", md.Controller)
	if !ids[md.Controller] {
		problems = append(problems, fmt.Errorf("controller id %d is not among the brokers %v", md.Controller, md.Brokers.NodeIDs()))
	}
	if md.Cluster == "" {
		problems = append(problems, errors.New("cluster id is empty"))
	}

	topics, err := adm.ListTopics(ctx)
	if err != nil {
		return errors.Join(append(problems, fmt.Errorf("list topics: %w", err))...)
	}
	names := topics.Names()
	fmt.Printf("topics (%d): %v\n", len(names), names)
	for _, name := range names {
		if terr := topics[name].Err; terr != nil {
			problems = append(problems, fmt.Errorf("topic %s: %w", name, terr))
		}
	}
	for _, p := range problems {
		fmt.Printf("problem: %v\n", p)
	}
	if len(problems) > 0 {
		return fmt.Errorf("%d problem(s)", len(problems))
	}
	return nil
}
