import { randomBytes } from "node:crypto";
import type { TestProject } from "vitest/node";
import { migrateToLatest, openDatabase } from "../../src/storage/database.js";
import { removeOrphanedScratch, scratchDirectory } from "./scratch-directories.js";
import { usesPostgres, withAdmin, type DatabaseTemplate } from "./test-database.js";

/**
 * Global setup of the lanes that use databases: one migrated database made once per run, which
 * each test file copies (test-database.ts) instead of creating and migrating its own. A new
 * embedded database runs initdb, several seconds each; a copy of a migrated one opens in a fraction.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const { template, remove } = usesPostgres() ? await postgresTemplate(process.env.DATABASE_URL!) : await pgliteTemplate();
  project.provide("databaseTemplate", template);
  return remove;
}

async function pgliteTemplate() {
  await removeOrphanedScratch();
  const directory = await scratchDirectory("registry-template-");
  const database = await openDatabase({ dataDir: directory.path });
  await migrateToLatest(database);
  await database.close();
  const template: DatabaseTemplate = { kind: "pglite", dataDir: directory.path };
  return { template, remove: directory.remove };
}

async function postgresTemplate(serverUrl: string) {
  const name = `registry_template_${randomBytes(6).toString("hex")}`;
  await withAdmin(serverUrl, (client) => client.query(`create database ${name}`));
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  // Closed before any copy: Postgres copies only a template nobody is connected to.
  const database = await openDatabase({ databaseUrl: url.toString(), dataDir: "" });
  await migrateToLatest(database);
  await database.close();
  const template: DatabaseTemplate = { kind: "postgres", name };
  return {
    template,
    remove: () => withAdmin(serverUrl, (client) => client.query(`drop database if exists ${name} with (force)`)).then(() => {}),
  };
}
