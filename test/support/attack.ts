/**
 * Tools for the fault group's attack tests: raw sockets that do what no client library will (a
 * WebSocket frame that never finishes, an HTTP request that never ends), and a probe that records
 * what a legitimate user sees meanwhile — /healthz latency, a new SDK's ready() time — and the
 * hub's resident memory. Each test prints its figures as one `# figures <name> {json}` line before
 * asserting, so the same test run against another checkout (HOTKEY_TEST_HUB_BIN) gives the
 * "before" numbers.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { HotKeyClient } from '@hotkey/sdk';
import { delay } from './wait.ts';

/** Resident set size of a process in MiB (Linux /proc), or NaN when unreadable. */
export function rssMiB(pid: number): number {
  try {
    const kb = /^VmRSS:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
    return kb === undefined ? Number.NaN : Math.round(Number(kb) / 1024);
  } catch {
    return Number.NaN;
  }
}

/** CPU seconds a process has used (user + system, Linux /proc), or NaN. */
export function cpuSeconds(pid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100; // utime, stime in clock ticks (USER_HZ = 100)
  } catch {
    return Number.NaN;
  }
}

export interface ProbeFigures {
  /** worst /healthz latency seen (ms); a failed or timed-out request counts as its deadline */
  healthzWorstMs: number;
  healthzFailures: number;
  healthzSamples: number;
  /** the first few failures, for the figures */
  healthzErrors: string[];
  /** hub RSS before the attack and its peak during it (MiB) */
  rssBeforeMiB: number;
  rssPeakMiB: number;
  /** CPU seconds the hub used while probed, and the test process (attacker + probe) */
  hubCpuS: number;
  testCpuS: number;
}

/** Polls /healthz and the hub's RSS until stopped. */
export class Probe {
  readonly #httpUrl: string;
  readonly #pid: number;
  readonly #rssBefore: number;
  readonly #cpuBefore: number;
  readonly #testCpuBefore = process.cpuUsage();
  #rssPeak: number;
  #worst = 0;
  #failures = 0;
  #samples = 0;
  readonly #errors: string[] = [];
  #running = true;
  readonly #loops: Promise<void>[];

  constructor(httpUrl: string, pid: number, healthzTimeoutMs = 5000) {
    this.#httpUrl = httpUrl;
    this.#pid = pid;
    this.#rssBefore = rssMiB(pid);
    this.#cpuBefore = cpuSeconds(pid);
    this.#rssPeak = this.#rssBefore;
    this.#loops = [this.#health(healthzTimeoutMs), this.#rss()];
  }

  async #health(timeoutMs: number): Promise<void> {
    while (this.#running) {
      const started = performance.now();
      try {
        const res = await fetch(`${this.#httpUrl}/healthz`, { signal: AbortSignal.timeout(timeoutMs) });
        await res.arrayBuffer();
        if (res.status !== 200) this.#failures++;
        this.#worst = Math.max(this.#worst, performance.now() - started);
      } catch (err) {
        this.#failures++;
        this.#worst = Math.max(this.#worst, performance.now() - started);
        const e = err as Error & { cause?: { code?: string } };
        if (this.#errors.length < 3) this.#errors.push(`${e.name}: ${e.cause?.code ?? e.message}`);
      }
      this.#samples++;
      await delay(100);
    }
  }

