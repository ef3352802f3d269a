/**
 * The resolve rows' targets: each row against the bare floor of its own transport, measured in the
 * same run, so a busy or quiet machine moves row and floor alike. Node's own HTTP/2 layer bounds
 * the h2c rows (docs/performance.md has the measurements behind these shares).
 */
import type { ProtocolRow } from "./protocol-rows.js";

export const FLOOR_TARGETS = Object.freeze({
  /** Each h2c row's req/s, at least this share of the bare node:http2 floor's. */
  h2cOfFloor: 0.6,
  /** Each h2c row's p99, at most this multiple of the bare node:http2 floor's. */
  h2cP99OfFloor: 1.25,
  /** Each HTTP/1.1 row's req/s (REST's and the RPC protocols' over HTTP/1.1), at least this share of the bare node:http floor's. */
  h1OfFloor: 0.45,
});

/** A row's medians, as the targets read them. */
export interface RowMeasure {
  readonly perSecond: number;
  readonly p99Ms: number;
}

export interface RowJudgement {
  readonly floorKey: "floor-http" | "floor-http2";
  readonly ofFloor: number;
  /** The p99 as a multiple of the floor's; judged on h2c only. */
  readonly p99OfFloor: number;
  readonly pass: boolean;
  /** The target as one line: "≥ 0.6 of node:http2, p99 ≤ 1.25x". */
  readonly target: string;
}

export function floorKeyOf(transport: ProtocolRow["transport"]): RowJudgement["floorKey"] {
  return transport === "h2c" ? "floor-http2" : "floor-http";
}

/** The row against its floor; undefined for a floor itself, or when its floor was not measured. */
export function judgeRow(
  row: Pick<ProtocolRow, "transport" | "target">,
  measure: RowMeasure,
  floor: RowMeasure | undefined,
): RowJudgement | undefined {
  if (row.target !== "registry" || floor === undefined) return undefined;
  const ofFloor = measure.perSecond / floor.perSecond;
  const p99OfFloor = measure.p99Ms / floor.p99Ms;
  if (row.transport === "h2c") {
    return {
      floorKey: "floor-http2",
      ofFloor,
      p99OfFloor,
      pass: ofFloor >= FLOOR_TARGETS.h2cOfFloor && p99OfFloor <= FLOOR_TARGETS.h2cP99OfFloor,
      target: `>= ${FLOOR_TARGETS.h2cOfFloor} of node:http2, p99 <= ${FLOOR_TARGETS.h2cP99OfFloor}x`,
    };
  }
  return {
    floorKey: "floor-http",
    ofFloor,
    p99OfFloor,
    pass: ofFloor >= FLOOR_TARGETS.h1OfFloor,
    target: `>= ${FLOOR_TARGETS.h1OfFloor} of node:http`,
  };
}
