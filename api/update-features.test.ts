import { describe, expect, it } from 'vitest';
import { ErrorCode } from '../wire/errors.js';
import { updateFeatures } from './update-features.js';
import { unregisterBroker } from './unregister-broker.js';
import { callAt, testServices } from './test-services.js';

const update = (feature: string, maxVersionLevel: number, upgradeType = 1) => ({ feature, maxVersionLevel, allowDowngrade: upgradeType !== 1, upgradeType });

describe('UpdateFeatures', () => {
  const services = testServices();
  const ask = (version: number, ...featureUpdates: ReturnType<typeof update>[]) => callAt(updateFeatures, version, { timeoutMs: 5000, featureUpdates, validateOnly: false }, services);

  it('takes an update to the level a feature is at, answering per feature before v2, as Kafka 4.4 does', async () => {
    expect(await ask(1, update('transaction.version', 2))).toEqual({ throttleTimeMs: 0, errorCode: 0, errorMessage: null, results: [{ feature: 'transaction.version', errorCode: 0, errorMessage: 'NONE' }] });
    expect(await ask(2, update('group.version', 1))).toEqual({ throttleTimeMs: 0, errorCode: 0, errorMessage: null, results: [] });
    expect((await ask(0, update('metadata.version', 33))).errorCode).toBe(0);
  });

  it("refuses the whole request with Kafka's messages for an unknown feature, a level out of range, and a downgrade without its type", async () => {
    const refused = async (...u: ReturnType<typeof update>[]) => {
      const r = await ask(1, ...u);
      return [r.errorCode, r.errorMessage, r.results.length];
    };
    const head = 'The update failed for all features since the following feature had an error: Invalid update version';
    expect(await refused(update('no.such.feature', 1))).toEqual([ErrorCode.INVALID_UPDATE_VERSION, `${head} 1 for feature no.such.feature. Local controller 1 does not support this feature.`, 0]);
    expect(await refused(update('group.version', 1), update('transaction.version', 5))).toEqual([
      ErrorCode.INVALID_UPDATE_VERSION,
      `${head} 5 for feature transaction.version. Local controller 1 only supports versions 0-2`,
      0,
    ]);
    expect(await refused(update('transaction.version', 1))).toEqual([
      ErrorCode.INVALID_UPDATE_VERSION,
      `${head} 1 for feature transaction.version. Can't downgrade the version of this feature without setting the upgrade type to either safe or unsafe downgrade.`,
      0,
    ]);
    // A level gregor could run at but does not switch to.
    expect((await refused(update('transaction.version', 1, 2)))[0]).toBe(ErrorCode.INVALID_UPDATE_VERSION);
  });
});

describe('UnregisterBroker', () => {
  it('answers NONE for a registered (live) broker, which stays registered, and BROKER_ID_NOT_REGISTERED with Kafka\'s message otherwise', async () => {
    const services = testServices();
    expect(await callAt(unregisterBroker, 0, { brokerId: 1 }, services)).toEqual({ throttleTimeMs: 0, errorCode: 0, errorMessage: '' });
    expect(await callAt(unregisterBroker, 0, { brokerId: 7 }, services)).toEqual({ throttleTimeMs: 0, errorCode: ErrorCode.BROKER_ID_NOT_REGISTERED, errorMessage: 'Broker ID 7 is not currently registered' });
    expect(services.metadata.image().brokers.has(1)).toBe(true);
  });
});
