/**
 * HotKeyClient in a cluster: one link per member, each hub told only the keys it owns.
 */
import { RULE_DEFAULTS } from '../rules.ts';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { HotKeyClient, type ClientStatus } from './client.ts';
import { Ownership } from '../ownership.ts';
import { MsgType } from '../wire/protocol.ts';
import { ProtocolPeer } from '../../../test/support/protocol-peer.ts';
import { delay, waitFor } from '../../../test/support/wait.ts';
import { closeAll, closeLater } from '../../../test/support/sdk-client.ts';
import { setup, teardown } from '../../../test/support/client-fixture.ts';

// A failed assertion skips a test's own teardown: close whatever it left open.
test.after.each(closeAll);

test('cluster: connects to members, one report per hub with the keys it owns', async () => {
  const b = await new ProtocolPeer({
    id: 'hub-b',
    local: [1],
    rules: [
      {
        ...RULE_DEFAULTS,
        match: '*',
        threshold: 5,
      },
    ],
  }).listen();
  const bSocketP = b.nextSocket();
  const s = await setup(
    {},
    {
      local: [1],
      members: (self) => [
        { id: 'hub-a', url: self },
        { id: 'hub-b', url: b.url },
      ],
    },
  );
  b.opts.members = () => [
    { id: 'hub-a', url: s.peer.url },
    { id: 'hub-b', url: b.url },
  ];
  const bSock = await bSocketP;
  await waitFor('hk.hubs().length === 2', () => s.hk.hubs().length === 2);
  assert.is(s.peer.sockets.length, 1, 'no duplicate connection to the seed');
  const own = new Ownership(['hub-a', 'hub-b']);
  const keys = Array.from({ length: 40 }, (_, i) => `key:${i}`);
  for (const key of keys) for (let i = 0; i < 3; i++) s.hk.track(key);
  const [ra, rb] = await Promise.all([s.sock.next(MsgType.Report), bSock.next(MsgType.Report)]);
  assert.ok(ra.keys.length > 0 && rb.keys.length > 0);
  assert.is(ra.keys.length + rb.keys.length, 40);
  for (const k of ra.keys) assert.is(own.owner(k), 'hub-a');
  for (const k of rb.keys) assert.is(own.owner(k), 'hub-b');
  // invalidate goes to the owner
  const key = rb.keys[0]!;
  const done = s.hk.invalidate(key);
  const req = await bSock.next(MsgType.InvalidateRequest);
  assert.is(req.key, key);
  bSock.send({ t: MsgType.Ack, id: req.id, seq: 1, fenced: [], ms: 0 });
  await done;
  // losing hub-b moves its keys to hub-a
  b.opts.members = undefined;
  s.sock.send({ t: MsgType.Members, epoch: 2, members: [{ id: 'hub-a', url: s.peer.url }] });
  await waitFor('hk.hubs().length === 1', () => s.hk.hubs().length === 1);
  for (const k of rb.keys) for (let i = 0; i < 3; i++) s.hk.track(k);
  const moved = await s.sock.next(MsgType.Report);
  assert.equal(moved.keys.sort(), [...rb.keys].sort());
  await teardown(s);
  await b.close();
});

