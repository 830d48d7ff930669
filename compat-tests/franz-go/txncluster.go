package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The txn-cluster scenario (compat-tests/lib/txn-cluster.mjs explains the plan): transactions whose
// partition leader, transaction coordinator and group coordinator are three different brokers.
// Producer T commits A, aborts B and commits C on topic IN, whose partitions three brokers lead;
// then a GroupTransactSession with the same T, in group G, copies IN to OUT upper-cased, one
// transaction per poll, the first one carrying records aborted on purpose (the session then
// rewinds to the committed offsets). The coordinators come from FindCoordinator (kadm).
//
// kgo commits the offsets of the records it handed out; so that those pass the transaction
// markers, every consumer here keeps control records (KeepControlRecords) and skips them as data.
const (
	tcBrokers       = 3
	tcPartitions    = 3
	tcReplication   = 3
	tcPerPartition  = 5
	tcCandidates    = 50
	tcWait          = 20 * time.Second
	tcCopy          = 60 * time.Second
	tcMaxPollRecord = 7
)

// tcTxns are the transactions of step 3, in order.
var tcTxns = []struct {
	name   string
	commit bool
}{{"A", true}, {"B", false}, {"C", true}}

// errNotApplicable says the scenario cannot run on this cluster; main answers exit 3.
var errNotApplicable = errors.New("not applicable")

// tcValues is partition -> values, in log order.
type tcValues map[int32][]string

func (v tcValues) count() int {
	n := 0
	for _, vs := range v {
		n += len(vs)
	}
	return n
}

// tcRun gathers one run's problems and summary lines.
type tcRun struct {
	seeds    []string
	problems []string
	summary  []string
	mu       sync.Mutex
	// lastOffsets is topic -> partition -> highest offset acknowledged.
	lastOffsets map[string]map[int32]int64
}

func (r *tcRun) fail(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.problems = append(r.problems, fmt.Sprintf(format, args...))
}

func (r *tcRun) acknowledged(rec *kgo.Record) {
	r.mu.Lock()
	defer r.mu.Unlock()
	last := r.lastOffsets[rec.Topic]
	if last == nil {
		last = map[int32]int64{}
		r.lastOffsets[rec.Topic] = last
	}
	if o, ok := last[rec.Partition]; !ok || rec.Offset > o {
		last[rec.Partition] = rec.Offset
	}
}

func (r *tcRun) client(extra ...kgo.Opt) (*kgo.Client, error) {
	return newClient(r.seeds[0], append([]kgo.Opt{kgo.SeedBrokers(r.seeds...)}, extra...)...)
}

func txnClusterScenario(ctx context.Context, bootstrap string) error {
	r := &tcRun{seeds: strings.Split(bootstrap, ","), lastOffsets: map[string]map[int32]int64{}}
	err := r.plan(ctx)
	if errors.Is(err, errNotApplicable) {
		return err
	}
	if err != nil {
		r.fail("%v", err)
	}
	for _, p := range r.problems {
		fmt.Printf("problem: %s\n", p)
	}
	for _, s := range r.summary {
		fmt.Printf("summary: %s\n", s)
	}
	if len(r.problems) > 0 {
		return fmt.Errorf("%d problem(s)", len(r.problems))
	}
	return nil
}

