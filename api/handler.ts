/**
 * What every API handler exports. The registry of handlers is both the dispatch
 * table and the source of the ApiVersions answer, so the broker advertises
 * exactly the versions some handler serves.
 */
import type { Logger } from 'pino';
import type { MessageDecl } from '../wire/schema.js';
import type { MetadataStore } from '../cluster/metadata-image.js';
import type { ReplicaManager } from '../cluster/replica-manager.js';

export interface BrokerSettings {
  readonly nodeId: number;
  readonly autoCreateTopicsEnable: boolean;
  readonly numPartitions: number;
  readonly defaultReplicationFactor: number;
}

/** What a handler may reach: the cluster's services, never sockets or files. */
export interface BrokerServices {
  readonly settings: BrokerSettings;
  readonly metadata: MetadataStore;
  /** The partitions this broker holds: the only way to their logs. */
  readonly replicas: ReplicaManager;
  readonly log: Logger;
  /** The advertised versions table, built from the registry. */
  readonly apiVersions: readonly ApiVersionRange[];
}

export interface RequestContext {
  readonly apiVersion: number;
  readonly correlationId: number;
  readonly clientId: string | null;
  /** Listener the connection came in on, to answer with the matching advertised address. */
  readonly listener: string;
  readonly clientHost: string;
  readonly services: BrokerServices;
}

export interface ApiVersionRange {
  readonly apiKey: number;
  readonly minVersion: number;
  readonly maxVersion: number;
}

/** Returned by a handler whose request gets no response (Produce with acks=0). */
export const NO_RESPONSE: unique symbol = Symbol('no response');

export interface ApiHandler<Req = any, Res = any> {
  readonly apiKey: number;
  readonly name: string;
  readonly request: MessageDecl;
  readonly response: MessageDecl;
  /** Always 0 so that old clients keep their features (see CLIENT-MATRIX traps 1 and 2). */
  readonly minVersion: number;
  readonly maxVersion: number;
  handle(req: Req, ctx: RequestContext): Promise<Res | typeof NO_RESPONSE> | Res | typeof NO_RESPONSE;
  /** The response that reports `errorCode` for the whole request, used when `handle` fails unexpectedly. */
  errorResponse(req: Req, errorCode: number, ctx: RequestContext): Res;
}

export function defineHandler<Req, Res>(h: ApiHandler<Req, Res>): ApiHandler<Req, Res> {
  return h;
}
