/**
 * Crash torture through the real broker process: raw Produce v9 traffic on a few
 * pipelined connections, the broker SIGKILLed in the middle of it, then every
 * acknowledged batch looked up in the partition logs: present at the offset the
 * broker answered, byte for byte as sent (apart from the base offset and leader
 * epoch the broker assigns), in a contiguous run of batches with valid CRCs.
 *
 * SIGKILL ends the process but keeps the kernel's page cache, so what this
 * checks is a process crash (written data survives, the process's own state and
 * unfinished work do not), not a power loss; storage's crash tests cover torn
 * and unsynced writes with an injected file system.
 *
 * Rounds alternate how the data comes back after the kill: either the logs are
 * opened in this process straight away (recovery runs here), or the broker is
 * restarted on the directory (recovery runs there), stopped cleanly, and then
 * opened here. Acknowledgements accumulate over the rounds, so a later round
 * also checks that a restarted broker never hands out an acknowledged offset
 * again. PRODUCE_CRASH_SEED=<n> replays a seed (timing still varies).
 */
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { codecFor } from '../wire/codec.js';
import { finishFrame, skipTaggedFields, startRequest } from '../wire/headers.js';
import { ProduceRequest } from '../wire/messages/produce-request.js';
import { ProduceResponse } from '../wire/messages/produce-response.js';
import { Reader } from '../wire/reader.js';
import { BATCH_LENGTH, Compression, LOG_OVERHEAD, MAGIC, MAGIC_V2, PARTITION_LEADER_EPOCH, batchCrcValid, buildBatch, readBatchHeader } from '../wire/record-batch.js';
import { seededRandom } from '../wire/seeded-random.js';
import { Writer } from '../wire/writer.js';
import { ZERO_UUID } from '../wire/uuid.js';
import { DEFAULT_LOG_CONFIG } from '../storage/log-config.js';
import { PartitionLog } from '../storage/log.js';
import { BrokerProcess, FrameClient, bundleProblem, metadataV0Request } from './test-utils.js';

const TOPIC = 'crash';
const PARTITIONS = 3;
const ROUNDS = 10;
const CONNECTIONS = 3;
/** Requests each connection keeps in flight. */
const DEPTH = 8;

const seed = Number(process.env.PRODUCE_CRASH_SEED ?? Math.floor(Math.random() * 2 ** 31));

/** What identifies a batch whatever offset it is stored at: every byte but baseOffset and partitionLeaderEpoch. */
function digest(batch: Buffer): string {
  return createHash('sha256').update(batch.subarray(BATCH_LENGTH, PARTITION_LEADER_EPOCH)).update(batch.subarray(MAGIC)).digest('hex');
}

interface Acked {
  digest: string;
  records: number;
  round: number;
}

function produceFrame(correlationId: number, acks: number, parts: { index: number; batch: Buffer }[]): Buffer {
  const w = new Writer(1024 + parts.reduce((n, p) => n + p.batch.length, 0));
  const start = startRequest(w, { apiKey: 0, apiVersion: 9, correlationId, clientId: 'produce-crash' }, 2);
  codecFor<ProduceRequest>(ProduceRequest, 9).encode(w, {
    transactionalId: null,
    acks,
    timeoutMs: 30_000,
    topicData: [{ name: TOPIC, topicId: ZERO_UUID, partitionData: parts.map((p) => ({ index: p.index, records: p.batch })) }],
  });
  finishFrame(w, start);
  return w.finish();
}

function parseProduceResponse(frame: Buffer): { correlationId: number; body: ProduceResponse } {
  const r = new Reader(frame);
  const correlationId = r.int32();
  skipTaggedFields(r);
  const body = codecFor<ProduceResponse>(ProduceResponse, 9).decode(r);
  if (r.error) throw new Error(`undecodable Produce response: ${r.error}`);
  return { correlationId, body };
}

