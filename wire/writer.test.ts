import { describe, expect, it } from 'vitest';
import { codecFor } from './codec.js';
import { finishFrame, startResponse } from './headers.js';
import { FetchResponse } from './messages/fetch-response.js';
import { Reader } from './reader.js';
import { ATTACH_MIN_BYTES, Writer } from './writer.js';

const big = (n: number, fill: number): Buffer => Buffer.alloc(n, fill);

describe('Writer.attach', () => {
  it('keeps large buffers uncopied among the chunks, in order, and finish() joins them', () => {
    const records = big(ATTACH_MIN_BYTES * 2, 0xab);
    const w = new Writer(16);
    w.int32(7).attach(records).int16(3).attach(big(ATTACH_MIN_BYTES, 0xcd)).int8(1);
    const chunks = w.finishChunks();
    expect(chunks.map((c) => c.length)).toEqual([4, records.length, 2, ATTACH_MIN_BYTES, 1]);
    expect(chunks[1]).toBe(records);
    const joined = w.finish();
    expect(joined.length).toBe(4 + records.length + 2 + ATTACH_MIN_BYTES + 1);
    expect(joined.readInt32BE(0)).toBe(7);
    expect(joined.readInt16BE(4 + records.length)).toBe(3);
    expect(joined[joined.length - 1]).toBe(1);
  });

  it('copies small buffers, so a caller reusing one cannot change what was written', () => {
    const scratch = Buffer.from('abc');
    const w = new Writer(4);
    w.attach(scratch);
    scratch.write('xyz');
    expect(w.finishChunks()).toHaveLength(1);
    expect(w.finish().toString()).toBe('abc');
  });

  it('counts attached bytes in a frame size, and reset() forgets them', () => {
    const w = new Writer(8);
    const start = startResponse(w, 42, 0);
    w.bytesAttached(big(ATTACH_MIN_BYTES + 5, 1));
    finishFrame(w, start);
    const frame = w.finish();
    expect(frame.readInt32BE(0)).toBe(frame.length - 4);
    w.reset();
    w.int8(9);
    expect(w.finishChunks()).toEqual([Buffer.from([9])]);
  });

  it('encodes a Fetch answer whose records arrive as their own chunk and decode back the same', () => {
    const records = big(64 * 1024, 0x5a);
    for (const version of [4, 12, 16]) {
      const codec = codecFor(FetchResponse, version);
      const w = new Writer(64);
      codec.encode(w, {
        responses: [{ topic: 't', partitions: [{ partitionIndex: 0, highWatermark: 1n, records }] }],
      });
      const chunks = w.finishChunks();
      expect(chunks).toContain(records);
      const decoded = codec.decode(new Reader(Buffer.concat(chunks))) as { responses: { partitions: { records: Buffer }[] }[] };
      expect(decoded.responses[0]!.partitions[0]!.records.equals(records)).toBe(true);
    }
  });
});
