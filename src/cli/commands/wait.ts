import { InvalidArgumentError, type Command } from "commander";
import { registryUrl, type CliContext } from "../cli-context.js";
import type { ClientOptions } from "../client-options.js";
import { CliFailure, EXIT } from "../exit-codes.js";

interface WaitOptions extends ClientOptions {
  readonly timeout: number;
}

const POLL_INTERVAL_MS = 200;

/** `registry wait`: returns once the registry answers /readyz with 200, for scripts that start one. */
export function registerWaitCommand(program: Command, context: CliContext): void {
  program
    .command("wait")
    .description("wait until the registry is ready (GET /readyz answers 200); exit 5 if it is not within the timeout")
    .option("--timeout <duration>", "how long to wait: 30s, 500ms, 2m, or seconds", duration, 30_000)
    .option("--registry <url>", "the registry's URL (default: REGISTRY_URL, else http://127.0.0.1:$PORT, 8080 without PORT)")
    .option("--json", 'print {"registry", "ready": true} on stdout')
    .action(async (options: WaitOptions) => {
      let registry: string;
      try {
        registry = registryUrl(options.registry, context);
      } catch (error) {
        if (!(error instanceof CliFailure)) throw error;
        context.stderr`registry: ${error.message}\n`;
        context.exitCode = error.exitCode;
        return;
      }
      const deadline = Date.now() + options.timeout;
      let last = "no answer yet";
      for (;;) {
        const attempt = await readiness(registry);
        if (attempt === "ready") {
          if (options.json === true) context.stdout(`${JSON.stringify({ registry, ready: true })}\n`);
          else context.stdout`${registry} is ready\n`;
          context.exitCode = EXIT.ok;
          return;
        }
        last = attempt;
        if (Date.now() + POLL_INTERVAL_MS > deadline) break;
        await new Promise((resolve) => setTimeout(resolve, POLL_INTERVAL_MS));
      }
      const message = `${registry} was not ready within ${options.timeout} ms (last: ${last})`;
      if (options.json === true) context.stderr(`${JSON.stringify({ error: { code: "unavailable", message } })}\n`);
      else context.stderr`registry: ${message}\n`;
      context.exitCode = EXIT.serverOrNetwork;
    });
}

/** "ready", or what the registry (or the network) answered instead. */
async function readiness(registry: string): Promise<string> {
  try {
    const response = await fetch(`${registry}/readyz`, { signal: AbortSignal.timeout(2_000) });
    await response.body?.cancel();
    return response.status === 200 ? "ready" : `HTTP ${response.status}`;
  } catch (error) {
    const cause = (error as { cause?: { code?: string } }).cause;
    return cause?.code ?? (error as { cause?: Error }).cause?.message ?? (error as Error).message;
  }
}

/** Milliseconds of "30s", "500ms", "2m" or a bare number of seconds. */
function duration(text: string): number {
  const match = /^(\d+(?:\.\d+)?)(ms|s|m)?$/.exec(text.trim());
  if (match === null) throw new InvalidArgumentError("a duration such as 30s, 500ms or 2m");
  const unit = { ms: 1, s: 1_000, m: 60_000 }[(match[2] ?? "s") as "ms" | "s" | "m"];
  return Math.round(Number(match[1]) * unit);
}
