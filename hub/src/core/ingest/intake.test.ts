import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Intake, type IntakeFlow } from './intake.ts';

/** A fake clock the flows advance by the cost of what they run; deferred work runs when the test says. */
function setup(options: { turnMs?: number; quantumMs?: number; maxQueuedBytes?: number } = {}) {
  let now = 0;
  const deferred: (() => void)[] = [];
  const intake = new Intake({ ...options, monoNow: () => now, defer: (fn) => deferred.push(fn) });
  const log: string[] = [];
  const flow = (name: string) => {
    const f: IntakeFlow & { paused: number; resumed: number } = {
      paused: 0,
      resumed: 0,
      run(item) {
        const { cost, label, rest } = item as { cost: number; label: string; rest?: number };
        now += cost;
        log.push(`${name}:${label}`);
        return rest ? { cost, label: `${label}+`, rest: rest - 1 } : undefined;
      },
      pause: () => f.paused++,
      resume: () => f.resumed++,
      fault: (err) => log.push(`${name}:fault ${(err as Error).message}`),
    };
    return { f, q: intake.flow(f) };
  };
  const turn = () => {
    const fns = deferred.splice(0);
    for (const fn of fns) fn();
  };
  return { intake, flow, log, turn };
}

test('with nothing queued a small frame runs inline', () => {
  const { intake, flow, log } = setup();
  const a = flow('a');
  intake.submit(a.q, { cost: 0.1, label: '1' }, 10);
  assert.equal(log, ['a:1']);
  assert.is(intake.backlog, 0);
});

test('small inline frames schedule nothing until they add up to a quarter of turnMs; a turn never runs over turnMs inline', () => {
  const { intake, flow, log, turn } = setup({ turnMs: 4 });
  const a = flow('a');
  const frame = (i: number) => intake.submit(a.q, { cost: 0.125, label: `${i}` }, 10);
  for (let i = 0; i < 7; i++) {
    frame(i);
    turn(); // nothing deferred: these turns' 0.125 ms each carry over
  }
  assert.is(log.length, 7);
  frame(7); // 1 ms in all: the reset is due after this turn
  for (let i = 8; i < 32; i++) frame(i);
  assert.is(log.length, 32, 'inline up to turnMs in all, the carried-over spend included');
  frame(32);
  assert.is(log.length, 32, 'past turnMs this turn: queued');
  assert.is(intake.backlog, 1);
  turn();
  assert.is(log.length, 33, 'the drain ran it');
  frame(33);
  assert.is(log.length, 34, 'a new turn: inline again');
});

test('a sparse flow is served before a backlogged one, whose frames keep their order', () => {
  const { intake, flow, log, turn } = setup({ turnMs: 4, quantumMs: 0.5 });
  const flood = flow('flood');
  const legit = flow('legit');
  for (let i = 0; i < 20; i++) intake.submit(flood.q, { cost: 1, label: `${i}` }, 100_000); // big frames: queued
  turn(); // 4 ms of the flood's work
  const before = log.length;
  intake.submit(legit.q, { cost: 0.1, label: 'report' }, 100);
  turn();
  assert.is(log[before], 'legit:report', 'the new flow goes first at the next turn');
  for (let i = 0; i < 20; i++) turn();
  const floodOrder = log.filter((l) => l.startsWith('flood:')).map((l) => Number(l.slice(6)));
  assert.equal(
    floodOrder,
    [...floodOrder].sort((x, y) => x - y),
  );
  assert.is(floodOrder.length, 20);
});

test('a turn stops after turnMs and yields; a long item continues where it stopped', () => {
  const { intake, flow, log, turn } = setup({ turnMs: 2, quantumMs: 10 });
  const a = flow('a');
  intake.submit(a.q, { cost: 1, label: 'r', rest: 5 }, 100_000);
  turn();
  assert.equal(log, ['a:r', 'a:r+'], 'two 1 ms steps per 2 ms turn');
  turn();
  turn();
  assert.is(log.length, 6);
  assert.is(intake.backlog, 0);
});

test('a flow over maxQueuedBytes is paused until its queue is empty; a closed flow drops its queue', () => {
  const { intake, flow, turn } = setup({ maxQueuedBytes: 250_000, turnMs: 100 });
  const a = flow('a');
  for (let i = 0; i < 3; i++) intake.submit(a.q, { cost: 0.1, label: `${i}` }, 100_000);
  assert.is(a.f.paused, 1);
  turn();
  assert.is(a.f.resumed, 1);
  const b = flow('b');
  for (let i = 0; i < 3; i++) intake.submit(b.q, { cost: 0.1, label: `${i}` }, 100_000);
  intake.close(b.q);
  assert.is(intake.stats.queuedBytes, 0);
  turn();
  assert.is(intake.backlog, 0);
});

test('an item that throws faults its flow only', () => {
  const { intake, flow, log } = setup();
  const a = flow('a');
  a.f.run = () => {
    throw new Error('bad frame');
  };
  intake.submit(a.q, {}, 10);
  assert.equal(log, ['a:fault bad frame']);
});

test.run();
