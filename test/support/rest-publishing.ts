import { expect } from "vitest";
import type { PublishingSetup } from "./registry-fixture.js";

/** Publishes `name@version` with `fields` (data, description...) over REST, as any client would; fails the test unless created. */
export async function publishOverRest(
  setup: PublishingSetup,
  name: string,
  version: string,
  fields: Record<string, unknown> = {},
): Promise<void> {
  const entry = await setup.publisher.entry(name, version, fields);
  const response = await fetch(`${new URL(setup.registry.url).origin}/v1/entries`, {
    method: "POST",
    headers: { authorization: `Bearer ${setup.token}`, "content-type": "application/json" },
    body: JSON.stringify(entry),
  });
  expect(response.status, await response.text()).toBe(201);
}

/** The change log's size, as a REST page of it says. */
export async function changeLogSize(registryUrl: string): Promise<number> {
  const response = await fetch(`${new URL(registryUrl).origin}/v1/changes?limit=1`);
  return Number(((await response.json()) as { size: string }).size);
}
