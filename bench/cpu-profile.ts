/**
 * Summarises a V8 .cpuprofile (from `node --cpu-prof`): where the server's busy time went, as
 * self time per function and as inclusive time per package / source file / node core module.
 */
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { relative } from "node:path";
import { parseArgs } from "node:util";

interface CallFrame {
  readonly functionName: string;
  readonly url: string;
  readonly lineNumber: number;
}
interface ProfileNode {
  readonly id: number;
  readonly callFrame: CallFrame;
  readonly children?: readonly number[];
}
interface CpuProfile {
  readonly nodes: readonly ProfileNode[];
  readonly startTime: number;
  readonly endTime: number;
  readonly samples: readonly number[];
  readonly timeDeltas: readonly number[];
}

export interface ProfileRow {
  readonly name: string;
  readonly percent: number;
}

export interface ProfileSummary {
  /** The window of the profile summarised, in seconds since it started. */
  readonly window: ProfileWindow;
  readonly seconds: number;
  /** Share of the profile the main thread was idle (waiting on I/O). */
  readonly idlePercent: number;
  /**
   * Share of busy samples sitting in a socket write (writev and friends). The profiler samples
   * wall time: when the machine is short of CPU, a thread that wakes its peer with a write is often
   * descheduled right there, so this share is mostly waiting, not work. Compare it with the kernel
   * share of the process's CPU time from /proc.
   */
  readonly socketWritePercent: number;
  /** Percentages below are of busy (non-idle) samples. */
  readonly topSelf: readonly ProfileRow[];
  readonly inclusiveByGroup: readonly ProfileRow[];
  readonly inclusiveSourceFunctions: readonly ProfileRow[];
  /**
   * A partition of busy time (sums to 100%): each sample goes to the nearest package or project
   * file on its stack, so time in node core (sockets, streams, crypto) counts for whoever called it.
   */
  readonly byCallingLayer: readonly ProfileRow[];
  /** Every function, by the share of busy samples it was on the stack for. */
  readonly inclusiveFunctions: readonly ProfileRow[];
}

/** Frames that sit under nearly every sample (event loop and microtask plumbing). */
const SOCKET_WRITES = new Set(["writev", "writeBuffer", "writeUtf8String", "writeLatin1String", "writeAsciiString"]);

const PLUMBING = new Set(["(root)", "processTicksAndRejections", "runMicrotasks", "emit", "onceWrapper"]);

const SPECIAL = new Set(["(idle)", "(program)", "(garbage collector)", "(root)"]);

/** Seconds since the profile started: only samples inside [fromSeconds, toSeconds] are counted. */
export interface ProfileWindow {
  readonly fromSeconds?: number;
  readonly toSeconds?: number;
}

export function summariseProfile(file: string, root = process.cwd(), top = 20, window: ProfileWindow = {}): ProfileSummary {
  const profile = JSON.parse(readFileSync(file, "utf8")) as CpuProfile;
  const from = (window.fromSeconds ?? 0) * 1e6;
  const to = (window.toSeconds ?? Number.POSITIVE_INFINITY) * 1e6;
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const parent = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);

  const location = (frame: CallFrame): string => {
    if (frame.url === "") return "native";
    let path = frame.url;
    if (path.startsWith("file://")) path = relative(root, fileURLToPath(path));
    // tsx-compiled project files report line 0 for everything: their name and file say enough.
    return frame.lineNumber <= 0 ? path : `${path}:${frame.lineNumber + 1}`;
  };
  const functionKey = (frame: CallFrame): string =>
    SPECIAL.has(frame.functionName) ? frame.functionName : `${frame.functionName || "(anonymous)"} ${location(frame)}`;

  const self = new Map<string, number>();
  const groups = new Map<string, number>();
  const sourceFunctions = new Map<string, number>();
  const allFunctions = new Map<string, number>();
  const layers = new Map<string, number>();
  let idle = 0;
  let busy = 0;
  let socketWrites = 0;
  let at = 0;
  let first = Number.POSITIVE_INFINITY;
  let last = 0;
  for (const [index, id] of profile.samples.entries()) {
    at += profile.timeDeltas[index] ?? 0;
    if (at < from || at > to) continue;
    first = Math.min(first, at);
    last = Math.max(last, at);
    const leaf = byId.get(id);
    if (leaf === undefined) continue;
    if (leaf.callFrame.functionName === "(idle)") {
      idle++;
      continue;
    }
    busy++;
    const inSocketWrite = leaf.callFrame.url === "" && SOCKET_WRITES.has(leaf.callFrame.functionName);
    if (inSocketWrite) socketWrites++;
    const key = functionKey(leaf.callFrame);
    self.set(key, (self.get(key) ?? 0) + 1);
    const seenGroups = new Set<string>();
    const seenFunctions = new Set<string>();
    const seenAll = new Set<string>();
    let layer: string | undefined;
    for (let node: ProfileNode | undefined = leaf; node !== undefined; node = byId.get(parent.get(node.id) ?? -1)) {
      const frame = node.callFrame;
      if (frame.functionName === "(root)") break;
      const group = groupOf(frame, root);
      seenGroups.add(group);
      if (layer === undefined && !group.startsWith("node:") && group !== "native") layer = group;
      if (frame.url.includes("/src/")) seenFunctions.add(functionKey(frame));
      const anonymousInNode = frame.functionName === "" && (frame.url === "" || frame.url.startsWith("node:"));
      if (!PLUMBING.has(frame.functionName) && !anonymousInNode) seenAll.add(functionKey(frame));
    }
    for (const fn of seenAll) allFunctions.set(fn, (allFunctions.get(fn) ?? 0) + 1);
    layer ??= "node core, called by no package (HTTP server, sockets, timers)";
    if (!inSocketWrite) layers.set(layer, (layers.get(layer) ?? 0) + 1);
    // node:process (the microtask runner) sits under nearly everything and says nothing.
    seenGroups.delete("node:process");
    for (const group of seenGroups) groups.set(group, (groups.get(group) ?? 0) + 1);
    for (const fn of seenFunctions) sourceFunctions.set(fn, (sourceFunctions.get(fn) ?? 0) + 1);
  }
  const rows = (counts: Map<string, number>, limit = top, of = busy) =>
    [...counts]
      .sort((a, b) => b[1] - a[1])
      .slice(0, limit)
      .map(([name, count]) => ({ name, percent: (100 * count) / Math.max(1, of) }));
  const total = idle + busy;
  return {
    window,
    seconds: total === 0 ? 0 : (last - first) / 1e6,
    idlePercent: (100 * idle) / Math.max(1, total),
    socketWritePercent: (100 * socketWrites) / Math.max(1, busy),
    topSelf: rows(self),
    inclusiveByGroup: rows(groups),
    inclusiveSourceFunctions: rows(sourceFunctions),
    inclusiveFunctions: rows(allFunctions, top * 2),
    byCallingLayer: rows(layers, top, busy - socketWrites),
  };
}

