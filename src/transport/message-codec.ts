import type { DescMessage, Message } from "@bufbuild/protobuf";

/**
 * How requests are read and answers written, in protobuf's binary and JSON forms. The service
 * hands its own in (src/edge/rpc/message-codec.ts): which input it refuses, and with which error
 * naming the field, is its rule, as is reusing the bytes of answers it has encoded before.
 */
export interface MessageCodec {
  /** A request message from its binary form; throws when the bytes are not one. */
  readBinary(schema: DescMessage, bytes: Uint8Array): Message;
  /** A request message from its JSON form, UTF-8 text; throws when the text is not one. */
  readJson(schema: DescMessage, bytes: Uint8Array): Message;
  writeBinary(schema: DescMessage, message: Message): Uint8Array;
  writeJson(schema: DescMessage, message: Message): Uint8Array;
}
