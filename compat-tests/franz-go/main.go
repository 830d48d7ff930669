// Command franz-go-compat runs compat scenarios with the franz-go client against a Kafka-protocol broker.
//
// Usage: franz-go-compat scenario <name> <bootstrap host:port>
// Exit codes: 0 pass, 1 fail, 2 usage, 3 scenario not implemented.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"
)

const (
	exitPass           = 0
	exitFail           = 1
	exitUsage          = 2
	exitNotImplemented = 3

	// scenarioBudget bounds a whole scenario so a hung broker fails rather than hangs.
	scenarioBudget = 15 * time.Second
)

// budgets gives scenarios that move more data, or wait on a group's rebalances, a longer bound
// than scenarioBudget; all stay under run's outer limit for them.
var budgets = map[string]time.Duration{
	"roundtrip": 25 * time.Second,
	"group":     45 * time.Second,
	// Partitions move at the broker's heartbeat interval (5 s), and the coordinator restarts:
	// a reference Kafka node takes about 30 s to come back.
	"group-consumer": 120 * time.Second,
	// Bounds its own waits; run's outer limit for it is above this.
	"txn-cluster": 100 * time.Second,
	// Waits for share-group assignments (heartbeats 5 s apart) and a quiet period.
	"share-group": 90 * time.Second,
}

// scenario runs one check, printing what it sees; a non-nil error means fail.
type scenario func(ctx context.Context, bootstrap string) error

// scenarios is where new scenarios (produce, consume, groups, transactions) register.
var scenarios = map[string]scenario{
	"group":          groupScenario,
	"group-consumer": groupConsumerScenario,
	"metadata":       metadataScenario,
	"roundtrip":      roundtripScenario,
	"share-group":    shareGroupScenario,
	"txn-cluster":    txnClusterScenario,
}

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	if len(args) == 1 && args[0] == "scenarios" {
		for _, n := range scenarioNames() {
			fmt.Println(n)
		}
		return exitPass
	}
	if len(args) != 3 || args[0] != "scenario" {
		fmt.Fprintln(os.Stderr, "usage: franz-go-compat scenario <name> <bootstrap host:port> | scenarios")
		return exitUsage
	}
	name, bootstrap := args[1], args[2]
	fn, ok := scenarios[name]
	if !ok {
		fmt.Printf("franz-go: scenario %q is not implemented (have: %s)\n", name, strings.Join(scenarioNames(), ", "))
		return exitNotImplemented
	}
	budget := scenarioBudget
	if b, ok := budgets[name]; ok {
		budget = b
	}
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	defer cancel()
	if err := fn(ctx, bootstrap); err != nil {
		if errors.Is(err, errNotApplicable) {
			fmt.Printf("franz-go %s: %v\n", name, err)
			return exitNotImplemented
		}
		fmt.Printf("FAIL franz-go %s: %v\n", name, err)
		return exitFail
	}
	fmt.Printf("PASS franz-go %s\n", name)
	return exitPass
}

func scenarioNames() []string {
	names := make([]string, 0, len(scenarios))
	for n := range scenarios {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
