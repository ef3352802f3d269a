import { createHash } from "node:crypto";
import type { HttpExchange, ResponseHeaders } from "./http-exchange.js";

/**
 * HTTP validators for reads (REST GET and Connect GET): a strong ETag from the answer's bytes, and
 * 304 Not Modified when the client already holds them. A revocation changes the bytes of every
 * answer it touches, so a validator can never confirm a stale entry.
 */

const tags = new WeakMap<Uint8Array, string>();

/**
 * A strong entity tag for these bytes: 128 bits of their SHA-256, remembered per bytes object
 * (answers reused for a cached entry are one object, hashed once).
 */
export function entityTag(body: Uint8Array): string {
  let tag = tags.get(body);
  if (tag === undefined) {
    tag = `"${createHash("sha256").update(body).digest("base64url").slice(0, 22)}"`;
    tags.set(body, tag);
  }
  return tag;
}

/**
 * The tag of a compressed representation: strong validators differ between codings of the same
 * resource (RFC 9110 §8.8.3), so "-gzip" or "-br" is added inside the quotes.
 */
export function codedEntityTag(tag: string, encoding: string | undefined): string {
  return encoding === undefined ? tag : `${tag.slice(0, -1)}-${encoding}"`;
}

/**
 * Sets the ETag of a successful read and answers 304 when If-None-Match names it (in any coding:
 * each is the same content). Returns true when the 304 was sent.
 */
export function answerConditionally(exchange: HttpExchange, headers: ResponseHeaders, body: Uint8Array): boolean {
  const tag = entityTag(body);
  headers.etag = tag;
  const ifNoneMatch = exchange.header("if-none-match");
  if (ifNoneMatch === undefined || !matchesAny(ifNoneMatch, tag)) return false;
  const notModified = { ...headers };
  delete notModified["content-type"];
  exchange.respond(304, notModified);
  return true;
}

/** If-None-Match uses the weak comparison (RFC 9110 §13.1.2): W/ prefixes are ignored. */
function matchesAny(header: string, tag: string): boolean {
  if (header.trim() === "*") return true;
  const opaque = tag.slice(1, -1);
  for (const item of header.split(",")) {
    const candidate = item.trim().replace(/^W\//, "").slice(1, -1);
    if (candidate === opaque || candidate === `${opaque}-gzip` || candidate === `${opaque}-br`) return true;
  }
  return false;
}
