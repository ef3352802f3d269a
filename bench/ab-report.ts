/** An A/B run's figures side by side: this tree's rows against another commit's, measured alternately in one run. */
import {
  consoleTable,
  markdownTable,
  summariseCreates,
  summariseResolve,
  type CreateFigures,
  type ResolveRowFigures,
  type Summary,
  type TextTable,
  type Verdict,
} from "./report.js";

/** The most any row may lose to the other commit, as a share of its req/s. */
export const AB_SLOWER_AT_MOST = 0.05;

export interface AbSide {
  readonly label: string;
  readonly resolves: readonly ResolveRowFigures[];
  readonly creates: readonly CreateFigures[];
}

export interface AbFigures {
  readonly current: AbSide;
  readonly other: AbSide;
}

const n = (value: number, digits = 0) =>
  Number.isFinite(value) ? value.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: digits }) : "n/a";

/** Each row both sides ran, as [label, this side's medians, the other's]. */
function pairs(ab: AbFigures): [string, Summary, Summary][] {
  const out: [string, Summary, Summary][] = [];
  for (const row of ab.other.resolves) {
    const current = ab.current.resolves.find((r) => r.key === row.key);
    if (current !== undefined) out.push([row.label, summariseResolve(current), summariseResolve(row)]);
  }
  for (const creates of ab.other.creates) {
    const current = ab.current.creates.find((c) => c.key === creates.key);
    if (current !== undefined) out.push([`${creates.label} (creates/s)`, summariseCreates(current), summariseCreates(creates)]);
  }
  return out;
}

function abTable(ab: AbFigures): TextTable {
  const [a, b] = [ab.current.label, ab.other.label];
  return {
    header: [
      "A/B",
      `req/s ${a}`,
      `req/s ${b}`,
      "ratio",
      `p99 ms ${a}`,
      `p99 ms ${b}`,
      "ratio",
      `CPU µs/call ${a}`,
      `CPU µs/call ${b}`,
      "ratio",
    ],
    rows: pairs(ab).map(([label, x, y]) => [
      label,
      n(x.perSecond),
      n(y.perSecond),
      n(x.perSecond / y.perSecond, 3),
      n(x.p99Ms, 1),
      n(y.p99Ms, 1),
      n(x.p99Ms / y.p99Ms, 2),
      n(x.cpuMicros),
      n(y.cpuMicros),
      n(x.cpuMicros / y.cpuMicros, 2),
    ]),
    numeric: new Set([1, 2, 3, 4, 5, 6, 7, 8, 9]),
  };
}

export function abVerdict(ab: AbFigures): Verdict {
  const ratios = pairs(ab).map(([label, x, y]) => ({ label, ratio: x.perSecond / y.perSecond }));
  const slower = ratios.filter((r) => r.ratio < 1 - AB_SLOWER_AT_MOST);
  const worst = [...ratios].sort((p, q) => p.ratio - q.ratio)[0];
  return {
    target: `no row more than ${AB_SLOWER_AT_MOST * 100}% slower than ${ab.other.label} (req/s medians, A/B alternated in one run)`,
    measured:
      worst === undefined
        ? "no row ran on both"
        : `lowest ratio ${n(worst.ratio, 3)} (${worst.label}); ${slower.length} of ${ratios.length} rows more than ${AB_SLOWER_AT_MOST * 100}% slower`,
    pass: worst === undefined ? undefined : slower.length === 0,
  };
}

export function renderAbTable(ab: AbFigures): string {
  const verdict = abVerdict(ab);
  return [...consoleTable(abTable(ab)), "", `${verdict.pass ? "PASS" : "MISS"}  ${verdict.target}: ${verdict.measured}`].join("\n");
}

export function renderAbMarkdown(ab: AbFigures): string {
  const verdict = abVerdict(ab);
  return [...markdownTable(abTable(ab)), "", `${verdict.pass ? "PASS" : "MISS"}: ${verdict.target}: ${verdict.measured}.`].join("\n");
}
