/**
 * ListGroups (key 16), versions 0-5.
 * v1 adds the throttle time; v3 is flexible; v4 adds the states filter
 * (KIP-518) and each group's state; v5 the types filter and each group's
 * type (KIP-848; every group here is "classic").
 *
 * Lists the groups this broker coordinates, as Kafka's brokers each do; a
 * client asks every broker and merges.
 */
import { ListGroupsRequest } from '../wire/messages/list-groups-request.js';
import { ListGroupsResponse } from '../wire/messages/list-groups-response.js';
import { defineHandler } from './handler.js';

export const listGroups = defineHandler<ListGroupsRequest, ListGroupsResponse>({
  apiKey: 16,
  name: 'ListGroups',
  request: ListGroupsRequest,
  response: ListGroupsResponse,
  minVersion: 0,
  maxVersion: 5,
  handle(req, ctx) {
    const v = ctx.apiVersion;
    const groups = ctx.services.groups.listGroups(v >= 4 ? req.statesFilter : [], v >= 5 ? req.typesFilter : []);
    return { throttleTimeMs: 0, errorCode: 0, groups };
  },
  errorResponse: (_req, errorCode) => ({ throttleTimeMs: 0, errorCode, groups: [] }),
});
