import type { Command } from "commander";
import { loadConfig } from "../../config.js";
import type { CliContext } from "../cli-context.js";

/** `registry migrate`: applies the database migrations and exits. */
export function registerMigrateCommand(program: Command, context: CliContext): void {
  program
    .command("migrate")
    .description("apply database migrations (DATABASE_URL, or the embedded REGISTRY_DATA_DIR) and exit")
    .action(async () => {
      const { migrateToLatest, openDatabase } = await import("../../storage/database.js");
      const database = await openDatabase(loadConfig());
      try {
        const applied = await migrateToLatest(database);
        if (applied.length === 0) context.stdout("already up to date\n");
        else context.stdout`applied: ${applied.join(", ")}\n`;
        context.exitCode = 0;
      } finally {
        await database.close();
      }
    });
}
