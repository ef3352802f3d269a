import type { JsonValue } from "@bufbuild/protobuf";
import type { Command } from "commander";
import type { DiscoverConditionInput } from "../../sdk/registry-client.js";
import type { CliContext } from "../cli-context.js";
import { withClientOptions, type ClientOptions } from "../client-options.js";
import { CliFailure, EXIT } from "../exit-codes.js";
import { collectPages, withListingOptions, type ListingOptions } from "../listing.js";

interface DiscoverOptions extends ClientOptions, ListingOptions {
  readonly type?: string;
  readonly tag: string[];
  readonly where: string[];
  readonly status?: string;
  readonly includeRevoked?: boolean;
}

/** `registry discover`: a structured discovery, its conditions as flags. */
export function registerDiscoverCommand(program: Command, context: CliContext): void {
  withListingOptions(
    withClientOptions(
      program
        .command("discover")
        .description("find entries by conditions (ANDed), newest first")
        .option("--type <entryType>", "only entries of this type")
        .option("--tag <tag>", "entries whose tags contain this one (repeatable)", collect, [])
        .option(
          "--where <condition>",
          "'field op value', e.g. 'publishedAt >= 2026-01-01' or 'version IN 1.0.0,2.0.0' (repeatable)",
          collect,
          [],
        )
        .option("--status <status>", "only active or only revoked entries")
        .option("--include-revoked", "show revoked entries too"),
    ),
  )
    .addHelpText(
      "after",
      "\nRevoked entries are hidden unless a condition names status or revokedAt: --include-revoked,\n" +
        "--status revoked, or --where 'revokedAt > 2026-01-01'. Fields and operators: docs/api.md (Discovery).",
    )
    .action(async (options: DiscoverOptions) => {
      const { entryJson, runClientCommand, statusName } = await import("../client-command.js");
      context.exitCode = await runClientCommand(options, context, async ({ client, json, printJson }) => {
        const conditions = conditionsOf(options);
        let total = 0;
        let totalIsLowerBound = false;
        const { items, nextCursor } = await collectPages(
          async (cursor, pageSize) => {
            const page = await client.discoverPage({ entryType: options.type, conditions, pageSize, cursor });
            total = page.total;
            totalIsLowerBound = page.totalIsLowerBound;
            return { items: page.entries, nextCursor: page.nextCursor };
          },
          options,
          context,
        );
        if (json) {
          printJson({ entries: items.map(entryJson), total, totalIsLowerBound, nextCursor });
          return;
        }
        for (const entry of items) context.stdout`${entry.entryDid}\t${statusName(entry.status)}\t${entry.description}\n`;
        if (items.length === 0 && !conditions.some(namesLifecycle)) {
          context.stderr("no active entries match (revoked entries are hidden: --include-revoked shows them)\n");
        }
        if (nextCursor !== undefined) context.stderr`${total}${totalIsLowerBound ? "+" : ""} match; --all or --limit <n> to see more\n`;
      });
    });
}

/** A condition that asks about revocation, so the registry includes revoked entries. */
function namesLifecycle(condition: DiscoverConditionInput): boolean {
  return condition.field === "status" || condition.field === "revokedAt";
}

function conditionsOf(options: DiscoverOptions): DiscoverConditionInput[] {
  const conditions: DiscoverConditionInput[] = options.tag.map((tag) => ({ field: "tags", op: "CONTAINS", value: tag }));
  conditions.push(...options.where.map(parseWhere));
  if (options.status !== undefined) conditions.push({ field: "status", op: "=", value: options.status });
  else if (options.includeRevoked === true) conditions.push({ field: "status", op: "IN", value: ["active", "revoked"] });
  return conditions;
}

/** 'field op value': the value is JSON when it reads as JSON (a number, true, an array), else the text as is. */
function parseWhere(text: string): DiscoverConditionInput {
  const match = /^\s*(\S+)\s+(\S+)\s+(.*?)\s*$/s.exec(text);
  if (match === null) throw new CliFailure(`--where "${text}": expected 'field op value'`, EXIT.usage);
  const [, field, op, raw] = match as unknown as [string, string, string, string];
  return { field, op: op.toUpperCase(), value: jsonOrText(raw) };
}

function jsonOrText(raw: string): JsonValue {
  try {
    return JSON.parse(raw) as JsonValue;
  } catch {
    return raw;
  }
}

function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}
