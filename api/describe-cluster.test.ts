import { afterEach, describe, expect, it } from 'vitest';
import { ErrorCode } from '../wire/errors.js';
import { decode, encode } from '../wire/codec.js';
import { DescribeClusterResponse as DescribeClusterResponseDecl, type DescribeClusterResponse } from '../wire/messages/describe-cluster-response.js';
import { CLUSTER_AUTHORIZED_OPERATIONS, describeCluster } from './describe-cluster.js';
import { ctxFor, testServices, type TestServices } from './test-services.js';

const open: TestServices[] = [];
afterEach(async () => {
  for (const s of open.splice(0)) await s.close();
});

function services(): TestServices {
  const s = testServices();
  open.push(s);
  return s;
}

async function ask(s: TestServices, version: number, endpointType = 1, includeClusterAuthorizedOperations = false, listener?: string) {
  return (await describeCluster.handle({ includeClusterAuthorizedOperations, endpointType, includeFencedBrokers: false }, ctxFor(s, version, listener))) as DescribeClusterResponse;
}

describe('DescribeCluster', () => {
  it('lists the brokers at the address advertised for the client\'s listener, the controller and the cluster id', async () => {
    const s = services();
    expect(await ask(s, 1)).toEqual({
      throttleTimeMs: 0,
      errorCode: 0,
      errorMessage: null,
      endpointType: 1,
      clusterId: 'test-cluster-id-00000',
      controllerId: 1,
      brokers: [{ brokerId: 1, host: '127.0.0.1', port: 9092, rack: null, isFenced: false }],
      clusterAuthorizedOperations: -2147483648,
    });
    expect((await ask(s, 0, 1, false, 'INTERNAL')).brokers).toEqual([{ brokerId: 1, host: 'broker-1.internal', port: 19092, rack: null, isFenced: false }]);
  });

  it('answers the authorized operations Kafka 4.0 answers without an authorizer, when asked', async () => {
    const s = services();
    expect(CLUSTER_AUTHORIZED_OPERATIONS).toBe(8096);
    expect((await ask(s, 1, 1, true)).clusterAuthorizedOperations).toBe(8096);
  });

  it('refuses requests for controllers or an unknown endpoint type, with Kafka\'s messages', async () => {
    const s = services();
    expect(await ask(s, 1, 2)).toMatchObject({
      errorCode: ErrorCode.MISMATCHED_ENDPOINT_TYPE,
      errorMessage: 'The request was sent to an endpoint of type BROKER, but we wanted an endpoint of type CONTROLLER',
      clusterId: '',
      controllerId: -1,
      brokers: [],
    });
    expect(await ask(s, 1, 3)).toMatchObject({ errorCode: ErrorCode.UNSUPPORTED_ENDPOINT_TYPE, errorMessage: 'Unsupported endpoint type 3' });
  });

  it('encodes its answer at both versions', async () => {
    const s = services();
    for (const v of [0, 1]) {
      const res = await ask(s, v, 1, true);
      const back = decode<DescribeClusterResponse>(DescribeClusterResponseDecl, v, encode(DescribeClusterResponseDecl, v, res));
      expect(back.ok && back.value).toEqual(res);
    }
  });
});
