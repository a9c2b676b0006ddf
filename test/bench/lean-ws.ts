/**
 * A minimal WebSocket client (RFC 6455) for the load generators: thousands of simulated SDK
 * instances per process, each one real WebSocket over real TCP to the real hub. With `ws` every
 * received frame went through a fresh read Buffer, the stream machinery ('data' events) and ws's
 * Receiver: ~18.5 µs of generator CPU per message at 10,000 connections, on the same two cores as
 * the hub, so the generators, not the hub, set much of the measured tail.
 *
 * Here a socket reads with `onread` into ONE buffer shared by every connection of the process (no
 * allocation and no stream per read) and frames are parsed in place: a message is handed over as a
 * view into that buffer, valid only during the callback; only a frame that straddles reads is
 * copied (into a buffer of its final size, filled as the reads arrive).
 *
 * What it does of the RFC: the HTTP/1.1 Upgrade handshake (a random Sec-WebSocket-Key; the 101 and
 * Sec-WebSocket-Accept = base64(sha1(key + GUID)) are checked, §4.1); client frames masked with a
 * fresh random 4-byte key each (§5.3), taken from a crypto-random pool refilled in bulk as ws does;
 * server frames unmasked with 7/16/64-bit lengths (§5.2); binary messages, also fragmented (§5.4);
 * ping answered with a pong of the same payload, close answered with a close (§5.5). No extensions,
 * no subprotocols, no TLS. A text frame (the protocol is binary) closes with 1003; a masked server
 * frame, reserved bits or opcodes, or a malformed control frame close with 1002; a message over
 * `maxMessageBytes` with 1009 (§7.4.1).
 */
import { createHash, randomBytes, randomFillSync } from 'node:crypto';
import net from 'node:net';

const GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11';
const Op = { Continuation: 0, Text: 1, Binary: 2, Close: 8, Ping: 9, Pong: 10 } as const;
/** close codes used here (RFC 6455 §7.4.1) */
export const LeanClose = {
  Normal: 1000,
  ProtocolError: 1002,
  UnsupportedData: 1003,
  NoStatus: 1005,
  Abnormal: 1006,
  TooBig: 1009,
} as const;

/** every connection of the process reads into this one buffer (onread): a read allocates nothing */
const READ_BUFFER = Buffer.allocUnsafe(64 * 1024);
/** masking keys, 4 bytes per frame, refilled in one call when used up (ws's sender does the same) */
const MASK_POOL = Buffer.allocUnsafe(8 * 1024);
let maskAt = MASK_POOL.length;
/** a response head longer than this is not a WebSocket server's */
const MAX_HANDSHAKE_BYTES = 16 * 1024;

export interface LeanEvents {
  /** a binary message: a view into the shared read buffer unless it straddled reads, so valid only during the call */
  onMessage(data: Buffer): void;
  /** the connection ended after the handshake; `code` 1006 when it ended without a close frame */
  onClose?(code: number, reason: string): void;
}

export interface LeanOptions {
  /** deadline for TCP connect + handshake @default 30000 */
  timeoutMs?: number;
  /** a message (all its fragments) above this closes the connection with 1009 @default 16 MiB */
  maxMessageBytes?: number;
}

/** One frame: FIN, `opcode`, the payload masked with a fresh key, in one allocation (one write). */
export function maskedFrame(opcode: number, payload: Uint8Array): Buffer {
  const len = payload.length;
  const ext = len < 126 ? 0 : len < 0x10000 ? 2 : 8;
  const head = 2 + ext + 4;
  const out = Buffer.allocUnsafe(head + len);
  out[0] = 0x80 | opcode;
  if (ext === 0) out[1] = 0x80 | len;
  else if (ext === 2) {
    out[1] = 0x80 | 126;
    out.writeUInt16BE(len, 2);
  } else {
    out[1] = 0x80 | 127;
    out.writeUInt32BE(Math.floor(len / 2 ** 32), 2);
    out.writeUInt32BE(len >>> 0, 6);
  }
  if (maskAt + 4 > MASK_POOL.length) {
    randomFillSync(MASK_POOL);
    maskAt = 0;
  }
  const m0 = MASK_POOL[maskAt]!;
  const m1 = MASK_POOL[maskAt + 1]!;
  const m2 = MASK_POOL[maskAt + 2]!;
  const m3 = MASK_POOL[maskAt + 3]!;
  maskAt += 4;
  out[head - 4] = m0;
  out[head - 3] = m1;
  out[head - 2] = m2;
  out[head - 1] = m3;
  let i = 0;
  for (; i + 4 <= len; i += 4) {
    out[head + i] = payload[i]! ^ m0;
    out[head + i + 1] = payload[i + 1]! ^ m1;
    out[head + i + 2] = payload[i + 2]! ^ m2;
    out[head + i + 3] = payload[i + 3]! ^ m3;
  }
  for (; i < len; i++) out[head + i] = payload[i]! ^ MASK_POOL[maskAt - 4 + (i & 3)]!;
  return out;
}

