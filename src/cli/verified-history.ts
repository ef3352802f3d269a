import { historySubject } from "../domain/record-subject.js";
import { RegistryClientError } from "../sdk/client-error.js";
import { LogVerificationError } from "../sdk/log-verifier.js";
import type { RegistryClient } from "../sdk/registry-client.js";
import { servedEntryMismatch, type ServedMismatch } from "../sdk/served-entry.js";
import { CliFailure, EXIT } from "./exit-codes.js";

/** The SDK's verified history, a verification failure becoming exit 6 with its reason. */
export async function verifiedHistory(client: RegistryClient, did: string, logKey: string | undefined) {
  return client.history(did, { logKey }).catch((error: unknown) => {
    if (error instanceof LogVerificationError)
      throw new CliFailure(`the history of ${did} does not verify: ${error.message}`, EXIT.unverified);
    throw error;
  });
}

/** How often, and how far apart, verify looks again while what is served is newer than the checkpoint. */
const SETTLE_ATTEMPTS = 4;
const SETTLE_MS = 750;

/**
 * The entry the registry serves for `did`, proved to be the state its verified log gives
 * (servedEntryMismatch), with the name's verified history. A change of the last second is served
 * before the checkpoint holds it, so a disagreement is looked at again for about two seconds
 * before it is reported: exit 6 naming the member that differs.
 */
export async function provedServedEntry(client: RegistryClient, did: string, logKey: string | undefined) {
  for (let attempt = 1; ; attempt++) {
    const served = await client.resolve(did);
    const subject = historySubject(served.entryDid);
    if ("error" in subject) throw new CliFailure(`the registry serves an entry whose DID is not one: ${subject.error}`, EXIT.unverified);
    const last = attempt === SETTLE_ATTEMPTS;
    const history = await verifiedHistory(client, subject.name, logKey).catch((error: unknown) => {
      if (!(error instanceof RegistryClientError && error.code === "not_found")) throw error;
      return undefined;
    });
    const mismatch =
      history === undefined
        ? { field: "entryDid", served: served.entryDid, logged: undefined }
        : servedEntryMismatch(served, history.records);
    if (mismatch === undefined && history !== undefined) return { served, history };
    if (last) throw new CliFailure(mismatchMessage(mismatch!), EXIT.unverified);
    await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
  }
}

function mismatchMessage({ field, served, logged }: ServedMismatch): string {
  if (logged === undefined && field === "entryDid")
    return `the registry serves ${String(served)} but its log's checkpoint has no record of it`;
  return `the registry serves ${field} ${JSON.stringify(served ?? null)} but its log says ${JSON.stringify(logged ?? null)}`;
}
