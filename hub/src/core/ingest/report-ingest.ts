/**
 * One step of a session's Report into its app: the records go to the aggregator (aggregator.ts,
 * which admits and counts them), the savings hot keys carry go to the app's Savings, and, while
 * the app has rate limits, every record to its RateSplits. The fair intake (intake.ts) decides
 * how many records a step takes; this file only walks them.
 */
import type { Report } from '@hotkey/sdk/protocol';
import type { AppState } from '../apps.ts';
import type { HubMetrics } from '../observe/hub-metrics.ts';
import type { ReportFrame } from './report-frame.ts';
import type { Session } from './session.ts';

export class ReportIngest {
  readonly #metrics: HubMetrics;

  constructor(metrics: HubMetrics) {
    this.#metrics = metrics;
  }

  /**
   * Ingests `report.keys[from..]`, at most `max` records; returns the index it stopped at.
   * @param [bytes] the frame's size, for the report frame size histogram (first step only)
   */
  decoded(
    app: AppState,
    session: Session,
    report: Report,
    from: number,
    max: number,
    now: number,
    bytes?: number,
  ): number {
    const to = Math.min(report.keys.length, from + max);
    this.#count(app, session, from, to, now, bytes);
    app.aggregator.ingest(
      report.keys,
      report.counts,
      session.reporter,
      now,
      session.soloBudget,
      from,
      to,
      session.fairShare,
    );
    const { hits, loads } = report;
    if (hits !== undefined && loads !== undefined) {
      for (let i = from; i < to; i++)
        if (hits[i]! > 0 || loads[i]! > 0) this.#savings(app, report.keys[i]!, hits[i]!, loads[i]!);
    }
    if (app.limits.active) app.limits.observe(session, report.keys, report.counts, from, to, now);
    return to;
  }

  /**
   * As `decoded`, for a Report frame read in place (report-frame.ts), from its cursor's record on;
   * moves the cursor to where it stopped. Keys become strings only where needed: an admission,
   * a record carrying savings, or every key while the app has rate limits.
   */
  inPlace(app: AppState, session: Session, frame: ReportFrame, max: number, now: number, bytes?: number): number {
    const from = frame.index;
    const to = Math.min(frame.length, from + max);
    this.#count(app, session, from, to, now, bytes);
    const limits = app.limits.active;
    const start = frame.savings || limits ? frame.save() : undefined;
    app.aggregator.ingestFrame(frame, session.reporter, now, session.soloBudget, to, session.fairShare);
    if (start === undefined) return to;
    // a second walk over the step for what needs the keys as strings
    frame.restore(start);
    const keys: string[] = [];
    const counts: number[] = [];
    while (frame.index < to) {
      frame.next();
      if (frame.hits > 0 || frame.loads > 0) this.#savings(app, frame.key(), frame.hits, frame.loads);
      if (limits) {
        keys.push(frame.key());
        counts.push(frame.count);
      }
    }
    if (limits) app.limits.observe(session, keys, counts, 0, keys.length, now);
    return to;
  }

  #count(app: AppState, session: Session, from: number, to: number, now: number, bytes: number | undefined): void {
    session.lastReport = now;
    if (from === 0) {
      this.#metrics.reports++;
      if (bytes !== undefined) this.#metrics.reportFrame(app.name, bytes);
    }
    this.#metrics.records += to - from;
  }

  /** A record's savings: only keys hot at the SDK carry them; only keys hot here are kept (bounded). */
  #savings(app: AppState, key: string, hits: number, loads: number): void {
    if (!app.aggregator.isHot(key)) return;
    app.savings.add(key, hits, loads);
    this.#metrics.localHits += hits;
    this.#metrics.loaderCalls += loads;
  }
}
