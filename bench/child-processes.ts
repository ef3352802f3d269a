/** Starting, watching and stopping the benchmark's child processes. */
import { spawn, type ChildProcess } from "node:child_process";
import { closeSync, openSync } from "node:fs";
import net from "node:net";
import { setTimeout as sleep } from "node:timers/promises";

export interface Child {
  readonly name: string;
  readonly process: ChildProcess;
  readonly pid: number;
  /** Resolves with the exit code (or signal name) once the process has exited. */
  readonly exited: Promise<number | string>;
  /** SIGTERM, then SIGKILL after `graceMs`; resolves when the process is gone. */
  stop(graceMs?: number): Promise<number | string>;
}

const running = new Set<Child>();

export interface StartOptions {
  readonly env?: NodeJS.ProcessEnv;
  /** The child's working directory (default this process's): another checkout's tree, for an A/B run. */
  readonly cwd?: string;
  /** stdout and stderr are appended here, so the bench's own output stays readable. */
  readonly logFile: string;
  /** Collect stdout in memory instead of the log (for children that report JSON). */
  readonly captureStdout?: boolean;
}

/**
 * Children write their output straight into the log file (their own descriptor on it, opened for
 * appending), not through a pipe this process relays: under load the registry writes an access line
 * per request, and relaying them made the bench itself a busy process, competing with the server
 * and h2load for the machine's two cores.
 */
export function startChild(name: string, args: readonly string[], options: StartOptions): Child & { stdout(): string } {
  const log = openSync(options.logFile, "a");
  const capture = options.captureStdout === true;
  const child = spawn(process.execPath, args, {
    cwd: options.cwd ?? process.cwd(),
    env: options.env ?? process.env,
    stdio: ["ignore", capture ? "pipe" : log, log],
  });
  closeSync(log);
  if (child.pid === undefined) throw new Error(`could not start ${name}`);
  let stdout = "";
  if (capture) child.stdout!.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
  const exited = new Promise<number | string>((resolve) => {
    child.once("exit", (code, signal) => {
      running.delete(handle);
      resolve(code ?? signal ?? "unknown");
    });
  });
  const handle: Child & { stdout(): string } = {
    name,
    process: child,
    pid: child.pid,
    exited,
    stdout: () => stdout,
    async stop(graceMs = 10_000) {
      if (child.exitCode !== null || child.signalCode !== null) return exited;
      child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), graceMs);
      const result = await exited;
      clearTimeout(timer);
      return result;
    },
  };
  running.add(handle);
  return handle;
}

/** Stops every child still running (used on failure and on Ctrl-C). */
export async function stopAllChildren(): Promise<void> {
  await Promise.all([...running].map((child) => child.stop(3_000)));
}

/** A TCP port that was free a moment ago. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const port = (server.address() as net.AddressInfo).port;
      server.close(() => resolve(port));
    });
  });
}

/** Polls `url` until it answers 200, failing early if `child` exits. */
export async function waitForHttp(url: string, child: Child, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let exited = false;
  void child.exited.then(() => (exited = true));
  let lastError = "";
  while (Date.now() < deadline) {
    if (exited) throw new Error(`${child.name} exited before it was ready (see its log)`);
    try {
      const response = await fetch(url, { signal: AbortSignal.timeout(2_000) });
      await response.arrayBuffer();
      if (response.status === 200) return;
      lastError = `HTTP ${response.status}`;
    } catch (error) {
      lastError = (error as Error).message;
    }
    await sleep(100);
  }
  throw new Error(`${child.name} not ready at ${url} after ${timeoutMs} ms: ${lastError}`);
}

/** Polls until `port` accepts a TCP connection (for servers that speak no HTTP/1.1), failing early if `child` exits. */
export async function waitForPort(port: number, child: Child, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let exited = false;
  void child.exited.then(() => (exited = true));
  while (Date.now() < deadline) {
    if (exited) throw new Error(`${child.name} exited before it was ready (see its log)`);
    const open = await new Promise<boolean>((resolve) => {
      const socket = net.connect(port, "127.0.0.1");
      socket.once("connect", () => {
        socket.destroy();
        resolve(true);
      });
      socket.once("error", () => resolve(false));
    });
    if (open) return;
    await sleep(100);
  }
  throw new Error(`${child.name} not listening on port ${port} after ${timeoutMs} ms`);
}
