import { create } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { GetEntryHistoryResponseSchema, HistoryRecordSchema } from "../../gen/registry/v1/transparency_log_service_pb.js";
import { createHistoryAnswers, historyPageKey } from "../../src/edge/history-answers.js";

function page(records: number) {
  return create(GetEntryHistoryResponseSchema, {
    checkpoint: "origin\n1\nroot\n",
    records: Array.from({ length: records }, (_, index) =>
      create(HistoryRecordSchema, { index: BigInt(index), record: "x".repeat(1000), inclusionProof: [new Uint8Array(32)] }),
    ),
  });
}

describe("kept history pages", () => {
  it("keys a page by DID, after and checkpoint size, each part telling pages apart", () => {
    const keys = [
      historyPageKey("did:reg:main:skill:a", undefined, 10),
      historyPageKey("did:reg:main:skill:a", 0n, 10),
      historyPageKey("did:reg:main:skill:a", undefined, 11),
      historyPageKey("did:reg:main:skill:b", undefined, 10),
    ];
    expect(new Set(keys).size).toBe(keys.length);
  });

  it("finds what it kept, and forgets the least recently used past its bound", () => {
    const answers = createHistoryAnswers(40_000);
    const [a, b, c] = [page(5), page(5), page(5)];
    answers.keep("a", a);
    answers.keep("b", b);
    expect(answers.find("a")).toBe(a);
    answers.keep("c", c);
    expect(answers.find("b")).toBeUndefined();
    expect(answers.find("a")).toBe(a);
    expect(answers.find("c")).toBe(c);
    expect(answers.bytes).toBeLessThanOrEqual(40_000);
  });

  it("does not keep a page larger than its whole bound", () => {
    const answers = createHistoryAnswers(10_000);
    answers.keep("big", page(20));
    expect(answers.find("big")).toBeUndefined();
    expect(answers.bytes).toBe(0);
  });
});
