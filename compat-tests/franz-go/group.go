package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The group scenario (compat-tests/lib/group.mjs explains the plan) with kgo group consumers and
// kgo's default balancer, cooperative-sticky: rebalances move only the partitions that change
// owner. Two consumers A and B share a fresh 6-partition topic; once both hold partitions,
// groupFirst keyed messages are produced and must each be read exactly once between them. B
// leaves; A must hold all partitions within the session timeout and read groupSecond more. A
// leaves; groupThird more are produced and a new consumer C must read exactly those, starting at
// the committed offsets. Each member polls in its own goroutine with BlockRebalanceOnPoll and
// commits what it read (CommitRecords) before allowing a rebalance.
const (
	groupPartitions = 6
	groupFirst      = 600
	groupSecond     = 120
	groupThird      = 60
	// Kafka's group.min.session.timeout.ms is 6 s; heartbeats this often notice a rebalance soon.
	groupSessionTimeout   = 10 * time.Second
	groupHeartbeat        = time.Second
	groupRebalanceTimeout = 20 * time.Second
	// Includes group.initial.rebalance.delay.ms (3 s by default).
	groupJoinTimeout    = 15 * time.Second
	groupConsumeTimeout = 10 * time.Second
	groupCloseTimeout   = 8 * time.Second
	groupPoll           = 200 * time.Millisecond
)

var groupValue = regexp.MustCompile(`^group-message-(\d+)$`)

type groupRead struct {
	member    string
	partition int32
	offset    int64
}

// groupCheck tracks what each member holds and reads; callbacks from every client's goroutines
// go through its mutex.
type groupCheck struct {
	mu         sync.Mutex
	started    time.Time
	held       map[string]map[int32]bool
	consumedBy map[int][]groupRead
	offsets    map[int32]map[int64]int
	produced   map[int]groupRead
	problems   []string
	// restarting is set while the group's coordinator is killed and started again
	// (group-consumer): partitions a member gives up then are noted in lostSinceRestart, and
	// fetch errors are logged rather than failing the run.
	restarting       bool
	lostSinceRestart []string
	// lastCommit: when each member's CommitRecords last succeeded; committedMsgs: the messages
	// whose offsets a successful CommitRecords covered.
	lastCommit    map[string]time.Time
	committedMsgs map[int]bool
}

func newGroupCheck() *groupCheck {
	return &groupCheck{
		started:    time.Now(),
		held:       map[string]map[int32]bool{},
		consumedBy: map[int][]groupRead{},
		offsets:    map[int32]map[int64]int{},
		produced:   map[int]groupRead{},
	}
}

func (c *groupCheck) log(format string, args ...any) {
	fmt.Printf("  +%.2f s %s\n", time.Since(c.started).Seconds(), fmt.Sprintf(format, args...))
}

// problemLocked records a broken rule; c.mu is held.
func (c *groupCheck) problemLocked(format string, args ...any) {
	text := fmt.Sprintf(format, args...)
	if len(c.problems) < 10 {
		c.problems = append(c.problems, text)
	}
	c.log("problem: %s", text)
}

func (c *groupCheck) problem(format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.problemLocked(format, args...)
}

func (c *groupCheck) err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.problems) == 0 {
		return nil
	}
	return errors.New(strings.Join(c.problems, "\n  "))
}

