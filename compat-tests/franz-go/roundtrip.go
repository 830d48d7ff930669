package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const (
	roundtripCount          = 5000
	roundtripMiddle         = 2345
	roundtripTimestampIndex = 3456
	timestampStepMs         = 10
	// readIdle fails a read that goes this long without a new record.
	readIdle = 5 * time.Second
)

var codecs = []struct {
	name  string
	codec kgo.CompressionCodec
}{
	{"none", kgo.NoCompression()},
	{"gzip", kgo.GzipCompression()},
	{"snappy", kgo.SnappyCompression()},
	{"lz4", kgo.Lz4Compression()},
	{"zstd", kgo.ZstdCompression()},
}

// codecNames are indexed by the codec bits of a batch's attributes.
var codecNames = []string{"none", "gzip", "snappy", "lz4", "zstd"}

type message struct {
	key, value []byte // nil is null
	headers    []kgo.RecordHeader
	timestamp  time.Time
}

// requestCounter is a kgo hook counting the requests written, by API.
type requestCounter struct {
	mu     sync.Mutex
	counts map[string]int
	order  []string
}

func (c *requestCounter) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, _ error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	name := kmsg.NameForKey(key)
	if c.counts == nil {
		c.counts = map[string]int{}
	}
	if c.counts[name] == 0 {
		c.order = append(c.order, name)
	}
	c.counts[name]++
}

func (c *requestCounter) take() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	parts := make([]string, 0, len(c.order))
	for _, name := range c.order {
		if n := c.counts[name]; n > 1 {
			parts = append(parts, fmt.Sprintf("%s x%d", name, n))
		} else {
			parts = append(parts, name)
		}
	}
	c.counts, c.order = nil, nil
	return strings.Join(parts, ", ")
}

// roundtripScenario produces roundtripCount records per codec, with keys, headers and explicit
// timestamps, to partition 0 of a new auto-created topic each (idempotence off, acks=all), and
// checks the acknowledged offsets run 0, 1, 2, ... Then, without a group (ConsumePartitions), it
// reads every topic back byte for byte and checks each batch kept its codec; reads from an offset
// in the middle of a batch; and checks kadm's ListOffsetsAfterMilli and a consumer starting at
// Offset.AfterMilli for a timestamp between two records.
func roundtripScenario(ctx context.Context, bootstrap string) error {
	messages := makeMessages(roundtripCount, 23)
	stamp := fmt.Sprintf("%d-%d", time.Now().UnixMilli(), os.Getpid())
	topics := map[string]string{}
	var names []string
	for _, c := range codecs {
		topics[c.name] = fmt.Sprintf("compat-roundtrip-franz-go-%s-%s", c.name, stamp)
		names = append(names, topics[c.name])
	}
	fmt.Printf("%d records per codec (none, gzip, snappy, lz4, zstd) to partition 0 of a new topic each (auto-created)\n", roundtripCount)
	requests := &requestCounter{}

	started := time.Now()
	for _, c := range codecs {
		if err := produceAll(ctx, bootstrap, topics[c.name], c.codec, messages, requests); err != nil {
			fmt.Printf("producer requests so far: %s\n", requests.take())
			return fmt.Errorf("%s: %w", c.name, err)
		}
	}
	fmt.Printf("produced in %d ms; producer requests: %s\n", time.Since(started).Milliseconds(), requests.take())

	started = time.Now()
	defer func() { fmt.Printf("consumer requests: %s\n", requests.take()) }()
	all, err := readFrom(ctx, bootstrap, names, kgo.NewOffset().At(0), roundtripCount, requests)
	if err != nil {
		return err
	}
	var problems []error
	for _, c := range codecs {
		problems = append(problems, compare(c.name, messages, all[topics[c.name]])...)
	}
	if len(problems) > 0 {
		return errors.Join(problems...)
	}

	middle, err := readFrom(ctx, bootstrap, names, kgo.NewOffset().At(roundtripMiddle), 1, requests)
	if err != nil {
		return err
	}
	for _, c := range codecs {
		if got := middle[topics[c.name]][0].Offset; got != roundtripMiddle {
			problems = append(problems, fmt.Errorf("%s: consuming at offset %d read offset %d first", c.name, roundtripMiddle, got))
		}
	}

	target := messages[roundtripTimestampIndex].timestamp.UnixMilli() - timestampStepMs/2
	cl, err := newClient(bootstrap, kgo.WithHooks(requests))
	if err != nil {
		return err
	}
	listed, err := kadm.NewClient(cl).ListOffsetsAfterMilli(ctx, target, names...)
	cl.Close()
	if err != nil {
		return fmt.Errorf("ListOffsetsAfterMilli(%d): %w", target, err)
	}
	for _, c := range codecs {
		lo, ok := listed.Lookup(topics[c.name], 0)
		if !ok || lo.Err != nil || lo.Offset != roundtripTimestampIndex {
			problems = append(problems, fmt.Errorf("%s: ListOffsetsAfterMilli(%d) gave %+v, expected offset %d", c.name, target, lo, roundtripTimestampIndex))
		}
	}
	byTime, err := readFrom(ctx, bootstrap, names, kgo.NewOffset().AfterMilli(target), 1, requests)
	if err != nil {
		return err
	}
	for _, c := range codecs {
		if got := byTime[topics[c.name]][0].Offset; got != roundtripTimestampIndex {
			problems = append(problems, fmt.Errorf("%s: consuming AfterMilli(%d) read offset %d first, expected %d", c.name, target, got, roundtripTimestampIndex))
		}
	}
	fmt.Printf("read back in %d ms\n", time.Since(started).Milliseconds())
	return errors.Join(problems...)
}