func (r *tcRun) plan(ctx context.Context) error {
	prefix := fmt.Sprintf("compat-txnc-franz-go-%d", time.Now().UnixNano())
	in, out := prefix+"-in", prefix+"-out"
	cl, err := r.client()
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)

	md, err := adm.BrokerMetadata(ctx)
	if err != nil {
		return fmt.Errorf("broker metadata: %w", err)
	}
	if len(md.Brokers) < tcBrokers {
		return fmt.Errorf("%w: the cluster has %d broker(s); txn-cluster needs %d", errNotApplicable, len(md.Brokers), tcBrokers)
	}
	var names []string
	for _, b := range md.Brokers {
		names = append(names, fmt.Sprintf("%d@%s:%d", b.NodeID, b.Host, b.Port))
	}
	fmt.Printf("brokers: %s\n", strings.Join(names, ", "))

	// 1. The topics, and IN led by three brokers.
	minISR := "2"
	if _, err := adm.CreateTopic(ctx, tcPartitions, tcReplication, map[string]*string{"min.insync.replicas": &minISR}, in); err != nil {
		return fmt.Errorf("create %s: %w", in, err)
	}
	if _, err := adm.CreateTopic(ctx, tcPartitions, tcReplication, nil, out); err != nil {
		return fmt.Errorf("create %s: %w", out, err)
	}
	inLeaders, err := tcLeaders(ctx, adm, in)
	if err != nil {
		return err
	}
	outLeaders, err := tcLeaders(ctx, adm, out)
	if err != nil {
		return err
	}
	fmt.Printf("%s leaders (partition:broker): %v\n", in, inLeaders)
	fmt.Printf("%s leaders (partition:broker): %v\n", out, outLeaders)
	distinct := map[int32]bool{}
	for _, b := range inLeaders {
		distinct[b] = true
	}
	if len(distinct) != tcPartitions {
		return fmt.Errorf("%s: expected its %d partitions led by %d different brokers, saw leaders %v", in, tcPartitions, tcPartitions, inLeaders)
	}

	// 2. T and G whose coordinators (FindCoordinator) are two different brokers.
	txnID, groupID, txnCoord, groupCoord, err := tcPickIDs(ctx, adm, prefix)
	if err != nil {
		return err
	}
	var third int32 = -1
	for _, b := range inLeaders {
		if b != txnCoord && b != groupCoord {
			third = b
		}
	}
	fmt.Printf("transaction coordinator of %s: broker %d\n", txnID, txnCoord)
	fmt.Printf("group coordinator of %s: broker %d\n", groupID, groupCoord)
	fmt.Printf("third broker %d leads %s partition %s and %s partition(s) %s\n", third, in, tcLedBy(inLeaders, third), out, tcLedBy(outLeaders, third))

	// 3. A committed, B aborted, C committed, by a transactional client that is then closed;
	// the copy loop's session uses the same T.
	committedIn, allIn := tcValues{}, tcValues{}
	if err := r.produceInput(ctx, in, txnID, committedIn, allIn); err != nil {
		return err
	}
	fmt.Printf("transactions on %s: A committed, B aborted, C committed (%d records to each partition each)\n", in, tcPerPartition)

	// 4. IN as each isolation level sees it.
	inEnd, err := r.settledEnd(ctx, adm, in)
	if err != nil {
		return err
	}
	fmt.Printf("%s end offsets: %v\n", in, inEnd)
	inCommitted, err := r.readAll(ctx, in, kgo.ReadCommitted(), "read_committed", inEnd)
	if err != nil {
		return err
	}
	inAll, err := r.readAll(ctx, in, kgo.ReadUncommitted(), "read_uncommitted", inEnd)
	if err != nil {
		return err
	}
	r.compare(in+" read_committed", committedIn, inCommitted)
	r.compare(in+" read_uncommitted", allIn, inAll)
	r.summary = append(r.summary, fmt.Sprintf("%s read_committed %d/%d, read_uncommitted %d/%d", in, inCommitted.count(), committedIn.count(), inAll.count(), allIn.count()))

	// 5. Consume-transform-produce.
	written, abortedRecords, transactions, err := r.copyLoop(ctx, in, out, txnID, groupID, inEnd)
	if err != nil {
		return err
	}

	// 6. OUT, and the group's offsets.
	expectedOut := tcValues{}
	for p, vs := range committedIn {
		for _, v := range vs {
			expectedOut[p] = append(expectedOut[p], strings.ToUpper(v))
		}
	}
	outEnd, err := r.settledEnd(ctx, adm, out)
	if err != nil {
		return err
	}
	outCommitted, err := r.readAll(ctx, out, kgo.ReadCommitted(), "read_committed", outEnd)
	if err != nil {
		return err
	}
	outAll, err := r.readAll(ctx, out, kgo.ReadUncommitted(), "read_uncommitted", outEnd)
	if err != nil {
		return err
	}
	r.compare(out+" read_committed", expectedOut, outCommitted)
	r.compare(out+" read_uncommitted (the aborted copies included)", written, outAll)
	r.summary = append(r.summary, fmt.Sprintf("%s read_committed %d/%d, read_uncommitted %d/%d (%d aborted copies)", out, outCommitted.count(), expectedOut.count(), outAll.count(), written.count(), abortedRecords))

	offsets, err := adm.FetchOffsets(ctx, groupID)
	if err != nil {
		return fmt.Errorf("fetch offsets of group %s: %w", groupID, err)
	}
	atEnd := 0
	for p := int32(0); p < tcPartitions; p++ {
		got := "none"
		o, ok := offsets.Lookup(in, p)
		if ok && o.Err == nil {
			got = fmt.Sprint(o.At)
		}
		fmt.Printf("group %s %s partition %d: committed %s, end offset %d\n", groupID, in, p, got, inEnd[p])
		if ok && o.Err == nil && o.At == inEnd[p] {
			atEnd++
		} else {
			r.fail("group %s partition %d of %s: expected committed offset %d (the end offset), saw %s", groupID, p, in, inEnd[p], got)
		}
	}
	r.summary = append(r.summary, fmt.Sprintf("group offsets at the end %d/%d", atEnd, tcPartitions))
	r.summary = append(r.summary, fmt.Sprintf("%d copy transactions committed, 1 aborted", transactions))
	return nil
}

