package dev.gregor.compat.streams;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.kafka.clients.consumer.ConsumerRecord;

/**
 * What a read_committed reader of the output topic has seen: the latest count per word, the
 * largest count ever seen per word, and every record that breaks exactly-once on its own.
 *
 * Invariant under exactly-once: one task owns a word, and its count only grows, so within the
 * word's output partition each committed count is larger than the one before it and never larger
 * than the word's number of occurrences in the input. A count that repeats or goes down means an
 * input was counted again after its output had been committed; one above the total, an input
 * counted twice.
 */
final class CountView {
    private static final int SAMPLE = 10;

    private final Map<String, Long> expected;
    private final Map<String, Long> latest = new TreeMap<>();
    private final Map<String, Long> max = new HashMap<>();
    private final List<String> regressions = new ArrayList<>();
    private final List<String> malformed = new ArrayList<>();
    private int regressionCount;
    private int malformedCount;
    private long records;

    CountView(Map<String, Long> expected) {
        this.expected = expected;
    }

    void add(ConsumerRecord<String, Long> r) {
        records++;
        String word = r.key();
        Long count = r.value();
        if (word == null || count == null || !expected.containsKey(word)) {
            malformedCount++;
            if (malformed.size() < SAMPLE) {
                malformed.add("partition " + r.partition() + " offset " + r.offset() + ": <" + word + ", " + count + ">");
            }
            if (word == null || count == null) {
                return;
            }
        }
        Long before = latest.put(word, count);
        if (before != null && count <= before) {
            regressionCount++;
            if (regressions.size() < SAMPLE) {
                regressions.add(word + ": " + before + " then " + count + " (partition " + r.partition() + " offset " + r.offset() + ")");
            }
        }
        max.merge(word, count, Math::max);
    }

    long records() {
        return records;
    }

    /** Words counted so far: the sum of the latest counts. */
    long processed() {
        long n = 0;
        for (long c : latest.values()) {
            n += c;
        }
        return n;
    }

    boolean exact() {
        return latest.equals(expected);
    }

    /** The largest amount by which any word's count went past its expected count (0 when none did). */
    long maxOvershoot() {
        long worst = 0;
        for (var e : max.entrySet()) {
            Long want = expected.get(e.getKey());
            if (want != null) {
                worst = Math.max(worst, e.getValue() - want);
            }
        }
        return worst;
    }

    /** Words whose latest count differs from the expected one, as "word latest/expected". */
    List<String> mismatches() {
        List<String> out = new ArrayList<>();
        for (var e : expected.entrySet()) {
            Long got = latest.get(e.getKey());
            if (!e.getValue().equals(got)) {
                out.add(e.getKey() + " " + (got == null ? "none" : got) + "/" + e.getValue());
            }
        }
        return out;
    }

    /** Words whose count ever went past the expected one, as "word max/expected". */
    List<String> overshoots() {
        List<String> out = new ArrayList<>();
        for (var e : new TreeMap<>(max).entrySet()) {
            Long want = expected.get(e.getKey());
            if (want != null && e.getValue() > want) {
                out.add(e.getKey() + " " + e.getValue() + "/" + want);
            }
        }
        return out;
    }

    int regressionCount() {
        return regressionCount;
    }

    List<String> regressionSample() {
        return regressions;
    }

    int malformedCount() {
        return malformedCount;
    }

    List<String> malformedSample() {
        return malformed;
    }
}
