import { create, toJsonString } from "@bufbuild/protobuf";
import { expect, it } from "vitest";
import { GetEntryHistoryResponseSchema, HistoryRecordSchema } from "../../gen/registry/v1/transparency_log_service_pb.js";
import { historyRecordMessage } from "../../src/edge/transparency-log-handlers.js";
import { messageJson, responseJsonBytes } from "../../src/edge/rpc/reused-encodings.js";

/**
 * A history record's own JSON writer against protobuf-es: REST and Connect JSON answers splice its
 * text in place of protobuf-es's, so it must be what toJsonString makes with every implicit field.
 */

const text = '{"entry":{"description":"Searches the \\"web\\" \u2028 — ünïcode 🚀 \\\\ \\u001b"},"index":"7","kind":"entry.created"}';

it.each([
  { index: 7, kind: "entry.created", proof: [new Uint8Array(32).fill(0xfb), new Uint8Array(32).fill(1)] },
  { index: 0, kind: "entry.revoked", proof: [] },
  { index: 2 ** 52, kind: "", proof: [new Uint8Array([0xff, 0xfe, 0x3e])] },
])("writes what protobuf-es writes (index $index)", ({ index, kind, proof }) => {
  const message = historyRecordMessage({ index, kind, bytes: new TextEncoder().encode(text), proof });
  const reflected = create(HistoryRecordSchema, { index: BigInt(index), kind, record: text, inclusionProof: proof });
  expect(messageJson(HistoryRecordSchema, message)).toBe(toJsonString(HistoryRecordSchema, reflected, { alwaysEmitImplicit: true }));
  expect(message).toEqual(reflected);
});

it("answers a whole page with protobuf-es's JSON, its records spliced in, every member in field order", () => {
  const records = [0, 5].map((index) =>
    historyRecordMessage({ index, kind: "entry.lifecycle", bytes: new TextEncoder().encode(text), proof: [] }),
  );
  const page = { $typeName: GetEntryHistoryResponseSchema.typeName, checkpoint: "origin\n3\nroot\n", records, treeSize: 9n, nextAfter: 5n };
  const reflected = create(GetEntryHistoryResponseSchema, {
    ...page,
    records: records.map((record) => create(HistoryRecordSchema, record)),
  });
  expect(responseJsonBytes(GetEntryHistoryResponseSchema, page as never).toString()).toBe(
    toJsonString(GetEntryHistoryResponseSchema, reflected, { alwaysEmitImplicit: true }),
  );
});
