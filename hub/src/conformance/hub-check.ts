/**
 * The hub check: plays clients against a hub URL and judges the hub by the rules of
 * sdk/src/wire/PROTOCOL.md (H1–H13, H20–H23). Two long-lived version-2 clients, A and B, join
 * one app: leases, an invalidation both apply (acked after both), one B does not apply (fenced
 * after its lease), a Resync; then two version-3 clients register and write (holders-check.ts);
 * short-lived probes send what the hub must refuse (bad versions, app names, tokens, every
 * refused client -> hub test vector). Every frame a client receives is checked as it arrives: it
 * must decode (H2) and sequenced broadcasts must be consecutive (H8).
 */
import { randomBytes } from 'node:crypto';
import {
  decodeServerMessage,
  MsgType,
  PROTOCOL_VERSION,
  type Ack,
  type ClientMessage,
  type Grant,
  type Hello,
  type Invalidate,
  type Snapshot,
  type Welcome,
} from '@hotkey/sdk/protocol';
import { hexToBytes, storedVectors } from '@hotkey/sdk/vectors';
import { holders } from './holders-check.ts';
import { HUB_RULES, Results } from './rules.ts';
import { Link, pause, type Frame } from './socket.ts';

export interface HubCheckOptions {
  /** the app the kit's clients join (any name on a hub without a config file) @default 'conformance' */
  app?: string;
  /** the app's token, when it has one: also checks that a wrong one is refused (H6) */
  token?: string;
  /** how long one step may take, on top of what the protocol allows @default 3000 */
  timeoutMs?: number;
}

/** The key the check invalidates in its app. */
export const CHECK_KEY = 'conformance:key';

const SEQUENCED: ReadonlySet<number> = new Set([MsgType.Promote, MsgType.Invalidate, MsgType.Demote]);

const is =
  <T extends number>(t: T) =>
  (f: Frame): boolean =>
    f.message?.t === t;

/** A joined client: its link, its instance id, and where the hub's broadcasts stand on it. */
interface Member {
  name: string;
  link: Link;
  instance: string;
  welcome: Welcome;
  /** seq of the last sequenced broadcast seen (or the last Snapshot's) */
  seq: number;
  /** the latest end of a lease granted to it, as the kit can bound the hub's view: its Lease's send time + ms */
  leaseEnd: number;
}

