import type { Command } from "commander";
import type { CliContext } from "../cli-context.js";
import { withClientOptions, type ClientOptions } from "../client-options.js";
import { collectPages, withListingOptions, type ListingOptions } from "../listing.js";

interface SearchOptions extends ClientOptions, ListingOptions {
  readonly type?: string;
}

/** `registry search <text>`: ranked search (docs/api.md, "Search"), best match first. */
export function registerSearchCommand(program: Command, context: CliContext): void {
  withListingOptions(
    withClientOptions(
      program
        .command("search")
        .description("search names, tags and descriptions; best match first")
        .argument("<text>", 'e.g. "pdf summariser": words match by stem and prefix, names also by spelling')
        .option("--type <entryType>", "only entries of this type"),
    ),
  )
    .addHelpText("after", "\nShows the latest version of each name, active or deprecated. Ranking: docs/api.md (Search).")
    .action(async (text: string, options: SearchOptions) => {
      const { entryJson, runClientCommand, statusName } = await import("../client-command.js");
      context.exitCode = await runClientCommand(options, context, async ({ client, json, printJson }) => {
        const { items, nextCursor } = await collectPages(
          async (cursor, pageSize) => {
            const page = await client.search(text, { entryType: options.type, pageSize, cursor });
            return { items: page.entries, nextCursor: page.nextCursor };
          },
          options,
          context,
        );
        if (json) {
          printJson({ entries: items.map(entryJson), nextCursor });
          return;
        }
        for (const entry of items) context.stdout`${entry.entryDid}\t${statusName(entry.status)}\t${entry.description}\n`;
        if (items.length === 0) context.stderr("nothing matches\n");
        if (nextCursor !== undefined) context.stderr("more entries match; --all or --limit <n> to see them\n");
      });
    });
}
