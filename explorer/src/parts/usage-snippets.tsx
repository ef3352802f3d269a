/** How to fetch the same entry from a terminal and from code. */
export function UsageSnippets({ did }: { readonly did: string }) {
  const origin = window.location.origin;
  return (
    <section aria-labelledby="use-heading" className="panel">
      <h2 id="use-heading">Use it</h2>
      <h3>Command line</h3>
      <pre>
        <code>
          registry resolve {did} --registry {origin}
          {"\n"}registry verify {did} --registry {origin}
        </code>
      </pre>
      <h3>SDK</h3>
      <pre>
        <code>{`import { createRegistryClient } from "@open-registry/sdk";

const client = createRegistryClient({ baseUrl: "${origin}" });
const entry = await client.resolve("${did}");`}</code>
      </pre>
    </section>
  );
}