export async function checkHub(url: string, options: HubCheckOptions = {}): Promise<Results> {
  const r = new Results(HUB_RULES);
  const app = options.app ?? 'conformance';
  const timeoutMs = options.timeoutMs ?? 3000;
  const run = randomBytes(3).toString('hex');
  const links: Link[] = [];
  const hello = (instance: string, extra: Partial<Hello> = {}): Hello => ({
    t: MsgType.Hello,
    v: PROTOCOL_VERSION,
    app,
    instance,
    sdk: 'hotkey-conformance/1',
    ...(options.token === undefined ? {} : { token: options.token }),
    ...extra,
  });
  const open = async (): Promise<Link | undefined> => {
    try {
      const link = await Link.connect(url, decodeServerMessage, timeoutMs);
      links.push(link);
      return link;
    } catch (err) {
      r.fail('H1', (err as Error).message);
      return undefined;
    }
  };

  /** Hello, then Welcome and Snapshot in that order (H1); every later frame checked (H2, H8). */
  const join = async (name: string, v = PROTOCOL_VERSION): Promise<Member | undefined> => {
    const link = await open();
    if (link === undefined) return undefined;
    const instance = `conformance-${run}-${name}`;
    link.send(hello(instance, { v }));
    const first = await link.next(() => true, timeoutMs);
    if (first === undefined) {
      const closed = link.closed;
      r.fail('H1', `${name}: no frame after Hello${closed ? ` (closed ${closed.code} ${closed.reason})` : ''}`);
      return undefined;
    }
    if (!r.check('H2', first.message !== undefined, `${name}: first frame refused: ${first.error}`)) return undefined;
    if (first.message!.t !== MsgType.Welcome) {
      const why =
        first.message!.t === MsgType.Error
          ? `Error ${(first.message as { code: string }).code}: ${(first.message as { message: string }).message}`
          : `message type ${first.message!.t}`;
      r.fail('H1', `${name}: the first frame after Hello is ${why}, not Welcome`);
      return undefined;
    }
    const welcome = first.message as Welcome;
    r.check('H1', welcome.v === v, `${name}: Welcome v is ${welcome.v}, not ${v}`);
    const second = await link.next(() => true, timeoutMs, 1);
    if (second?.message?.t !== MsgType.Snapshot) {
      r.fail('H1', `${name}: the frame after Welcome is ${describe(second)}, not Snapshot`);
      return undefined;
    }
    const snapshot = second.message as Snapshot;
    r.check(
      'H1',
      snapshot.seq >= welcome.seq,
      `${name}: Snapshot seq ${snapshot.seq} is below Welcome seq ${welcome.seq}`,
    );
    const member: Member = { name, link, instance, welcome, seq: snapshot.seq, leaseEnd: 0 };
    for (const frame of link.frames.slice(2)) watch(member, frame);
    link.onFrame = (frame) => watch(member, frame);
    return member;
  };

  const watch = (m: Member, frame: Frame): void => {
    if (!r.check('H2', frame.message !== undefined, `${m.name}: refused a hub frame: ${frame.error}`)) return;
    const msg = frame.message!;
    if (msg.t === MsgType.Snapshot) m.seq = msg.seq;
    else if (SEQUENCED.has(msg.t)) {
      const seq = (msg as { seq: number }).seq;
      r.check('H8', seq === m.seq + 1, `${m.name}: a broadcast (type ${msg.t}) with seq ${seq} after seq ${m.seq}`);
      m.seq = seq;
    }
  };

  try {
    await sessionRules(r, join, timeoutMs, `conformance:held:${run}`);
    await probes(r, open, join, hello, timeoutMs, options.token !== undefined);
  } finally {
    for (const link of links) link.close();
  }
  r.skip('H8', 'no sequenced broadcast seen');
  return r;
}

/** The rules played by joined sessions: leases, acks and fencing at version 2 (H10-H12), then holders at version 3 (H20-H23). */
async function sessionRules(r: Results, join: Join, timeoutMs: number, heldKey: string): Promise<void> {
  // A and B speak version 2, whose invalidations go to every connection (H10-H12)
  const a = await join('a', 2);
  const b = await join('b', 2);
  let leaseMs: number | undefined;
  if (a !== undefined && b !== undefined) {
    leaseMs = await leases(r, a, b, timeoutMs);
    if (leaseMs !== undefined) {
      await acked(r, a, b, timeoutMs, leaseMs);
      await fenced(r, a, b, timeoutMs, leaseMs);
    }
    await resync(r, a, timeoutMs);
  }
  // version 3 (H20-H23) once A and B are gone: while a version-2 session may serve, all is broadcast
  for (const m of [a, b]) m?.link.close();
  const c = await join('c');
  const d = await join('d');
  if (c !== undefined && d !== undefined) {
    await pause((leaseMs ?? 2000) + 250); // A's and B's leases run out (the hub counts them until then)
    const m = (x: Member) => ({ name: x.name, link: x.link, w: x.welcome.w ?? 0 });
    await holders(r, m(c), m(d), heldKey, timeoutMs);
  }
}

function describe(frame: Frame | undefined): string {
  if (frame === undefined) return 'nothing';
  return frame.message === undefined ? `a refused frame (${frame.error})` : `message type ${frame.message.t}`;
}

let nextId = 1;

/** H7: `m` asks for a lease (it lags behind nothing); returns the lease length granted. */
async function renew(r: Results, m: Member, timeoutMs: number): Promise<number | undefined> {
  const id = nextId++;
  const from = m.link.mark();
  const sentAt = performance.now();
  m.link.send({ t: MsgType.Lease, id });
  const grant = (await m.link.next(is(MsgType.Grant), timeoutMs, from))?.message as Grant | undefined;
  if (!r.check('H7', grant !== undefined, `${m.name}: no Grant within ${timeoutMs} ms of Lease ${id}`))
    return undefined;
  r.check('H7', grant!.id === id, `${m.name}: Grant id ${grant!.id} answers Lease ${id}`);
  r.check('H7', grant!.ms >= 1 && grant!.ms <= 3_600_000, `${m.name}: Grant ms ${grant!.ms} out of [1, 3600000]`);
  m.leaseEnd = Math.max(m.leaseEnd, sentAt + grant!.ms);
  return grant!.ms;
}

