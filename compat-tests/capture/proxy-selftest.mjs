#!/usr/bin/env node
// Checks the capture proxy against the reference broker with hand-built requests:
// pipelined frames written one byte at a time must be split and recorded exactly, and
// an acks=0 Produce (which gets no answer) must not shift the request/response pairing.
//
// Usage: node compat-tests/capture/proxy-selftest.mjs [--upstream host:port]

import assert from 'node:assert/strict';
import net from 'node:net';
import { startReferenceKafka } from '../lib/reference-kafka.mjs';
import { startCaptureProxy } from './proxy.mjs';

function frame(apiKey, apiVersion, correlationId, body = Buffer.alloc(0)) {
  const clientId = Buffer.from('selftest');
  const header = Buffer.alloc(10);
  header.writeInt16BE(apiKey, 0);
  header.writeInt16BE(apiVersion, 2);
  header.writeInt32BE(correlationId, 4);
  header.writeInt16BE(clientId.length, 8);
  const payload = Buffer.concat([header, clientId, body]);
  const size = Buffer.alloc(4);
  size.writeInt32BE(payload.length, 0);
  return Buffer.concat([size, payload]);
}

// Produce v3, acks=0, to a topic that does not exist: Kafka sends nothing back.
function produceAcks0Body() {
  const b = Buffer.alloc(2 + 2 + 4 + 4);
  b.writeInt16BE(-1, 0); // transactional_id null
  b.writeInt16BE(0, 2); // acks
  b.writeInt32BE(1000, 4); // timeout_ms
  b.writeInt32BE(0, 8); // no topics
  return b;
}

// Reads `count` response frames; gives up after the deadline.
function exchange(port, bytes, count, timeoutMs = 10_000) {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: '127.0.0.1', port });
    const got = [];
    let buf = Buffer.alloc(0);
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`only ${got.length}/${count} responses before timeout`));
    }, timeoutMs);
    socket.on('error', reject);
    socket.once('connect', async () => {
      for (let i = 0; i < bytes.length; i++) {
        socket.write(bytes.subarray(i, i + 1));
        if (i % 16 === 0) await new Promise((r) => setImmediate(r));
      }
    });
    socket.on('data', (c) => {
      buf = Buffer.concat([buf, c]);
      while (buf.length >= 4 && buf.length >= 4 + buf.readInt32BE(0)) {
        const n = buf.readInt32BE(0);
        got.push(buf.subarray(4, 4 + n));
        buf = buf.subarray(4 + n);
      }
      if (got.length === count) {
        clearTimeout(timer);
        socket.end();
        resolve(got);
      }
    });
  });
}

const argv = process.argv.slice(2);
let kafka = null;
let upstream;
const at = argv.indexOf('--upstream');
if (at >= 0) {
  const [host, port] = argv[at + 1].split(':');
  upstream = { host, port: Number(port) };
} else {
  kafka = await startReferenceKafka();
  upstream = { host: kafka.host, port: kafka.port };
  console.log(`reference kafka ${kafka.version} ready ${kafka.bootstrap}`);
}

const proxy = await startCaptureProxy({ upstreamHost: upstream.host, upstreamPort: upstream.port });
let failed = false;
try {
  const bytes = Buffer.concat([
    frame(18, 0, 101),
    frame(0, 3, 102, produceAcks0Body()),
    frame(3, 0, 103, Buffer.from([0, 0, 0, 0])),
  ]);
  const responses = await exchange(proxy.port, bytes, 2);
  await new Promise((r) => setTimeout(r, 100));
  const conns = proxy.frames();
  assert.equal(conns.length, 1, 'one connection recorded');
  const ex = conns[0].exchanges;
  console.log(
    ex.map((e) => `${e.index} ${e.apiName} v${e.apiVersion} corr ${e.correlationId} ` +
      `req ${e.request.length}B resp ${e.response ? `${e.response.length}B` : 'none'}`).join('\n'),
  );
  assert.deepEqual(ex.map((e) => [e.apiKey, e.apiVersion, e.correlationId]), [[18, 0, 101], [0, 3, 102], [3, 0, 103]]);
  assert.deepEqual(ex[0].request, bytes.subarray(4, 4 + bytes.readInt32BE(0)), 'request bytes kept exactly');
  assert.deepEqual(ex[0].response, responses[0], 'ApiVersions response bytes kept exactly');
  assert.equal(ex[0].response.readInt16BE(4), 0, 'ApiVersions v0 error_code 0');
  assert.equal(ex[1].response, null);
  assert.equal(ex[1].noResponse, true, 'acks=0 Produce marked as unanswered');
  assert.deepEqual(ex[2].response, responses[1], 'Metadata paired past the unanswered Produce');
  assert.equal(ex[2].response.readInt32BE(0), 103);
  assert.equal(conns[0].unmatchedResponses.length, 0);
  console.log('proxy selftest passed');
} catch (err) {
  failed = true;
  console.error(`proxy selftest FAILED: ${err.message}`);
} finally {
  await proxy.close();
  if (kafka) await kafka.stop();
}
process.exit(failed ? 1 : 0);
