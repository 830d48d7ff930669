package main

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The share-group scenario: two kgo share consumers (kgo.ShareGroup, KIP-932) in one share group
// on a fresh 3-partition topic. The group gets share.auto.offset.reset=earliest through
// IncrementalAlterConfigs on the GROUP resource (kadm has no call for group configs, so the raw
// request) before anyone joins. shareEarly records are produced before the consumers start (only
// earliest delivers them); once the group has given both A and B partitions, the other
// shareTotal-shareEarly are produced. Every record is acknowledged explicitly and the acks flushed
// (FlushAcks) after each poll: record shareReleaseIdx is RELEASEd on its first delivery and must
// come back once more, with delivery count 2, and is then accepted; record shareRejectIdx is
// REJECTed and must never come back; every other record is accepted and must be delivered exactly
// once, with delivery count 1. Both consumers must get some records (the group splits the three
// partitions between its two members). Nothing may arrive in a quiet period at the end.
const (
	sharePartitions = 3
	shareTotal      = 40
	shareEarly      = 10
	shareReleaseIdx = 3
	shareRejectIdx  = 4
	// Share groups assign at heartbeats, 5 s apart by default.
	shareAssignTimeout  = 25 * time.Second
	shareConsumeTimeout = 25 * time.Second
	shareQuiet          = 3 * time.Second
	shareFlushTimeout   = 5 * time.Second
	shareCloseTimeout   = 8 * time.Second
	sharePoll           = 300 * time.Millisecond
)

var shareValue = regexp.MustCompile(`^share-franz-(\d+)$`)

type shareDelivery struct {
	member string
	count  int32
	ack    kgo.AckStatus
}

func (d shareDelivery) String() string {
	return fmt.Sprintf("%s#%d(%s)", d.member, d.count, d.ack)
}

type shareRun struct {
	mu         sync.Mutex
	started    time.Time
	deliveries map[int][]shareDelivery
	problems   []string
	ackErrors  []string
}

func (s *shareRun) log(format string, args ...any) {
	fmt.Printf("  +%.2f s %s\n", time.Since(s.started).Seconds(), fmt.Sprintf(format, args...))
}

func (s *shareRun) problem(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	text := fmt.Sprintf(format, args...)
	if len(s.problems) < 10 {
		s.problems = append(s.problems, text)
	}
	s.log("problem: %s", text)
}

// ackFor decides how a delivery is acknowledged: the release record once, the reject record always.
func ackFor(idx int, count int32) kgo.AckStatus {
	switch {
	case idx == shareReleaseIdx && count == 1:
		return kgo.AckRelease
	case idx == shareRejectIdx:
		return kgo.AckReject
	default:
		return kgo.AckAccept
	}
}

func (s *shareRun) deliver(member string, r *kgo.Record) kgo.AckStatus {
	m := shareValue.FindSubmatch(r.Value)
	if m == nil {
		s.problem("%s got partition %d offset %d with value %q, not one produced here", member, r.Partition, r.Offset, r.Value)
		return kgo.AckReject
	}
	idx, _ := strconv.Atoi(string(m[1]))
	d := shareDelivery{member: member, count: r.DeliveryCount()}
	d.ack = ackFor(idx, d.count)
	s.mu.Lock()
	s.deliveries[idx] = append(s.deliveries[idx], d)
	s.mu.Unlock()
	if idx == shareReleaseIdx || idx == shareRejectIdx {
		s.log("%s got share-franz-%d (partition %d offset %d) with delivery count %d: %s", member, idx, r.Partition, r.Offset, d.count, d.ack)
	}
	return d.ack
}

// settled: every record delivered and given its final acknowledgement (the release record twice).
func (s *shareRun) settled() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := 0; i < shareTotal; i++ {
		want := 1
		if i == shareReleaseIdx {
			want = 2
		}
		if len(s.deliveries[i]) < want {
			return false
		}
	}
	return true
}

func (s *shareRun) state() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var missing []string
	for i := 0; i < shareTotal; i++ {
		if len(s.deliveries[i]) == 0 {
			missing = append(missing, strconv.Itoa(i))
		}
	}
	return fmt.Sprintf("%d of %d records delivered; never delivered: [%s]; release record: %v; reject record: %v",
		shareTotal-len(missing), shareTotal, strings.Join(missing, " "), s.deliveries[shareReleaseIdx], s.deliveries[shareRejectIdx])
}

func (s *shareRun) perMember() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]int{}
	for _, ds := range s.deliveries {
		for _, d := range ds {
			out[d.member]++
		}
	}
	return out
}