/** H7 for A and B; returns the lease length the hub grants. */
async function leases(r: Results, a: Member, b: Member, timeoutMs: number): Promise<number | undefined> {
  const ms = await renew(r, a, timeoutMs);
  return (await renew(r, b, timeoutMs)) ?? ms;
}

/**
 * The fenced ids of an Ack at `ackAt` that it could not honestly name: one of the kit's own
 * members whose lease, as far as the kit can tell, may still have been running.
 */
function wronglyFenced(ack: Ack, ackAt: number, members: readonly Member[]): string[] {
  return members.filter((m) => ack.fenced.includes(m.instance) && ackAt < m.leaseEnd - 1).map((m) => m.instance);
}

/** Waits for the Invalidate of CHECK_KEY on `m` from `from` on. */
async function invalidateOf(m: Member, from: number, timeoutMs: number): Promise<Invalidate | undefined> {
  const frame = await m.link.next(
    (f) => f.message?.t === MsgType.Invalidate && f.message.key === CHECK_KEY,
    timeoutMs,
    from,
  );
  return frame?.message as Invalidate | undefined;
}

/** H10, H11: an invalidation both apply; the Ack only after B applied, with A's request id and the seq. */
async function acked(r: Results, a: Member, b: Member, timeoutMs: number, leaseMs: number): Promise<void> {
  await renew(r, a, timeoutMs);
  await renew(r, b, timeoutMs);
  const id = nextId++;
  const fromA = a.link.mark();
  const fromB = b.link.mark();
  a.link.send({ t: MsgType.InvalidateRequest, id, key: CHECK_KEY });
  const [ia, ib] = await Promise.all([invalidateOf(a, fromA, timeoutMs), invalidateOf(b, fromB, timeoutMs)]);
  r.check('H10', ia !== undefined, `the writer got no Invalidate of ${CHECK_KEY} within ${timeoutMs} ms`);
  r.check('H10', ib !== undefined, `another connection of the app got no Invalidate of ${CHECK_KEY}`);
  if (ia === undefined || ib === undefined) return;
  r.check('H10', ia.seq === ib.seq, `the two connections got the Invalidate as seq ${ia.seq} and ${ib.seq}`);
  a.link.send({ t: MsgType.Applied, seq: a.seq });
  // B applies a little later: an Ack before that is premature, unless it fenced B after B's lease
  // lapsed (a stalled kit may let it)
  await pause(Math.min(300, leaseMs / 4));
  const early = a.link.frames.slice(fromA).find((f) => f.message?.t === MsgType.Ack && f.message.id === id);
  if (early !== undefined) {
    const fencedB = (early.message as Ack).fenced.includes(b.instance) && early.at >= b.leaseEnd - 1;
    r.check('H11', fencedB, `Ack ${id} came before every connection applied the Invalidate`);
  }
  b.link.send({ t: MsgType.Applied, seq: b.seq });
  // a hub acks nothing in its first lease (clients may hold leases of its previous life)
  const ackFrame = await a.link.next(
    (f) => f.message?.t === MsgType.Ack && f.message.id === id,
    timeoutMs + leaseMs,
    fromA,
  );
  const ack = ackFrame?.message as Ack | undefined;
  if (!r.check('H11', ack !== undefined, `no Ack ${id} within ${timeoutMs + leaseMs} ms after both applied`)) return;
  r.check('H11', ack!.seq === ia.seq, `Ack seq ${ack!.seq}, the Invalidate's was ${ia.seq}`);
  const wrong = wronglyFenced(ack!, ackFrame!.at, [a, b]);
  r.check('H11', wrong.length === 0, `Ack fenced ${JSON.stringify(wrong)}, which applied while their lease ran`);
}

