/**
 * The hotkey wire protocol, the module the SDK, the hub and the dashboard import
 * (`@hotkey/sdk/protocol`). It gathers, by name, what its parts define:
 *
 *   limits.ts    bounds of frames, keys, names, values and lists; the default lease
 *   versions.ts  version negotiation: the oldest versions spoken, the version a Hello gets
 *   messages.ts  PROTOCOL_VERSION, the message kinds (MsgType) and every message's shape
 *   codes.ts     close codes and demote reasons
 *   codec.ts     msgpack encoding and frame decoding (the only msgpackr user), Error frames
 *   guards.ts    field guards for decoded frames
 *   decoders.ts  decodeClientMessage / decodeServerMessage: a frame to a checked message
 *
 * Frames are binary WebSocket messages, each one msgpack map decodable on its own (no shared
 * record structures, no extension types: plain-msgpack.ts), with a numeric `t` naming the message
 * type. Every frame is encoded by codec.ts; the dashboard feed's frames (feed-protocol.ts) use the
 * same codec and guards. One other reader exists: the hub's ingest path reads Report frames in
 * place (hub/src/core/ingest/report-frame.ts) and accepts only frames `decodeClientMessage` accepts,
 * reading them the same way; anything else it leaves to the decoder here.
 * Runtime-agnostic (no `node:` imports, `Uint8Array` in and out) so that the dashboard bundles it
 * for the browser.
 */
export {
  DEFAULT_LEASE_MS,
  MAX_COUNT,
  MAX_FENCED_IDS,
  MAX_FRAME_BYTES,
  MAX_HOLD_KEYS,
  MAX_KEY_LENGTH,
  MAX_LIMIT_KEYS,
  MAX_NAME_LENGTH,
  MAX_REPORT_KEYS,
  MAX_VALUE_BYTES,
} from '../limits.ts';
export {
  HoldResult,
  MsgType,
  PROTOCOL_VERSION,
  PushForm,
  type Ack,
  type Applied,
  type ClientMessage,
  type ClientRole,
  type Config,
  type Demote,
  type Drop,
  type ErrorMsg,
  type Fill,
  type Grant,
  type Held,
  type Hello,
  type Hold,
  type HotEntry,
  type Invalidate,
  type InvalidateRequest,
  type Lease,
  type Limit,
  type Member,
  type Members,
  type Message,
  type Promote,
  type Push,
  type Release,
  type Report,
  type Resync,
  type ServerMessage,
  type Snapshot,
  type Value,
  type Welcome,
} from './messages.ts';
export {
  CloseCode,
  DemoteReason,
  FATAL_CLOSE_CODES,
  type HubDemoteReason,
  type SdkDemoteReason,
} from './codes.ts';
export {
  decodeFrame,
  encode,
  errorFrame,
  packFrame,
  packValue,
  protocolError,
  unpackValue,
} from './codec.ts';
export {
  arr,
  assertKey,
  bin,
  bool,
  int,
  num,
  obj,
  optStr,
  str,
} from './guards.ts';
export {
  describeRange,
  HOLDERS_VERSION,
  negotiateVersion,
  offeredRange,
  OLDEST_CLIENT_VERSION,
  OLDEST_HUB_VERSION,
} from './versions.ts';
export {
  decodeClientMessage,
  decodeServerMessage,
} from './decoders.ts';