func sortedParts(set map[int32]bool) []int32 {
	out := make([]int32, 0, len(set))
	for p := range set {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// change adds or removes partitions from what member holds (cooperative rebalances hand out
// and take back only the difference); no partition may be held by two members at once.
func (c *groupCheck) change(member string, partitions []int32, add bool, why string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	mine := map[int32]bool{}
	for p := range c.held[member] {
		mine[p] = true
	}
	for _, p := range partitions {
		if add {
			mine[p] = true
		} else {
			delete(mine, p)
		}
	}
	c.held[member] = mine
	c.log("%s %s %v; holds %v", member, why, partitions, sortedParts(mine))
	if !add {
		if c.restarting && len(partitions) > 0 {
			c.lostSinceRestart = append(c.lostSinceRestart, fmt.Sprintf("%s %s %v", member, why, partitions))
		}
		return
	}
	for other, theirs := range c.held {
		if other == member {
			continue
		}
		var both []int32
		for _, p := range partitions {
			if theirs[p] {
				both = append(both, p)
			}
		}
		if len(both) > 0 {
			c.problemLocked("partitions %v assigned to %s while %s still holds them", both, member, other)
		}
	}
}

func (c *groupCheck) holds(member string) []int32 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return sortedParts(c.held[member])
}

func (c *groupCheck) describe(members ...string) string {
	parts := make([]string, len(members))
	for i, m := range members {
		parts[i] = fmt.Sprintf("%s holds %v", m, c.holds(m))
	}
	return strings.Join(parts, ", ")
}

func (c *groupCheck) split(members ...string) bool {
	all := map[int32]bool{}
	for _, m := range members {
		mine := c.holds(m)
		if len(mine) == 0 {
			return false
		}
		for _, p := range mine {
			all[p] = true
		}
	}
	return len(all) == groupPartitions
}

func (c *groupCheck) produce(i int, partition int32, offset int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.produced[i] = groupRead{partition: partition, offset: offset}
}

func (c *groupCheck) consume(member string, r *kgo.Record) {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := groupValue.FindSubmatch(r.Value)
	if m == nil {
		c.problemLocked("%s read partition %d offset %d with value %q, not one produced here", member, r.Partition, r.Offset, r.Value)
		return
	}
	i, _ := strconv.Atoi(string(m[1]))
	if want := fmt.Sprintf("key-%d", i); string(r.Key) != want {
		c.problemLocked("%s read message %d with key %q, expected %s", member, i, r.Key, want)
	}
	if where, ok := c.produced[i]; ok && (where.partition != r.Partition || where.offset != r.Offset) {
		c.problemLocked("%s read message %d at partition %d offset %d; it was acknowledged at partition %d offset %d", member, i, r.Partition, r.Offset, where.partition, where.offset)
	}
	if !c.held[member][r.Partition] {
		c.problemLocked("%s read partition %d offset %d, which it does not hold", member, r.Partition, r.Offset)
	}
	seen := c.offsets[r.Partition]
	if seen == nil {
		seen = map[int64]int{}
		c.offsets[r.Partition] = seen
	}
	if before, ok := seen[r.Offset]; ok && before != i {
		c.problemLocked("partition %d offset %d read as message %d and as message %d", r.Partition, r.Offset, before, i)
	}
	seen[r.Offset] = i
	reads := append(c.consumedBy[i], groupRead{member, r.Partition, r.Offset})
	c.consumedBy[i] = reads
	if len(reads) == 2 {
		c.problemLocked("message %d (partition %d offset %d) read twice: %+v", i, r.Partition, r.Offset, reads)
	}
}

func (c *groupCheck) countRead(from, to int) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for i := from; i < to; i++ {
		if _, ok := c.consumedBy[i]; ok {
			n++
		}
	}
	return n
}

// expectStep: messages [from, to) were each read exactly once, by one of members; nothing at or
// past to was read; in every partition the offsets read so far run 0, 1, 2, ... without a gap.
func (c *groupCheck) expectStep(step string, from, to int, members ...string) error {
	if err := c.err(); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	byMember := map[string]int{}
	for _, m := range members {
		byMember[m] = 0
	}
	var missing []string
	unread := 0
	for i := from; i < to; i++ {
		reads, ok := c.consumedBy[i]
		if !ok {
			unread++
			if len(missing) < 5 {
				p := c.produced[i]
				missing = append(missing, fmt.Sprintf("%d (partition %d offset %d)", i, p.partition, p.offset))
			}
			continue
		}
		for _, r := range reads {
			if _, ok := byMember[r.member]; !ok {
				return fmt.Errorf("%s: message %d was read by %s, expected one of %v", step, i, r.member, members)
			}
			byMember[r.member]++
		}
	}
	if unread > 0 {
		return fmt.Errorf("%s: %d of %d messages never read, e.g. %s", step, unread, to-from, strings.Join(missing, ", "))
	}
	for i := range c.consumedBy {
		if i >= to {
			return fmt.Errorf("%s: read message %d, not produced yet", step, i)
		}
	}
	var perPartition []string
	for p := int32(0); p < groupPartitions; p++ {
		seen := c.offsets[p]
		if len(seen) == 0 {
			continue
		}
		for o := int64(0); o < int64(len(seen)); o++ {
			if _, ok := seen[o]; !ok {
				return fmt.Errorf("%s: partition %d offsets read miss %d among %d records read, expected 0, 1, 2, ... without a gap", step, p, o, len(seen))
			}
		}
		perPartition = append(perPartition, fmt.Sprintf("%d:%d", p, len(seen)))
	}
	counts := make([]string, len(members))
	for i, m := range members {
		counts[i] = fmt.Sprintf("%s %d", m, byMember[m])
	}
	c.log("%s: messages %d..%d each read once (%s); records read per partition so far %s", step, from, to-1, strings.Join(counts, ", "), strings.Join(perPartition, " "))
	return nil
}

