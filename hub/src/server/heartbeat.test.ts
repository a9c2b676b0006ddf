import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Heartbeat, HEARTBEAT_SLICES, type Pingable } from './heartbeat.ts';

class FakeSocket implements Pingable {
  pings = 0;
  terminated = false;
  ping(): void {
    this.pings++;
  }
  terminate(): void {
    this.terminated = true;
  }
}

/** a heartbeat whose timer never fires within a test: turns are driven by tick() */
const manual = () => new Heartbeat<FakeSocket>(3_600_000);

test('one group per turn: every socket is pinged once per HEARTBEAT_SLICES turns', () => {
  const hb = manual();
  const sockets = Array.from({ length: 10 * HEARTBEAT_SLICES }, () => new FakeSocket());
  for (const s of sockets) hb.add(s);
  hb.tick();
  assert.is(
    sockets.reduce((a, s) => a + s.pings, 0),
    10,
    'the first turn pings one group, not every socket',
  );
  for (const s of sockets) hb.heard(s);
  for (let t = 1; t < HEARTBEAT_SLICES; t++) hb.tick();
  assert.ok(
    sockets.every((s) => s.pings === 1),
    'after a whole interval every socket was pinged once',
  );
  hb.stop();
});

test('a socket silent since its ping is dropped at its next turn; one that answered is pinged again', () => {
  const hb = manual();
  const silent = new FakeSocket();
  const live = new FakeSocket();
  hb.add(silent);
  for (let i = 1; i < HEARTBEAT_SLICES; i++) hb.add(new FakeSocket()); // fills the other groups
  hb.add(live); // dealt into the silent one's group
  hb.tick();
  assert.is(silent.pings, 1);
  assert.is(live.pings, 1);
  hb.heard(live);
  for (let t = 1; t < HEARTBEAT_SLICES; t++) hb.tick();
  assert.not.ok(silent.terminated, 'not dropped before its next turn');
  hb.tick();
  assert.ok(silent.terminated, 'dropped one interval after the unanswered ping');
  assert.not.ok(live.terminated);
  assert.is(live.pings, 2);
  assert.is(hb.size, HEARTBEAT_SLICES, 'the dropped socket left the heartbeat');
  hb.stop();
});

test('removed sockets are neither pinged nor held', () => {
  const hb = manual();
  const s = new FakeSocket();
  hb.add(s);
  hb.add(s); // idempotent
  hb.remove(s);
  hb.remove(s);
  for (let t = 0; t < HEARTBEAT_SLICES; t++) hb.tick();
  assert.is(s.pings, 0);
  assert.is(hb.size, 0);
  hb.stop();
});

test('a socket whose ping throws (not open yet) is kept and pinged again', () => {
  const hb = manual();
  let throws = true;
  const s = new (class extends FakeSocket {
    override ping(): void {
      if (throws) throw new Error('not open');
      super.ping();
    }
  })();
  hb.add(s);
  hb.tick();
  throws = false;
  hb.heard(s);
  for (let t = 0; t < HEARTBEAT_SLICES; t++) hb.tick();
  assert.is(s.pings, 1);
  assert.not.ok(s.terminated);
  hb.stop();
});

test.run();
