/**
 * The stored batches whose down-conversion is pinned by golden bytes from
 * Kafka's own converter (see run.mjs beside this file). Deterministic: fixed
 * timestamps, offsets and payloads.
 */
import { buildBatch, Compression, writeBatchCrc } from '../../../wire/record-batch.js';

export interface DownConvertCase {
  readonly name: string;
  readonly toMagic: 0 | 1;
  readonly firstOffset: bigint;
  readonly batches: Buffer;
}

function records(n: number, opts: { nullKey?: number; nullValue?: number; headers?: boolean } = {}) {
  return Array.from({ length: n }, (_, i) => ({
    key: i === opts.nullKey ? null : `key-${i}`,
    value: i === opts.nullValue ? null : `value-${i}-${'x'.repeat(i * 7)}`,
    timestamp: 1_700_000_000_000n + BigInt(i * 13),
    ...(opts.headers ? { headers: [{ key: 'h', value: `hv${i}` }] } : {}),
  }));
}

function stored(baseOffset: bigint, compression: Compression, n: number, extra: Parameters<typeof records>[1] = {}, logAppendTime = false): Buffer {
  const b = buildBatch({ records: records(n, extra), compression, baseOffset, partitionLeaderEpoch: 0, logAppendTime });
  if (logAppendTime) {
    b.writeBigInt64BE(1_700_000_099_999n, 35);
    writeBatchCrc(b, 0, b.length);
  }
  return b;
}

export function downConvertCases(): DownConvertCase[] {
  const plain = Buffer.concat([stored(5n, Compression.None, 3, { nullKey: 1, nullValue: 2 }), stored(8n, Compression.None, 2)]);
  const out: DownConvertCase[] = [];
  for (const toMagic of [0, 1] as const) {
    out.push({ name: `plain-m${toMagic}-from5`, toMagic, firstOffset: 5n, batches: plain });
    out.push({ name: `plain-m${toMagic}-from6`, toMagic, firstOffset: 6n, batches: plain });
    out.push({ name: `gzip-m${toMagic}`, toMagic, firstOffset: 11n, batches: stored(10n, Compression.Gzip, 4) });
    out.push({ name: `snappy-m${toMagic}`, toMagic, firstOffset: 10n, batches: stored(10n, Compression.Snappy, 4) });
    out.push({ name: `lz4-m${toMagic}`, toMagic, firstOffset: 10n, batches: stored(10n, Compression.Lz4, 4) });
    out.push({ name: `headers-m${toMagic}`, toMagic, firstOffset: 0n, batches: stored(0n, Compression.None, 2, { headers: true }) });
  }
  out.push({ name: 'logappendtime-plain-m1', toMagic: 1, firstOffset: 0n, batches: stored(0n, Compression.None, 2, {}, true) });
  out.push({ name: 'logappendtime-gzip-m1', toMagic: 1, firstOffset: 0n, batches: stored(0n, Compression.Gzip, 2, {}, true) });
  return out;
}
