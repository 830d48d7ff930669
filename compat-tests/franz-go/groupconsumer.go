package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The group-consumer scenario: the group plan (group.go) on the consumer rebalance protocol of
// KIP-848. kgo.ServerSideBalancer opts in (franz-go 1.22+; without it kgo always uses the classic
// protocol, and with it kgo silently falls back to classic when the broker answers
// ConsumerGroupHeartbeat with UNSUPPORTED_VERSION), so the scenario checks the protocol itself:
// no JoinGroup, SyncGroup or Heartbeat may be sent, and kadm must describe the group with
// ConsumerGroupDescribe, as a "consumer" group in ListGroups, each member as the broker assigned
// it. The broker assigns (kgo asks for "uniform", its default balancer being cooperative-sticky),
// and sets the session timeout and the heartbeat interval (5 s by default), which paces the moves.
//
// Once A alone has read its messages, the group's coordinator is killed and started again through
// the matrix's control endpoint (COMPAT_CLUSTER_CONTROL; without it the restart is skipped,
// saying so) while A keeps polling; consumerRestarted more are produced and A must read each
// exactly once and have its commits of them accepted, still the same member (same member id and
// epoch, no partition lost or revoked) and described so by the coordinator once A has heartbeated
// to it. C later starts from those commits.
const (
	consumerRestarted = 120
	// Partitions move at the members' heartbeats: A gives up half at one, B takes them at its next.
	consumerJoinTimeout  = 40 * time.Second
	consumerLeaveTimeout = 30 * time.Second
	// The kill answers once the process has exited.
	consumerKillTimeout = 20 * time.Second
	// The start answers once the broker is ready and listed: gregor in 1 to 2 s, a reference
	// Kafka node in about 30 s on a 2-core machine.
	consumerStartTimeout = 60 * time.Second
	// After the restart: A reconnects, reads the new messages and commits them.
	consumerAfterRestartTimeout = 30 * time.Second
	// A commit in flight when the last of them was read.
	consumerCommitTimeout = 10 * time.Second
	// A heartbeats again within the broker's interval (5 s) once its coordinator answers.
	consumerHeartbeatTimeout = 15 * time.Second
	// How long a described group may lag a move its members have just seen.
	consumerDescribeTimeout = 8 * time.Second
)

const clusterControlEnv = "COMPAT_CLUSTER_CONTROL"

// heartbeatHook notes, per member, when a ConsumerGroupHeartbeat answer was last read, and from
// which broker.
type heartbeatHook struct {
	mu   sync.Mutex
	last map[string]heartbeatRead
}

type heartbeatRead struct {
	at   time.Time
	node int32
}

type memberHeartbeats struct {
	h    *heartbeatHook
	name string
}

func (h *heartbeatHook) member(name string) kgo.Hook { return memberHeartbeats{h, name} }

func (m memberHeartbeats) OnBrokerRead(meta kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if err != nil || key != kmsg.ConsumerGroupHeartbeat.Int16() {
		return
	}
	m.h.mu.Lock()
	defer m.h.mu.Unlock()
	if m.h.last == nil {
		m.h.last = map[string]heartbeatRead{}
	}
	m.h.last[m.name] = heartbeatRead{time.Now(), meta.NodeID}
}

func (h *heartbeatHook) lastRead(name string) heartbeatRead {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.last[name]
}

func (c *groupCheck) setRestarting(on bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.restarting = on
}

func (c *groupCheck) isRestarting() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.restarting
}

func (c *groupCheck) lost() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.lostSinceRestart)
}

// committed notes that a member's CommitRecords of records succeeded just now.
func (c *groupCheck) committed(member string, records []*kgo.Record) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.lastCommit == nil {
		c.lastCommit = map[string]time.Time{}
		c.committedMsgs = map[int]bool{}
	}
	c.lastCommit[member] = time.Now()
	for _, r := range records {
		if m := groupValue.FindSubmatch(r.Value); m != nil {
			i, _ := strconv.Atoi(string(m[1]))
			c.committedMsgs[i] = true
		}
	}
}

// countCommitted counts the messages [from, to) whose offsets were committed.
func (c *groupCheck) countCommitted(from, to int) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for i := from; i < to; i++ {
		if c.committedMsgs[i] {
			n++
		}
	}
	return n
}

func (c *groupCheck) lastCommitOf(member string) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lastCommit[member]
}

func (c *requestCounter) count(name string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.counts[name]
}

