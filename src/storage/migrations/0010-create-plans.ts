import type { Knex } from "knex";

/**
 * The write functions plan each statement for the values at hand. PL/pgSQL otherwise caches a
 * generic plan per connection after a few calls, and a plan made while `entries` was nearly empty
 * (a fresh registry, a mirror catching up) keeps scanning the wrong index as the table grows until
 * an autoanalyze happens to invalidate it, and creates slow as the table grows. Planning these few
 * index lookups costs less than that. (Migration 0012 found the one plan at fault and lets
 * registry_create_entry keep its plans again; docs/performance.md#creates has the figures.)
 */
export const CREATE_ENTRY_SIGNATURE =
  "registry_create_entry(text, text, text, text, text, text, boolean, text, timestamptz, text, text[], jsonb, text, text, numeric, text, text)";
const WRITE_FUNCTIONS = [
  CREATE_ENTRY_SIGNATURE,
  "registry_log_append(text, bigint, text, text, text, text)",
  "registry_recompute_latest(text)",
];

export async function up(knex: Knex): Promise<void> {
  for (const fn of WRITE_FUNCTIONS) await knex.raw(`alter function ${fn} set plan_cache_mode = force_custom_plan`);
}

export async function down(knex: Knex): Promise<void> {
  for (const fn of WRITE_FUNCTIONS) await knex.raw(`alter function ${fn} reset plan_cache_mode`);
}
