/**
 * Report framing and urgent scheduling. Every flush, one Report frame per hub with the keys it
 * owns whose counts are due (split only if a frame would be too large). A key that just reached
 * its threshold (a surge) is reported at once instead of at the next flush, but no sooner than
 * URGENT_FLUSH_GAP_MS after the previous report, so a storm of crossings costs at most one small
 * extra frame per hub per gap. Steady keys wait for the tick. A report is dropped (and counted)
 * while its socket is backed up: counts are advisory, the next window carries on.
 */
import type { AccessWindow, Collected } from '../../counting/window.ts';
import { encode, MAX_FRAME_BYTES, MAX_REPORT_KEYS, MsgType } from '../../wire/protocol.ts';
import type { HubLinks } from '../links.ts';

/** an early report (a key just reached its threshold) follows the previous report by at least this */
export const URGENT_FLUSH_GAP_MS = 20;
/** report frames are split well under MAX_FRAME_BYTES (msgpack overhead is a few bytes a key) */
const REPORT_FRAME_BUDGET = MAX_FRAME_BYTES >> 1;

export interface ReportSchedulerOptions {
  window: AccessWindow;
  links: HubLinks;
  /** a report is dropped while its socket has more than this queued */
  maxBufferedBytes: number;
  /** reads the monotonic clock and makes it the owner's coarse reading; returns it */
  refreshCoarseNow: () => number;
  /**
   * For a key hot here, the loader calls made for it since the last periodic report (its local
   * hits are its count less these); undefined for a key that is not hot here.
   */
  loadsOf: (key: string) => number | undefined;
  /** the periodic report went out: loader calls count afresh */
  reported: () => void;
}

export class ReportScheduler {
  /** Report frames sent / keys in them / reports dropped because the socket was backed up */
  reports = 0;
  reportedKeys = 0;
  reportsDropped = 0;

  readonly #window: AccessWindow;
  readonly #links: HubLinks;
  readonly #maxBufferedBytes: number;
  readonly #refreshCoarseNow: () => number;
  readonly #loadsOf: (key: string) => number | undefined;
  readonly #reported: () => void;
  /** the pending early report, if any (an immediate when due at once, else a timeout) */
  #urgentImmediate: NodeJS.Immediate | undefined;
  #urgentTimer: NodeJS.Timeout | undefined;
  #lastFlushAt = -Infinity;
  #closed = false;

  constructor(options: ReportSchedulerOptions) {
    this.#window = options.window;
    this.#links = options.links;
    this.#maxBufferedBytes = options.maxBufferedBytes;
    this.#refreshCoarseNow = options.refreshCoarseNow;
    this.#loadsOf = options.loadsOf;
    this.#reported = options.reported;
  }

  /** The periodic report of every due key; `clock` is the time of the tick. */
  flush(clock: number): void {
    if (this.#links.size === 0) return; // counts wait (capped by the window) until a hub is back
    this.#lastFlushAt = clock;
    this.#send(this.#window.collect(), true);
    this.#reported();
  }

  /** A key just reached its threshold: report the urgent keys soon (see the file's comment). */
  urgentSoon(): void {
    if (
      this.#closed ||
      this.#urgentImmediate !== undefined ||
      this.#urgentTimer !== undefined ||
      this.#links.size === 0
    )
      return;
    this.#urgentImmediate = setImmediate(this.#urgentFlush);
  }

  /** Cancels any pending early report; nothing is reported after this. */
  close(): void {
    this.#closed = true;
    clearImmediate(this.#urgentImmediate);
    clearTimeout(this.#urgentTimer);
    this.#urgentImmediate = undefined;
    this.#urgentTimer = undefined;
  }

  readonly #urgentFlush = (): void => {
    this.#urgentImmediate = undefined;
    this.#urgentTimer = undefined;
    if (this.#closed || !this.#window.urgent || this.#links.size === 0) return;
    const now = this.#refreshCoarseNow();
    const wait = this.#lastFlushAt + URGENT_FLUSH_GAP_MS - now;
    if (wait > 0) {
      this.#urgentTimer = setTimeout(this.#urgentFlush, Math.ceil(wait));
      return;
    }
    this.#lastFlushAt = now;
    this.#send(this.#window.collectUrgent());
  };

  /**
   * One Report frame per hub with the keys it owns (split only if a frame would be too large).
   * `savings`: the periodic report carries, for keys hot here, local hits and loader calls.
   */
  #send({ keys, counts }: Pick<Collected, 'keys' | 'counts'>, savings = false): void {
    if (keys.length === 0) return;
    const groups = new Map<
      string,
      { keys: string[]; counts: number[]; hits: number[]; loads: number[]; hot: boolean }
    >();
    const single = this.#links.single();
    for (let i = 0; i < keys.length; i++) {
      const key = keys[i]!;
      const hub = single ?? this.#links.owner(key);
      if (hub === undefined) continue;
      let g = groups.get(hub);
      if (g === undefined) groups.set(hub, (g = { keys: [], counts: [], hits: [], loads: [], hot: false }));
      const count = counts[i]!;
      g.keys.push(key);
      g.counts.push(count);
      const loads = savings ? this.#loadsOf(key) : undefined;
      if (loads === undefined) {
        g.hits.push(0);
        g.loads.push(0);
      } else {
        g.hot = true;
        g.loads.push(loads);
        g.hits.push(Math.max(0, count - loads));
      }
    }
    for (const [hub, g] of groups) {
      const link = this.#links.get(hub);
      if (link === undefined) continue;
      let start = 0;
      while (start < g.keys.length) {
        let end = start;
        let bytes = 16;
        while (end < g.keys.length && end - start < MAX_REPORT_KEYS && bytes < REPORT_FRAME_BUDGET) {
          bytes += g.keys[end]!.length * 3 + 16;
          end++;
        }
        const n = end - start;
        if (link.conn.bufferedAmount > this.#maxBufferedBytes) {
          this.reportsDropped++;
        } else if (
          link.conn.sendBytes(
            encode(
              g.hot
                ? {
                    t: MsgType.Report,
                    keys: g.keys.slice(start, end),
                    counts: g.counts.slice(start, end),
                    hits: g.hits.slice(start, end),
                    loads: g.loads.slice(start, end),
                  }
                : { t: MsgType.Report, keys: g.keys.slice(start, end), counts: g.counts.slice(start, end) },
            ),
          )
        ) {
          this.reports++;
          this.reportedKeys += n;
        } else this.reportsDropped++;
        start = end;
      }
    }
  }
}