func groupConsumerScenario(ctx context.Context, bootstrap string) error {
	return groupPlan(ctx, bootstrap, true)
}

// expectNoClassicRequests: every member managed its membership with ConsumerGroupHeartbeat.
func (g *groupRun) expectNoClassicRequests() error {
	var classic []string
	for _, name := range []string{"JoinGroup", "SyncGroup", "Heartbeat"} {
		if n := g.requests.count(name); n > 0 {
			classic = append(classic, fmt.Sprintf("%s x%d", name, n))
		}
	}
	hb := g.requests.count("ConsumerGroupHeartbeat")
	if len(classic) > 0 || hb == 0 {
		return fmt.Errorf("the members sent %s and ConsumerGroupHeartbeat x%d: not the consumer protocol throughout", strings.Join(classic, ", "), hb)
	}
	g.check.log("the members sent ConsumerGroupHeartbeat x%d and no JoinGroup, SyncGroup or Heartbeat", hb)
	return nil
}

// describeGroup describes the group with ConsumerGroupDescribe; a classic group (or none) is an
// error (GROUP_ID_NOT_FOUND).
func (g *groupRun) describeGroup() (kadm.DescribedConsumerGroup, error) {
	ctx, cancel := context.WithTimeout(g.ctx, 10*time.Second)
	defer cancel()
	described, err := kadm.NewClient(g.producer).DescribeConsumerGroups(ctx, g.groupID)
	if err != nil {
		return kadm.DescribedConsumerGroup{}, fmt.Errorf("DescribeConsumerGroups %s: %w", g.groupID, err)
	}
	d, ok := described[g.groupID]
	if !ok {
		return d, fmt.Errorf("DescribeConsumerGroups %s: the group is missing from the answer", g.groupID)
	}
	if d.Err != nil {
		return d, fmt.Errorf("DescribeConsumerGroups %s: %w", g.groupID, d.Err)
	}
	return d, nil
}

// describedMembers summarizes a described group's members under the names the scenario gave them.
func (g *groupRun) describedMembers(d kadm.DescribedConsumerGroup, ids map[string]string) string {
	parts := make([]string, 0, len(d.Members))
	for _, m := range d.Members {
		who := m.MemberID
		for name, id := range ids {
			if id == m.MemberID {
				who = name
			}
		}
		parts = append(parts, fmt.Sprintf("%s (epoch %d, type %d) %v", who, m.MemberEpoch, m.MemberType, partsOf(m.Assignment, g.topic)))
	}
	return strings.Join(parts, "; ")
}