/** The package, project directory or node core module a frame belongs to. */
function groupOf(frame: CallFrame, root: string): string {
  if (SPECIAL.has(frame.functionName)) return frame.functionName;
  const url = frame.url;
  if (url === "") return "native";
  if (url.startsWith("node:")) {
    const module = url.slice(5).replace(/^internal\//, "");
    const first = module.split("/")[0]!.replace(/^_/, "");
    const name = first.startsWith("http_") ? "http" : first.startsWith("stream_") ? "streams" : first;
    return `node:${name}`;
  }
  const nodeModules = url.lastIndexOf("/node_modules/");
  if (nodeModules >= 0) {
    const parts = url.slice(nodeModules + "/node_modules/".length).split("/");
    return parts[0]!.startsWith("@") ? `${parts[0]}/${parts[1]}` : parts[0]!;
  }
  if (url.startsWith("file://")) {
    const path = relative(root, fileURLToPath(url));
    return path.startsWith("src/") || path.startsWith("gen/") ? path : `other: ${path}`;
  }
  return url;
}

export function formatProfileSummary(title: string, summary: ProfileSummary): string {
  const lines = [
    `${title}: ${summary.seconds.toFixed(1)} s profiled, main thread idle ${summary.idlePercent.toFixed(0)}% (percentages below are of busy time unless said otherwise)`,
    "  top self time:",
    ...summary.topSelf.map((row) => `    ${row.percent.toFixed(1).padStart(5)}%  ${row.name}`),
    "  inclusive, by package / source file / node module:",
    ...summary.inclusiveByGroup.map((row) => `    ${row.percent.toFixed(1).padStart(5)}%  ${row.name}`),
    `  by calling layer, of busy time outside socket writes (${summary.socketWritePercent.toFixed(0)}% of busy samples were in a socket write; see socketWritePercent):`,
    ...summary.byCallingLayer.map((row) => `    ${row.percent.toFixed(1).padStart(5)}%  ${row.name}`),
    "  inclusive, all functions (event-loop plumbing left out):",
    ...summary.inclusiveFunctions.map((row) => `    ${row.percent.toFixed(1).padStart(5)}%  ${row.name}`),
    "  inclusive, project functions:",
    ...summary.inclusiveSourceFunctions.map((row) => `    ${row.percent.toFixed(1).padStart(5)}%  ${row.name}`),
  ];
  return lines.join("\n");
}

// `node bin/run-ts.js bench/cpu-profile.ts [--from S] [--to S] <file.cpuprofile>...` summarises
// saved profiles (bench/results/profile-latest.json records the window each phase's load ran in).
if (process.argv[1]?.endsWith("cpu-profile.ts") && process.argv.length > 2) {
  const { values, positionals } = parseArgs({ options: { from: { type: "string" }, to: { type: "string" } }, allowPositionals: true });
  const window = {
    ...(values.from === undefined ? {} : { fromSeconds: Number(values.from) }),
    ...(values.to === undefined ? {} : { toSeconds: Number(values.to) }),
  };
  for (const file of positionals) console.log(`${formatProfileSummary(file, summariseProfile(file, process.cwd(), 25, window))}\n`);
}