// groupMember is one group consumer polling in its own goroutine until told to leave.
type groupMember struct {
	name    string
	cl      *kgo.Client
	leaving chan struct{}
	closed  chan struct{}
}

type groupRun struct {
	ctx       context.Context
	bootstrap string
	topic     string
	groupID   string
	check     *groupCheck
	requests  *requestCounter
	members   map[string]*groupMember
	producer  *kgo.Client
	// consumerProtocol: group-consumer, KIP-848 groups (kgo.ServerSideBalancer).
	consumerProtocol bool
	heartbeats       *heartbeatHook
}

func (g *groupRun) start(name string) error {
	onChange := func(add bool, why string) func(context.Context, *kgo.Client, map[string][]int32) {
		return func(_ context.Context, _ *kgo.Client, parts map[string][]int32) {
			g.check.change(name, parts[g.topic], add, why)
		}
	}
	opts := []kgo.Opt{
		kgo.WithHooks(g.requests),
		kgo.ConsumerGroup(g.groupID),
		kgo.ConsumeTopics(g.topic),
		kgo.RebalanceTimeout(groupRebalanceTimeout),
		kgo.DisableAutoCommit(),
		kgo.BlockRebalanceOnPoll(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(100 * time.Millisecond),
		kgo.OnPartitionsAssigned(onChange(true, "assigned")),
		kgo.OnPartitionsRevoked(onChange(false, "revoked")),
		kgo.OnPartitionsLost(onChange(false, "lost")),
	}
	if g.consumerProtocol {
		// The broker sets the session timeout and the heartbeat interval; the default balancer,
		// cooperative-sticky, asks it for its "uniform" assignor.
		opts = append(opts, kgo.ServerSideBalancer(), kgo.WithHooks(g.heartbeats.member(name)))
	} else {
		opts = append(opts, kgo.SessionTimeout(groupSessionTimeout), kgo.HeartbeatInterval(groupHeartbeat))
	}
	cl, err := newClient(g.bootstrap, opts...)
	if err != nil {
		return err
	}
	m := &groupMember{name: name, cl: cl, leaving: make(chan struct{}), closed: make(chan struct{})}
	g.members[name] = m
	go g.poll(m)
	return nil
}

func (g *groupRun) poll(m *groupMember) {
	defer close(m.closed)
	for {
		select {
		case <-m.leaving:
			// It reads nothing more: what it held is free once LeaveGroup reaches the broker.
			g.check.change(m.name, g.check.holds(m.name), false, "leaves the group, giving up")
			m.cl.AllowRebalance()
			ctx, cancel := context.WithTimeout(g.ctx, groupCloseTimeout)
			if err := m.cl.LeaveGroupContext(ctx); err != nil {
				g.check.problem("%s LeaveGroup: %v", m.name, err)
			}
			cancel()
			m.cl.Close()
			return
		default:
		}
		ctx, cancel := context.WithTimeout(g.ctx, groupPoll)
		fetches := m.cl.PollRecords(ctx, 500)
		cancel()
		fetches.EachError(func(topic string, partition int32, err error) {
			if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
				return
			}
			if g.check.isRestarting() {
				// The coordinator (and on one broker, every partition's leader) is down for a while.
				g.check.log("%s fetch %s[%d] while the coordinator restarts: %v", m.name, topic, partition, err)
				return
			}
			g.check.problem("%s fetch %s[%d]: %v", m.name, topic, partition, err)
		})
		records := fetches.Records()
		for _, r := range records {
			g.check.consume(m.name, r)
		}
		if len(records) > 0 {
			if err := m.cl.CommitRecords(g.ctx, records...); err != nil {
				g.check.problem("%s CommitRecords: %v", m.name, err)
			} else {
				g.check.committed(m.name, records)
			}
		}
		m.cl.AllowRebalance()
	}
}

