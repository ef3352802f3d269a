import { historySubject } from "../domain/record-subject.js";
import { RegistryClientError } from "../sdk/client-error.js";
import { LogVerificationError } from "../sdk/log-verifier.js";
import type { RegistryClient } from "../sdk/registry-client.js";
import type { NameHistory } from "../domain/history-fold.js";
import type { VerifiedHistoryRecord } from "../sdk/history-verifier.js";
import { foldRecords } from "../sdk/record-events.js";
import { servedEntryMismatch, servedStateMismatch, type ServedMismatch } from "../sdk/served-entry.js";
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
 * The entry the registry serves for `did`, proved to be the state its verified log gives: every
 * member its newest record's (servedEntryMismatch), and its status, marks and latest the fold of
 * the name's records by the rules (servedStateMismatch), each record's signer having the authority
 * the rules give and stating the outcome they give (record-events.ts). `moderators`, when given,
 * are the only DIDs whose moderation is accepted; otherwise the signed log vouches for them. A
 * change of the last second is served before the checkpoint holds it, so a disagreement is looked
 * at again for about two seconds before it is reported: exit 6 naming the member that differs.
 * `progress` hears each step as it starts.
 */
export async function provedServedEntry(
  client: RegistryClient,
  did: string,
  logKey: string | undefined,
  moderators?: readonly string[],
  progress: (step: string) => void = () => {},
) {
  for (let attempt = 1; ; attempt++) {
    const again = attempt === 1 ? "" : ` (looking again, ${attempt} of ${SETTLE_ATTEMPTS})`;
    progress(`resolving ${did}${again}`);
    const served = await client.resolve(did);
    const subject = historySubject(served.entryDid);
    if ("error" in subject) throw new CliFailure(`the registry serves an entry whose DID is not one: ${subject.error}`, EXIT.unverified);
    const last = attempt === SETTLE_ATTEMPTS;
    progress(`fetching and verifying the log's records about ${subject.name}${again}`);
    const history = await verifiedHistory(client, subject.name, logKey).catch((error: unknown) => {
      if (!(error instanceof RegistryClientError && error.code === "not_found")) throw error;
      return undefined;
    });
    if (history !== undefined) progress(`checking ${served.entryDid} against ${history.records.length} verified records${again}`);
    const folded = history === undefined ? undefined : foldedHistory(subject.name, history.records, moderators);
    const mismatch =
      history === undefined || folded === undefined
        ? { field: "entryDid", served: served.entryDid, logged: undefined }
        : (servedEntryMismatch(served, history.records) ?? servedStateMismatch(served, folded));
    if (mismatch === undefined && history !== undefined) return { served, history };
    if (last) throw new CliFailure(mismatchMessage(mismatch!), EXIT.unverified);
    await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
  }
}

/** The name's records folded by the rules; a record they refuse is exit 6 naming it. */
function foldedHistory(name: string, records: readonly VerifiedHistoryRecord[], moderators: readonly string[] | undefined): NameHistory {
  try {
    return foldRecords(
      name,
      records.map((record) => record.record),
      { isModerator: (signer) => moderators === undefined || moderators.includes(signer) },
    );
  } catch (error) {
    if (error instanceof LogVerificationError)
      throw new CliFailure(`the history of ${name} does not verify: ${error.message}`, EXIT.unverified);
    throw error;
  }
}

function mismatchMessage({ field, served, logged }: ServedMismatch): string {
  if (logged === undefined && field === "entryDid")
    return `the registry serves ${String(served)} but its log's checkpoint has no record of it`;
  return `the registry serves ${field} ${JSON.stringify(served ?? null)} but its log says ${JSON.stringify(logged ?? null)}`;
}
