import type { Command } from "commander";
import { loadConfig, role } from "../../config.js";
import type { CliContext } from "../cli-context.js";

/** `registry serve`: runs the service until SIGINT or SIGTERM. */
export function registerServeCommand(program: Command, context: CliContext): void {
  program
    .command("serve")
    .description("run the service (PORT, HOST, DATABASE_URL, ... from the environment; see docs/operations.md)")
    .option("--role <role>", "all, registry or auth: which services this process serves")
    .action(async (options: { role?: string }) => {
      context.exitCode = await serve(options.role);
    });
}

async function serve(roleName: string | undefined): Promise<number> {
  const config = loadConfig(process.env, roleName === undefined ? {} : { role: role(roleName) });
  // Loaded here, like the server: the other commands have no use for pino.
  const { createLogger, describeError } = await import("../../logger.js");
  const logger = createLogger(undefined, { level: config.logLevel });
  const { startRegistry } = await import("../../app.js");
  // Listening for the signals before the server starts: a SIGTERM that arrives while it starts
  // (its port may already answer) stops it once started, instead of killing the process outright.
  const stopRequested = new Promise<void>((resolve) => {
    const stop = (signal: string) => {
      // A second signal, of either kind, takes its default action: the process ends at once.
      process.off("SIGINT", stop);
      process.off("SIGTERM", stop);
      logger.info("shutting down", { signal });
      resolve();
    };
    process.once("SIGINT", stop);
    process.once("SIGTERM", stop);
  });
  const registry = await startRegistry(config, { logger }).catch((error: unknown) => {
    process.removeAllListeners("SIGINT");
    process.removeAllListeners("SIGTERM");
    throw error;
  });
  await stopRequested;
  await registry.close().catch((error: unknown) => logger.error("shutdown failed", describeError(error)));
  return 0;
}
