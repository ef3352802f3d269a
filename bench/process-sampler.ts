/**
 * Reads a process's resident memory (VmRSS) and CPU time from /proc while load runs, and the CPU
 * time of the Postgres server processes, so each figure can be read together with who was busy.
 */
import { readFileSync, readdirSync } from "node:fs";

/** Linux reports utime/stime in clock ticks; USER_HZ is 100 on every mainstream kernel build. */
const TICKS_PER_SECOND = 100;

export function rssMegabytes(pid: number): number | undefined {
  try {
    const status = readFileSync(`/proc/${pid}/status`, "utf8");
    const kb = /^VmRSS:\s+(\d+)\s+kB/m.exec(status)?.[1];
    return kb === undefined ? undefined : Number(kb) / 1024;
  } catch {
    return undefined;
  }
}

/** User + system CPU seconds the process has used so far. */
export function cpuSeconds(pid: number): number | undefined {
  const times = cpuTimes(pid);
  return times === undefined ? undefined : times.user + times.system;
}

/** User and system (kernel) CPU seconds the process has used so far. */
export function cpuTimes(pid: number): { user: number; system: number } | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // Field 2 (comm) may contain spaces: count fields after its closing parenthesis.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return { user: Number(fields[11]) / TICKS_PER_SECOND, system: Number(fields[12]) / TICKS_PER_SECOND };
  } catch {
    return undefined;
  }
}

/**
 * CPU seconds used so far by this process and by its children that have exited and been reaped
 * (Linux's cutime/cstime): a load generator run as a child, such as h2load, is counted once it ends.
 */
export function generatorCpuSeconds(): number {
  const own = process.cpuUsage();
  let children = 0;
  try {
    const stat = readFileSync("/proc/self/stat", "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    children = (Number(fields[13]) + Number(fields[14])) / TICKS_PER_SECOND;
  } catch {
    // Not Linux: the children's share is unknown.
  }
  return (own.user + own.system) / 1e6 + children;
}

/**
 * CPU seconds used so far by each Postgres process that works for the benchmark: the backends
 * connected to `database` and the server's own background processes (WAL writer, checkpointer,
 * ...). Backends of other databases (other users of a shared server) are left out. Postgres sets
 * each process's command line to "postgres: <user> <database> <client> <state>" or
 * "postgres: <cluster>: <background process>".
 */
export function postgresCpuSnapshot(database: string): Map<number, number> {
  const snapshot = new Map<number, number>();
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      const comm = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
      if (comm !== "postgres") continue;
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, "utf8").replace(/\0/g, " ");
      const backend = /^postgres: \S+ (\S+) \S+/.exec(cmdline);
      const background = /^postgres: [^ ]+: /.test(cmdline) || !cmdline.startsWith("postgres: ");
      if (backend !== null && backend[1] !== database && !background) continue;
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      snapshot.set(Number(entry), (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND);
    } catch {
      // The process ended between readdir and read.
    }
  }
  return snapshot;
}

/** CPU seconds the benchmark's Postgres processes used since `before` (processes that ended are lost). */
export function postgresCpuSince(before: ReadonlyMap<number, number>, database: string): number {
  let total = 0;
  for (const [pid, seconds] of postgresCpuSnapshot(database)) total += seconds - (before.get(pid) ?? 0);
  return total;
}

/**
 * Microseconds so far in which some runnable task waited for a CPU (Linux PSI, /proc/pressure/cpu
 * "some total"); undefined where PSI is not available. Its rate over a window says how contended
 * the machine was: near 0% is a quiet machine, near 100% means something always waited.
 */
export function cpuPressureMicros(): number | undefined {
  try {
    const text = readFileSync("/proc/pressure/cpu", "utf8");
    const total = /^some .*total=(\d+)/m.exec(text)?.[1];
    return total === undefined ? undefined : Number(total);
  } catch {
    return undefined;
  }
}

export function pressurePercent(before: number | undefined, after: number | undefined, seconds: number): number {
  return before === undefined || after === undefined ? Number.NaN : (after - before) / 1e4 / seconds;
}

