/**
 * The capacity model of docs/operations/capacity.md as code: from unit costs measured on one hub
 * (capacity.bench.ts) it predicts one hub's CPU, the hubs a fleet needs and a write's latency.
 * The bench checks it against runs; the page states the same formulas.
 *
 * Two kinds of hub work: per *connection* (every instance keeps a socket, pings and, while it
 * holds something, a lease with every hub of the cluster — so it does not shrink with more hubs)
 * and per *key* (reports, writes and broadcasts go to the key's owner — they divide among hubs by
 * rendezvous hashing). A write costs the owner a fixed part plus a part per *holder*: a session
 * its invalidation is sent to (every session of the app for a hot key, only the sessions that
 * registered the key otherwise), so the model stays valid whatever audience the hub picks: the
 * bench measures the audience as it runs. A registration (Hold and its Held) is paid once per
 * registered holder a write reaches: a Drop ends it.
 */

/** Hub CPU per operation, measured (capacity.bench.ts). */
export interface UnitCosts {
  /** µs/s with no instance connected (timers, bookkeeping) */
  baseUsPerS: number;
  /** µs/s per connected instance that holds no lease (its pings), measured with `calibratedAt` of them */
  idleUsPerS: number;
  /** µs/s more per instance that keeps a lease (an ask every leaseMs / 4 and its Grant), at `calibratedAt` */
  leaseUsPerS: number;
  calibratedAt: number;
  /** µs per Report frame, apart from its records, when `reportRate` frames a second reach the hub */
  reportUs: number;
  reportRate: number;
  /**
   * how the cost per frame falls as frames come faster: frames that arrive together share one
   * wake-up of the hub's event loop, so at F frames a second a frame costs
   * reportUs · (F / reportRate)^−reportExponent (fitted on two rates; 0 = constant). The same
   * law scales the idle and lease costs per instance with the number of instances sending them.
   */
  reportExponent: number;
  /**
   * how far above the rate it was measured at the fit is trusted (the faster of its two rates ÷
   * the slower): beyond, a frame costs what it did there — more frames share a wake-up only so
   * far, and a capacity plan had better over-state than under-state
   */
  rateSpan: number;
  /** ns per record (key, count) in a Report */
  recordNs: number;
  /** bytes of a Report frame with no record, and per record (keys of the pool's length) */
  reportBytes: number;
  recordBytes: number;
  /** µs per invalidation sent to nobody (request in, Ack out, bookkeeping) */
  writeUs: number;
  /** µs per registration: a Hold of one key and its Held */
  holdUs: number;
  /** µs per socket an invalidation (a Drop, or any broadcast) is written to */
  fanoutUs: number;
  /** µs per Applied a holder sends back (every holder answers, waiter or not) */
  appliedUs: number;
  /** ms a write takes when it reaches nobody, on an idle hub (the writer's round trip) */
  writeMs: number;
}

/** What a fleet does, per second. */
export interface Workload {
  /** instances of the app; each connects to every hub */
  instances: number;
  /** of them, instances that hold something (and so keep a lease) */
  leased: number;
  /** Report frames per instance per second, to all hubs together (≤ 10: one per 100 ms flush) */
  reportsPerInstance: number;
  /** records per Report frame before it is split per owner hub */
  recordsPerReport: number;
  /** invalidations (writes through the SDK) per second, all keys */
  writesPerS: number;
  /** sessions one invalidation is sent to (all sessions when broadcast; the key's holders when directed) */
  holdersPerWrite: number;
  /** of those, holders that registered the key before the write (one registration each; none for a hot key's broadcast) */
  registrationsPerWrite: number;
  /** of those, sessions whose lease is current: the Ack waits for their Applied */
  waitersPerWrite: number;
  /** promotions plus demotions per second (each a broadcast to every session) */
  broadcastsPerS: number;
}

export interface HubLoad {
  /** CPU µs/s on one hub of `hubs` */
  usPerS: number;
  /** of it, what every hub pays whatever their number */
  perConnection: number;
  /** of it, this hub's share of the keys' work */
  perKey: number;
  /** Report frames and bytes per second reaching this hub */
  reportFrames: number;
  reportBytesPerS: number;
}

/** The cost per frame at `rate` relative to the rate it was measured at (wake-ups shared by more frames). */
function amortised(c: UnitCosts, rate: number, measuredAt: number): number {
  return Math.min(c.rateSpan, Math.max(1, rate) / measuredAt) ** -c.reportExponent;
}

/** One hub's CPU among `hubs`, keys spread evenly. */
export function hubLoad(c: UnitCosts, w: Workload, hubs: number): HubLoad {
  const perConnection =
    c.baseUsPerS +
    w.instances * c.idleUsPerS * amortised(c, w.instances, c.calibratedAt) +
    w.leased * c.leaseUsPerS * amortised(c, w.leased, c.calibratedAt);
  // an instance's flush sends each hub one frame with the records that hub owns (if any)
  const records = (w.instances * w.reportsPerInstance * w.recordsPerReport) / hubs;
  const reportFrames = w.instances * w.reportsPerInstance * (1 - (1 - 1 / hubs) ** w.recordsPerReport);
  // every holder answers its invalidation with Applied, waiter or not; a registered one registered first
  const writes =
    (w.writesPerS / hubs) *
    (c.writeUs + w.holdersPerWrite * (c.fanoutUs + c.appliedUs) + w.registrationsPerWrite * c.holdUs);
  // a Promote or Demote is not answered
  const broadcasts = (w.broadcastsPerS / hubs) * w.instances * c.fanoutUs;
  const perFrame = c.reportUs * amortised(c, reportFrames, c.reportRate);
  const perKey = reportFrames * perFrame + (records * c.recordNs) / 1000 + writes + broadcasts;
  return {
    usPerS: perConnection + perKey,
    perConnection,
    perKey,
    reportFrames,
    reportBytesPerS: reportFrames * c.reportBytes + records * c.recordBytes,
  };
}

/** Hubs needed so that none runs above `utilisation` of one core; Infinity when connections alone exceed it. */
export function hubsNeeded(c: UnitCosts, w: Workload, utilisation: number, maxHubs = 1024): number {
  const budget = utilisation * 1e6;
  if (hubLoad(c, w, maxHubs).perConnection >= budget) return Number.POSITIVE_INFINITY;
  for (let h = 1; h <= maxHubs; h++) if (hubLoad(c, w, h).usPerS <= budget) return h;
  return Number.POSITIVE_INFINITY;
}

/**
 * A write's latency (ms) at a hub running at `load` (µs/s of one core): the writer's round trip
 * and the owner writing the invalidation to every holder; with waiters (their lease is current),
 * a round trip more and the holders' Applied, which the hub reads in the order they come, the
 * last waiter's possibly after all of them; all stretched by queueing at the hub's utilisation ρ
 * as 1 / (1 − ρ) (a single server with random arrivals, M/M/1).
 */
export function writeLatencyMs(c: UnitCosts, w: Workload, load: number): number {
  const rho = Math.min(0.95, load / 1e6);
  const fanout = (w.holdersPerWrite * c.fanoutUs) / 1000;
  const waits = w.waitersPerWrite > 0 ? c.writeMs + (w.holdersPerWrite * c.appliedUs) / 1000 : 0;
  return (c.writeMs + fanout + waits) / (1 - rho);
}

/** ms until the last instance has a promotion: the hub writes one frame to every session in turn. */
export function broadcastReachMs(c: UnitCosts, instances: number): number {
  return (instances * c.fanoutUs) / 1000;
}
