// A raw Kafka client on gregor's codec (dist/wire, `npm run build` first), for capture tools:
// one connection, one request at a time, any API the declarations know.
//
//   const p = await Probe.connect('127.0.0.1:9092');
//   const res = await p.request(68, 1, { groupId: 'g', ... });   // every field of that version
//   p.close();
import { createConnection } from 'node:net';

const dist = new URL('../../dist/wire/', import.meta.url);
const { codecFor } = await import(new URL('codec.js', dist).href);
const { Reader } = await import(new URL('reader.js', dist).href);
const { Writer } = await import(new URL('writer.js', dist).href);
const headers = await import(new URL('headers.js', dist).href);
const { API_MESSAGES } = await import(new URL('messages/index.js', dist).href);

export class Probe {
  static async connect(bootstrap) {
    const i = bootstrap.lastIndexOf(':');
    const socket = createConnection({ host: bootstrap.slice(0, i), port: Number(bootstrap.slice(i + 1)) });
    await new Promise((resolve, reject) => {
      socket.once('connect', resolve);
      socket.once('error', reject);
    });
    return new Probe(socket);
  }

  constructor(socket) {
    this.socket = socket;
    this.buf = Buffer.alloc(0);
    this.waiting = null;
    this.correlationId = 0;
    socket.on('data', (d) => {
      this.buf = Buffer.concat([this.buf, d]);
      this.deliver();
    });
    socket.on('close', () => this.waiting?.reject(new Error('connection closed by the broker')));
    socket.on('error', () => {});
  }

  deliver() {
    if (!this.waiting || this.buf.length < 4) return;
    const size = this.buf.readInt32BE(0);
    if (this.buf.length < 4 + size) return;
    const frame = this.buf.subarray(4, 4 + size);
    this.buf = this.buf.subarray(4 + size);
    const w = this.waiting;
    this.waiting = null;
    w.resolve(frame);
  }

  /** Sends `body` as (apiKey, version) and resolves the decoded answer. */
  async request(apiKey, version, body) {
    const api = API_MESSAGES.find((a) => a.apiKey === apiKey);
    const correlationId = ++this.correlationId;
    const w = new Writer();
    const start = headers.startRequest(w, { apiKey, apiVersion: version, correlationId, clientId: 'probe' }, headers.requestHeaderVersion(apiKey, version, api.request));
    codecFor(api.request, version).encode(w, body);
    headers.finishFrame(w, start);
    const frame = await new Promise((resolve, reject) => {
      this.waiting = { resolve, reject };
      this.socket.write(w.finish());
      this.deliver();
    });
    const r = new Reader(frame);
    r.int32();
    if (headers.responseHeaderVersion(apiKey, version, api.response) >= 1) headers.skipTaggedFields(r);
    return codecFor(api.response, version).decode(r);
  }

  close() {
    this.socket.destroy();
  }
}
