import { writeFile } from "node:fs/promises";
import { committedOpenApiText } from "./committed-openapi-document.js";

// `npm run generate:openapi`: writes docs/openapi.json (or the path given). CI fails when the
// committed file differs from what this writes.
await writeFile(process.argv[2] ?? "docs/openapi.json", committedOpenApiText());