func produceAll(ctx context.Context, bootstrap, topic string, codec kgo.CompressionCodec, messages []message, hook kgo.Hook) error {
	cl, err := newClient(bootstrap,
		kgo.WithHooks(hook),
		kgo.DefaultProduceTopic(topic),
		kgo.AllowAutoTopicCreation(),
		kgo.DisableIdempotentWrite(),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerBatchCompression(codec),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(20*time.Millisecond),
		// A new topic has no leader in the first metadata answer; the default 5 s between
		// metadata requests would make every codec wait that long.
		kgo.MetadataMinAge(100*time.Millisecond),
		// In a cluster the partition's leader may learn of the new topic a moment after the
		// broker that answered Metadata: more than the default 4 tries (100 ms apart) ride that out.
		kgo.UnknownTopicRetries(50),
	)
	if err != nil {
		return err
	}
	defer cl.Close()
	offsets := make([]int64, len(messages))
	errs := make([]error, len(messages))
	var wg sync.WaitGroup
	for i, m := range messages {
		wg.Add(1)
		rec := &kgo.Record{Key: m.key, Value: m.value, Headers: m.headers, Timestamp: m.timestamp, Partition: 0}
		cl.Produce(ctx, rec, func(r *kgo.Record, err error) {
			defer wg.Done()
			offsets[i], errs[i] = r.Offset, err
		})
	}
	wg.Wait()
	for i := range messages {
		if errs[i] != nil {
			return fmt.Errorf("record %d: %w", i, errs[i])
		}
		if offsets[i] != int64(i) {
			return fmt.Errorf("record %d acknowledged at offset %d, expected %d (offsets must run 0, 1, 2, ... in send order)", i, offsets[i], i)
		}
	}
	return nil
}

// readFrom consumes partition 0 of each topic from start, without a group, until each has want
// records; it fails after readIdle without progress.
func readFrom(ctx context.Context, bootstrap string, topics []string, start kgo.Offset, want int, hook kgo.Hook) (map[string][]*kgo.Record, error) {
	parts := map[string]map[int32]kgo.Offset{}
	for _, t := range topics {
		parts[t] = map[int32]kgo.Offset{0: start}
	}
	cl, err := newClient(bootstrap, kgo.WithHooks(hook), kgo.ConsumePartitions(parts), kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	out := map[string][]*kgo.Record{}
	lastProgress := time.Now()
	for {
		var pending []string
		for _, t := range topics {
			if len(out[t]) < want {
				pending = append(pending, t)
			}
		}
		if len(pending) == 0 {
			return out, nil
		}
		if time.Since(lastProgress) > readIdle {
			sort.Strings(pending)
			return out, fmt.Errorf("nothing more read in %s from %s", readIdle, strings.Join(pending, ", "))
		}
		pollCtx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		fetches := cl.PollFetches(pollCtx)
		cancel()
		if ctx.Err() != nil {
			return out, ctx.Err()
		}
		var fetchErr error
		fetches.EachError(func(t string, p int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) && fetchErr == nil {
				fetchErr = fmt.Errorf("fetch %s[%d]: %w", t, p, err)
			}
		})
		if fetchErr != nil {
			return out, fetchErr
		}
		fetches.EachRecord(func(r *kgo.Record) {
			if len(out[r.Topic]) < want {
				out[r.Topic] = append(out[r.Topic], r)
				lastProgress = time.Now()
			}
		})
	}
}