// expectConsumerGroup: ListGroups lists the group as a "consumer" group, and ConsumerGroupDescribe
// describes it Stable with the uniform assignor and exactly these members, each a consumer-protocol
// member with the member id and epoch its client has and the partitions it holds. A described
// group may lag a move its members have just seen (or the reverse), so this retries for a while.
func (g *groupRun) expectConsumerGroup(step string, members ...string) error {
	ctx, cancel := context.WithTimeout(g.ctx, 10*time.Second)
	listed, err := kadm.NewClient(g.producer).ListGroupsByType(ctx, []string{"consumer"})
	cancel()
	if err != nil {
		return fmt.Errorf("%s: ListGroups of consumer groups: %w", step, err)
	}
	l, ok := listed[g.groupID]
	if !ok {
		return fmt.Errorf("%s: ListGroups with types [consumer] does not list group %s (it lists %d groups)", step, g.groupID, len(listed))
	}
	if l.GroupType != "consumer" || l.ProtocolType != "consumer" {
		return fmt.Errorf("%s: ListGroups lists group %s with group type %q and protocol type %q, expected consumer and consumer", step, g.groupID, l.GroupType, l.ProtocolType)
	}

	deadline := time.Now().Add(consumerDescribeTimeout)
	for {
		d, err := g.describeGroup()
		if err != nil {
			return fmt.Errorf("%s: %w", step, err)
		}
		ids := map[string]string{}
		epochs := map[string]int32{}
		for _, name := range members {
			ids[name], epochs[name] = g.members[name].cl.GroupMetadata()
		}
		mismatch := g.compareGroup(d, ids, epochs, members)
		if mismatch == "" {
			g.check.log("%s: ConsumerGroupDescribe from broker %d: group %s, epoch %d, assignment epoch %d, assignor %s; members %s; ListGroups: type %s, state %s",
				step, d.Coordinator.NodeID, d.State, d.Epoch, d.AssignmentEpoch, d.AssignorName, g.describedMembers(d, ids), l.GroupType, l.State)
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: ConsumerGroupDescribe: %s (group %s, epoch %d, assignor %q; members %s; the clients: %s)",
				step, mismatch, d.State, d.Epoch, d.AssignorName, g.describedMembers(d, ids), g.check.describe(members...))
		}
		if err := g.check.err(); err != nil {
			return err
		}
		select {
		case <-g.ctx.Done():
			return fmt.Errorf("%s: %w", step, g.ctx.Err())
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// compareGroup says how a described group differs from what its members' clients hold, or "".
func (g *groupRun) compareGroup(d kadm.DescribedConsumerGroup, ids map[string]string, epochs map[string]int32, members []string) string {
	if d.State != "Stable" {
		return fmt.Sprintf("state %s, expected Stable", d.State)
	}
	if d.AssignorName != "uniform" {
		return fmt.Sprintf("assignor %q, expected uniform (the broker's default, which kgo asks for)", d.AssignorName)
	}
	if len(d.Members) != len(members) {
		return fmt.Sprintf("%d members, expected %d (%s)", len(d.Members), len(members), strings.Join(members, ", "))
	}
	for _, name := range members {
		i := slices.IndexFunc(d.Members, func(m kadm.ConsumerGroupMember) bool { return m.MemberID == ids[name] })
		if i < 0 {
			return fmt.Sprintf("member %s (%s) is not described", name, ids[name])
		}
		m := d.Members[i]
		if m.MemberType != 1 {
			return fmt.Sprintf("member %s has member type %d, expected 1 (consumer protocol)", name, m.MemberType)
		}
		if m.MemberEpoch != epochs[name] {
			return fmt.Sprintf("member %s at epoch %d, its client at %d", name, m.MemberEpoch, epochs[name])
		}
		if !slices.Equal(m.SubscribedTopics, []string{g.topic}) {
			return fmt.Sprintf("member %s subscribed to %v, expected [%s]", name, m.SubscribedTopics, g.topic)
		}
		got := partsOf(m.Assignment, g.topic)
		if held := g.check.holds(name); !slices.Equal(got, held) || len(m.Assignment) != 1 {
			return fmt.Sprintf("member %s assigned %v, its client holds %v", name, m.Assignment.Sorted(), held)
		}
		target := partsOf(m.TargetAssignment, g.topic)
		if !slices.Equal(target, got) {
			return fmt.Sprintf("member %s assigned %v with target %v", name, got, target)
		}
	}
	return ""
}

// partsOf lists, sorted, the partitions of topic in s.
func partsOf(s kadm.TopicsSet, topic string) []int32 {
	out := make([]int32, 0, len(s[topic]))
	for p := range s[topic] {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

// clusterControl is the matrix's broker control endpoint (compat-tests/lib/cluster-control.mjs).
type clusterControl struct {
	base string
	http *http.Client
}

type controlBroker struct {
	ID        int32  `json:"id"`
	Bootstrap string `json:"bootstrap"`
	Running   bool   `json:"running"`
}

func clusterControlFromEnv() *clusterControl {
	base := strings.TrimRight(strings.TrimSpace(os.Getenv(clusterControlEnv)), "/")
	if base == "" {
		return nil
	}
	return &clusterControl{base: base, http: &http.Client{}}
}

func (c *clusterControl) call(ctx context.Context, method, path string, timeout time.Duration) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s %s%s: %w", method, c.base, path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64*1024))
	if err != nil {
		return nil, fmt.Errorf("%s %s%s: reading the answer: %w", method, c.base, path, err)
	}
	if resp.StatusCode/100 != 2 {
		return nil, fmt.Errorf("%s %s%s answered %d: %s", method, c.base, path, resp.StatusCode, strings.TrimSpace(string(body)))
	}
	return body, nil
}

func (c *clusterControl) brokers(ctx context.Context) ([]controlBroker, error) {
	body, err := c.call(ctx, http.MethodGet, "/brokers", 10*time.Second)
	if err != nil {
		return nil, err
	}
	var brokers []controlBroker
	if err := json.Unmarshal(body, &brokers); err != nil {
		return nil, fmt.Errorf("GET %s/brokers: %w", c.base, err)
	}
	if len(brokers) == 0 {
		return nil, fmt.Errorf("GET %s/brokers listed no broker", c.base)
	}
	return brokers, nil
}

// restartCoordinator kills the group's coordinator and starts it again while A keeps polling
// (in its own goroutine); then messages [from, to) are produced and A, still the same member
// holding every partition, must read each exactly once and commit it; once A has heartbeated to
// the coordinator, the coordinator must describe the group with A as it was.
func (g *groupRun) restartCoordinator(from, to int) error {
	control := clusterControlFromEnv()
	a := g.members["A"].cl
	memberID, epoch := a.GroupMetadata()
	var killedAt time.Time
	if control == nil {
		g.check.log("%s is not set: the group's coordinator is not restarted", clusterControlEnv)
	} else {
		before, err := g.describeGroup()
		if err != nil {
			return err
		}
		coordinator := before.Coordinator.NodeID
		brokers, err := control.brokers(g.ctx)
		if err != nil {
			return err
		}
		if !slices.ContainsFunc(brokers, func(b controlBroker) bool { return b.ID == coordinator }) {
			return fmt.Errorf("the coordinator, broker %d, is not one the control endpoint has: %+v", coordinator, brokers)
		}
		g.check.log("the group's coordinator is broker %d (%d broker(s)); A is member %s at epoch %d, group %s, epoch %d",
			coordinator, len(brokers), memberID, epoch, before.State, before.Epoch)
		g.check.setRestarting(true)
		t0 := time.Now()
		if _, err := control.call(g.ctx, http.MethodPost, fmt.Sprintf("/brokers/%d/kill", coordinator), consumerKillTimeout); err != nil {
			return fmt.Errorf("killing broker %d: %w", coordinator, err)
		}
		killedAt = time.Now()
		if _, err := control.call(g.ctx, http.MethodPost, fmt.Sprintf("/brokers/%d/start", coordinator), consumerStartTimeout); err != nil {
			return fmt.Errorf("starting broker %d again: %w", coordinator, err)
		}
		g.check.log("broker %d killed after %d ms, running again %d ms later", coordinator, killedAt.Sub(t0).Milliseconds(), time.Since(killedAt).Milliseconds())
	}
	runningAgain := time.Now()
	if err := g.produce(from, to); err != nil {
		return err
	}
	step := "A again"
	if control != nil {
		step = "A after the coordinator's restart"
	}
	if err := g.consumeStepWithin(step, consumerAfterRestartTimeout, from, to, "A"); err != nil {
		return err
	}
	// consumeStepWithin waited for A's commits of them.
	committed := g.check.lastCommitOf("A")
	since := "the producer started"
	if control != nil {
		since = fmt.Sprintf("the broker was running again (%d ms after the kill)", time.Since(killedAt).Milliseconds())
	}
	g.check.log("%s: A read all %d %d ms after %s; its last commit of them was accepted at %d ms",
		step, to-from, time.Since(runningAgain).Milliseconds(), since, committed.Sub(runningAgain).Milliseconds())
	if control == nil {
		return nil
	}
	// A heartbeat answered after the restart: a coordinator that had lost A would have fenced it.
	if err := g.waitFor(step+": A heartbeating to the coordinator again", consumerHeartbeatTimeout,
		func() bool { return g.heartbeats.lastRead("A").at.After(runningAgain) }, func() string { return g.check.describe("A") }); err != nil {
		return err
	}
	hb := g.heartbeats.lastRead("A")
	// What that answer made kgo do (revoke, lose) is done within a poll or two.
	time.Sleep(time.Second)
	g.check.setRestarting(false)
	if lost := g.check.lost(); len(lost) > 0 {
		return fmt.Errorf("%s: partitions were taken from a member (fenced or its session gone): %v", step, lost)
	}
	if n := len(g.check.holds("A")); n != groupPartitions {
		return fmt.Errorf("%s: %s, expected all %d partitions", step, g.check.describe("A"), groupPartitions)
	}
	memberAfter, epochAfter := a.GroupMetadata()
	if memberAfter != memberID || epochAfter != epoch {
		return fmt.Errorf("%s: A is member %s at epoch %d, was %s at epoch %d: it joined again instead of keeping its membership", step, memberAfter, epochAfter, memberID, epoch)
	}
	g.check.log("%s: A heartbeated to broker %d %d ms after the restart, still member %s at epoch %d", step, hb.node, hb.at.Sub(runningAgain).Milliseconds(), memberID, epoch)
	return g.expectConsumerGroup(step, "A")
}