test('a seed hub that leaves the member list owns no key from then on: its keys are reported to the others before its own close', async () => {
  const rules = [{ ...RULE_DEFAULTS, match: '*', threshold: 5 }];
  const b = await new ProtocolPeer({ id: 'hub-b', local: [1], rules }).listen();
  const bSocketP = b.nextSocket();
  // hub-a is the seed
  const s = await setup(
    {},
    {
      local: [1],
      members: (self) => [
        { id: 'hub-a', url: self },
        { id: 'hub-b', url: b.url },
      ],
    },
  );
  b.opts.members = () => [
    { id: 'hub-a', url: s.peer.url },
    { id: 'hub-b', url: b.url },
  ];
  const bSock = await bSocketP;
  await waitFor('both hubs welcomed', () => s.hk.hubs().length === 2);
  const own = new Ownership(['hub-a', 'hub-b']);
  const keys = Array.from({ length: 40 }, (_, i) => `seed-key:${i}`).filter((k) => own.owner(k) === 'hub-a');
  // hub-a leaves as a leaving hub does: the list without itself first, its socket closed later
  s.sock.send({ t: MsgType.Members, epoch: 2, members: [{ id: 'hub-b', url: b.url }] });
  await waitFor('hub-a dropped', () => s.hk.hubs().length === 1, 3000);
  assert.equal(s.hk.hubs(), ['hub-b']);
  for (const k of keys) for (let i = 0; i < 3; i++) s.hk.track(k);
  const moved = await bSock.next(MsgType.Report);
  assert.equal([...moved.keys].sort(), [...keys].sort(), "hub-a's keys reported to hub-b");
  await teardown(s);
  await b.close();
});

test('a hub that comes back under a new URL is reached there, whether met as a member or as the seed', async () => {
  for (const xIsSeed of [false, true]) {
    const rules = [
      {
        ...RULE_DEFAULTS,
        match: '*',
        threshold: 100,
      },
    ];
    const x1 = await new ProtocolPeer({ id: 'hub-x', rules }).listen();
    const y = await new ProtocolPeer({ id: 'hub-y', rules }).listen();
    const members = (xUrl: string) => [
      { id: 'hub-x', url: xUrl },
      { id: 'hub-y', url: y.url },
    ];
    x1.opts.members = () => members(x1.url);
    y.opts.members = () => members(x1.url);
    const ySocketP = y.nextSocket();
    const x1SocketP = x1.nextSocket();
    // a short backoff: the client keeps retrying the old URL throughout
    const hk = new HotKeyClient({ app: 'shop', hubs: xIsSeed ? x1.url : y.url, reconnectMinMs: 5, reconnectMaxMs: 20 });
    closeLater(hk, y, x1);
    const statuses: ClientStatus[] = [];
    void (async () => {
      for await (const st of hk.status()) statuses.push(st);
    })();
    const [ySock] = await Promise.all([ySocketP, x1SocketP]);
    await waitFor(`both hubs welcomed (x is seed: ${xIsSeed})`, () => hk.hubs().length === 2, 3000);

    // hub-x goes away from A (its port now refuses) and restarts at B
    await x1.close();
    await waitFor('hub-x lost', () => hk.hubs().length === 1, 3000);
    assert.equal(hk.hubs(), ['hub-y']);
    const x2 = await new ProtocolPeer({ id: 'hub-x', rules, members: (self) => members(self) }).listen();
    closeLater(hk, x2);
    const x2SocketP = x2.nextSocket();
    ySock.send({ t: MsgType.Members, epoch: 2, members: members(x2.url) });
    await x2SocketP;
    await waitFor(`hub-x welcomed at its new URL (x is seed: ${xIsSeed})`, () => hk.hubs().length === 2, 3000);
    assert.equal(hk.hubs().sort(), ['hub-x', 'hub-y']);
    assert.ok(
      statuses.some((st) => st.type === 'connect' && st.hub === 'hub-x' && st.url === x2.url),
      'connect status names the new URL',
    );
    assert.is(x2.sockets.length, 1, 'one connection to the new URL');
    // the link to the old URL is gone: no more attempts there, so no more 'reconnecting' for it
    const retriesBefore = statuses.filter((st) => st.type === 'reconnecting' && st.url === x1.url).length;
    await delay(100); // several backoff periods (≤ 20 ms each)
    assert.is(
      statuses.filter((st) => st.type === 'reconnecting' && st.url === x1.url).length,
      retriesBefore,
      'the old URL is no longer retried',
    );
    await hk.close();
    await Promise.all([y.close(), x2.close()]);
  }
});

test.run();
