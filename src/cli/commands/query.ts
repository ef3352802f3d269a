import type { JsonObject } from "@bufbuild/protobuf";
import type { Command } from "commander";
import type { CliContext } from "../cli-context.js";
import { withClientOptions, type ClientOptions } from "../client-options.js";
import { collectPages, withListingOptions, type ListingOptions } from "../listing.js";
import { terminalText } from "../terminal-text.js";

/** `registry query '<QL>'`: a query-language discovery (docs/query-language.md). */
export function registerQueryCommand(program: Command, context: CliContext): void {
  withListingOptions(
    withClientOptions(
      program
        .command("query")
        .description("run a query-language discovery; prints the selected columns")
        .argument("<ql>", "e.g. \"SELECT entry_did, version FROM entries WHERE tags CONTAINS 'search'\""),
    ),
  )
    .addHelpText("after", "\nRevoked entries are left out unless the query mentions status. Grammar: docs/query-language.md.")
    .action(async (ql: string, options: ClientOptions & ListingOptions) => {
      const { runClientCommand } = await import("../client-command.js");
      context.exitCode = await runClientCommand(options, context, async ({ client, json, printJson }) => {
        const { items, nextCursor } = await collectPages(
          async (cursor, pageSize) => {
            const page = await client.queryPage(ql, { cursor, pageSize });
            return { items: page.rows, nextCursor: page.nextCursor };
          },
          options,
          context,
        );
        if (json) {
          // QueryEntriesResponse's names: the rows are its `entries`.
          printJson({ entries: items, nextCursor });
          return;
        }
        for (const row of items) context.stdout(rowLine(row));
        if (nextCursor !== undefined) context.stderr("more rows match; --all or --limit <n> to see them\n");
      });
    });
}

/** A row's columns, tab-separated on one line. */
function rowLine(row: JsonObject): string {
  return `${Object.values(row).map(cell).join("\t")}\n`;
}

/** A column's value: text as it is, anything else as JSON, escaped so a tab or newline cannot add a column or a row. */
function cell(value: JsonObject[string]): string {
  return terminalText(typeof value === "string" ? value : JSON.stringify(value));
}
