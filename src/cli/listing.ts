import { InvalidArgumentError, type Command } from "commander";
import type { CliContext } from "./cli-context.js";
import { createProgressLine } from "./progress-line.js";

/** The options of a command that lists pages: discover and query. */
export interface ListingOptions {
  readonly all?: boolean;
  readonly limit?: number;
  readonly pageSize?: number;
  readonly cursor?: string;
  readonly progress?: boolean;
}

/** One page as the SDK returns it. */
export interface Page<T> {
  readonly items: T[];
  readonly nextCursor: string | undefined;
}

/** The registry's most results per request. */
const MAX_PAGE_SIZE = 100;

/** Adds --all, --limit, --page-size, --cursor and --progress to a command. */
export function withListingOptions(command: Command): Command {
  return command
    .option("--all", "follow the cursors to the last page")
    .option("--limit <n>", "stop after n results, following cursors as needed", positiveInteger)
    .option("--page-size <n>", `results per request (the registry's default is 20, its maximum ${MAX_PAGE_SIZE})`, positiveInteger)
    .option("--cursor <cursor>", "start where an earlier listing stopped: the nextCursor its --json printed")
    .option("--progress", "show a progress line on stderr (shown anyway when stderr is a terminal)");
}

/**
 * Fetches pages until the listing is done: one page without --all or --limit, every page with
 * --all, exactly enough for --limit (the last request asks only for what is missing, so
 * `nextCursor` resumes right after the last result shown). `nextCursor` is undefined once the
 * listing is exhausted, as the API leaves it out.
 */
export async function collectPages<T>(
  fetchPage: (cursor: string | undefined, pageSize: number | undefined) => Promise<Page<T>>,
  options: ListingOptions,
  context: CliContext,
): Promise<{ items: T[]; nextCursor: string | undefined }> {
  const progress = createProgressLine(context, { always: options.progress === true });
  const items: T[] = [];
  let cursor = options.cursor;
  for (let pages = 1; ; pages++) {
    const page = await fetchPage(cursor, pageSizeFor(options, items.length));
    items.push(...page.items);
    progress.update(`fetched ${items.length} (${pages} page${pages === 1 ? "" : "s"})`);
    cursor = page.nextCursor;
    const enough = options.all !== true && (options.limit === undefined || items.length >= options.limit);
    if (cursor === undefined || enough) {
      progress.end();
      return { items, nextCursor: cursor };
    }
  }
}

/** The page size to ask for, with `fetched` results in hand: never more than --limit still needs. */
function pageSizeFor(options: ListingOptions, fetched: number): number | undefined {
  if (options.all === true || options.limit === undefined) return options.pageSize;
  return Math.min(options.limit - fetched, options.pageSize ?? MAX_PAGE_SIZE);
}

function positiveInteger(value: string): number {
  const parsed = Number(value);
  if (!Number.isInteger(parsed) || parsed < 1) throw new InvalidArgumentError("must be a positive integer");
  return parsed;
}
