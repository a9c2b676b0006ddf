/**
 * Frames to bytes and back: the one msgpackr configuration of the protocol, the codec of pushed
 * values, and the checks every decoded frame passes before any field is read (size, no extension
 * types, a map with a numeric `t`). The only module of the SDK that imports msgpackr.
 */
// msgpackr's `pack` entry (Packr, over its `unpack`), not its root: the root also loads its stream
// and iterator wrappers and the optional native string extractor (msgpackr-extract): heap in a
// service for nothing the SDK's small frames need. The hub loads the root (hub.ts) for the
// extractor; both entries share one unpack module, so the hub's decoder gets it.
import { Packr } from 'msgpackr/pack';
import type { Options } from 'msgpackr';
import { ErrorCode, HotKeyError, ProtocolError } from '../errors.ts';
import { CloseCode } from './codes.ts';
import { MAX_FRAME_BYTES } from '../limits.ts';
import { MsgType, type Message } from './messages.ts';
import { findExtension } from './plain-msgpack.ts';

// useRecords: false keeps every frame self-describing (a fresh decoder reads any frame).
// skipValues: an absent optional field (`token: undefined`) is left out rather than written as
// msgpackr's ext-0 `undefined`, so every frame this codec writes is plain msgpack.
// (msgpackr documents skipValues; its typings lack it)
const packerOptions = {
  useRecords: false,
  moreTypes: false,
  mapsAsObjects: true,
  int64AsType: 'number',
  skipValues: [undefined],
} as const;
const packr = new Packr(packerOptions as Options);

export function encode(message: Message): Uint8Array {
  return packr.pack(message);
}

// Pushed values (Push, Value) are the SDK's own msgpack, carried as bin and opaque to the hub.
// moreTypes: Date, Set, RegExp, Error and typed arrays round-trip as themselves; plain objects
// come back as plain objects (client/read/push.ts decides which values may be pushed).
const valuePackr = new Packr({ useRecords: false, moreTypes: true, mapsAsObjects: true } as Options);

/** A value to push, as bytes (throws on what msgpack cannot hold, e.g. a symbol). */
export function packValue(value: unknown): Uint8Array {
  return valuePackr.pack(value);
}

/** A pushed value's bytes back to the value (throws on bytes that are not msgpack). */
export function unpackValue(bytes: Uint8Array): unknown {
  return valuePackr.unpack(bytes);
}

/** The one codec for any frame with a numeric `t` (feed-protocol.ts encodes with it too). */
export function packFrame(frame: { t: number }): Uint8Array {
  return packr.pack(frame);
}

/** Throws a ProtocolError HK_ERR_PROTOCOL: the socket closes with `CloseCode.Protocol`. */
export function protocolError(message: string): never {
  throw new ProtocolError(ErrorCode.Protocol, message, CloseCode.Protocol);
}

/** msgpack bytes to a plain object with a numeric `t`, or a ProtocolError. */
export function decodeFrame(bytes: Uint8Array): Record<string, unknown> & { t: number } {
  if (bytes.byteLength > MAX_FRAME_BYTES) {
    throw new ProtocolError(
      ErrorCode.FrameTooLarge,
      `frame of ${bytes.byteLength} bytes exceeds ${MAX_FRAME_BYTES}`,
      CloseCode.FrameTooLarge,
    );
  }
  // msgpackr would build Dates, Sets, typed arrays, BigInts … from ext tokens: refuse them unbuilt
  const ext = findExtension(bytes);
  if (ext >= 0)
    protocolError(
      `msgpack extension types are not part of the protocol (byte 0x${bytes[ext]!.toString(16)} at offset ${ext})`,
    );
  let value: unknown;
  try {
    value = packr.unpack(bytes);
  } catch (err) {
    protocolError(`frame is not valid msgpack (${(err as Error).message})`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value) || ArrayBuffer.isView(value)) {
    protocolError('frame is not a msgpack map');
  }
  const t = (value as { t?: unknown }).t;
  if (typeof t !== 'number') protocolError('frame has no numeric "t"');
  return value as Record<string, unknown> & { t: number };
}

/** An Error frame carrying a HotKeyError's code (any other error goes as HK_ERR_PROTOCOL). */
export function errorFrame(err: unknown): Uint8Array {
  const code = err instanceof HotKeyError ? err.code : ErrorCode.Protocol;
  const message = err instanceof Error ? err.message : String(err);
  return encode({ t: MsgType.Error, code, message: message.slice(0, 4096) });
}