func compare(codec string, messages []message, records []*kgo.Record) []error {
	var problems []error
	if len(records) != len(messages) {
		problems = append(problems, fmt.Errorf("%s: read back %d records, expected %d", codec, len(records), len(messages)))
	}
	for i := 0; i < len(records) && i < len(messages) && len(problems) < 5; i++ {
		r, m := records[i], messages[i]
		stored := "?"
		if ct := int(r.Attrs.CompressionType()); ct < len(codecNames) {
			stored = codecNames[ct]
		}
		switch {
		case r.Offset != int64(i):
			problems = append(problems, fmt.Errorf("%s: record %d has offset %d, expected %d", codec, i, r.Offset, i))
		case !sameBytes(r.Key, m.key):
			problems = append(problems, fmt.Errorf("%s: offset %d: key %s, expected %s", codec, i, show(r.Key), show(m.key)))
		case !sameBytes(r.Value, m.value):
			problems = append(problems, fmt.Errorf("%s: offset %d: value %s, expected %s", codec, i, show(r.Value), show(m.value)))
		case !sameHeaders(r.Headers, m.headers):
			problems = append(problems, fmt.Errorf("%s: offset %d: headers %v, expected %v", codec, i, r.Headers, m.headers))
		case r.Timestamp.UnixMilli() != m.timestamp.UnixMilli():
			problems = append(problems, fmt.Errorf("%s: offset %d: timestamp %d, expected %d", codec, i, r.Timestamp.UnixMilli(), m.timestamp.UnixMilli()))
		case stored != codec:
			// The broker must keep batches as produced (topic compression.type=producer).
			problems = append(problems, fmt.Errorf("%s: offset %d came back in a %s batch", codec, i, stored))
		}
	}
	return problems
}

// sameBytes tells null (nil) from empty, which the wire does too.
func sameBytes(a, b []byte) bool {
	return (a == nil) == (b == nil) && bytes.Equal(a, b)
}

func sameHeaders(a, b []kgo.RecordHeader) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Key != b[i].Key || !bytes.Equal(a[i].Value, b[i].Value) {
			return false
		}
	}
	return true
}

func show(b []byte) string {
	if b == nil {
		return "null"
	}
	return fmt.Sprintf("%d bytes %q", len(b), b[:min(len(b), 24)])
}

// makeMessages: keys and values mixing text and arbitrary bytes; every 10th key null, record 1
// with an empty value and record 2 with a null one; headers with a repeated name and an empty
// value; timestamps an hour back, timestampStepMs apart.
func makeMessages(count int, seed int64) []message {
	rnd := rand.New(rand.NewSource(seed))
	words := []string{"kafka", "gregor", "offset", "batch", "record", "header", "ü€✓"}
	base := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	out := make([]message, count)
	for i := range out {
		var key []byte
		if i%10 != 0 {
			key = []byte("key-" + strconv.Itoa(i))
			if i%3 == 0 {
				tail := make([]byte, 4)
				rnd.Read(tail)
				key = append(key, tail...)
			}
		}
		r := rnd.Float64()
		n := 1 + rnd.Intn(120)
		if r < 0.05 {
			n = 1 + rnd.Intn(2000)
		}
		var value []byte
		if r < 0.5 {
			var sb strings.Builder
			for sb.Len() < n {
				sb.WriteString(words[rnd.Intn(len(words))])
				sb.WriteByte(' ')
			}
			value = []byte(sb.String())[:n]
		} else {
			value = make([]byte, n)
			rnd.Read(value)
		}
		switch i {
		case 1:
			value = []byte{}
		case 2:
			value = nil
		}
		out[i] = message{
			key:   key,
			value: value,
			headers: []kgo.RecordHeader{
				{Key: "compat", Value: []byte("roundtrip")},
				{Key: "seq", Value: []byte(strconv.Itoa(i))},
				{Key: "dup", Value: []byte("1")},
				{Key: "dup", Value: []byte("2")},
				{Key: "empty", Value: []byte{}},
			},
			timestamp: base.Add(time.Duration(i*timestampStepMs) * time.Millisecond),
		}
	}
	return out
}
