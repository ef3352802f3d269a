import { InvalidArgumentError, type Command } from "commander";
import type { CliContext } from "./cli-context.js";

/** The options of a command that lists pages: discover and query. */
export interface ListingOptions {
  readonly all?: boolean;
  readonly limit?: number;
  readonly pageSize?: number;
  readonly progress?: boolean;
}

/** One page as the SDK returns it. */
export interface Page<T> {
  readonly items: T[];
  readonly nextCursor: string | undefined;
}

/** Adds --all, --limit, --page-size and --progress to a command. */
export function withListingOptions(command: Command): Command {
  return command
    .option("--all", "follow the cursors to the last page")
    .option("--limit <n>", "stop after n results, following cursors as needed", positiveInteger)
    .option("--page-size <n>", "results per request (the registry's default is 20, its maximum 100)", positiveInteger)
    .option("--progress", "show a progress line on stderr (shown anyway when stderr is a terminal)");
}

/**
 * Fetches pages until the listing is done: one page without --all or --limit, every page with
 * --all, enough for --limit. `more` says whether results were left unfetched.
 */
export async function collectPages<T>(
  fetchPage: (cursor: string | undefined, pageSize: number | undefined) => Promise<Page<T>>,
  options: ListingOptions,
  context: CliContext,
): Promise<{ items: T[]; more: boolean }> {
  const progress = progressLine(options.progress === true || context.stderrIsTty, context);
  const pageSize = options.pageSize ?? (options.limit === undefined || options.all === true ? undefined : Math.min(options.limit, 100));
  const items: T[] = [];
  let cursor: string | undefined;
  for (let pages = 1; ; pages++) {
    const page = await fetchPage(cursor, pageSize);
    items.push(...page.items);
    progress.update(items.length, pages);
    cursor = page.nextCursor;
    const limitReached = options.all !== true && options.limit !== undefined && items.length >= options.limit;
    const oneAsked = options.all !== true && options.limit === undefined;
    if (cursor === undefined || limitReached || oneAsked) {
      progress.end();
      if (limitReached && items.length > options.limit!) return { items: items.slice(0, options.limit), more: true };
      return { items, more: cursor !== undefined };
    }
  }
}

/** "fetched 120 (3 pages)" on stderr: rewritten in place on a terminal, one line per page otherwise. */
function progressLine(shown: boolean, context: CliContext) {
  let written = false;
  return {
    update(count: number, pages: number) {
      if (!shown) return;
      const line = `fetched ${count} (${pages} page${pages === 1 ? "" : "s"})`;
      // The terminal's line is rewritten in place: the CR is the template's own, never a value's.
      if (context.stderrIsTty) context.stderr`\r${line}`;
      else context.stderr`${line}\n`;
      written = true;
    },
    end() {
      if (shown && written && context.stderrIsTty) context.stderr("\n");
    },
  };
}

function positiveInteger(value: string): number {
  const parsed = Number(value);
  if (!Number.isInteger(parsed) || parsed < 1) throw new InvalidArgumentError("must be a positive integer");
  return parsed;
}
