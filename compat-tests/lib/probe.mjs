// A raw Kafka client on gregor's codec (dist/wire, `npm run build` first): one connection, one
// request at a time, any API and version the declarations know. Used by the wire-probe client and
// the capture tools.
//
//   const p = await Probe.connect('127.0.0.1:9092');
//   const res = await p.request(68, 1, { groupId: 'g', ... });   // every field of that version
//   p.close();
import { createConnection } from 'node:net';
import { expect } from './scenario.mjs';

const dist = new URL('../../dist/wire/', import.meta.url);
const { codecFor } = await import(new URL('codec.js', dist).href);
const { Reader } = await import(new URL('reader.js', dist).href);
const { Writer } = await import(new URL('writer.js', dist).href);
const headers = await import(new URL('headers.js', dist).href);
const { API_MESSAGES } = await import(new URL('messages/index.js', dist).href);

/** One connection; requests are sent one at a time and their answers decoded. */
export class Probe {
  static async connect(bootstrap) {
    const [host, port] = [bootstrap.slice(0, bootstrap.lastIndexOf(':')), Number(bootstrap.slice(bootstrap.lastIndexOf(':') + 1))];
    const socket = createConnection({ host, port });
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

  /** Sends `body` as (apiKey, version) and decodes the answer with `answerVersion` (default: the same). */
  async request(apiKey, version, body, answerVersion = version) {
    const { request: reqDecl, response: resDecl } = API_MESSAGES.find((a) => a.apiKey === apiKey);
    const correlationId = ++this.correlationId;
    const w = new Writer();
    const hv = version <= reqDecl.versions[1] ? headers.requestHeaderVersion(apiKey, version, reqDecl) : 2;
    const start = headers.startRequest(w, { apiKey, apiVersion: version, correlationId, clientId: 'wire-probe' }, hv);
    if (version <= reqDecl.versions[1]) codecFor(reqDecl, version).encode(w, body);
    headers.finishFrame(w, start);
    const frame = await new Promise((resolve, reject) => {
      this.waiting = { resolve, reject };
      this.socket.write(w.finish());
      this.deliver();
    });
    const r = new Reader(frame);
    expect(r.int32() === correlationId, `answer carries another correlation id`);
    if (headers.responseHeaderVersion(apiKey, answerVersion, resDecl) >= 1) headers.skipTaggedFields(r);
    const value = codecFor(resDecl, answerVersion).decode(r);
    expect(r.error === null, `answer to api ${apiKey} v${version} does not decode: ${r.error}`);
    return value;
  }

  close() {
    this.socket.destroy();
  }
}