export interface WindowUsage {
  /** Share of the window in which some task waited for a CPU (PSI), in percent. */
  readonly cpuPressurePercent: number;
  readonly seconds: number;
  /** CPU use of the server as a percentage of one core, averaged over the window. */
  readonly serverCpuPercent: number;
  /** CPU seconds (user + system) the server used in the window, from /proc/<pid>/stat before and after. */
  readonly serverCpuSeconds: number;
  /** The part of the server's CPU spent in the kernel (system calls: socket reads and writes). */
  readonly serverKernelPercent: number;
  /** Same for all Postgres processes together. */
  readonly postgresCpuPercent: number;
  /** CPU use of the load generator (this process and its children that ended), percent of one core. */
  readonly generatorCpuPercent: number;
  readonly rssPeakMb: number;
  readonly rssMedianMb: number;
}

/** A measured result with the usage of the window it was measured in. */
export interface Run<T> {
  readonly result: T;
  readonly usage: WindowUsage;
}

/** Samples the server's RSS every `intervalMs` for the whole run; windows mark the load phases. */
export class ServerSampler {
  private readonly samples: { at: number; rssMb: number }[] = [];
  private readonly underLoad: number[] = [];
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private pid: number,
    /** The benchmark's database, to tell its Postgres backends from other users'. */
    private readonly database: string,
    private readonly intervalMs = 200,
  ) {}

  /** Follow another process (the server was restarted). */
  retarget(pid: number): void {
    this.pid = pid;
  }

  start(): void {
    this.timer ??= setInterval(() => {
      const rssMb = rssMegabytes(this.pid);
      if (rssMb !== undefined) this.samples.push({ at: Date.now(), rssMb });
    }, this.intervalMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
  }

  /**
   * Runs `work` as a load window and reports the CPU that `cpuPid` (default: the server), Postgres
   * and the load generator used, and the server's RSS during it. The generator is this process
   * plus its children that exited during the window (an h2load run). With `measureAfterMs`, CPU
   * is counted from that moment on (the end of a warmup that is part of `work`). Only windows that
   * load the registry (`registryLoad`) count towards the RSS-under-load figures.
   */
  async window<T>(
    work: () => Promise<T>,
    options: { cpuPid?: number; registryLoad?: boolean; measureAfterMs?: number } = {},
  ): Promise<{ result: T; usage: WindowUsage }> {
    const cpuPid = options.cpuPid ?? this.pid;
    const snapshot = () => ({
      at: Date.now(),
      server: cpuSeconds(cpuPid) ?? 0,
      kernel: cpuTimes(cpuPid)?.system ?? 0,
      postgres: postgresCpuSnapshot(this.database),
      generator: generatorCpuSeconds(),
      pressure: cpuPressureMicros(),
    });
    let start = snapshot();
    const timer = options.measureAfterMs === undefined ? undefined : setTimeout(() => (start = snapshot()), options.measureAfterMs);
    const result = await work();
    clearTimeout(timer);
    const seconds = (Date.now() - start.at) / 1000;
    const serverCpuSeconds = (cpuSeconds(cpuPid) ?? start.server) - start.server;
    const rss = this.samples.filter((s) => s.at >= start.at).map((s) => s.rssMb);
    const now = rssMegabytes(this.pid);
    if (now !== undefined) rss.push(now);
    if (options.registryLoad !== false) this.underLoad.push(...rss);
    const sorted = rss.sort((a, b) => a - b);
    return {
      result,
      usage: {
        seconds,
        cpuPressurePercent: pressurePercent(start.pressure, cpuPressureMicros(), seconds),
        serverCpuPercent: (100 * serverCpuSeconds) / seconds,
        serverCpuSeconds,
        serverKernelPercent: (100 * ((cpuTimes(cpuPid)?.system ?? start.kernel) - start.kernel)) / seconds,
        postgresCpuPercent: (100 * postgresCpuSince(start.postgres, this.database)) / seconds,
        generatorCpuPercent: (100 * (generatorCpuSeconds() - start.generator)) / seconds,
        rssPeakMb: sorted.at(-1) ?? Number.NaN,
        rssMedianMb: sorted[Math.floor(sorted.length / 2)] ?? Number.NaN,
      },
    };
  }

  /** Every RSS sample (MB) taken inside load windows so far. */
  loadSamples(): readonly number[] {
    return this.underLoad;
  }
}
