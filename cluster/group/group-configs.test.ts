import { describe, expect, it } from 'vitest';
import { ErrorCode } from '../../wire/errors.js';
import {
  brokerConfigLookup,
  checkGroupConfigs,
  describeGroupConfigs,
  effectiveGroupConfig,
  GROUP_CONFIG_DESCRIBE_ORDER,
  GROUP_CONFIGS,
  isShareAutoOffsetReset,
  parseIsoDurationMs,
  type BrokerConfigLookup,
} from './group-configs.js';

/** A broker on Kafka 4.4's defaults (as gregor's config declares them), with `set` on top. */
function broker(set: Record<string, string> = {}): BrokerConfigLookup {
  const defaults: Record<string, string> = {
    'group.consumer.session.timeout.ms': '45000',
    'group.consumer.min.session.timeout.ms': '45000',
    'group.consumer.max.session.timeout.ms': '60000',
    'group.consumer.heartbeat.interval.ms': '5000',
    'group.consumer.min.heartbeat.interval.ms': '5000',
    'group.consumer.max.heartbeat.interval.ms': '15000',
    'group.share.session.timeout.ms': '45000',
    'group.share.min.session.timeout.ms': '45000',
    'group.share.max.session.timeout.ms': '60000',
    'group.share.heartbeat.interval.ms': '5000',
    'group.share.record.lock.duration.ms': '30000',
    'group.share.min.record.lock.duration.ms': '15000',
    'group.share.max.record.lock.duration.ms': '60000',
    'group.share.delivery.count.limit': '5',
    'group.share.min.delivery.count.limit': '2',
    'group.share.max.delivery.count.limit': '10',
    'group.streams.num.standby.replicas': '0',
    'group.streams.max.standby.replicas': '2',
    'group.streams.assignors': 'sticky',
  };
  const all = { ...defaults, ...set };
  return { value: (name) => all[name] ?? null };
}

const check = (configs: Record<string, string>, b = broker()) => checkGroupConfigs(configs, b);
const refused = (message: string) => ({ ok: false, errorCode: ErrorCode.INVALID_CONFIG, message });

