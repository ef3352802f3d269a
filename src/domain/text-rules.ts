import parseSpdxExpression from "spdx-expression-parse";
import type { TextRule } from "./entry-fields.js";

/**
 * The rules an optional publisher text field's value must pass when not empty, by the name its
 * catalogue row gives (entry-fields.ts). Each answers a problem to report under the field's name,
 * or undefined when the value is acceptable.
 */
export const TEXT_RULES: Readonly<Record<TextRule, (value: string) => string | undefined>> = Object.freeze({
  "https-url": httpsUrlProblem,
  "spdx-expression": spdxExpressionProblem,
});

export const TEXT_RULE_LIMITS = Object.freeze({ urlChars: 2_048, licenseChars: 256 });

function httpsUrlProblem(value: string): string | undefined {
  if (value.length > TEXT_RULE_LIMITS.urlChars) return `must be at most ${TEXT_RULE_LIMITS.urlChars} characters`;
  // WHATWG URL parsing trims and percent-encodes silently; a signed value is kept as sent, so it must already be clean.
  if (hasSpaceOrControl(value)) return "must be an absolute https:// URL without spaces or control characters";
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return "must be an absolute https:// URL";
  }
  if (url.protocol !== "https:" || url.hostname === "") return "must be an absolute https:// URL";
  if (url.username !== "" || url.password !== "") return "must not carry a user name or password";
  return undefined;
}

function hasSpaceOrControl(value: string): boolean {
  for (const char of value) {
    const code = char.codePointAt(0) ?? 0;
    if (code <= 0x20 || code === 0x7f || /\s/u.test(char)) return true;
  }
  return false;
}

function spdxExpressionProblem(value: string): string | undefined {
  if (value.length > TEXT_RULE_LIMITS.licenseChars) return `must be at most ${TEXT_RULE_LIMITS.licenseChars} characters`;
  try {
    parseSpdxExpression(value);
    return undefined;
  } catch {
    return 'must be an SPDX license expression, e.g. "MIT", "Apache-2.0 OR MIT" or "LicenseRef-Proprietary"';
  }
}
