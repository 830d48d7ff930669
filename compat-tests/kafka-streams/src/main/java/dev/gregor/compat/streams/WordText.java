package dev.gregor.compat.streams;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;

/**
 * The scenario's input: lines of words from a fixed vocabulary, drawn by java.util.Random with a
 * fixed seed. Random's sequence for a seed is specified by the JDK, so every run writes the same
 * text and the exact count of every word is known before anything is produced.
 */
final class WordText {
    private static final String[] VOCABULARY = {
        "anchor", "birch", "cobalt", "delta", "ember", "fjord", "granite", "harbor", "indigo", "juniper",
        "kestrel", "lantern", "meadow", "nickel", "orchid", "pebble", "quartz", "raven", "saffron", "timber",
        "umber", "velvet", "willow", "xenon", "yarrow", "zephyr", "aspen", "bramble", "cinder", "dune",
    };

    final List<String> lines;
    /** Word to the number of times it occurs in {@link #lines}, sorted by word. */
    final Map<String, Long> expected;
    final long words;

    private WordText(List<String> lines, Map<String, Long> expected, long words) {
        this.lines = lines;
        this.expected = expected;
        this.words = words;
    }

    /**
     * {@code count} lines of 2 to 10 words. Words are picked with a skew (u squared) so the
     * counts range from a few hundred to a few thousand, which makes an extra or a missing
     * increment visible on every word rather than only on rare ones.
     */
    static WordText generate(long seed, int count) {
        Random random = new Random(seed);
        List<String> lines = new ArrayList<>(count);
        Map<String, Long> expected = new TreeMap<>();
        long words = 0;
        for (int i = 0; i < count; i++) {
            int n = 2 + random.nextInt(9);
            StringBuilder line = new StringBuilder();
            for (int j = 0; j < n; j++) {
                double u = random.nextDouble();
                String word = VOCABULARY[(int) (VOCABULARY.length * u * u)];
                if (j > 0) {
                    line.append(' ');
                }
                line.append(word);
                expected.merge(word, 1L, Long::sum);
                words++;
            }
            lines.add(line.toString());
        }
        return new WordText(Collections.unmodifiableList(lines), Collections.unmodifiableMap(expected), words);
    }

    /** The number of words in lines [from, to). */
    long wordsIn(int from, int to) {
        long n = 0;
        for (int i = from; i < to; i++) {
            n += lines.get(i).split(" ").length;
        }
        return n;
    }
}
