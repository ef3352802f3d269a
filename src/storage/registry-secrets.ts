import { randomBytes } from "node:crypto";
import type { Knex } from "knex";
import { translateDriverErrors } from "./driver-errors.js";

/**
 * The registry's own secret called `name`: made once, at random, by whichever replica asks first,
 * and read by every other. Concurrent first calls agree because only one insert can win.
 */
export function loadOrCreateSecret(knex: Knex, name: string, bytes = 32): Promise<Buffer> {
  return translateDriverErrors(async () => {
    await knex("registry_secrets")
      .insert({ name, secret: randomBytes(bytes) })
      .onConflict("name")
      .ignore();
    const row = await knex("registry_secrets").select("secret").where({ name }).first();
    return row.secret as Buffer;
  });
}