describe('group configs', () => {
  it('declares every key of Kafka 4.4.0, and lists the ones that are not internal', () => {
    expect(GROUP_CONFIGS.map((d) => d.name)).toEqual([
      'consumer.session.timeout.ms',
      'consumer.heartbeat.interval.ms',
      'consumer.assignment.interval.ms',
      'consumer.assignor.offload.enable',
      'share.session.timeout.ms',
      'share.heartbeat.interval.ms',
      'share.record.lock.duration.ms',
      'share.delivery.count.limit',
      'share.partition.max.record.locks',
      'share.auto.offset.reset',
      'share.isolation.level',
      'share.renew.acknowledge.enable',
      'share.assignment.interval.ms',
      'share.assignor.offload.enable',
      'streams.session.timeout.ms',
      'streams.heartbeat.interval.ms',
      'streams.num.standby.replicas',
      'streams.initial.rebalance.delay.ms',
      'streams.assignment.interval.ms',
      'streams.assignor.offload.enable',
      'streams.task.offset.interval.ms',
      'streams.num.warmup.replicas',
      'streams.rack.aware.assignment.tags',
      'streams.acceptable.recovery.lag',
      'streams.assignor.name',
      'errors.deadletterqueue.topic.name',
      'errors.deadletterqueue.copy.record.enable',
    ]);
    expect([...GROUP_CONFIG_DESCRIBE_ORDER].sort()).toEqual(GROUP_CONFIGS.filter((d) => !d.internal).map((d) => d.name).sort());
  });

  it('takes good overrides', () => {
    expect(check({})).toEqual({ ok: true });
    expect(
      check({
        'share.auto.offset.reset': 'by_duration:P1DT2H',
        'share.record.lock.duration.ms': '15000',
        'share.delivery.count.limit': ' 10 ',
        'share.isolation.level': 'read_committed',
        'consumer.session.timeout.ms': '60000',
        'streams.num.standby.replicas': '2',
        'streams.assignor.name': 'sticky',
        'streams.rack.aware.assignment.tags': 'zone, rack',
        'errors.deadletterqueue.topic.name': 'dlq.orders',
      }),
    ).toEqual({ ok: true });
  });

  it('refuses what Kafka 4.4 refuses, with its messages', () => {
    const cases: [Record<string, string>, string][] = [
      [{ 'share.nope': '1' }, 'Unknown group config name: share.nope'],
      [{ 'share.record.lock.duration.ms': 'abc' }, 'Invalid value abc for configuration share.record.lock.duration.ms: Not a number of type INT'],
      [{ 'share.record.lock.duration.ms': '999' }, 'Invalid value 999 for configuration share.record.lock.duration.ms: Value must be at least 1000'],
      [{ 'share.record.lock.duration.ms': '5000' }, 'share.record.lock.duration.ms must be in the range 15000 to 60000 inclusive.'],
      [{ 'share.delivery.count.limit': '11' }, 'share.delivery.count.limit must be in the range 2 to 10 inclusive.'],
      [{ 'streams.num.standby.replicas': '3' }, 'streams.num.standby.replicas must be less than or equal to 2'],
      [{ 'streams.task.offset.interval.ms': '1000' }, 'streams.task.offset.interval.ms must be greater than or equal to 15000'],
      [
        { 'share.auto.offset.reset': 'none' },
        "Invalid value none for configuration share.auto.offset.reset: Invalid value `none` for configuration share.auto.offset.reset. The value must be either 'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS>'.",
      ],
      [{ 'share.isolation.level': 'READ_COMMITTED' }, 'Invalid value READ_COMMITTED for configuration share.isolation.level: String must be one of: read_committed, read_uncommitted'],
      [{ 'share.renew.acknowledge.enable': 'yes' }, 'Invalid value yes for configuration share.renew.acknowledge.enable: Expected value to be either true or false'],
      [{ 'streams.rack.aware.assignment.tags': 'a,b,a' }, 'streams.rack.aware.assignment.tags must not contain duplicate tag keys.'],
      [{ 'streams.rack.aware.assignment.tags': 'a,,b' }, "Configuration 'streams.rack.aware.assignment.tags' values must not be empty."],
      [{ 'streams.assignor.name': 'greedy' }, "streams.assignor.name 'greedy' is not a registered task assignor. Registered assignors are: [sticky]."],
      [{ 'errors.deadletterqueue.topic.name': '__dlq' }, "errors.deadletterqueue.topic.name: DLQ topic name must not start with '__'"],
      [{ 'share.heartbeat.interval.ms': '15001' }, 'share.heartbeat.interval.ms must be in the range 5000 to 15000 inclusive.'],
    ];
    const results = cases.map(([configs]) => check(configs));
    expect(results).toEqual(cases.map(([, message]) => refused(message)));
    // Kafka checks the bounds in its own order: the heartbeat before the session timeout.
    expect(check({ 'consumer.session.timeout.ms': '1', 'consumer.heartbeat.interval.ms': '1' })).toEqual(
      refused('consumer.heartbeat.interval.ms must be in the range 5000 to 15000 inclusive.'),
    );
  });

  it('refuses a session timeout not above the heartbeat interval, the broker\'s value standing in for the missing one', () => {
    const wide = broker({ 'group.share.min.session.timeout.ms': '1000', 'group.share.max.heartbeat.interval.ms': '60000' });
    expect(check({ 'share.session.timeout.ms': '5000' }, wide)).toEqual(refused('share.session.timeout.ms must be greater than share.heartbeat.interval.ms'));
    expect(check({ 'share.session.timeout.ms': '5001' }, wide)).toEqual({ ok: true });
    expect(check({ 'share.heartbeat.interval.ms': '45000' }, wide)).toEqual(refused('share.session.timeout.ms must be greater than share.heartbeat.interval.ms'));
  });

  it('bounds overrides by the broker\'s own min and max settings', () => {
    const b = broker({ 'group.share.min.record.lock.duration.ms': '1000', 'group.share.max.record.lock.duration.ms': '3600000' });
    expect(check({ 'share.record.lock.duration.ms': '5000' }, b)).toEqual({ ok: true });
    expect(check({ 'share.record.lock.duration.ms': '3600001' }, b)).toEqual(refused('share.record.lock.duration.ms must be in the range 1000 to 3600000 inclusive.'));
  });

  it('reads share.auto.offset.reset as Kafka does', () => {
    for (const ok of ['earliest', 'latest', 'by_duration:PT0S', 'by_duration:P2D', 'by_duration:PT1.5S', 'by_duration:pt1h']) expect(isShareAutoOffsetReset(ok), ok).toBe(true);
    for (const bad of ['none', 'Earliest', 'by_duration', 'by_duration:', 'by_duration:PT', 'by_duration:-PT1H', 'by_duration:P', 'by_duration:1h']) {
      expect(isShareAutoOffsetReset(bad), bad).toBe(false);
    }
    expect(parseIsoDurationMs('PT1H30M')).toBe(5_400_000);
    expect(parseIsoDurationMs('P1DT-1H')).toBe(82_800_000);
    expect(parseIsoDurationMs('PT1.25S')).toBe(1250);
  });

  it('describes overrides, else the broker\'s settings, else the key\'s own default, in Kafka\'s order', () => {
    const described = describeGroupConfigs(
      new Map([
        ['share.auto.offset.reset', 'earliest'],
        ['share.delivery.count.limit', '+3'],
        ['streams.num.warmup.replicas', '4'],
      ]),
      broker({ 'group.share.record.lock.duration.ms': '20000' }),
    );
    expect(described.map((c) => c.def.name)).toEqual(['streams.num.warmup.replicas', ...GROUP_CONFIG_DESCRIBE_ORDER]);
    const byName = new Map(described.map((c) => [c.def.name, [c.value, c.overridden]]));
    expect(byName.get('share.auto.offset.reset')).toEqual(['earliest', true]);
    expect(byName.get('share.delivery.count.limit')).toEqual(['3', true]);
    expect(byName.get('share.record.lock.duration.ms')).toEqual(['20000', false]);
    expect(byName.get('share.isolation.level')).toEqual(['read_uncommitted', false]);
    expect(byName.get('streams.assignor.name')).toEqual(['sticky', false]);
    expect(byName.get('streams.rack.aware.assignment.tags')).toEqual(['', false]);
  });

  it('resolves what a group runs with: its overrides, else the broker\'s settings, kept within the broker\'s bounds', () => {
    expect(effectiveGroupConfig(new Map(), broker())).toEqual({
      consumerSessionTimeoutMs: 45000,
      consumerHeartbeatIntervalMs: 5000,
      shareSessionTimeoutMs: 45000,
      shareHeartbeatIntervalMs: 5000,
      shareRecordLockDurationMs: 30000,
      shareAutoOffsetReset: 'latest',
      shareIsolationLevel: 'read_uncommitted',
      shareDeliveryCountLimit: 5,
      streamsSessionTimeoutMs: 45000,
      streamsHeartbeatIntervalMs: 5000,
      streamsNumStandbyReplicas: 0,
    });
    const b = broker({ 'group.share.record.lock.duration.ms': '20000', 'group.share.max.delivery.count.limit': '6' });
    const e = effectiveGroupConfig(
      new Map([
        ['share.auto.offset.reset', 'by_duration:PT5M'],
        ['share.isolation.level', 'read_committed'],
        ['share.delivery.count.limit', '8'],
        ['streams.num.standby.replicas', '1'],
      ]),
      b,
    );
    expect(e).toMatchObject({
      shareRecordLockDurationMs: 20000,
      shareAutoOffsetReset: 'by_duration:PT5M',
      shareIsolationLevel: 'read_committed',
      // Set when the broker allowed 10; the broker's bound now is 6.
      shareDeliveryCountLimit: 6,
      streamsNumStandbyReplicas: 1,
    });
  });

  it('resolves with Kafka\'s defaults for whatever a plain lookup of broker values leaves out', () => {
    const e = effectiveGroupConfig(new Map([['share.record.lock.duration.ms', '70000']]), brokerConfigLookup({ 'group.share.max.record.lock.duration.ms': 80000, 'group.streams.num.standby.replicas': 1 }));
    expect(e).toMatchObject({ shareRecordLockDurationMs: 70000, shareDeliveryCountLimit: 5, streamsNumStandbyReplicas: 1, consumerSessionTimeoutMs: 45000 });
    expect(effectiveGroupConfig(new Map([['share.record.lock.duration.ms', '70000']]), brokerConfigLookup({})).shareRecordLockDurationMs).toBe(60000);
  });
});