// tcLeaders waits (bounded) until every partition of topic has a leader: partition -> leader.
func tcLeaders(ctx context.Context, adm *kadm.Client, topic string) (map[int32]int32, error) {
	deadline := time.Now().Add(tcWait)
	leaders := map[int32]int32{}
	var lastErr error
	for {
		clear(leaders)
		md, err := adm.Metadata(ctx, topic)
		if err == nil {
			if t, ok := md.Topics[topic]; ok && t.Err == nil {
				for p, d := range t.Partitions {
					if d.Err == nil && d.Leader >= 0 {
						leaders[p] = d.Leader
					}
				}
				if len(t.Partitions) > 0 && len(leaders) == len(t.Partitions) {
					return leaders, nil
				}
			} else if ok {
				err = t.Err
			}
		}
		lastErr = err
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%s: expected a leader for each partition within %v, saw %v (last error: %v)", topic, tcWait, leaders, lastErr)
		}
		if err := tcSleep(ctx, 200*time.Millisecond); err != nil {
			return nil, err
		}
	}
}

// tcPickIDs asks FindCoordinator for candidate transactional ids and group ids (prefix-t<i>,
// prefix-g<i>) until every answer is in (the internal topics are made on the first asks), and
// returns the first pair whose coordinators differ.
func tcPickIDs(ctx context.Context, adm *kadm.Client, prefix string) (string, string, int32, int32, error) {
	var txnIDs, groupIDs []string
	for i := 0; i < tcCandidates; i++ {
		txnIDs = append(txnIDs, fmt.Sprintf("%s-t%d", prefix, i))
		groupIDs = append(groupIDs, fmt.Sprintf("%s-g%d", prefix, i))
	}
	deadline := time.Now().Add(tcWait)
	for {
		txns := adm.FindTxnCoordinators(ctx, txnIDs...)
		groups := adm.FindGroupCoordinators(ctx, groupIDs...)
		err := errors.Join(txns.Error(), groups.Error())
		if err == nil {
			for i := range txnIDs {
				tc, gc := txns[txnIDs[i]].NodeID, groups[groupIDs[i]].NodeID
				if tc != gc {
					return txnIDs[i], groupIDs[i], tc, gc, nil
				}
			}
			return "", "", 0, 0, fmt.Errorf("none of %d candidate pairs of ids has its transaction and group coordinators on two different brokers", tcCandidates)
		}
		if time.Now().After(deadline) {
			return "", "", 0, 0, fmt.Errorf("FindCoordinator: expected an answer for every candidate id within %v, last error: %w", tcWait, err)
		}
		if err := tcSleep(ctx, 200*time.Millisecond); err != nil {
			return "", "", 0, 0, err
		}
	}
}

func tcLedBy(leaders map[int32]int32, broker int32) string {
	var ps []string
	for _, p := range slices.Sorted(maps.Keys(leaders)) {
		if leaders[p] == broker {
			ps = append(ps, fmt.Sprint(p))
		}
	}
	if len(ps) == 0 {
		return "none"
	}
	return strings.Join(ps, ",")
}

// produceInput runs step 3 with a transactional client (idempotent, acks from all in-sync
// replicas: kgo's defaults with a transactional id). ProduceSync waits for each record's
// acknowledgement, so B's records are in the log before the abort; a record not acknowledged
// within tcWait fails with the broker's last error.
func (r *tcRun) produceInput(ctx context.Context, in, txnID string, committedIn, allIn tcValues) error {
	cl, err := r.client(kgo.TransactionalID(txnID), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.DefaultProduceTopic(in),
		kgo.RecordDeliveryTimeout(tcWait))
	if err != nil {
		return err
	}
	defer cl.Close()
	for _, txn := range tcTxns {
		if err := cl.BeginTransaction(); err != nil {
			return fmt.Errorf("begin transaction %s: %w", txn.name, err)
		}
		var recs []*kgo.Record
		for k := 0; k < tcPerPartition; k++ {
			for p := int32(0); p < tcPartitions; p++ {
				v := fmt.Sprintf("%s-p%d-%d", txn.name, p, k)
				recs = append(recs, &kgo.Record{Partition: p, Value: []byte(v)})
				allIn[p] = append(allIn[p], v)
				if txn.commit {
					committedIn[p] = append(committedIn[p], v)
				}
			}
		}
		results := cl.ProduceSync(ctx, recs...)
		for _, res := range results {
			if res.Err == nil {
				r.acknowledged(res.Record)
			}
		}
		if err := results.FirstErr(); err != nil {
			return fmt.Errorf("transaction %s: produce: %w", txn.name, err)
		}
		if err := cl.EndTransaction(ctx, kgo.TransactionEndTry(txn.commit)); err != nil {
			return fmt.Errorf("end transaction %s (commit %v): %w", txn.name, txn.commit, err)
		}
	}
	return nil
}