// check compares every record's deliveries with what its acknowledgements call for.
func (s *shareRun) check() {
	s.mu.Lock()
	defer s.mu.Unlock()
	var diffs []string
	for i := 0; i < shareTotal; i++ {
		ds := s.deliveries[i]
		var want string
		switch i {
		case shareReleaseIdx:
			want = "delivered twice, delivery counts 1 then 2"
			if len(ds) == 2 && ds[0].count == 1 && ds[1].count == 2 {
				continue
			}
		default:
			want = "delivered once, delivery count 1"
			if i == shareRejectIdx {
				want = "delivered once (rejected), delivery count 1"
			}
			if len(ds) == 1 && ds[0].count == 1 {
				continue
			}
		}
		diffs = append(diffs, fmt.Sprintf("share-franz-%d: %v, expected %s", i, ds, want))
	}
	for idx := range s.deliveries {
		if idx < 0 || idx >= shareTotal {
			diffs = append(diffs, fmt.Sprintf("share-franz-%d delivered, never produced", idx))
		}
	}
	sort.Strings(diffs)
	for _, d := range diffs {
		if len(s.problems) < 10 {
			s.problems = append(s.problems, d)
		}
	}
}

func (s *shareRun) err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	all := append(append([]string{}, s.problems...), s.ackErrors...)
	if len(all) == 0 {
		return nil
	}
	return errors.New(strings.Join(all, "\n  "))
}

// setGroupConfig sets one config of a group through IncrementalAlterConfigs on the GROUP resource.
func setGroupConfig(ctx context.Context, cl *kgo.Client, group, name, value string) error {
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType = kmsg.ConfigResourceTypeGroupConfig
	res.ResourceName = group
	cfg := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	cfg.Name = name
	cfg.Op = kmsg.IncrementalAlterConfigOpSet
	cfg.Value = &value
	res.Configs = append(res.Configs, cfg)
	req.Resources = append(req.Resources, res)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("IncrementalAlterConfigs group %s %s=%s: %w", group, name, value, err)
	}
	if len(resp.Resources) != 1 {
		return fmt.Errorf("IncrementalAlterConfigs group %s: %d resources in the response, expected 1", group, len(resp.Resources))
	}
	r := resp.Resources[0]
	if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
		msg := ""
		if r.ErrorMessage != nil {
			msg = ": " + *r.ErrorMessage
		}
		return fmt.Errorf("IncrementalAlterConfigs group %s %s=%s: %w%s", group, name, value, err, msg)
	}
	if r.ResourceType != kmsg.ConfigResourceTypeGroupConfig || r.ResourceName != group {
		return fmt.Errorf("IncrementalAlterConfigs answered for resource type %d %q, expected %d %q",
			r.ResourceType, r.ResourceName, kmsg.ConfigResourceTypeGroupConfig, group)
	}
	return nil
}

func shareProduce(ctx context.Context, cl *kgo.Client, topic string, from, to int) error {
	recs := make([]*kgo.Record, 0, to-from)
	for i := from; i < to; i++ {
		recs = append(recs, &kgo.Record{Topic: topic, Partition: int32(i % sharePartitions), Value: []byte(fmt.Sprintf("share-franz-%d", i))})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		return fmt.Errorf("producing share-franz-%d..%d: %w", from, to-1, err)
	}
	return nil
}