/** bytes of a server frame's header, known from its first two bytes (server frames carry no mask) */
function headerBytes(b1: number): number {
  const len7 = b1 & 0x7f;
  return len7 === 126 ? 4 : len7 === 127 ? 10 : 2;
}

export class LeanWebSocket {
  readonly #socket: net.Socket;
  readonly #events: LeanEvents;
  readonly #maxMessageBytes: number;
  #open = false;
  #closed = false;
  /** a header cut by the end of a read: its bytes so far (allocated on the first cut header) */
  #head: Buffer | null = null;
  #headLen = 0;
  /** a payload cut by the end of a read, allocated at its final size, and how much of it arrived */
  #payload: Buffer | null = null;
  #filled = 0;
  #opcode = 0;
  #fin = true;
  /** fragments of a binary message whose last frame has not come yet */
  #fragments: Buffer[] | null = null;
  #fragmentBytes = 0;
  /** frames parsed, all kinds, and socket reads that delivered them (tests see how frames were cut) */
  framesIn = 0;
  readsIn = 0;

  private constructor(socket: net.Socket, events: LeanEvents, maxMessageBytes: number) {
    this.#socket = socket;
    this.#events = events;
    this.#maxMessageBytes = maxMessageBytes;
  }

  /** Connects to `url` (ws://host:port/path), does the handshake, resolves once it is open. */
  static connect(url: string, events: LeanEvents, options: LeanOptions = {}): Promise<LeanWebSocket> {
    const { timeoutMs = 30_000, maxMessageBytes = 16 * 2 ** 20 } = options;
    const target = new URL(url);
    if (target.protocol !== 'ws:') throw new TypeError(`lean-ws speaks ws:// only, not ${target.protocol}`);
    const host = target.hostname.replace(/^\[|\]$/g, '');
    const port = Number(target.port || 80);
    const key = randomBytes(16).toString('base64');
    const accept = createHash('sha1')
      .update(key + GUID)
      .digest('base64');

    return new Promise((resolve, reject) => {
      let response: Buffer | null = null;
      let lean: LeanWebSocket | null = null;
      const fail = (err: Error) => {
        clearTimeout(timer);
        socket.destroy();
        reject(err);
      };
      const timer = setTimeout(
        () => fail(new Error(`WebSocket handshake with ${url} timed out after ${timeoutMs} ms`)),
        timeoutMs,
      );
      const socket = net.connect({
        host,
        port,
        onread: {
          buffer: READ_BUFFER,
          callback: (nread: number, buf: Buffer): boolean => {
            if (lean !== null) {
              lean.#onRead(buf, nread);
              return true;
            }
            // the response head may arrive in pieces; what follows it is already frames
            response =
              response === null
                ? Buffer.from(buf.subarray(0, nread))
                : Buffer.concat([response, buf.subarray(0, nread)]);
            const end = response.indexOf('\r\n\r\n');
            if (end < 0) {
              if (response.length > MAX_HANDSHAKE_BYTES)
                fail(new Error(`no HTTP response head within ${MAX_HANDSHAKE_BYTES} bytes`));
              return true;
            }
            const problem = checkHandshake(response.toString('latin1', 0, end), accept);
            if (problem !== null) {
              fail(new Error(`WebSocket handshake with ${url} failed: ${problem}`));
              return false;
            }
            clearTimeout(timer);
            lean = new LeanWebSocket(socket, events, maxMessageBytes);
            lean.#open = true;
            resolve(lean);
            const rest = response.subarray(end + 4);
            response = null;
            if (rest.length > 0) lean.#onRead(rest, rest.length);
            return true;
          },
        },
      });
      socket.setNoDelay(true);
      socket.on('connect', () => {
        socket.write(
          `GET ${target.pathname}${target.search} HTTP/1.1\r\nHost: ${target.host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: ${key}\r\nSec-WebSocket-Version: 13\r\n\r\n`,
        );
      });
      socket.on('error', (err) => {
        if (lean === null) fail(err);
        // after the handshake 'close' follows and reports the end
      });
      socket.on('close', () => {
        if (lean === null) fail(new Error(`connection to ${url} closed during the WebSocket handshake`));
        else lean.#ended(LeanClose.Abnormal, '');
      });
    });
  }

