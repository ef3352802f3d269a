import type { ServiceImpl } from "@connectrpc/connect";
import type { TransparencyService } from "../changes/transparency-service.js";
import type { HistoryRecord as StoredHistoryRecord } from "../changes/history-pages.js";
import {
  GetEntryHistoryResponseSchema,
  type HistoryRecord,
  HistoryRecordSchema,
  type TransparencyLogService,
} from "../../gen/registry/v1/transparency_log_service_pb.js";
import { createHistoryAnswers, type HistoryAnswers, historyPageKey } from "./history-answers.js";
import { freezeWithEncodings, writeJsonWith } from "./rpc/reused-encodings.js";

/** Memory for kept history pages: about fifty pages of 200 records. */
const HISTORY_ANSWER_BYTES = 32 * 1024 * 1024;

/** The log's published key, as GetLogKey answers it. */
export interface PublishedLogKey {
  readonly origin: string;
  readonly verifierKey: string;
  readonly publicKey: Uint8Array;
}

/** The transparency log's checkpoints, key and proofs on every protocol. */
export function createTransparencyLogServiceImpl(
  log: TransparencyService,
  key: PublishedLogKey,
  pages: HistoryAnswers = createHistoryAnswers(HISTORY_ANSWER_BYTES),
): ServiceImpl<typeof TransparencyLogService> {
  return {
    async getCheckpoint() {
      const checkpoint = await log.latestCheckpoint();
      return { checkpoint: checkpoint.note, treeSize: BigInt(checkpoint.size), rootHash: checkpoint.root };
    },
    getLogKey: () => ({ ...key }),
    async getInclusionProof(request) {
      const answer = await log.inclusion(Number(request.index), Number(request.treeSize));
      return { index: BigInt(answer.index), treeSize: BigInt(answer.treeSize), record: answer.record, proof: [...answer.proof] };
    },
    async getConsistencyProof(request) {
      const answer = await log.consistency(Number(request.fromSize), Number(request.toSize));
      return { fromSize: BigInt(answer.fromSize), toSize: BigInt(answer.toSize), proof: [...answer.proof] };
    },
    async getEntryProof(request) {
      const answer = await log.entryProof(request.did);
      return {
        index: BigInt(answer.index),
        record: answer.record,
        proof: [...answer.proof],
        checkpoint: answer.checkpoint.note,
        treeSize: BigInt(answer.treeSize),
      };
    },
    async getEntryHistory(request) {
      const checkpoint = await log.checkpointOf(Number(request.treeSize));
      const key = historyPageKey(request.did, request.after, checkpoint.size);
      const kept = pages.find(key);
      if (kept !== undefined) return kept;
      const page = await log.history(request.did, optionalNumber(request.after), checkpoint);
      const answer = freezeWithEncodings(GetEntryHistoryResponseSchema, {
        $typeName: GetEntryHistoryResponseSchema.typeName,
        checkpoint: page.checkpoint.note,
        treeSize: BigInt(page.checkpoint.size),
        records: page.records.map(historyRecordMessage),
        nextAfter: optionalBigInt(page.nextAfter),
      });
      pages.keep(key, answer);
      return answer;
    },
  };
}

const utf8 = new TextDecoder("utf-8", { fatal: true });

/**
 * A history's record as its message, its JSON made directly: a page holds up to 256 of them, and
 * reflective toJson was most of a page's time. test/edge/history-record-json.unit.test.ts holds
 * the writer to protobuf-es byte for byte.
 */
export function historyRecordMessage(record: StoredHistoryRecord): HistoryRecord {
  const message: HistoryRecord = {
    $typeName: HistoryRecordSchema.typeName,
    index: BigInt(record.index),
    kind: record.kind,
    record: utf8.decode(record.bytes),
    inclusionProof: [...record.proof],
  };
  return writeJsonWith(message, historyRecordJson);
}

function historyRecordJson(message: HistoryRecord): string {
  return JSON.stringify({
    index: message.index.toString(),
    kind: message.kind,
    record: message.record,
    inclusionProof: message.inclusionProof.map((hash) => Buffer.from(hash.buffer, hash.byteOffset, hash.byteLength).toString("base64")),
  });
}

// Beyond 2^53 an index is refused as not a safe integer rather than rounded.
function optionalNumber(value: bigint | undefined): number | undefined {
  return value === undefined ? undefined : Number(value);
}

function optionalBigInt(value: number | undefined): bigint | undefined {
  return value === undefined ? undefined : BigInt(value);
}
