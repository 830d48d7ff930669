// Checks shared by the Node clients' `txn` and `idempotent-cut` scenarios: what one
// partition's log (as a consumer read it) may and must hold. lib/exactly_once.py is the
// same for the Python clients.

// How many problems one check lists before it stops.
const MAX_PROBLEMS = 8;

/**
 * Checks one partition as read back, record by record in offset order. `order` lists every
 * value that may have been written to this partition, in the order the producer wrote them;
 * `allowed` (default: all of them) the ones this reader may see; `required` the ones it must
 * see; `offsets` (optional) the offset the producer was acknowledged for a value. Returns the
 * problems found, [] when the log is right: every value read is allowed, none twice, every
 * required one present, in production order, each at its acknowledged offset.
 *
 *   checkPartition('p0 read_committed', { order: ['a', 'b', 'c'], allowed: new Set(['a', 'c']),
 *     required: new Set(['a', 'c']), read: [{ offset: 0, value: 'a' }, { offset: 4, value: 'c' }] })  // []
 */
export function checkPartition(label, { order, allowed = null, required, read, offsets = null }) {
  const problems = [];
  const add = (p) => {
    if (problems.length < MAX_PROBLEMS) problems.push(`${label}: ${p}`);
  };
  const index = new Map(order.map((v, i) => [v, i]));
  const seen = new Map();
  let lastIndex = -1;
  let lastOffset = -1;
  for (const { offset, value } of read) {
    if (offset <= lastOffset) add(`offset ${offset} read after offset ${lastOffset}`);
    lastOffset = offset;
    if (seen.has(value)) {
      add(`duplicate: ${value} at offset ${offset}, already at offset ${seen.get(value)}`);
      continue;
    }
    seen.set(value, offset);
    if (!index.has(value)) {
      add(`unexpected value ${value} at offset ${offset}`);
      continue;
    }
    if (allowed && !allowed.has(value)) {
      add(`${value} at offset ${offset} must not be visible to this reader (aborted or never sent here)`);
      continue;
    }
    const i = index.get(value);
    if (i < lastIndex) add(`out of order: ${value} at offset ${offset} comes after ${order[lastIndex]}`);
    lastIndex = Math.max(lastIndex, i);
    const acked = offsets?.get(value);
    if (acked !== undefined && acked !== offset) add(`${value} is at offset ${offset}, but its produce was acknowledged with offset ${acked}`);
  }
  const missing = order.filter((v) => required.has(v) && !seen.has(v));
  if (missing.length) add(`${missing.length} missing, first ${missing.slice(0, 3).join(', ')}`);
  return problems;
}

/** Groups [{ partition, offset, value }] by partition, each in offset order as read. */
export function byPartition(records, partitions) {
  const out = new Map(Array.from({ length: partitions }, (_, p) => [p, []]));
  for (const r of records) {
    if (!out.has(r.partition)) out.set(r.partition, []);
    out.get(r.partition).push({ offset: r.offset, value: r.value });
  }
  return out;
}

/** The `idempotent-cut` production plan: records per send(), cuts wanted, and the time limit. */
export const CUT_PLAN = { partitions: 3, batch: 30, wantedCuts: 10, produceMs: 15_000 };

/**
 * The `idempotent-cut` production loop, whatever the client: numbered records `r-<n>`,
 * CUT_PLAN.batch per `send(messages)` round-robin over the partitions, until `proxy` made
 * CUT_PLAN.wantedCuts cuts with a Produce in flight, CUT_PLAN.produceMs passed, or five sends
 * failed even after the client's retries (which fails the scenario anyway). `send` gets
 * [{ partition, value }] and answers the acknowledgements [{ partition, baseOffset }], one per
 * partition of the send; an error it throws counts as a failed send (told with
 * `describe(err)`) unless `isFatal(err)` says to pass it on. Answers what the check needs: the values in production order per
 * partition, the acknowledged ones with their offsets, and the failures.
 */
export async function produceThroughCuts({ proxy, send, isFatal = () => false, describe = (err) => `${err?.name ?? 'Error'}: ${err?.message ?? err}` }) {
  const order = new Map(Array.from({ length: CUT_PLAN.partitions }, (_, p) => [p, []]));
  const acked = new Set();
  const offsets = new Map();
  const failures = [];
  const started = Date.now();
  let next = 0;
  while (proxy.cuts() < CUT_PLAN.wantedCuts && Date.now() - started < CUT_PLAN.produceMs && failures.length < 5) {
    const messages = [];
    for (let k = 0; k < CUT_PLAN.batch; k++, next++) messages.push({ partition: next % CUT_PLAN.partitions, value: `r-${next}` });
    for (const m of messages) order.get(m.partition).push(m.value);
    try {
      for (const { partition, baseOffset } of await send(messages)) {
        messages.filter((m) => m.partition === partition).forEach((m, n) => {
          acked.add(m.value);
          offsets.set(m.value, Number(baseOffset) + n);
        });
      }
      const unacked = messages.find((m) => !acked.has(m.value));
      if (unacked) failures.push(`records ${messages[0].value}..: no acknowledgement for partition ${unacked.partition}`);
    } catch (err) {
      if (isFatal(err)) throw err;
      failures.push(`records ${messages[0].value}..${messages[messages.length - 1].value}: ${describe(err)}`);
    }
  }
  proxy.stopCutting();
  console.log(`${next} records sent in ${Date.now() - started} ms, ${acked.size} acknowledged; ${proxy.describe()}`);
  for (const f of failures.slice(0, 5)) console.log(`  send failed: ${f}`);
  return { order, acked, offsets, failures };
}