// settledEnd answers topic's end offsets for a read_committed reader (ListOffsets, the last
// stable offset), once they are past the last offset acknowledged in each partition: a
// transaction is decided on a partition only once its marker is in, so before that the last
// stable offset stops at its first record.
func (r *tcRun) settledEnd(ctx context.Context, adm *kadm.Client, topic string) (map[int32]int64, error) {
	r.mu.Lock()
	last := maps.Clone(r.lastOffsets[topic])
	r.mu.Unlock()
	deadline := time.Now().Add(tcWait)
	end := map[int32]int64{}
	for {
		listed, err := adm.ListCommittedOffsets(ctx, topic)
		if err == nil {
			listed.Each(func(o kadm.ListedOffset) {
				if o.Err == nil {
					end[o.Partition] = o.Offset
				}
			})
			settled := len(end) == tcPartitions
			for p, o := range last {
				if e, ok := end[p]; !ok || e <= o {
					settled = false
				}
			}
			if settled {
				return end, nil
			}
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%s: expected the last stable offsets past the last records written %v within %v (the transactions decided), saw %v (last error: %v)", topic, last, tcWait, end, err)
		}
		if err := tcSleep(ctx, 100*time.Millisecond); err != nil {
			return nil, err
		}
	}
}

// readAll reads every partition of topic without a group, in the given isolation level, from
// the start until each partition's position (after its last record, control records included)
// reaches end; partition -> values of the data records below end.
func (r *tcRun) readAll(ctx context.Context, topic string, level kgo.IsolationLevel, label string, end map[int32]int64) (tcValues, error) {
	parts := map[int32]kgo.Offset{}
	for p := int32(0); p < tcPartitions; p++ {
		parts[p] = kgo.NewOffset().AtStart()
	}
	cl, err := r.client(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: parts}),
		kgo.FetchIsolationLevel(level), kgo.KeepControlRecords(), kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	values := tcValues{}
	position := map[int32]int64{}
	reached := func() bool {
		for p, o := range end {
			if position[p] < o {
				return false
			}
		}
		return true
	}
	deadline := time.Now().Add(tcWait)
	for !reached() {
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%s %s: expected to reach end offsets %v within %v, stopped at %v", topic, label, end, tcWait, position)
		}
		pollCtx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		fetches := cl.PollFetches(pollCtx)
		cancel()
		if err := tcFetchErr(fetches); err != nil {
			return nil, fmt.Errorf("%s %s: %w", topic, label, err)
		}
		fetches.EachRecord(func(rec *kgo.Record) {
			position[rec.Partition] = rec.Offset + 1
			if !rec.Attrs.IsControl() && rec.Offset < end[rec.Partition] {
				values[rec.Partition] = append(values[rec.Partition], string(rec.Value))
			}
		})
	}
	fmt.Printf("%s %s: %d records up to end offsets %v\n", topic, label, values.count(), end)
	return values, nil
}

// tcFetchErr is the first fetch error other than the poll's own deadline.
func tcFetchErr(fetches kgo.Fetches) error {
	for _, fe := range fetches.Errors() {
		if !errors.Is(fe.Err, context.DeadlineExceeded) && !errors.Is(fe.Err, context.Canceled) {
			return fmt.Errorf("fetch %s partition %d: %w", fe.Topic, fe.Partition, fe.Err)
		}
	}
	return nil
}

