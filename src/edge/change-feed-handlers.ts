import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import type { ChangeLogService } from "../changes/change-log-service.js";
import type { LoggedChange } from "../changes/change-log.js";
import {
  ChangeSchema,
  RevocationSchema,
  type Change,
  type ChangeFeedService as ChangeFeedServiceDesc,
} from "../../gen/registry/v1/change_feed_service_pb.js";
import { changeJson } from "./change-json.js";
import { entryMessage } from "./registry-service-handlers.js";
import { writeJsonWith } from "./rpc/reused-encodings.js";

/** The change feed on every protocol: ListChanges (unary, REST GET /v1/changes) and WatchChanges (server streaming). */
export function createChangeFeedServiceImpl(feed: ChangeLogService): ServiceImpl<typeof ChangeFeedServiceDesc> {
  return {
    async listChanges(request) {
      const page = await feed.listChanges(request.after, request.limit);
      return { changes: page.changes.map(changeMessage), size: page.size };
    },

    async *watchChanges(request, context: HandlerContext) {
      for await (const change of feed.watchChanges(request.after, context.signal)) {
        yield { change: changeMessage(change) };
      }
    },
  };
}

/**
 * A logged change as its message (the entry in the same form resolve returns it), its JSON made
 * directly. Every field of a change is set, so the literal is what create() would build, without
 * its reflection; test/edge/change-json.test.ts holds the two equal.
 */
export function changeMessage(change: LoggedChange): Change {
  const message: Change = {
    $typeName: ChangeSchema.typeName,
    index: change.index,
    kind: change.kind,
    latestVersion: change.latestVersion,
    loggedAt: change.loggedAt.toISOString(),
    entries: [],
  };
  if ("entries" in change) {
    message.entries = change.entries.map(entryMessage);
    message.request = { ...change.request };
    return writeJsonWith(message, changeJson);
  }
  message.entry = entryMessage(change.entry);
  const revocation = change.revocation;
  if (revocation !== undefined) {
    const { did, reason, signature, signer } = revocation;
    message.revocation = { $typeName: RevocationSchema.typeName, did, reason, signature, signer };
  }
  return writeJsonWith(message, changeJson);
}
