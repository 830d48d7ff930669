import { afterEach, describe, expect, it } from 'vitest';
import { ErrorCode } from '../wire/errors.js';
import { buildImage, type MetadataStore } from '../cluster/metadata/metadata-image.js';
import { listConfigResources } from './list-config-resources.js';
import { callAt, testServices, type TestServices } from './test-services.js';

const open: TestServices[] = [];
afterEach(async () => {
  for (const s of open.splice(0)) await s.close();
});

const TOPIC = 2;
const BROKER = 4;
const BROKER_LOGGER = 8;
const CLIENT_METRICS = 16;
const GROUP = 32;

async function services(topics: string[] = []): Promise<TestServices> {
  const s = testServices();
  open.push(s);
  for (const name of topics) await s.metadata.createTopic({ name, numPartitions: 1, replicationFactor: 1 });
  return s;
}

/** [type, name] of each resource listed at v1, and the error code. */
async function list(s: TestServices, resourceTypes: number[], listener?: string) {
  const r = await callAt(listConfigResources, 1, { resourceTypes }, s, listener ? { listener } : {});
  return { errorCode: r.errorCode, listed: r.configResources.map((c) => [c.resourceType, c.resourceName]) };
}

describe('ListConfigResources', () => {
  it('v1 lists every topic, internal ones too, for TOPIC', async () => {
    const s = await services(['orders', '__consumer_offsets', 'audit']);
    expect(await list(s, [TOPIC])).toEqual({
      errorCode: ErrorCode.NONE,
      listed: [[TOPIC, '__consumer_offsets'], [TOPIC, 'audit'], [TOPIC, 'orders']],
    });
  });

  it('v1 lists the broker for BROKER and BROKER_LOGGER, by node id', async () => {
    const s = await services();
    expect(await list(s, [BROKER])).toEqual({ errorCode: ErrorCode.NONE, listed: [[BROKER, '1']] });
    expect(await list(s, [BROKER_LOGGER])).toEqual({ errorCode: ErrorCode.NONE, listed: [[BROKER_LOGGER, '1']] });
  });

  it('v1 lists nothing for CLIENT_METRICS: gregor has no client-metrics subscriptions', async () => {
    const s = await services(['orders']);
    expect(await list(s, [CLIENT_METRICS])).toEqual({ errorCode: ErrorCode.NONE, listed: [] });
  });

  it('v1 lists every group that has configs for GROUP, existing or not, first in Kafka\'s order; a group whose configs are all deleted is gone', async () => {
    const s = await services(['orders']);
    expect(await list(s, [GROUP])).toEqual({ errorCode: ErrorCode.NONE, listed: [] });
    await s.metadata.alterGroupConfigs('shares', { 'share.auto.offset.reset': 'earliest' });
    await s.metadata.alterGroupConfigs('a-group', { 'consumer.session.timeout.ms': '50000' });
    await s.metadata.alterGroupConfigs('gone', { 'consumer.session.timeout.ms': '50000' });
    await s.metadata.alterGroupConfigs('gone', {});
    expect(await list(s, [TOPIC, GROUP])).toEqual({ errorCode: ErrorCode.NONE, listed: [[GROUP, 'a-group'], [GROUP, 'shares'], [TOPIC, 'orders']] });
  });

  it('v1 lists type by type in Kafka\'s order whatever the request\'s, each type once; no type means every type', async () => {
    const s = await services(['orders']);
    const everything = { errorCode: ErrorCode.NONE, listed: [[BROKER_LOGGER, '1'], [BROKER, '1'], [TOPIC, 'orders']] };
    expect(await list(s, [TOPIC, BROKER, TOPIC, BROKER_LOGGER])).toEqual(everything);
    expect(await list(s, [])).toEqual(everything);
  });

  it('v1 refuses the whole request with UNSUPPORTED_VERSION when a type is not one it lists', async () => {
    const s = await services(['orders']);
    for (const types of [[0], [1], [3], [64], [-1], [TOPIC, 99]]) {
      expect(await list(s, types)).toEqual({ errorCode: ErrorCode.UNSUPPORTED_VERSION, listed: [] });
    }
  });

  it('v0 lists client-metrics resources only: none, whatever topics and brokers exist', async () => {
    const s = await services(['orders']);
    expect(await callAt(listConfigResources, 0, { resourceTypes: [] }, s)).toEqual({ throttleTimeMs: 0, errorCode: ErrorCode.NONE, configResources: [] });
  });

  it('lists the brokers reachable on the client\'s listener, in node id order', async () => {
    const s = testServices();
    open.push(s);
    const broker = (nodeId: number, listeners: string[]) => ({ nodeId, rack: null, endpoints: listeners.map((listener) => ({ listener, host: `b${nodeId}`, port: 9092 })) });
    const image = buildImage('c', 1, [broker(3, ['PLAINTEXT', 'INTERNAL']), broker(1, ['PLAINTEXT', 'INTERNAL']), broker(2, ['PLAINTEXT'])], []);
    const cluster = { ...s, metadata: { ...s.metadata, image: () => image } as MetadataStore };
    expect((await list(cluster, [BROKER])).listed).toEqual([[BROKER, '1'], [BROKER, '2'], [BROKER, '3']]);
    expect((await list(cluster, [BROKER], 'INTERNAL')).listed).toEqual([[BROKER, '1'], [BROKER, '3']]);
  });
});