// copyLoop is step 5: a GroupTransactSession (transactional id T, group G, classic protocol,
// read_committed) polls at most tcMaxPollRecord records at a time; each poll's data records go
// upper-cased to the same partition of OUT in one transaction, which End commits together with
// the session's offsets. The first transaction carrying records is ended with TryAbort after its
// records were acknowledged, which rewinds the session to the committed offsets. It stops once
// the committed offsets are IN's end offsets. Answers what was written to OUT per partition
// (aborted copies included), the aborted records, and the transactions committed.
func (r *tcRun) copyLoop(ctx context.Context, in, out, txnID, groupID string, end map[int32]int64) (tcValues, int, int, error) {
	sess, err := kgo.NewGroupTransactSession(
		kgo.SeedBrokers(r.seeds...),
		kgo.ClientID("gregor-compat-franz-go"),
		kgo.DialTimeout(5*time.Second),
		kgo.RequestTimeoutOverhead(10*time.Second),
		kgo.RetryTimeout(15*time.Second),
		kgo.TransactionalID(txnID),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.DefaultProduceTopic(out),
		kgo.RecordDeliveryTimeout(tcWait),
		kgo.ConsumerGroup(groupID),
		kgo.ConsumeTopics(in),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.KeepControlRecords(),
		kgo.FetchMaxWait(200*time.Millisecond),
		kgo.SessionTimeout(10*time.Second),
		kgo.HeartbeatInterval(time.Second),
		kgo.RebalanceTimeout(30*time.Second),
	)
	if err != nil {
		return nil, 0, 0, fmt.Errorf("group transact session: %w", err)
	}
	defer sess.Close()
	written := tcValues{}
	committed := map[int32]int64{}
	aborted, transactions := 0, 0
	atEnd := func() bool {
		for p, o := range end {
			if committed[p] != o {
				return false
			}
		}
		return true
	}
	deadline := time.Now().Add(tcCopy)
	for !atEnd() {
		if time.Now().After(deadline) {
			r.fail("copy loop: expected group %s to commit the end offsets %v through transactions, reached %v (%d committed)", groupID, end, committed, transactions)
			return nil, 0, 0, errors.New("copy loop did not finish")
		}
		pollCtx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		fetches := sess.PollRecords(pollCtx, tcMaxPollRecord)
		cancel()
		if err := tcFetchErr(fetches); err != nil {
			return nil, 0, 0, fmt.Errorf("copy loop: %w", err)
		}
		recs := fetches.Records()
		if len(recs) == 0 {
			continue
		}
		if err := sess.Begin(); err != nil {
			return nil, 0, 0, fmt.Errorf("copy loop: begin: %w", err)
		}
		var outRecs []*kgo.Record
		batch := tcValues{}
		for _, rec := range recs {
			if rec.Attrs.IsControl() {
				continue
			}
			v := strings.ToUpper(string(rec.Value))
			outRecs = append(outRecs, &kgo.Record{Partition: rec.Partition, Value: []byte(v)})
			batch[rec.Partition] = append(batch[rec.Partition], v)
		}
		results := sess.ProduceSync(ctx, outRecs...)
		for _, res := range results {
			if res.Err == nil {
				r.acknowledged(res.Record)
			}
		}
		if err := results.FirstErr(); err != nil {
			return nil, 0, 0, fmt.Errorf("copy loop: produce: %w", err)
		}
		for p, vs := range batch {
			written[p] = append(written[p], vs...)
		}
		positions := map[int32]int64{}
		for p, o := range sess.Client().UncommittedOffsets()[in] {
			positions[p] = o.Offset
		}
		if aborted == 0 && len(outRecs) > 0 {
			if _, err := sess.End(ctx, kgo.TryAbort); err != nil {
				return nil, 0, 0, fmt.Errorf("copy loop: abort: %w", err)
			}
			aborted = len(outRecs)
			fmt.Printf("aborted the transaction of %d records (%v), the session rewound to the committed offsets %v\n", len(outRecs), batch, committed)
			continue
		}
		ok, err := sess.End(ctx, kgo.TryCommit)
		if err != nil {
			return nil, 0, 0, fmt.Errorf("copy loop: commit: %w", err)
		}
		if !ok {
			r.fail("copy loop: the session aborted a transaction it was asked to commit (offsets %v)", positions)
			return nil, 0, 0, errors.New("copy loop: unexpected abort")
		}
		transactions++
		maps.Copy(committed, positions)
		fmt.Printf("committed %d records, offsets %v\n", len(outRecs), positions)
	}
	return written, aborted, transactions, nil
}

// compare adds a problem for each partition whose values differ from the expected list.
func (r *tcRun) compare(label string, expected, got tcValues) {
	for p := int32(0); p < tcPartitions; p++ {
		want, saw := expected[p], got[p]
		if slices.Equal(want, saw) {
			continue
		}
		i := 0
		for i < len(want) && i < len(saw) && want[i] == saw[i] {
			i++
		}
		at := func(vs []string) string {
			if i < len(vs) {
				return vs[i]
			}
			return "nothing"
		}
		r.fail("%s partition %d: expected %d records %v, saw %d %v; first difference at position %d: expected %s, saw %s",
			label, p, len(want), want, len(saw), saw, i, at(want), at(saw))
	}
}

func tcSleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}