  /** open: handshake done, no close sent or received */
  get open(): boolean {
    return this.#open;
  }

  /** Sends one binary message (one frame). Dropped when not open, as ws does after close. */
  send(data: Uint8Array): void {
    if (this.#open) this.#socket.write(maskedFrame(Op.Binary, data));
  }

  ping(payload: Uint8Array = new Uint8Array(0)): void {
    if (this.#open) this.#socket.write(maskedFrame(Op.Ping, payload));
  }

  /** Sends a close frame and ends the socket (the server closes its side). */
  close(code: number = LeanClose.Normal, reason = ''): void {
    if (!this.#open) return;
    this.#sendClose(code, reason);
    this.#ended(code, reason);
  }

  /** Drops the connection without a close frame. */
  terminate(): void {
    this.#socket.destroy();
    this.#ended(LeanClose.Abnormal, '');
  }

  #sendClose(code: number, reason: string): void {
    this.#open = false;
    const reasonBytes = Buffer.from(reason).subarray(0, 123);
    const body = Buffer.allocUnsafe(2 + reasonBytes.length);
    body.writeUInt16BE(code, 0);
    reasonBytes.copy(body, 2);
    this.#socket.end(maskedFrame(Op.Close, body));
  }

  #ended(code: number, reason: string): void {
    this.#open = false;
    if (this.#closed) return;
    this.#closed = true;
    this.#events.onClose?.(code, reason);
  }

  /** Closes with `code` for a peer that broke the protocol. */
  #fail(code: number, reason: string): void {
    if (this.#open) this.#sendClose(code, reason);
    this.#ended(code, reason);
  }

  /** Parses `buf[0, end)`: whole frames in place, a cut tail kept for the next read. */
  #onRead(buf: Buffer, end: number): void {
    this.readsIn++;
    let pos = 0;
    while (pos < end && this.#open) {
      if (this.#payload !== null) {
        const n = Math.min(this.#payload.length - this.#filled, end - pos);
        buf.copy(this.#payload, this.#filled, pos, pos + n);
        this.#filled += n;
        pos += n;
        if (this.#filled === this.#payload.length) {
          const payload = this.#payload;
          this.#payload = null;
          this.#frame(this.#fin, this.#opcode, payload);
        }
        continue;
      }
      // the header: in place when whole in this read, else gathered byte by byte in #head
      let src = buf;
      let at = pos;
      if (this.#headLen > 0 || end - pos < 2 || end - pos < headerBytes(buf[pos + 1]!)) {
        this.#head ??= Buffer.allocUnsafe(10);
        while (pos < end && (this.#headLen < 2 || this.#headLen < headerBytes(this.#head[1]!)))
          this.#head[this.#headLen++] = buf[pos++]!;
        if (this.#headLen < 2 || this.#headLen < headerBytes(this.#head[1]!)) return;
        src = this.#head;
        at = 0;
      }
      const b0 = src[at]!;
      const b1 = src[at + 1]!;
      const size = headerBytes(b1);
      if (src === buf) pos += size;
      else this.#headLen = 0;
      const fin = (b0 & 0x80) !== 0;
      const opcode = b0 & 0x0f;
      if ((b0 & 0x70) !== 0) return this.#fail(LeanClose.ProtocolError, 'reserved bits set');
      if ((b1 & 0x80) !== 0) return this.#fail(LeanClose.ProtocolError, 'a server frame must not be masked');
      let len = b1 & 0x7f;
      if (len === 126) len = src.readUInt16BE(at + 2);
      else if (len === 127) {
        const high = src.readUInt32BE(at + 2);
        if (high > 0x1fffff) return this.#fail(LeanClose.TooBig, 'frame length over 2^53');
        len = high * 2 ** 32 + src.readUInt32BE(at + 6);
      }
      if (opcode >= 8) {
        if (!fin || len > 125) return this.#fail(LeanClose.ProtocolError, 'control frame fragmented or over 125 bytes');
      } else if (len + this.#fragmentBytes > this.#maxMessageBytes) {
        return this.#fail(LeanClose.TooBig, `message over ${this.#maxMessageBytes} bytes`);
      }
      if (end - pos >= len) {
        const payload = buf.subarray(pos, pos + len);
        pos += len;
        this.#frame(fin, opcode, payload);
      } else {
        this.#payload = Buffer.allocUnsafe(len);
        this.#filled = 0;
        this.#fin = fin;
        this.#opcode = opcode;
      }
    }
  }

  /** One whole frame. */
  #frame(fin: boolean, opcode: number, payload: Buffer): void {
    this.framesIn++;
    switch (opcode) {
      case Op.Binary:
        if (this.#fragments !== null) return this.#fail(LeanClose.ProtocolError, 'new message inside a fragmented one');
        if (fin) return this.#events.onMessage(payload);
        // a fragment's bytes outlive this read: copied
        this.#fragments = [Buffer.from(payload)];
        this.#fragmentBytes = payload.length;
        return;
      case Op.Continuation: {
        if (this.#fragments === null) return this.#fail(LeanClose.ProtocolError, 'continuation without a message');
        this.#fragments.push(Buffer.from(payload));
        this.#fragmentBytes += payload.length;
        if (!fin) return;
        const whole = Buffer.concat(this.#fragments, this.#fragmentBytes);
        this.#fragments = null;
        this.#fragmentBytes = 0;
        return this.#events.onMessage(whole);
      }
      case Op.Text:
        return this.#fail(LeanClose.UnsupportedData, 'text frames are not part of this protocol');
      case Op.Ping:
        this.#socket.write(maskedFrame(Op.Pong, payload));
        return;
      case Op.Pong:
        return;
      case Op.Close: {
        if (payload.length === 1) return this.#fail(LeanClose.ProtocolError, 'close frame with a 1-byte body');
        const code = payload.length >= 2 ? payload.readUInt16BE(0) : LeanClose.NoStatus;
        const reason = payload.toString('utf8', 2);
        // echo the status code (§5.5.1), then the server closes TCP
        if (this.#open) this.#sendClose(code === LeanClose.NoStatus ? LeanClose.Normal : code, '');
        return this.#ended(code, reason);
      }
      default:
        return this.#fail(LeanClose.ProtocolError, `reserved opcode ${opcode}`);
    }
  }
}

/** null when `head` is a 101 switching to a WebSocket with the expected accept value, else what is wrong */
function checkHandshake(head: string, accept: string): string | null {
  const [status = '', ...lines] = head.split('\r\n');
  if (!/^HTTP\/1\.1 101\b/.test(status)) return `expected 101 Switching Protocols, got "${status}"`;
  const headers = new Map<string, string>();
  for (const line of lines) {
    const colon = line.indexOf(':');
    if (colon > 0) headers.set(line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim());
  }
  if (headers.get('upgrade')?.toLowerCase() !== 'websocket') return 'no "Upgrade: websocket"';
  if (!/\bupgrade\b/i.test(headers.get('connection') ?? '')) return 'no "Connection: Upgrade"';
  if (headers.get('sec-websocket-accept') !== accept) return 'wrong Sec-WebSocket-Accept';
  // §4.1: an extension or subprotocol the client did not ask for fails the connection
  if (headers.has('sec-websocket-extensions')) return 'an extension was not asked for';
  if (headers.has('sec-websocket-protocol')) return 'a subprotocol was not asked for';
  return null;
}
