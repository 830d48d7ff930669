/**
 * DeleteGroups (key 42), versions 0-3.
 * v1 changes nothing on the wire; v2 is flexible; v3 adds an error message
 * per group, which Kafka leaves null for these errors and so does gregor.
 *
 * Only an empty group is deleted (else NON_EMPTY_GROUP), with its committed
 * offsets; one this broker does not know is GROUP_ID_NOT_FOUND. A share
 * group's share-partition state is deleted through the persister before its
 * records get their tombstones, as Kafka does. Its group configs (the GROUP
 * config resource) stay, as Kafka 4.4 keeps them.
 */
import { ErrorCode } from '../wire/errors.js';
import { DeleteGroupsRequest } from '../wire/messages/delete-groups-request.js';
import { DeleteGroupsResponse } from '../wire/messages/delete-groups-response.js';
import { defineHandler } from './handler.js';

export const deleteGroups = defineHandler<DeleteGroupsRequest, DeleteGroupsResponse>({
  apiKey: 42,
  name: 'DeleteGroups',
  request: DeleteGroupsRequest,
  response: DeleteGroupsResponse,
  minVersion: 0,
  maxVersion: 3,
  async handle(req, ctx) {
    const seen = new Set<string>();
    const results = [];
    for (const groupId of req.groupsNames) {
      if (seen.has(groupId)) continue;
      seen.add(groupId);
      // A share group's share-partition state is deleted through the persister first.
      const groups = ctx.services.groups;
      const errorCode = groups.shares.enabled && groups.shares.has(groupId) ? await groups.shares.deleteGroup(groupId) : groups.deleteGroup(groupId);
      results.push({ groupId, errorCode });
    }
    // A deletion is answered once its tombstones are on every in-sync replica of the group's partition.
    const durable = await Promise.all(results.map((r) => (r.errorCode === ErrorCode.NONE ? ctx.services.groups.replicated(r.groupId) : r.errorCode)));
    return { throttleTimeMs: 0, results: results.map((r, i) => ({ groupId: r.groupId, errorCode: durable[i]!, errorMessage: null })) };
  },
  errorResponse: (req, errorCode) => ({ throttleTimeMs: 0, results: req.groupsNames.map((groupId) => ({ groupId, errorCode, errorMessage: null })) }),
});