func shareGroupScenario(ctx context.Context, bootstrap string) error {
	stamp := strconv.FormatInt(time.Now().UnixMilli(), 10)
	topic := "compat-share-franz-" + stamp
	group := "compat-share-franz-" + stamp
	s := &shareRun{started: time.Now(), deliveries: map[int][]shareDelivery{}}

	admin, err := newClient(bootstrap, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.DisableIdempotentWrite(),
		kgo.RequiredAcks(kgo.AllISRAcks()))
	if err != nil {
		return err
	}
	defer admin.Close()
	adm := kadm.NewClient(admin)
	created, err := adm.CreateTopic(ctx, sharePartitions, -1, nil, topic)
	if err == nil {
		err = created.Err
	}
	if err != nil {
		return fmt.Errorf("CreateTopic %s: %w", topic, err)
	}
	if err := setGroupConfig(ctx, admin, group, "share.auto.offset.reset", "earliest"); err != nil {
		return err
	}
	s.log("topic %s with %d partitions; group %s with share.auto.offset.reset=earliest", topic, sharePartitions, group)
	if err := shareProduce(ctx, admin, topic, 0, shareEarly); err != nil {
		return err
	}
	s.log("produced share-franz-0..%d before any consumer", shareEarly-1)

	// Each consumer polls in its own goroutine until stop is closed.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	clients := map[string]*kgo.Client{}
	defer func() {
		select {
		case <-stop:
		default:
			close(stop)
		}
		wg.Wait()
		for name, cl := range clients {
			closeShareClient(s, name, cl)
		}
	}()
	for _, name := range []string{"A", "B"} {
		name := name
		cl, err := newClient(bootstrap,
			kgo.ClientID("gregor-compat-franz-go-"+name),
			kgo.ShareGroup(group),
			kgo.ConsumeTopics(topic),
			kgo.ShareAckCallback(func(_ *kgo.Client, rs kgo.ShareAckResults) {
				for _, r := range rs {
					if r.Err != nil {
						s.mu.Lock()
						if len(s.ackErrors) < 10 {
							s.ackErrors = append(s.ackErrors, fmt.Sprintf("%s: acknowledgement for %s-%d refused: %v", name, r.Topic, r.Partition, r.Err))
						}
						s.mu.Unlock()
					}
				}
			}))
		if err != nil {
			return err
		}
		clients[name] = cl
		wg.Add(1)
		go func() {
			defer wg.Done()
			sharePollLoop(ctx, s, name, cl, stop)
		}()
	}

	// Wait until the group has given both members partitions of the topic.
	assigned := func() (bool, string) {
		dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		described, err := adm.DescribeShareGroups(dctx, group)
		if err != nil {
			return false, err.Error()
		}
		g, ok := described[group]
		if !ok || g.Err != nil {
			return false, fmt.Sprintf("%v", g.Err)
		}
		parts := map[string][]int32{}
		var texts []string
		for _, m := range g.Members {
			var ps []int32
			for p := range m.Assignment[topic] {
				ps = append(ps, p)
			}
			sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
			parts[m.ClientID] = ps
			texts = append(texts, fmt.Sprintf("%s %v", strings.TrimPrefix(m.ClientID, "gregor-compat-franz-go-"), parts[m.ClientID]))
		}
		sort.Strings(texts)
		text := fmt.Sprintf("%s, epoch %d, members: %s", g.GroupState, g.GroupEpoch, strings.Join(texts, "; "))
		return len(g.Members) == 2 && len(parts["gregor-compat-franz-go-A"]) > 0 && len(parts["gregor-compat-franz-go-B"]) > 0, text
	}
	deadline := time.Now().Add(shareAssignTimeout)
	for {
		ok, text := assigned()
		if ok {
			s.log("describeShareGroups: %s", text)
			break
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("A and B not both assigned partitions of %s within %s; last describeShareGroups: %s", topic, shareAssignTimeout, text)
		}
		time.Sleep(500 * time.Millisecond)
	}
	if err := shareProduce(ctx, admin, topic, shareEarly, shareTotal); err != nil {
		return err
	}
	s.log("produced share-franz-%d..%d", shareEarly, shareTotal-1)

	deadline = time.Now().Add(shareConsumeTimeout)
	for !s.settled() {
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("records not all delivered within %s: %s", shareConsumeTimeout, s.state())
		}
		time.Sleep(200 * time.Millisecond)
	}
	s.log("every record delivered; quiet for %s", shareQuiet)
	time.Sleep(shareQuiet)
	close(stop)
	wg.Wait()

	s.check()
	counts := s.perMember()
	s.log("deliveries per consumer: A %d, B %d; release record %v; reject record %v", counts["A"], counts["B"],
		s.deliveries[shareReleaseIdx], s.deliveries[shareRejectIdx])
	if counts["A"] == 0 || counts["B"] == 0 {
		s.problem("one consumer got no records (A %d, B %d), though both were assigned partitions", counts["A"], counts["B"])
	}
	return s.err()
}

// sharePollLoop polls, acknowledges every record explicitly and flushes the acknowledgements.
func sharePollLoop(ctx context.Context, s *shareRun, name string, cl *kgo.Client, stop chan struct{}) {
	for {
		select {
		case <-stop:
			return
		case <-ctx.Done():
			return
		default:
		}
		pctx, cancel := context.WithTimeout(ctx, sharePoll)
		fetches := cl.PollFetches(pctx)
		cancel()
		fetches.EachError(func(t string, p int32, err error) {
			if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
				return
			}
			s.problem("%s: fetch error on %s-%d: %v", name, t, p, err)
		})
		n := 0
		fetches.EachRecord(func(r *kgo.Record) {
			r.Ack(s.deliver(name, r))
			n++
		})
		if n == 0 {
			continue
		}
		fctx, cancel := context.WithTimeout(ctx, shareFlushTimeout)
		if err := cl.FlushAcks(fctx); err != nil {
			s.problem("%s: FlushAcks after %d records: %v", name, n, err)
		}
		cancel()
	}
}

func closeShareClient(s *shareRun, name string, cl *kgo.Client) {
	done := make(chan struct{})
	go func() {
		cl.Close()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(shareCloseTimeout):
		s.log("%s: Close did not return within %s", name, shareCloseTimeout)
	}
}
