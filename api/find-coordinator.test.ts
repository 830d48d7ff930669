import { afterEach, describe, expect, it } from 'vitest';
import { ErrorCode } from '../wire/errors.js';
import type { FindCoordinatorResponse } from '../wire/messages/find-coordinator-response.js';
import { findCoordinator, javaStringHashCode, partitionFor, shareCoordinatorKey } from './find-coordinator.js';
import { ctxFor, testServices, type TestServices } from './test-services.js';

let services: TestServices | null = null;
afterEach(async () => {
  await services?.close();
  services = null;
});

function request(fields: { key?: string; keyType?: number; coordinatorKeys?: string[] }) {
  return { key: fields.key ?? '', keyType: fields.keyType ?? 0, coordinatorKeys: fields.coordinatorKeys ?? [] };
}

describe('partitionFor', () => {
  it("hashes as Java's String.hashCode", () => {
    // Values printed by `java H.java` (OpenJDK 17) for s.hashCode().
    expect(javaStringHashCode('my-group')).toBe(-1906497762);
    expect(javaStringHashCode('console-consumer-1')).toBe(35782224);
    expect(javaStringHashCode('grüße-✓')).toBe(426800989);
    expect(javaStringHashCode('')).toBe(0);
  });

  it('maps a key to abs(hash) % partitions, with abs(Integer.MIN_VALUE) taken as 0', () => {
    expect(partitionFor('my-group', 50)).toBe(12);
    expect(partitionFor('console-consumer-1', 50)).toBe(24);
    // "polygenelubricants".hashCode() is Integer.MIN_VALUE.
    expect(javaStringHashCode('polygenelubricants')).toBe(-2147483648);
    expect(partitionFor('polygenelubricants', 50)).toBe(0);
  });
});

