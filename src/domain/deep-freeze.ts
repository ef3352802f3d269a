/**
 * Freezes a value and everything it holds, so that an object shared between calls (a cached entry,
 * a kept answer) cannot be changed by one of them: in strict mode (all of src/) a write throws.
 * Byte arrays cannot be frozen and are left as they are; a Date's time stays settable (its value
 * is an internal slot, which freezing does not reach).
 */
export function deepFreeze<T>(value: T): T {
  if (typeof value !== "object" || value === null || ArrayBuffer.isView(value) || Object.isFrozen(value)) return value;
  Object.freeze(value);
  for (const item of Object.values(value)) deepFreeze(item);
  return value;
}
