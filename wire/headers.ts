/**
 * Request and response headers. The header version follows from the body's:
 * a flexible request body comes with request header v2 and gets response header v1,
 * except ApiVersions, whose response header is always v0 so that a client that
 * sent a version the broker does not know can still read the answer.
 */
import { Reader } from './reader.js';
import { Writer } from './writer.js';
import { isFlexible } from './codec.js';
import type { MessageDecl } from './schema.js';

export const API_VERSIONS_KEY = 18;
const CONTROLLED_SHUTDOWN_KEY = 7;

export interface RequestHeader {
  apiKey: number;
  apiVersion: number;
  correlationId: number;
  clientId: string | null;
}

/** Reads the fixed part that every request header version shares. */
export function readHeaderStart(r: Reader): Pick<RequestHeader, 'apiKey' | 'apiVersion' | 'correlationId'> {
  const apiKey = r.int16();
  const apiVersion = r.int16();
  const correlationId = r.int32();
  return { apiKey, apiVersion, correlationId };
}

export function requestHeaderVersion(apiKey: number, apiVersion: number, request: MessageDecl): number {
  if (apiKey === CONTROLLED_SHUTDOWN_KEY && apiVersion === 0) return 0;
  return isFlexible(request, apiVersion) ? 2 : 1;
}

export function responseHeaderVersion(apiKey: number, apiVersion: number, response: MessageDecl): number {
  if (apiKey === API_VERSIONS_KEY) return 0;
  return isFlexible(response, apiVersion) ? 1 : 0;
}

/**
 * Reads the rest of a request header after `readHeaderStart`. client_id keeps the
 * classic int16 length even in header v2; v2 then carries a tagged-field section
 * whose fields are all unknown to us and skipped.
 */
export function readHeaderRest(r: Reader, headerVersion: number): string | null {
  if (headerVersion === 0) return null;
  const clientId = r.string();
  if (headerVersion >= 2) skipTaggedFields(r);
  return clientId;
}

export function skipTaggedFields(r: Reader): void {
  const count = r.uvarint();
  for (let i = 0; i < count && !r.error; i++) {
    r.uvarint();
    const size = r.uvarint();
    r.raw(size);
  }
}

/**
 * Starts a response frame: reserves the size prefix and writes the header. Finish
 * the body on the same writer, then call `finishFrame`.
 */
export function startResponse(w: Writer, correlationId: number, headerVersion: number): number {
  const start = w.pos;
  w.int32(0).int32(correlationId);
  if (headerVersion >= 1) w.uvarint(0);
  return start;
}

export function finishFrame(w: Writer, start: number): void {
  w.patchInt32(start, w.lengthSince(start) - 4);
}

/** Writes a whole request frame (used by tests and the benchmark's load generator). */
export function startRequest(w: Writer, h: RequestHeader, headerVersion: number): number {
  const start = w.pos;
  w.int32(0).int16(h.apiKey).int16(h.apiVersion).int32(h.correlationId);
  if (headerVersion >= 1) w.string(h.clientId);
  if (headerVersion >= 2) w.uvarint(0);
  return start;
}