describe('FindCoordinator', () => {
  it('creates __consumer_offsets on first use, answers COORDINATOR_NOT_AVAILABLE, then this broker', async () => {
    services = testServices({ config: { 'offsets.topic.num.partitions': 7 } });
    const ctx = ctxFor(services, 3);
    const first = await findCoordinator.handle(request({ key: 'g1' }), ctx);
    expect(first).toMatchObject({ errorCode: ErrorCode.COORDINATOR_NOT_AVAILABLE, nodeId: -1, host: '', port: -1 });
    const topic = services.metadata.image().topics.get('__consumer_offsets');
    expect(topic?.partitions.length).toBe(7);
    expect(topic?.internal).toBe(true);
    expect(topic?.configs['cleanup.policy']).toBe('compact');
    const second = await findCoordinator.handle(request({ key: 'g1' }), ctx);
    expect(second).toMatchObject({ errorCode: ErrorCode.NONE, errorMessage: null, nodeId: 1, host: '127.0.0.1', port: 9092 });
  });

  it('answers with the address of the listener the client came in on', async () => {
    services = testServices();
    await findCoordinator.handle(request({ key: 'g' }), ctxFor(services, 0));
    const answer = await findCoordinator.handle(request({ key: 'g' }), ctxFor(services, 0, 'INTERNAL'));
    expect(answer).toMatchObject({ errorCode: ErrorCode.NONE, host: 'broker-1.internal', port: 19092 });
  });

  it('finds transaction coordinators on __transaction_state', async () => {
    services = testServices({ config: { 'transaction.state.log.num.partitions': 5 } });
    const ctx = ctxFor(services, 2);
    expect(await findCoordinator.handle(request({ key: 'tx-1', keyType: 1 }), ctx)).toMatchObject({
      errorCode: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    });
    const topic = services.metadata.image().topics.get('__transaction_state');
    expect(topic?.partitions.length).toBe(5);
    expect(services.metadata.image().topics.has('__consumer_offsets')).toBe(false);
    expect(await findCoordinator.handle(request({ key: 'tx-1', keyType: 1 }), ctx)).toMatchObject({ errorCode: ErrorCode.NONE, nodeId: 1 });
  });

  it('answers every key of a batched (v4+) request in its own entry', async () => {
    services = testServices();
    const ctx = ctxFor(services, 4);
    const first = (await findCoordinator.handle(request({ coordinatorKeys: ['a', 'b'] }), ctx)) as FindCoordinatorResponse;
    expect(first).toMatchObject({ errorCode: ErrorCode.NONE });
    // The first key triggered the creation; the second already finds the topic.
    expect(first.coordinators.map((c) => [c.key, c.errorCode])).toEqual([
      ['a', ErrorCode.COORDINATOR_NOT_AVAILABLE],
      ['b', ErrorCode.NONE],
    ]);
    const again = (await findCoordinator.handle(request({ coordinatorKeys: ['a', 'b'] }), ctx)) as FindCoordinatorResponse;
    expect(again.coordinators).toEqual([
      { key: 'a', nodeId: 1, host: '127.0.0.1', port: 9092, errorCode: 0, errorMessage: null },
      { key: 'b', nodeId: 1, host: '127.0.0.1', port: 9092, errorCode: 0, errorMessage: null },
    ]);
  });

  it('refuses an unknown key type with INVALID_REQUEST and creates nothing', async () => {
    services = testServices();
    const answer = await findCoordinator.handle(request({ key: 'x', keyType: 9 }), ctxFor(services, 3));
    expect(answer).toMatchObject({ errorCode: ErrorCode.INVALID_REQUEST, nodeId: -1 });
    expect(services.metadata.image().topics.size).toBe(0);
  });

  it('finds share coordinators (key type 2, v6) on __share_group_state, made with Kafka\'s configs for it', async () => {
    services = testServices({ config: { 'share.coordinator.state.topic.num.partitions': 7 } });
    const ctx = ctxFor(services, 6);
    const key = 'g:AAAAAAAAAAAAAAAAAAAAAg:3';
    const first = (await findCoordinator.handle(request({ keyType: 2, coordinatorKeys: [key] }), ctx)) as FindCoordinatorResponse;
    expect(first.coordinators).toEqual([{ key, errorCode: ErrorCode.COORDINATOR_NOT_AVAILABLE, errorMessage: expect.any(String), nodeId: -1, host: '', port: -1 }]);
    const topic = services.metadata.image().topics.get('__share_group_state')!;
    expect([topic.partitions.length, topic.internal]).toEqual([7, true]);
    expect(topic.configs).toMatchObject({ 'cleanup.policy': 'delete', 'compression.type': 'producer', 'segment.bytes': '104857600', 'min.insync.replicas': '2', 'retention.ms': '-1' });
    const second = (await findCoordinator.handle(request({ keyType: 2, coordinatorKeys: [key, 'no-partition', 'g:not-a-topic-id:1', ':AAAAAAAAAAAAAAAAAAAAAg:1'] }), ctx)) as FindCoordinatorResponse;
    expect(second.coordinators.map((c) => [c.key, c.errorCode, c.nodeId])).toEqual([
      [key, ErrorCode.NONE, 1],
      ['no-partition', ErrorCode.INVALID_REQUEST, -1],
      ['g:not-a-topic-id:1', ErrorCode.INVALID_REQUEST, -1],
      [':AAAAAAAAAAAAAAAAAAAAAg:1', ErrorCode.INVALID_REQUEST, -1],
    ]);
    // Key type 2 exists from v6 only.
    const old = (await findCoordinator.handle(request({ keyType: 2, coordinatorKeys: [key] }), ctxFor(services, 5))) as FindCoordinatorResponse;
    expect(old.coordinators[0]!.errorCode).toBe(ErrorCode.INVALID_REQUEST);
  });

  it('reads share coordinator keys as Kafka\'s SharePartitionKey does, hashing their canonical form', () => {
    expect(shareCoordinatorKey('g:AAAAAAAAAAAAAAAAAAAAAg:007')).toBe('g:AAAAAAAAAAAAAAAAAAAAAg:7');
    // The group id may hold ':'.
    expect(shareCoordinatorKey('a:b:AAAAAAAAAAAAAAAAAAAAAg:1')).toBe('a:b:AAAAAAAAAAAAAAAAAAAAAg:1');
    expect(shareCoordinatorKey(' :AAAAAAAAAAAAAAAAAAAAAg:1')).toBeNull();
    expect(shareCoordinatorKey('g:AAAAAAAAAAAAAAAAAAAAAg:x')).toBeNull();
    expect(shareCoordinatorKey('g:AAAAAAAAAAAAAAAAAAAAAg:99999999999')).toBeNull();
  });
});