func (g *groupRun) leave(name string) error {
	m := g.members[name]
	delete(g.members, name)
	close(m.leaving)
	select {
	case <-m.closed:
		return g.check.err()
	case <-time.After(groupCloseTimeout + time.Second):
		return fmt.Errorf("%s did not leave and close within %s", name, groupCloseTimeout+time.Second)
	}
}

// produce sends keyed messages [from, to), partitioned by kgo's default (murmur2 of the key, as
// Java's).
func (g *groupRun) produce(from, to int) error {
	var records []*kgo.Record
	for i := from; i < to; i++ {
		records = append(records, &kgo.Record{Topic: g.topic, Key: []byte(fmt.Sprintf("key-%d", i)), Value: []byte(fmt.Sprintf("group-message-%d", i))})
	}
	if err := g.producer.ProduceSync(g.ctx, records...).FirstErr(); err != nil {
		return fmt.Errorf("produce %d..%d: %w", from, to-1, err)
	}
	for n, r := range records {
		g.check.produce(from+n, r.Partition, r.Offset)
	}
	g.check.log("produced messages %d..%d", from, to-1)
	return nil
}

func (g *groupRun) waitFor(what string, timeout time.Duration, cond func() bool, state func() string) error {
	deadline := time.Now().Add(timeout)
	for {
		if err := g.check.err(); err != nil {
			return err
		}
		if cond() {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: not within %s (%s)", what, timeout, state())
		}
		select {
		case <-g.ctx.Done():
			return fmt.Errorf("%s: %w (%s)", what, g.ctx.Err(), state())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (g *groupRun) consumeStep(step string, from, to int, members ...string) error {
	return g.consumeStepWithin(step, groupConsumeTimeout, from, to, members...)
}

func (g *groupRun) consumeStepWithin(step string, timeout time.Duration, from, to int, members ...string) error {
	err := g.waitFor(fmt.Sprintf("%s: reading messages %d..%d", step, from, to-1), timeout,
		func() bool { return g.check.countRead(from, to) == to-from },
		func() string {
			return fmt.Sprintf("%d read; %s", g.check.countRead(from, to), g.check.describe(members...))
		})
	if err != nil {
		return err
	}
	if g.consumerProtocol {
		// Each poll's records are noted before CommitRecords of them returns: wait for those
		// commits, so that none is still in flight at the next step (a coordinator restart).
		err = g.waitFor(fmt.Sprintf("%s: commits of messages %d..%d accepted", step, from, to-1), consumerCommitTimeout,
			func() bool { return g.check.countCommitted(from, to) == to-from },
			func() string { return fmt.Sprintf("%d of %d committed", g.check.countCommitted(from, to), to-from) })
		if err != nil {
			return err
		}
	}
	return g.check.expectStep(step, from, to, members...)
}

func groupScenario(ctx context.Context, bootstrap string) error {
	return groupPlan(ctx, bootstrap, false)
}

// groupPlan runs the group plan on the classic protocol (group) or on KIP-848's consumer
// protocol (group-consumer, which adds the checks and the coordinator restart of groupconsumer.go).
func groupPlan(ctx context.Context, bootstrap string, consumerProtocol bool) error {
	stamp := fmt.Sprintf("%d-%d", time.Now().UnixMilli(), os.Getpid())
	g := &groupRun{
		ctx:              ctx,
		bootstrap:        bootstrap,
		topic:            "compat-group-franz-go-" + stamp,
		groupID:          "compat-group-franz-go-" + stamp,
		check:            newGroupCheck(),
		requests:         &requestCounter{},
		members:          map[string]*groupMember{},
		consumerProtocol: consumerProtocol,
		heartbeats:       &heartbeatHook{},
	}
	joinTimeout, leaveTimeout := groupJoinTimeout, groupSessionTimeout
	if consumerProtocol {
		g.topic = "compat-group-consumer-franz-go-" + stamp
		g.groupID = g.topic
		joinTimeout, leaveTimeout = consumerJoinTimeout, consumerLeaveTimeout
	}
	defer func() {
		for name := range g.members {
			if err := g.leave(name); err != nil {
				fmt.Printf("  cleanup: %v\n", err)
			}
		}
		if g.producer != nil {
			g.producer.Close()
		}
		fmt.Printf("  requests: %s\n", g.requests.take())
	}()
	var err error
	if g.producer, err = newClient(bootstrap, kgo.WithHooks(g.requests), kgo.DisableIdempotentWrite(), kgo.RequiredAcks(kgo.AllISRAcks())); err != nil {
		return err
	}
	created, err := kadm.NewClient(g.producer).CreateTopic(ctx, groupPartitions, 1, nil, g.topic)
	if err == nil {
		err = created.Err
	}
	if err != nil {
		return fmt.Errorf("CreateTopic %s: %w", g.topic, err)
	}
	g.check.log("topic %s with %d partitions; group %s", g.topic, groupPartitions, g.groupID)

	for _, name := range []string{"A", "B"} {
		if err := g.start(name); err != nil {
			return err
		}
	}
	if err := g.waitFor("A and B holding all partitions between them", joinTimeout,
		func() bool { return g.check.split("A", "B") }, func() string { return g.check.describe("A", "B") }); err != nil {
		return err
	}
	if consumerProtocol {
		if err := g.expectConsumerGroup("A and B", "A", "B"); err != nil {
			return err
		}
	}
	if err := g.produce(0, groupFirst); err != nil {
		return err
	}
	if err := g.consumeStep("A and B", 0, groupFirst, "A", "B"); err != nil {
		return err
	}
	g.check.mu.Lock()
	spread := len(g.check.offsets)
	g.check.mu.Unlock()
	if spread != groupPartitions {
		return fmt.Errorf("the %d keyed messages went to %d partitions only, expected all %d", groupFirst, spread, groupPartitions)
	}

	leftAt := time.Now()
	if err := g.leave("B"); err != nil {
		return err
	}
	if err := g.waitFor("A holding all partitions after B left", leaveTimeout,
		func() bool { return len(g.check.holds("A")) == groupPartitions }, func() string { return g.check.describe("A") }); err != nil {
		return err
	}
	g.check.log("A holds all %d partitions %d ms after B started leaving", groupPartitions, time.Since(leftAt).Milliseconds())
	if err := g.produce(groupFirst, groupFirst+groupSecond); err != nil {
		return err
	}
	if err := g.consumeStep("A alone", groupFirst, groupFirst+groupSecond, "A"); err != nil {
		return err
	}

	beforeThird := groupFirst + groupSecond
	if consumerProtocol {
		if err := g.restartCoordinator(beforeThird, beforeThird+consumerRestarted); err != nil {
			return err
		}
		beforeThird += consumerRestarted
	}

	if err := g.leave("A"); err != nil {
		return err
	}
	end := beforeThird + groupThird
	if err := g.produce(beforeThird, end); err != nil {
		return err
	}
	if err := g.start("C"); err != nil {
		return err
	}
	if err := g.consumeStep("C after the commits", beforeThird, end, "C"); err != nil {
		return err
	}
	// A partition C wrongly read from its start would show up as old messages by now.
	time.Sleep(time.Second)
	if err := g.check.expectStep("whole run", 0, end, "A", "B", "C"); err != nil {
		return err
	}
	if n := len(g.check.holds("C")); n != groupPartitions {
		return fmt.Errorf("%s, expected all %d partitions", g.check.describe("C"), groupPartitions)
	}
	if consumerProtocol {
		if err := g.expectConsumerGroup("C", "C"); err != nil {
			return err
		}
		return g.expectNoClassicRequests()
	}
	return nil
}