/**
 * H12: B stops applying and keeps asking for leases. The Ack must not come before B's last
 * granted lease ended (its Lease's send time + ms: the hub's view starts later), must name B,
 * and B must get no Grant for a Lease sent once it lagged for a grace period.
 */
async function fenced(r: Results, a: Member, b: Member, timeoutMs: number, leaseMs: number): Promise<void> {
  await renew(r, a, timeoutMs);
  const id = nextId++;
  const fromA = a.link.mark();
  const fromB = b.link.mark();
  const asked = new Map<number, number>(); // B's Lease id -> sent at
  const ask = () => {
    const leaseId = nextId++;
    asked.set(leaseId, performance.now());
    b.link.send({ t: MsgType.Lease, id: leaseId });
  };
  ask();
  a.link.send({ t: MsgType.InvalidateRequest, id, key: CHECK_KEY });
  const ia = await invalidateOf(a, fromA, timeoutMs);
  const ib = await invalidateOf(b, fromB, timeoutMs);
  if (!r.check('H10', ia !== undefined && ib !== undefined, `no Invalidate of ${CHECK_KEY} reached both connections`))
    return;
  a.link.send({ t: MsgType.Applied, seq: a.seq });
  const bLagsFrom = performance.now();
  const every = Math.max(20, leaseMs / 4);
  const deadline = performance.now() + 2 * leaseMs + timeoutMs;
  let ack: Ack | undefined;
  let ackAt = 0;
  while (performance.now() < deadline) {
    const frame = await a.link.next((f) => f.message?.t === MsgType.Ack && f.message.id === id, every, fromA);
    if (frame !== undefined) {
      ack = frame.message as Ack;
      ackAt = frame.at;
      break;
    }
    if (b.link.open) ask();
  }
  // grants B received, with the send time of the Lease each answers
  const grants = b.link.frames
    .slice(fromB)
    .filter((f) => f.message?.t === MsgType.Grant && asked.has(f.message.id))
    .map((f) => ({ sentAt: asked.get((f.message as Grant).id)!, ms: (f.message as Grant).ms, at: f.at }));
  // the hub's grace (leaseMs / 8) counts from just after its broadcast; 100 ms more absorbs a
  // hub stalled between the broadcast and that clock reading
  const grace = leaseMs / 8 + 100;
  const lagging = grants.filter((g) => g.sentAt > bLagsFrom + grace);
  r.check(
    'H12',
    lagging.length === 0,
    `${lagging.length} Grant(s) to a session lagging behind an invalidation for over ${Math.round(grace)} ms`,
  );
  if (
    !r.check(
      'H12',
      ack !== undefined,
      `no Ack ${id} within ${Math.round(deadline - bLagsFrom)} ms while one session did not apply`,
    )
  )
    return;
  const leaseEnd = Math.max(b.leaseEnd, ...grants.map((g) => g.sentAt + g.ms));
  r.check(
    'H12',
    ackAt >= leaseEnd - 1,
    `Ack ${id} came ${Math.round(leaseEnd - ackAt)} ms before the lease granted to the silent session could have ended`,
  );
  r.check('H12', ack!.fenced.includes(b.instance), `Ack fenced ${JSON.stringify(ack!.fenced)}, not ${b.instance}`);
  b.leaseEnd = Math.max(b.leaseEnd, ...grants.map((g) => g.sentAt + g.ms));
  const wrong = wronglyFenced(ack!, ackAt, [a]);
  r.check('H11', wrong.length === 0, `Ack fenced ${JSON.stringify(wrong)}, which applied while its lease ran`);
  r.check('H11', ack!.seq === ia!.seq, `Ack seq ${ack!.seq}, the Invalidate's was ${ia!.seq}`);
  b.link.send({ t: MsgType.Applied, seq: b.seq }); // caught up again
}

/** H9: a Resync is answered with a Snapshot (coalesced ones wait out the hub's interval, 1 s by default). */
async function resync(r: Results, a: Member, timeoutMs: number): Promise<void> {
  const from = a.link.mark();
  a.link.send({ t: MsgType.Resync });
  const frame = await a.link.next(is(MsgType.Snapshot), timeoutMs + 1000, from);
  r.check('H9', frame !== undefined, `no Snapshot within ${timeoutMs + 1000} ms of Resync`);
}