/**
 * Drives one connection until `stop()` says so or the connection dies, keeping
 * DEPTH requests in flight; every partition answered without error is recorded
 * in `acked`. A connection the broker's death closes simply ends.
 */
async function drive(
  client: FrameClient,
  rnd: () => number,
  acks: number,
  round: number,
  nextId: () => number,
  stop: () => boolean,
  acked: Map<number, Map<bigint, Acked>>,
): Promise<number> {
  const inFlight: { id: number; parts: { index: number; digest: string; records: number }[] }[] = [];
  let answered = 0;
  const sendOne = (): void => {
    const id = nextId();
    const parts: { index: number; batch: Buffer }[] = [];
    for (let p = 0; p < PARTITIONS; p++) {
      if (parts.length > 0 && rnd() < 0.5) continue;
      const n = 1 + Math.floor(rnd() * 20);
      const records = Array.from({ length: n }, (_, i) => ({
        key: rnd() < 0.2 ? null : `r${round}-${id}-${i}`,
        value: Buffer.from(Array.from({ length: Math.floor(rnd() * 300) }, () => Math.floor(rnd() * 256))),
      }));
      parts.push({ index: p, batch: buildBatch({ records, compression: rnd() < 0.2 ? Compression.Gzip : Compression.None }) });
    }
    client.send(produceFrame(id, acks, parts));
    inFlight.push({ id, parts: parts.map((p) => ({ index: p.index, digest: digest(p.batch), records: readBatchHeader(p.batch).recordCount })) });
  };
  while (!stop() && inFlight.length < DEPTH) sendOne();
  for (;;) {
    let frame: Buffer;
    try {
      frame = await client.nextFrame(10_000);
    } catch (err) {
      if (client.isClosed) return answered; // closed by the kill
      throw err;
    }
    const sent = inFlight.shift();
    const { correlationId, body } = parseProduceResponse(frame);
    expect(correlationId, `seed ${seed}: responses out of order`).toBe(sent?.id);
    const answers = body.responses[0]!.partitionResponses;
    for (const part of sent!.parts) {
      const a = answers.find((x) => x.index === part.index)!;
      expect(a.errorCode, `seed ${seed}: round ${round} partition ${part.index} error ${a.errorCode} ${a.errorMessage ?? ''}`).toBe(0);
      const byOffset = acked.get(part.index)!;
      const earlier = byOffset.get(a.baseOffset);
      expect(earlier, `seed ${seed}: offset ${a.baseOffset} of partition ${part.index} acknowledged twice (rounds ${earlier?.round} and ${round})`).toBeUndefined();
      byOffset.set(a.baseOffset, { digest: part.digest, records: part.records, round });
    }
    answered++;
    if (!stop()) sendOne();
    else if (inFlight.length === 0) return answered;
  }
}

/**
 * Opens each partition's log here (recovering it if the broker died), checks
 * that it is one contiguous run of valid batches, and that each acknowledged
 * batch is there at its offset with identical content. Closes the logs cleanly.
 */
