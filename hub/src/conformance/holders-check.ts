/**
 * The hub check's protocol-3 rules (sdk/src/wire/PROTOCOL.md, "Holders"): two version-3 clients,
 * C and D, of an app where every session speaks 3. H20: a Hold is answered by one Held. H21: a
 * write of a key nobody holds is acked with no frame to the other client. H22: a write of a key D
 * holds sends D a Drop, and the Ack waits for D's Applied `d`. H23: a Hold whose `since` predates
 * the key's last write is answered Written.
 */
import { HoldResult, MsgType, type Ack, type Drop, type Held } from '@hotkey/sdk/protocol';
import type { Results } from './rules.ts';
import { pause, type Frame, type Link } from './socket.ts';

/** A version-3 client of the kit: its link and the write clock its Welcome gave. */
export interface HolderMember {
  name: string;
  link: Link;
  w: number;
}

let nextId = 1_000_000;

/** H20: `m` registers `key` under `since`; returns the Held, if it came. */
async function hold(
  r: Results,
  m: HolderMember,
  key: string,
  since: number,
  timeoutMs: number,
): Promise<Held | undefined> {
  const id = nextId++;
  const from = m.link.mark();
  m.link.send({ t: MsgType.Hold, id, keys: [key], since: [since] });
  const held = (await m.link.next((f) => f.message?.t === MsgType.Held && f.message.id === id, timeoutMs, from))
    ?.message as Held | undefined;
  if (!r.check('H20', held !== undefined, `${m.name}: no Held ${id} within ${timeoutMs} ms`)) return undefined;
  r.check('H20', held!.r.length === 1, `${m.name}: Held ${id} has ${held!.r.length} results for 1 key`);
  r.check('H20', held!.w >= m.w, `${m.name}: Held w ${held!.w} is below a w sent before (${m.w})`);
  m.w = Math.max(m.w, held!.w);
  return held;
}

const ackOf = (id: number) => (f: Frame) => f.message?.t === MsgType.Ack && f.message.id === id;
const about = (key: string) => (f: Frame) =>
  (f.message?.t === MsgType.Invalidate && f.message.key === key) ||
  (f.message?.t === MsgType.Drop && f.message.keys.includes(key));

/** H20–H23 with C writing and D holding; `key` is a key no rule makes hot. */
export async function holders(
  r: Results,
  c: HolderMember,
  d: HolderMember,
  key: string,
  timeoutMs: number,
): Promise<void> {
  // H21: nobody holds `key` yet
  let id = nextId++;
  let fromC = c.link.mark();
  let fromD = d.link.mark();
  c.link.send({ t: MsgType.InvalidateRequest, id, key });
  const free = await c.link.next(ackOf(id), timeoutMs * 2, fromC);
  if (!r.check('H21', free !== undefined, `no Ack of a write nobody holds within ${timeoutMs * 2} ms`)) return;
  await pause(50);
  r.check(
    'H21',
    d.link.frames.slice(fromD).find(about(key)) === undefined,
    `${d.name} heard of a write of a key it does not hold`,
  );
  const before = Math.max(c.w, d.w);

  // H22: D holds it now
  const held = await hold(r, d, key, d.w, timeoutMs);
  if (held === undefined) return;
  r.check(
    'H23',
    held.r[0] === HoldResult.Recorded || held.r[0] === HoldResult.Written,
    `Held r ${held.r[0]} for a key this hub owns`,
  );
  const lease = nextId++;
  d.link.send({ t: MsgType.Lease, id: lease });
  await d.link.next((f) => f.message?.t === MsgType.Grant && f.message.id === lease, timeoutMs);
  id = nextId++;
  fromC = c.link.mark();
  fromD = d.link.mark();
  c.link.send({ t: MsgType.InvalidateRequest, id, key });
  const drop = (await d.link.next(about(key), timeoutMs, fromD))?.message as Drop | undefined;
  if (!r.check('H22', drop?.t === MsgType.Drop, `${d.name}, a holder, got no Drop of the key within ${timeoutMs} ms`))
    return;
  await pause(100);
  r.check(
    'H22',
    c.link.frames.slice(fromC).find(ackOf(id)) === undefined,
    'the Ack came before the holder applied its Drop',
  );
  d.link.send({ t: MsgType.Applied, seq: 0, d: drop!.d });
  const ack = (await c.link.next(ackOf(id), timeoutMs, fromC))?.message as Ack | undefined;
  r.check(
    'H22',
    ack !== undefined && ack.fenced.length === 0,
    `no Ack (or a fenced one) after the holder applied: ${JSON.stringify(ack)}`,
  );

  // H23: a value read under the clock before that write
  const stale = await hold(r, d, key, before, timeoutMs);
  if (stale !== undefined)
    r.check(
      'H23',
      stale.r[0] === HoldResult.Written,
      `Held r ${stale.r[0]} for a since before the key's last write, not 1`,
    );
}
