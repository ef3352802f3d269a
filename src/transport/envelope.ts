/**
 * The length-prefixed framing of gRPC and gRPC-Web (and Connect streaming): one flag byte, a
 * big-endian uint32 length, then the payload. Not Connect's envelope helpers: its encoder zero-fills
 * a Uint8Array the answer would then wrap, and its decoder reads streams, not one whole body.
 */

/** Flag bit 0: the payload is compressed with the message encoding. */
export const COMPRESSED_FLAG = 0b0000_0001;
/** Flag bit 7 (gRPC-Web): the payload is the trailer block, not a message. */
export const TRAILER_FLAG = 0b1000_0000;

export interface Envelope {
  readonly flags: number;
  readonly payload: Buffer;
}

export function encodeEnvelope(flags: number, payload: Uint8Array): Buffer {
  const frame = Buffer.allocUnsafe(5 + payload.byteLength);
  frame[0] = flags;
  frame.writeUInt32BE(payload.byteLength, 1);
  frame.set(payload, 5);
  return frame;
}

/**
 * The one message of a unary request body. A unary call carries exactly one envelope: zero, two,
 * or a truncated one is a protocol error the caller reports as invalid_argument.
 */
export function decodeSingleEnvelope(body: Buffer): Envelope | { error: string } {
  if (body.length < 5) return { error: body.length === 0 ? "no message was sent" : "the message frame is truncated" };
  const length = body.readUInt32BE(1);
  if (body.length < 5 + length) return { error: "the message frame is truncated" };
  if (body.length > 5 + length) return { error: "a unary call takes exactly one message" };
  return { flags: body[0] as number, payload: body.subarray(5) };
}