  async #rss(): Promise<void> {
    while (this.#running) {
      const now = rssMiB(this.#pid);
      if (now > this.#rssPeak) this.#rssPeak = now;
      await delay(50);
    }
  }

  async stop(): Promise<ProbeFigures> {
    this.#running = false;
    await Promise.all(this.#loops);
    return {
      healthzWorstMs: Math.round(this.#worst),
      healthzFailures: this.#failures,
      healthzSamples: this.#samples,
      healthzErrors: this.#errors,
      rssBeforeMiB: this.#rssBefore,
      rssPeakMiB: this.#rssPeak,
      hubCpuS: Math.round((cpuSeconds(this.#pid) - this.#cpuBefore) * 10) / 10,
      testCpuS:
        Math.round((process.cpuUsage(this.#testCpuBefore).user + process.cpuUsage(this.#testCpuBefore).system) / 1e5) /
        10,
    };
  }
}

/** ms until a new SDK's ready() resolves, or `timeoutMs` when it does not (the client is closed either way). */
export async function readyMs(
  hubUrl: string,
  app: string,
  timeoutMs = 5000,
  token?: string,
  closes?: number[],
): Promise<number> {
  const hk = new HotKeyClient({ app, hubs: [hubUrl], token, reconnectMinMs: 50, reconnectMaxMs: 500 });
  const started = performance.now();
  if (closes !== undefined) {
    void (async () => {
      for await (const s of hk.status()) if (s.type === 'disconnect') closes.push(s.code);
    })();
  }
  try {
    await hk.ready({ signal: AbortSignal.timeout(timeoutMs) });
    return Math.round(performance.now() - started);
  } catch {
    return timeoutMs;
  } finally {
    await hk.close();
  }
}

export function printFigures(name: string, figures: object): void {
  console.log(`# figures ${name} ${JSON.stringify(figures)}`);
}

/**
 * A raw TCP connection that completes a WebSocket handshake on `path` and resolves the socket once
 * the 101 arrives (rejects on any other answer or after `timeoutMs`). Frames are the caller's to write.
 */
export function rawWebSocket(
  port: number,
  path = '/ws',
  opts: { localAddress?: string; timeoutMs?: number; origin?: string } = {},
): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port, localAddress: opts.localAddress });
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no 101 within ${opts.timeoutMs ?? 5000} ms`));
    }, opts.timeoutMs ?? 5000);
    socket.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    let head = '';
    const onData = (d: Buffer) => {
      head += d.toString('latin1');
      if (!head.includes('\r\n\r\n')) return;
      socket.off('data', onData);
      clearTimeout(timer);
      // frames that came in the same read as the 101 go back for the caller's reader
      const rest = Buffer.from(head.slice(head.indexOf('\r\n\r\n') + 4), 'latin1');
      if (rest.length > 0) socket.unshift(rest);
      if (head.startsWith('HTTP/1.1 101')) resolve(socket);
      else {
        socket.destroy();
        reject(new Error(`handshake answered ${head.split('\r\n')[0]}`));
      }
    };
    socket.on('data', onData);
    socket.on('connect', () => {
      const origin = opts.origin === undefined ? '' : `Origin: ${opts.origin}\r\n`;
      socket.write(
        `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
          `Sec-WebSocket-Key: ${randomBytes(16).toString('base64')}\r\nSec-WebSocket-Version: 13\r\n${origin}\r\n`,
      );
    });
  });
}

/**
 * The close code the hub sends on a raw socket (its frames are unmasked), or undefined when the
 * connection ends without a close frame. Frames before it (an Error frame) are skipped.
 */
export function closeCodeOf(socket: Socket): Promise<number | undefined> {
  return new Promise((resolve) => {
    let buf = Buffer.alloc(0);
    socket.on('data', (d: Buffer) => {
      buf = Buffer.concat([buf, d]);
      for (;;) {
        if (buf.length < 2) return;
        let len = buf[1]! & 0x7f;
        let at = 2;
        if (len === 126) {
          if (buf.length < 4) return;
          len = buf.readUInt16BE(2);
          at = 4;
        } else if (len === 127) {
          if (buf.length < 10) return;
          len = Number(buf.readBigUInt64BE(2));
          at = 10;
        }
        if (buf.length < at + len) return;
        if ((buf[0]! & 0x0f) === 0x8) {
          resolve(len >= 2 ? buf.readUInt16BE(at) : 1005);
          return;
        }
        buf = buf.subarray(at + len);
      }
    });
    socket.once('close', () => resolve(undefined));
  });
}

/** The header of a masked binary client frame announcing `length` payload bytes (64-bit length form). */
export function frameHeader(length: number): Buffer {
  const h = Buffer.alloc(14);
  h[0] = 0x82; // FIN + binary
  h[1] = 0x80 | 127; // masked, 64-bit length
  h.writeBigUInt64BE(BigInt(length), 2);
  randomBytes(4).copy(h, 10);
  return h;
}
