/**
 * Counting what reaches Redis without MONITOR (which costs Redis more than the load it watches):
 * readers of the byte streams a proxy forwards, client-agnostic (ioredis, node-redis, and the
 * adapters' own connections alike).
 *
 * `RespCommandReader` parses the client → server direction: every command a RESP client sends is
 * an array of bulk strings (`*<n>\r\n$<len>\r\n<bytes>\r\n…`, the Redis protocol spec, "Sending
 * commands to a Redis server"); it hands the command name and first argument (the key, for GET)
 * to a callback. Commands queued inside MULTI are seen one by one, as Redis executes them at EXEC.
 *
 * `PatternCounter` counts a byte pattern across chunk boundaries in the server → client direction:
 * each invalidation Redis sends is one frame with a fixed head — RESP3 `>2 $10 invalidate`, or under
 * RESP2 a pub/sub `message` on `__redis__:invalidate` (Redis docs, "Client-side caching").
 */

const STAR = 0x2a; // '*'
const DOLLAR = 0x24; // '$'
const CR = 0x0d;
const EMPTY = Buffer.alloc(0);
/** bytes of one unfinished command held between chunks, beyond which the stream is refused */
const MAX_PENDING = 64 * 1024 * 1024;

/** The frame heads of an invalidation push, RESP3 and RESP2 (a pub/sub message on the invalidation channel). */
export const INVALIDATION_HEADS = [
  Buffer.from('>2\r\n$10\r\ninvalidate\r\n'),
  Buffer.from('$7\r\nmessage\r\n$20\r\n__redis__:invalidate\r\n'),
];

export class RespCommandReader {
  readonly #onCommand: (name: Buffer, key: Buffer | undefined) => void;
  #pending: Buffer = EMPTY;

  /** `onCommand(name, firstArg)`: the buffers are views into the stream, valid during the call only. */
  constructor(onCommand: (name: Buffer, key: Buffer | undefined) => void) {
    this.#onCommand = onCommand;
  }

  feed(chunk: Buffer): void {
    const buf = this.#pending.length === 0 ? chunk : Buffer.concat([this.#pending, chunk]);
    let pos = 0;
    for (;;) {
      const next = this.#command(buf, pos);
      if (next < 0) break;
      pos = next;
    }
    if (buf.length - pos > MAX_PENDING) throw new RangeError(`a RESP command over ${MAX_PENDING} bytes`);
    // copy the tail: a view would keep the whole chunk alive
    this.#pending = pos === buf.length ? EMPTY : Buffer.from(buf.subarray(pos));
  }

  /** Parses one command at `pos`: the offset after it, or -1 when it is not complete yet. */
  #command(buf: Buffer, pos: number): number {
    if (pos >= buf.length) return -1;
    if (buf[pos] !== STAR) {
      // an inline command (redis-cli style): a line of words
      const eol = buf.indexOf(0x0a, pos);
      if (eol < 0) return -1;
      const words = buf.subarray(pos, eol).toString('latin1').trim().split(/\s+/).filter(Boolean);
      if (words.length > 0)
        this.#onCommand(Buffer.from(words[0]!, 'latin1'), words[1] === undefined ? undefined : Buffer.from(words[1]));
      return eol + 1;
    }
    const head = readLine(buf, pos + 1);
    if (head === undefined) return -1;
    const argc = head.value;
    let at = head.next;
    let name: Buffer | undefined;
    let key: Buffer | undefined;
    for (let i = 0; i < argc; i++) {
      if (at >= buf.length) return -1;
      if (buf[at] !== DOLLAR) throw new SyntaxError(`RESP: expected a bulk string at byte ${at}`);
      const len = readLine(buf, at + 1);
      if (len === undefined) return -1;
      const end = len.next + len.value;
      if (end + 2 > buf.length) return -1;
      if (i === 0) name = buf.subarray(len.next, end);
      else if (i === 1) key = buf.subarray(len.next, end);
      at = end + 2;
    }
    if (name !== undefined) this.#onCommand(name, key);
    return at;
  }
}

/** A decimal integer at `pos` up to CRLF: its value and the offset after the CRLF. */
function readLine(buf: Buffer, pos: number): { value: number; next: number } | undefined {
  let value = 0;
  for (let i = pos; i < buf.length; i++) {
    const c = buf[i]!;
    if (c === CR) return i + 1 < buf.length ? { value, next: i + 2 } : undefined;
    if (c < 0x30 || c > 0x39) throw new SyntaxError(`RESP: expected a length at byte ${i}`);
    value = value * 10 + (c - 0x30);
  }
  return undefined;
}

/** `true` when `name` (as sent, any case) is the command `lower` (lower case ASCII). */
export function isCommand(name: Buffer, lower: string): boolean {
  if (name.length !== lower.length) return false;
  for (let i = 0; i < name.length; i++) if ((name[i]! | 0x20) !== lower.charCodeAt(i)) return false;
  return true;
}

/** Occurrences of any of `patterns` in a stream fed in chunks (a match split between chunks counts once). */
export class PatternCounter {
  readonly #patterns: Buffer[];
  readonly #keep: number;
  #tail: Buffer = EMPTY;
  count = 0;

  constructor(patterns: Buffer[]) {
    this.#patterns = patterns;
    this.#keep = Math.max(...patterns.map((p) => p.length)) - 1;
  }

  feed(chunk: Buffer): void {
    const buf = this.#tail.length === 0 ? chunk : Buffer.concat([this.#tail, chunk]);
    for (const p of this.#patterns) {
      // a match wholly inside the kept tail was counted with the previous chunk
      let from = Math.max(0, this.#tail.length - p.length + 1);
      for (let at = buf.indexOf(p, from); at >= 0; at = buf.indexOf(p, from)) {
        this.count++;
        from = at + p.length;
      }
    }
    this.#tail = Buffer.from(buf.subarray(Math.max(0, buf.length - this.#keep)));
  }
}
