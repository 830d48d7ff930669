// The txn-cluster scenario's plan and checks for the Node clients; lib/txn_cluster.py is the
// same for the Python clients, and the Java and Go clients follow it in their own language.
//
// Transactions whose partition leader, transaction coordinator and group coordinator are
// three different brokers (a cluster of at least 3; fewer answers exit 3):
// 1. Fresh topics IN (3 partitions, replication factor 3, min.insync.replicas=2) and OUT
//    (3 partitions, replication factor 3); IN's partitions must be led by three brokers.
// 2. A transactional id T and a group G whose coordinators are two different brokers, so the
//    third leads one partition of IN. Where the client has no FindCoordinator call, the
//    coordinator of a key is the leader of partition coordinatorPartition(key, n) of
//    __transaction_state (T) or __consumer_offsets (G).
// 3. Producer T: transaction A (5 records to each partition of IN) committed, B aborted, C
//    committed. Values name the transaction, partition and sequence: "A-p0-3".
// 4. read_committed sees exactly A and C, read_uncommitted A, B and C, each once, in order.
// 5. A consumer in group G (read_committed, classic protocol, no automatic commits) copies IN
//    to OUT upper-cased, same partition, one transaction of T per poll with the consumer's
//    positions sent to it; the first transaction carrying records is aborted after its records
//    are written, and the consumer rewound to the offsets before that poll.
// 6. OUT read_committed holds each committed record of IN upper-cased once, in IN's order; OUT
//    read_uncommitted the aborted copies too; G's committed offsets are IN's end offsets.

export const BROKERS = 3;
export const PARTITIONS = 3;
export const REPLICATION = 3;
export const IN_CONFIG = { 'min.insync.replicas': '2' };
export const PER_PARTITION = 5;
/** The transactions of step 3, in order. */
export const TXNS = [
  { name: 'A', commit: true },
  { name: 'B', commit: false },
  { name: 'C', commit: true },
];
/** How many candidate ids are tried for a transaction and a group coordinator on two brokers. */
export const CANDIDATES = 50;
/** The whole scenario gives up after this. */
export const BUDGET_MS = 100_000;
/** One wait (leaders, reading a topic to its end) gives up after this. */
export const WAIT_MS = 20_000;
/** The copy loop gives up after this. */
export const COPY_MS = 60_000;

export const value = (txn, partition, k) => `${txn}-p${partition}-${k}`;
export const transform = (v) => v.toUpperCase();

/** Map partition -> values of IN in production order: A and C, or A, B and C. */
export function inputValues({ committedOnly }) {
  const out = new Map(Array.from({ length: PARTITIONS }, (_, p) => [p, []]));
  for (const { name, commit } of TXNS) {
    if (committedOnly && !commit) continue;
    for (let k = 0; k < PER_PARTITION; k++) for (let p = 0; p < PARTITIONS; p++) out.get(p).push(value(name, p, k));
  }
  return out;
}

/** Java's String.hashCode(): over UTF-16 code units, in 32-bit two's complement. */
export function javaStringHash(s) {
  let h = 0;
  for (let i = 0; i < s.length; i++) h = (Math.imul(31, h) + s.charCodeAt(i)) | 0;
  return h;
}

/**
 * The partition of __consumer_offsets (a group id) or __transaction_state (a transactional
 * id) that owns `key`: Kafka's abs(hash) % partitions, with abs(-2^31) counting as 0.
 *
 *   coordinatorPartition('group', 50)               // 98629247 % 50 = 47
 *   coordinatorPartition('polygenelubricants', 50)  // its hash is -2^31: 0
 */
export function coordinatorPartition(key, partitions) {
  const h = javaStringHash(key);
  return (h === -2147483648 ? 0 : Math.abs(h)) % partitions;
}

/**
 * Candidate pairs (T, G) = (`${prefix}-t<i>`, `${prefix}-g<i>`) until their coordinators
 * (from the given functions of an id) differ: { txnId, groupId, txnCoordinator,
 * groupCoordinator }, or null after CANDIDATES tries.
 */
export function pickIds(prefix, txnCoordinatorOf, groupCoordinatorOf) {
  for (let i = 0; i < CANDIDATES; i++) {
    const txnId = `${prefix}-t${i}`;
    const groupId = `${prefix}-g${i}`;
    const txnCoordinator = txnCoordinatorOf(txnId);
    const groupCoordinator = groupCoordinatorOf(groupId);
    if (txnCoordinator !== groupCoordinator) return { txnId, groupId, txnCoordinator, groupCoordinator };
  }
  return null;
}

/** The partitions in `leaders` (Map partition -> broker) led by `broker`, as text. */
export function ledBy(leaders, broker) {
  const ps = [...leaders].filter(([, b]) => b === broker).map(([p]) => p);
  return ps.length ? ps.join(',') : 'none';
}

/**
 * Problems for each partition whose values (Map partition -> values) differ from the
 * expected list: what was expected, what was seen, and where they first differ.
 */
export function compare(label, expected, got) {
  const problems = [];
  for (let p = 0; p < PARTITIONS; p++) {
    const want = expected.get(p) ?? [];
    const saw = got.get(p) ?? [];
    let i = 0;
    while (i < want.length && i < saw.length && want[i] === saw[i]) i++;
    if (i === want.length && i === saw.length) continue;
    problems.push(
      `${label} partition ${p}: expected ${want.length} records [${want.join(', ')}], saw ${saw.length} [${saw.join(', ')}]; ` +
        `first difference at position ${i}: expected ${want[i] ?? 'nothing'}, saw ${saw[i] ?? 'nothing'}`,
    );
  }
  return problems;
}

export const count = (values) => [...values.values()].reduce((n, v) => n + v.length, 0);