type Join = (name: string, v?: number) => Promise<Member | undefined>;
type Open = () => Promise<Link | undefined>;

/** An Error with `code`, then the close with `close` (H3–H6, H13). */
async function refused(
  r: Results,
  rule: 'H3' | 'H4' | 'H5' | 'H6' | 'H13',
  link: Link,
  what: string,
  code: string,
  close: number,
  timeoutMs: number,
  from = 0,
): Promise<void> {
  const closed = await link.waitClosed(timeoutMs);
  const error = link.frames.slice(from).find((f) => f.message?.t === MsgType.Error)?.message as
    | { code: string }
    | undefined;
  if (closed === undefined) {
    r.fail(rule, `${what}: still open after ${timeoutMs} ms (expected ${code}, close ${close})`);
    link.terminate();
    return;
  }
  r.check(
    rule,
    closed.code === close && error?.code === code,
    `${what}: got ${error === undefined ? 'no Error frame' : `Error ${error.code}`} and close ${closed.code}, expected ${code} and close ${close}`,
  );
}

async function probes(
  r: Results,
  open: Open,
  join: Join,
  hello: (instance: string, extra?: Partial<Hello>) => Hello,
  timeoutMs: number,
  hasToken: boolean,
): Promise<void> {
  const first = async (
    what: string,
    send: (link: Link) => void,
    rule: 'H3' | 'H4' | 'H6',
    code: string,
    close: number,
  ) => {
    const link = await open();
    if (link === undefined) return;
    send(link);
    await refused(r, rule, link, what, code, close, timeoutMs);
  };
  // ranges no hub of this version speaks (whether it admits the previous version or not)
  const outOfRange: Partial<Hello>[] = [
    { v: 0 },
    { v: PROTOCOL_VERSION + 1 },
    { v: PROTOCOL_VERSION + 2, vmin: PROTOCOL_VERSION + 1 },
  ];
  for (const range of outOfRange)
    await first(
      `Hello v ${range.v}${range.vmin === undefined ? '' : ` vmin ${range.vmin}`}`,
      (l) => l.send(hello('probe', range)),
      'H3',
      'HK_ERR_VERSION',
      4001,
    );
  const lease: ClientMessage = { t: MsgType.Lease, id: 1 };
  await first('a Lease before Hello', (l) => l.send(lease), 'H4', 'HK_ERR_PROTOCOL', 4000);
  await first('a text frame before Hello', (l) => l.sendText('{"t":1}'), 'H4', 'HK_ERR_PROTOCOL', 4000);
  await first('Hello with app ""', (l) => l.send(hello('probe', { app: '' })), 'H6', 'HK_ERR_UNKNOWN_APP', 4002);
  if (hasToken) {
    const wrong = hello('probe');
    wrong.token = `${wrong.token}-wrong`;
    await first('Hello with a wrong token', (l) => l.send(wrong), 'H6', 'HK_ERR_AUTH', 4003);
  } else r.partly('H6', 'wrong token not tried: no --token given');

  const joined = async (
    what: string,
    rule: 'H4' | 'H5' | 'H13',
    code: string,
    close: number,
    send: (l: Link) => void,
  ) => {
    const m = await join('probe');
    if (m === undefined) return;
    const from = m.link.mark();
    send(m.link);
    await refused(r, rule, m.link, what, code, close, timeoutMs, from);
  };
  await joined('a second Hello', 'H4', 'HK_ERR_PROTOCOL', 4000, (l) => l.send(hello('probe')));
  await joined('Applied seq 2^40', 'H13', 'HK_ERR_PROTOCOL', 4000, (l) => l.send({ t: MsgType.Applied, seq: 2 ** 40 }));
  for (const v of storedVectors().vectors) {
    if (v.direction !== 'to-hub' || v.error === undefined) continue;
    const bytes = hexToBytes(v.hex);
    await joined(`vector "${v.name}"`, 'H5', v.error.code, v.error.close, (l) => l.sendBytes(bytes));
  }
}
