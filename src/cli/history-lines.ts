import type { VerifiedHistory, VerifiedHistoryRecord } from "../sdk/history-verifier.js";
import { terminal } from "./terminal-text.js";

/**
 * A history for people, one line per record: index, kind, time, who, what, tab-separated, each
 * value escaped for the terminal (terminal-text.ts) so it keeps its column.
 */
export function historyLines(records: readonly VerifiedHistoryRecord[]): string {
  return records
    .map((record) => terminal`${record.index}\t${record.kind}\t${record.record.loggedAt}\t${who(record)}\t${what(record)}\n`)
    .join("");
}

function who({ record }: VerifiedHistoryRecord): string {
  if (record.request !== undefined) return record.request.by ?? "-";
  if (record.kind === "entry.created") return record.entry?.publisherDid ?? "-";
  // Revocations from before the log kept no signer.
  return record.revocation?.signer || "-";
}

function what({ record }: VerifiedHistoryRecord): string {
  const request = record.request;
  if (request !== undefined) {
    const why = [request.policy, request.reason || request.note].filter(Boolean).join(": ");
    const replacement = request.replacement ? ` for ${request.replacement}` : "";
    return `${request.action} ${request.subject}${replacement}${why === "" ? "" : `: ${why}`}`;
  }
  if (record.kind === "entry.created") return `published ${record.entry?.version}`;
  return `revoked ${record.entry?.version}: ${record.revocation?.reason ?? record.entry?.revocationReason ?? ""}`;
}

/** A history as GET /v1/entries/{did}/history answers it, its pages joined: the record text and base64 proofs. */
export function historyJson(history: VerifiedHistory): unknown {
  return {
    checkpoint: history.checkpoint.note,
    treeSize: String(history.checkpoint.treeSize),
    records: history.records.map(historyRecordJson),
  };
}

/** One record as the API's HistoryRecord: int64 index as a string, the record's exact text, base64 proof hashes. */
export function historyRecordJson(record: VerifiedHistoryRecord) {
  return {
    index: String(record.index),
    kind: record.kind,
    record: new TextDecoder().decode(record.bytes),
    inclusionProof: record.inclusionProof.map((hash) => Buffer.from(hash).toString("base64")),
  };
}
