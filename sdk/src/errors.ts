/**
 * One error base class with string codes. Misuse throws `TypeError` at once; network faults are
 * emitted as events (never thrown into the caller of `get()`). Protocol faults (ProtocolError)
 * and refusals (AuthError, CapacityError) carry the close code the socket closes with
 * (closeCodeOf). The hub's HTTP API answers with the same codes (its HttpError extends HotKeyError).
 */

export const ErrorCode = {
  /** a frame that is not msgpack, not an object, or not a known message of the right shape */
  Protocol: 'HK_ERR_PROTOCOL',
  /** the hello carried a protocol version this side does not speak */
  Version: 'HK_ERR_VERSION',
  /** the hello named an app the hub is not configured for */
  UnknownApp: 'HK_ERR_UNKNOWN_APP',
  /** missing or wrong app token, dashboard token or admin token */
  Auth: 'HK_ERR_AUTH',
  /** a frame over `MAX_FRAME_BYTES` */
  FrameTooLarge: 'HK_ERR_FRAME_TOO_LARGE',
  /** a key over `MAX_KEY_LENGTH` characters, or an empty key */
  KeyTooLong: 'HK_ERR_KEY_TOO_LONG',
  /** no hello within the hub's hello timeout */
  HelloTimeout: 'HK_ERR_HELLO_TIMEOUT',
  /** the socket's send buffer stayed over the hub's limit: the peer reads too slowly */
  SlowConsumer: 'HK_ERR_SLOW_CONSUMER',
  /** the hub is at a connection limit (close 4009); the client retries with backoff */
  OverCapacity: 'HK_ERR_OVER_CAPACITY',
  /**
   * Over a rate budget: a connection sent more work than the hub's per-connection budget holds
   * (close 4012; the client reconnects with backoff), or a command of the ioredis wrapper on a key
   * whose rule `limit` this instance's share is spent (rejected unsent; retry later)
   */
  RateLimited: 'HK_ERR_RATE_LIMITED',
  /** the hub keeps state for its most apps (close 4011); the client retries with backoff */
  AppLimit: 'HK_ERR_APP_LIMIT',
  /** a rule or rule set that does not validate */
  Rules: 'HK_ERR_RULES',
  /** a config file or option that does not validate */
  Config: 'HK_ERR_CONFIG',
  /** the client was closed */
  Closed: 'HK_ERR_CLOSED',
  /** a request to the hub did not finish within its deadline */
  Timeout: 'HK_ERR_TIMEOUT',
  /** no hub is reachable for the request */
  Unavailable: 'HK_ERR_UNAVAILABLE',
  /**
   * Redis adapters: the write was applied in Redis, but its invalidation was not acknowledged
   * (`cause`: why — HK_ERR_TIMEOUT, or HK_ERR_UNAVAILABLE with the invalidation queue full), so
   * other instances may still serve the old value; retry the write, or invalidate the key, once a
   * hub is back
   */
  Unacked: 'HK_ERR_UNACKED',
  /** a hot-key load found the client's load limiter full (maxLoadsInFlight busy, maxLoadsQueued waiting) */
  LoadLimit: 'HK_ERR_LOAD_LIMIT',
  /**
   * An update (InvalidateRequest with a value) whose value is over the hub's `maxPushBytes`: the
   * hub broadcast a plain invalidation instead (acked as usual) and tells the writer with an Error
   * frame (not fatal). A Push over it is discarded.
   */
  PushTooLarge: 'HK_ERR_PUSH_TOO_LARGE',
  /** the TLS handshake with a wss:// hub failed (an untrusted or wrong certificate, TLS on one side only) */
  Tls: 'HK_ERR_TLS',
  // The hub's HTTP API answers with these too (HttpError); the ones above keep their meaning there.
  /** Redis adapters (ioredis, node-redis): the Redis node of the command is failing and its circuit breaker is open; the command was not sent */
  BreakerOpen: 'HK_ERR_BREAKER_OPEN',
  /** HTTP: no such route, or no such app */
  NotFound: 'HK_ERR_NOT_FOUND',
  /** HTTP 403 on a WebSocket upgrade: the request's `Origin` is not one the hub admits on that path */
  Origin: 'HK_ERR_ORIGIN',
  /** HTTP: the route exists but not for this method */
  Method: 'HK_ERR_METHOD',
  /** HTTP: the body is not valid JSON or lacks a field */
  BadRequest: 'HK_ERR_BAD_REQUEST',
  /** HTTP: the body is over the hub's limit */
  BodyTooLarge: 'HK_ERR_BODY_TOO_LARGE',
  /** HTTP: a fault inside the hub (logged) */
  Internal: 'HK_ERR_INTERNAL',
  /** HTTP: the hub that owns the key did not answer within its deadline, or answered garbage */
  OwnerUnreachable: 'HK_ERR_OWNER_UNREACHABLE',
} as const;
export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode];

export class HotKeyError extends Error {
  readonly code: ErrorCode;
  constructor(code: ErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'HotKeyError';
    this.code = code;
  }
}

/** A frame or message that breaks the wire protocol; `closeCode` is what the socket closes with. */
export class ProtocolError extends HotKeyError {
  readonly closeCode: number;
  constructor(code: ErrorCode, message: string, closeCode: number) {
    super(code, message);
    this.name = 'ProtocolError';
    this.closeCode = closeCode;
  }
}

/** Missing or wrong credentials (app, dashboard or admin token): HK_ERR_AUTH; `closeCode` is what the socket closes with (CloseCode.Auth). */
export class AuthError extends HotKeyError {
  readonly closeCode: number;
  constructor(message: string, closeCode: number) {
    super(ErrorCode.Auth, message);
    this.name = 'AuthError';
    this.closeCode = closeCode;
  }
}

/** A hub at a connection limit: HK_ERR_OVER_CAPACITY; `closeCode` is what the socket closes with (CloseCode.OverCapacity). A client retries with backoff. */
export class CapacityError extends HotKeyError {
  readonly closeCode: number;
  constructor(message: string, closeCode: number) {
    super(ErrorCode.OverCapacity, message);
    this.name = 'CapacityError';
    this.closeCode = closeCode;
  }
}

/**
 * The close code a socket closes with for this error: set on every refusal or protocol fault
 * (ProtocolError, AuthError, CapacityError); undefined for anything else, which is a fault of the
 * side that caught it, not of its peer.
 */
export function closeCodeOf(err: unknown): number | undefined {
  return err instanceof HotKeyError && 'closeCode' in err && typeof err.closeCode === 'number'
    ? err.closeCode
    : undefined;
}

/** A rule or config that does not validate; `field` names the offending field (`rules[2].threshold`). */
export class ValidationError extends HotKeyError {
  readonly field: string;
  constructor(code: typeof ErrorCode.Rules | typeof ErrorCode.Config, field: string, message: string) {
    super(code, `${field}: ${message}`);
    this.name = 'ValidationError';
    this.field = field;
  }
}