function verify(dataDir: string, acked: Map<number, Map<bigint, Acked>>): { stored: number; acked: number } {
  let storedBatches = 0;
  let ackedBatches = 0;
  for (let p = 0; p < PARTITIONS; p++) {
    const log = PartitionLog.open(join(dataDir, `${TOPIC}-${p}`), DEFAULT_LOG_CONFIG);
    const stored = new Map<bigint, { digest: string; records: number }>();
    try {
      let offset = log.logStartOffset;
      while (offset < log.logEndOffset) {
        const buf = log.readBuffer(offset, 4 << 20);
        expect(buf !== null && buf.length > 0, `seed ${seed}: partition ${p} has nothing to read at ${offset} below its end ${log.logEndOffset}`).toBe(true);
        for (let pos = 0; pos < buf!.length; ) {
          const h = readBatchHeader(buf!, pos);
          const size = LOG_OVERHEAD + h.batchLength;
          expect(h.magic).toBe(MAGIC_V2);
          expect(h.baseOffset, `seed ${seed}: partition ${p} has a gap or overlap at ${offset}`).toBe(offset);
          expect(batchCrcValid(buf!, pos, size), `seed ${seed}: partition ${p} batch at ${h.baseOffset} has a bad CRC`).toBe(true);
          stored.set(h.baseOffset, { digest: digest(buf!.subarray(pos, pos + size)), records: h.recordCount });
          offset = h.baseOffset + BigInt(h.lastOffsetDelta) + 1n;
          pos += size;
        }
      }
      expect(offset).toBe(log.logEndOffset);
    } finally {
      log.close();
    }
    for (const [at, a] of acked.get(p)!) {
      const s = stored.get(at);
      expect(s, `seed ${seed}: partition ${p} lost the batch acknowledged at offset ${at} in round ${a.round}`).toBeDefined();
      expect(s!.digest, `seed ${seed}: partition ${p} batch at ${at} (round ${a.round}) differs from what was sent`).toBe(a.digest);
      expect(s!.records).toBe(a.records);
    }
    storedBatches += stored.size;
    ackedBatches += acked.get(p)!.size;
  }
  return { stored: storedBatches, acked: ackedBatches };
}

describe('produce through a broker process that is SIGKILLed', () => {
  const dirs: string[] = [];
  const live: BrokerProcess[] = [];

  beforeAll(() => {
    const problem = bundleProblem();
    if (problem) throw new Error(problem);
  });

  afterAll(async () => {
    await Promise.all(live.map((b) => b.stop('SIGKILL').catch(() => {})));
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  it(`keeps every acknowledged batch at its offset, intact (seed ${seed})`, async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'gregor-produce-crash-'));
    dirs.push(dataDir);
    const rnd = seededRandom(seed);
    const acked = new Map<number, Map<bigint, Acked>>(Array.from({ length: PARTITIONS }, (_, p) => [p, new Map()]));
    let correlation = 0;
    let totalAnswered = 0;

    for (let round = 0; round < ROUNDS; round++) {
      const broker = new BrokerProcess(dataDir, { 'num.partitions': String(PARTITIONS) });
      live.push(broker);
      const port = Number((await broker.ready()).split(':')[1]);
      if (round === 0) {
        // Metadata v0 may create the topic; it exists once the answer arrives.
        const c = await FrameClient.connect(port);
        c.send(metadataV0Request(++correlation, [TOPIC]));
        await c.nextFrame();
        c.destroy();
      }
      const acks = rnd() < 0.3 ? -1 : 1;
      const runMs = 150 + Math.floor(rnd() * 900);
      const clients = await Promise.all(Array.from({ length: CONNECTIONS }, () => FrameClient.connect(port)));
      let stopped = false;
      const drivers = clients.map((c) => drive(c, rnd, acks, round, () => ++correlation, () => stopped, acked));
      await new Promise((r) => setTimeout(r, runMs));
      // The kill lands while every connection still has requests in flight.
      await broker.stop('SIGKILL');
      stopped = true;
      const answered = (await Promise.all(drivers)).reduce((a, b) => a + b, 0);
      for (const c of clients) c.destroy();
      expect(answered, `seed ${seed}: round ${round} got no answers in ${runMs} ms:\n${broker.output()}`).toBeGreaterThan(0);
      totalAnswered += answered;

      if (round % 2 === 1) {
        // The broker recovers the logs itself; a clean stop then leaves them closed cleanly.
        const again = new BrokerProcess(dataDir, { 'num.partitions': String(PARTITIONS) });
        live.push(again);
        await again.ready();
        expect(await again.stop('SIGTERM'), `clean stop failed:\n${again.output()}`).toBe(0);
      }
      const { stored, acked: ackedCount } = verify(dataDir, acked);
      expect(stored).toBeGreaterThanOrEqual(ackedCount);
    }
    expect(totalAnswered).toBeGreaterThan(ROUNDS);
  }, 90_000);
});
