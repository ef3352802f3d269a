import type { Knex } from "knex";
import type { SearchRepository } from "../discovery/search-repository.js";
import { SCORE_ALIAS, searchPageSql, searchSettingsSql } from "../discovery/search-sql.js";
import { translateDriverErrors } from "./driver-errors.js";
import { entryFromRow, type EntryRow } from "./entry-row.js";

export interface KnexSearchRepositoryOptions {
  /** Longest a search statement may run before it is cancelled (deadline_exceeded). */
  readonly statementTimeoutMs: number;
}

export function createKnexSearchRepository(knex: Knex, options: KnexSearchRepositoryOptions): SearchRepository {
  const settings = searchSettingsSql(options.statementTimeoutMs);
  return {
    search(query, page) {
      const statement = searchPageSql(query, page);
      return translateDriverErrors(() =>
        knex.transaction(
          async (tx) => {
            await tx.raw(settings.sql, settings.bindings as Knex.RawBinding[]);
            const result = await tx.raw(statement.sql, statement.bindings as Knex.RawBinding[]);
            const rows = result.rows as (EntryRow & Record<string, string>)[];
            return {
              rows: rows.map((row) => ({
                values: entryFromRow(row),
                position: [row[`${SCORE_ALIAS}_text`]!, String(row.sequence)],
              })),
            };
          },
          { readOnly: true },
        ),
      );
    },
  };
}
